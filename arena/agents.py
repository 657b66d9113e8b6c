"""The Agent contract and the registries of what plugins provide.

An agent maps one side's observation dict (each entry [N] on the env's device) to an action dict
``{"rudder": [N] in [-1, 1], "throttle": [N] in [0, 1], "fire": [N] bool}`` on the same device. It may
play either side: every player sees the world from its own side.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from arena.plugins import PluginHost, PluginInfo, get_host

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig

T = TypeVar("T")


@runtime_checkable
class Agent(Protocol):
    """What the env loop needs from an agent."""

    name: ClassVar[str]

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        ...

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        ...

    def train(self, mode: bool = True) -> "Agent":
        ...

    def eval(self) -> "Agent":
        ...

    def to(self, device: "str | torch.device") -> "Agent":
        ...


class BaseAgent:
    """Convenience base: device bookkeeping, train/eval flags, a no-op reset.

    Subclasses set ``name`` (and optionally ``aliases`` and ``description``) and implement ``act``.
    ``create`` passes keyword ``params`` (from the CLI or a tournament file) to ``__init__``.
    """

    name: ClassVar[str] = ""
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None) -> None:
        import torch

        from arena.env import EnvConfig

        self.device = torch.device(device)
        self.env_config = env_config if env_config is not None else EnvConfig()
        self.training = False

    @classmethod
    def create(cls, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, **params: Any) -> "BaseAgent":
        return cls(device=device, env_config=env_config, **params)

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        raise NotImplementedError

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        """Clear per-env memory where ``env_mask`` is set (all envs when None). Stateless: nothing."""

    def train(self, mode: bool = True) -> "BaseAgent":
        self.training = mode
        return self

    def eval(self) -> "BaseAgent":
        return self.train(False)

    def to(self, device: "str | torch.device") -> "BaseAgent":
        import torch

        self.device = torch.device(device)
        return self

    def __repr__(self) -> str:
        return f"{type(self).__name__}(device={self.device})"


class UnknownNameError(LookupError):
    """A name no plugin provides; the message suggests the closest ones."""


class DuplicateNameError(RuntimeError):
    """Two plugins offer the same name."""


@dataclass(frozen=True)
class Entry(Generic[T]):
    name: str
    obj: T
    source: PluginInfo
    aliases: tuple[str, ...] = ()


@dataclass
class Registry(Generic[T]):
    """Names (and aliases) to objects, each remembering the distribution that provided it."""

    kind: str
    entries: dict[str, Entry[T]] = field(default_factory=dict)  # canonical name -> entry
    lookup: dict[str, str] = field(default_factory=dict)  # name or alias -> canonical name

    def add(self, name: str, obj: T, source: PluginInfo, aliases: Iterable[str] = ()) -> None:
        aliases = tuple(aliases)
        for key in (name, *aliases):
            if key in self.lookup:
                other = self.entries[self.lookup[key]]
                raise DuplicateNameError(
                    f"{self.kind} name {key!r} is offered by both {describe(other)} and "
                    f"{source.distribution} {source.version} ({obj!r}); uninstall or disable one "
                    f"(ARENA_DISABLE_PLUGINS=<distribution>)"
                )
        self.entries[name] = Entry(name, obj, source, aliases)
        for key in (name, *aliases):
            self.lookup[key] = name

    def get(self, name: str) -> T:
        return self.entry(name).obj

    def entry(self, name: str) -> Entry[T]:
        if name in self.lookup:
            return self.entries[self.lookup[name]]
        close = difflib.get_close_matches(name, list(self.lookup), n=3, cutoff=0.5)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        known = ", ".join(sorted(self.entries)) or "none installed"
        raise UnknownNameError(f"unknown {self.kind} {name!r}{hint} (available: {known})")

    def names(self) -> list[str]:
        return sorted(self.entries)

    def __contains__(self, name: object) -> bool:
        return name in self.lookup


def describe(entry: Entry[Any]) -> str:
    return f"{entry.source.distribution} {entry.source.version} ({entry.obj!r})"


def agent_registry(host: PluginHost | None = None) -> Registry[type]:
    """Every agent class offered through ``arena_agents``."""
    host = host or get_host()
    reg: Registry[type] = Registry("agent")
    for info, classes in host.collect("arena_agents"):
        for cls in classes:
            name = getattr(cls, "name", "")
            if not name:
                raise DuplicateNameError(f"agent class {cls!r} from {info.distribution} has no 'name'")
            reg.add(name, cls, info, getattr(cls, "aliases", ()))
    return reg


def trainer_registry(host: PluginHost | None = None) -> Registry[type]:
    """Every trainer class offered through ``arena_trainers``."""
    host = host or get_host()
    reg: Registry[type] = Registry("trainer")
    for info, classes in host.collect("arena_trainers"):
        for cls in classes:
            reg.add(cls.name, cls, info, getattr(cls, "aliases", ()))
    return reg


def reward_registry(host: PluginHost | None = None) -> Registry[Any]:
    """Every reward function offered through ``arena_rewards``."""
    host = host or get_host()
    reg: Registry[Any] = Registry("reward")
    for info, mapping in host.collect("arena_rewards"):
        for name, fn in mapping.items():
            reg.add(name, fn, info)
    return reg
