"""The Agent contract and the registries of what plugins provide.

An agent maps one side's observation dict (each entry [N] on the env's device) to an action dict
``{"rudder": [N] in [-1, 1], "throttle": [N] in [0, 1], "fire": [N] bool}`` on the same device. It may
play either side: every player sees the world from its own side.

In team battles (``team_size`` T > 1) an agent whose class sets ``plays_team = True`` gets a side's
observation with [N, T] entries and returns [N, T] actions. Every other agent flies single aircraft:
the game loop (:mod:`arena.loop`) hands it each seat as a row of its own ([N·T] entries, a side's
seats next to each other), so a 1-v-1 agent flies any seat of any team unchanged.
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Protocol, TypeVar, runtime_checkable

from arena.guard import AgentCodeError, call_agent, head
from arena.plugins import PluginHost, PluginInfo, get_host

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig
    from arena.env.config import ObsMode

T = TypeVar("T")

# How a trained policy plays: drawing its actions as it did in training (train mode), or taking the most
# likely one (eval mode). One way everywhere: `arena play`, tournaments, training's evaluations and
# best.pt, exports. Deterministic: the taught league's best.pt beat every rung in 99.4-100 % of 1,000
# games that way and 47-95 % sampled, and a fresh PPO exploited it 7.5 % of the time against 40.5 %
# (docs/experiments/2026-11-28-one-way-a-checkpoint-plays.md). Scripted agents play as they are written.
POLICIES = ("sampled", "deterministic")
DEFAULT_POLICY = "deterministic"


def play_by(agent: Any, policy: str) -> None:
    """Switch ``agent`` to play by ``policy`` (one of :data:`POLICIES`)."""
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    if policy == "sampled":
        agent.train(True)
    else:
        agent.eval()


def ready_to_play(agent: Any, name: str, policy: str = DEFAULT_POLICY) -> Any:
    """``agent`` switched to play by ``policy``, its ``eval()`` (``train()``) run as agent code: one that
    raises, exits or changes the process is an :class:`AgentSpecError` naming the agent and the method,
    as a failing ``create()`` or ``load()`` is (``agent 'x': eval() raised RuntimeError: ...``): how a
    tournament and the wrappers set up what they built before the first game, as ``arena play``
    (:func:`arena.match.play_match`) and a trainer's opponents do through the same guard."""
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {', '.join(POLICIES)}, got {policy!r}")
    try:
        call_agent(name, "train" if policy == "sampled" else "eval", play_by, agent, policy)
    except AgentCodeError as exc:
        raise AgentSpecError(str(exc)) from None
    return agent


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
    plays_team: ClassVar[bool] = False  # True: act() takes a side's [N, T] team; else flown seat by seat
    obs_mode: ClassVar[str] = "default"  # "extended": the agent reads the extended observation (see needs_extended)
    ladder_rung: ClassVar[int | None] = None  # a scripted rung of the training league (--vs league), weakest 0

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None) -> None:
        import torch

        from arena.env import EnvConfig

        self.device = torch.device(device)
        self.env_config = env_config if env_config is not None else EnvConfig()
        self.training = False

    @classmethod
    def create(cls, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None,
               **params: Any) -> "BaseAgent":
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
    """Every agent class offered through ``arena_agents``; a name offered twice is an error."""
    return _build("agent", "arena_agents", host, None)


def trainer_registry(host: PluginHost | None = None) -> Registry[type]:
    """Every trainer class offered through ``arena_trainers``."""
    return _build("trainer", "arena_trainers", host, None)


def reward_registry(host: PluginHost | None = None) -> Registry[Any]:
    """Every reward function offered through ``arena_rewards``."""
    return _build("reward", "arena_rewards", host, None)


def _build(kind: str, hook: str, host: PluginHost | None, problems: list[str] | None) -> Registry[Any]:
    """Fill a registry from one hook. With ``problems`` given, clashes are appended there instead of
    raised, so a listing can still show everything else.

    An entry that is not what the hook promises (``[42]`` from ``arena_agents``, a class without a
    ``name``, a reward that is not callable) is skipped and reported once, naming its distribution,
    so one plugin's mistake never breaks the other agents; ``ARENA_STRICT_PLUGINS=1`` makes it fatal.
    """
    host = host or get_host()
    reg: Registry[Any] = Registry(kind)
    for info, offered in host.collect(hook):
        for name, obj, aliases in _entries(kind, hook, info, offered, host):
            try:
                reg.add(name, obj, info, aliases)
            except DuplicateNameError as exc:
                if problems is None:
                    raise
                problems.append(str(exc))
    if problems is not None:
        problems.extend(p for p in host.problems if p not in problems)
    return reg


def _entries(kind: str, hook: str, info: PluginInfo, offered: Any,
             host: PluginHost) -> list[tuple[str, Any, tuple[str, ...]]]:
    """The well-formed ``(name, object, aliases)`` entries of one plugin's answer; the rest reported."""
    where = f"{hook}() of {info.distribution} {info.version}"
    if kind == "reward":
        if not isinstance(offered, dict):
            host.bad_entry(info, f"{where} returned {type(offered).__name__}; expected a dict {{name: function}}")
            return []
        good: list[tuple[str, Any, tuple[str, ...]]] = []
        for name, fn in offered.items():
            if not isinstance(name, str) or not name or not callable(fn):
                host.bad_entry(info, f"{where}: entry {name!r}: {fn!r} skipped; expected a non-empty name and a "
                                     f"callable")
                continue
            good.append((name, fn, ()))
        return good
    if isinstance(offered, (str, bytes, dict)) or not isinstance(offered, (list, tuple, set, frozenset)):
        host.bad_entry(info, f"{where} returned {type(offered).__name__}; expected a list of {kind} classes")
        return []
    good = []
    for obj in offered:
        if not isinstance(obj, type):
            host.bad_entry(info, f"{where}: {obj!r} ({type(obj).__name__}) skipped; expected a {kind} class")
            continue
        name = getattr(obj, "name", "")
        if not isinstance(name, str) or not name:
            host.bad_entry(info, f"{where}: {obj.__name__} skipped; it has no 'name' (a non-empty str)")
            continue
        aliases = getattr(obj, "aliases", ())
        if isinstance(aliases, str) or not isinstance(aliases, (list, tuple)) or \
                not all(isinstance(a, str) and a for a in aliases):
            host.bad_entry(info, f"{where}: {obj.__name__}.aliases {aliases!r} ignored; expected a tuple of names")
            aliases = ()
        good.append((name, obj, tuple(aliases)))
    return good


# -- listing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CatalogRow:
    """One thing a plugin provides, as ``arena agents`` lists it."""

    kind: str  # "agent", "trainer" or "reward"
    name: str
    aliases: tuple[str, ...]
    distribution: str
    version: str
    description: str


@dataclass
class Catalog:
    rows: list[CatalogRow]
    broken: list[PluginInfo]
    problems: list[str]  # name clashes between plugins


def catalog(host: PluginHost | None = None) -> Catalog:
    """Everything the installed plugins provide, plus what is wrong with them — never raises for a
    plugin's fault (except in strict mode), because this is what a user runs to find the fault."""
    host = host or get_host()
    problems: list[str] = []
    rows = []
    for kind, hook in (("agent", "arena_agents"), ("trainer", "arena_trainers"), ("reward", "arena_rewards")):
        reg = _build(kind, hook, host, problems)
        for name in reg.names():
            entry = reg.entry(name)
            rows.append(CatalogRow(kind, name, entry.aliases, entry.source.distribution, entry.source.version,
                                   summary(entry.obj)))
    return Catalog(rows, list(host.broken), problems)


def summary(obj: Any) -> str:
    """A one-line description: ``description`` or ``help`` attribute, else the docstring's first line."""
    for attr in ("description", "help"):
        text = getattr(obj, attr, None)
        if isinstance(text, str) and text.strip():
            return head(text)
    return head(getattr(obj, "__doc__", None) or "")


# -- building agents from specs --------------------------------------------------------------------

CHECKPOINT_SUFFIXES = (".pt", ".pth")
SPEC_FORMS = "NAME, NAME:CHECKPOINT or CHECKPOINT.pt"


class AgentSpecError(ValueError):
    """An agent spec that cannot become an agent: unknown name, bad parameters, missing or foreign
    checkpoint. The message names the spec or file and what was expected, ready for the user."""


def parse_spec(spec: str) -> tuple[str | None, str | None]:
    """Split a spec into ``(name, checkpoint)``: ``"crank"`` → (crank, None), ``"ppo:run/a.pt"`` →
    (ppo, run/a.pt), ``"run/a.pt"`` or ``"ckpt:run/a.pt"`` → (None, run/a.pt): the file names its agent."""
    spec = spec.strip()
    if not spec:
        raise AgentSpecError(f"empty agent spec; expected {SPEC_FORMS}")
    head, sep, tail = spec.partition(":")
    # A one-letter head is a Windows drive (C:\runs\a.pt), not an agent name.
    if sep and len(head) > 1 and not any(c in head for c in "/\\") and not head.endswith(CHECKPOINT_SUFFIXES):
        if not tail:
            raise AgentSpecError(f"agent spec {spec!r}: expected a checkpoint path after '{head}:'")
        return (None if head == "ckpt" else head), tail
    if spec.endswith(CHECKPOINT_SUFFIXES) or any(c in spec for c in "/\\"):
        return None, spec
    return spec, None


def build_agent(spec: str, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                registry: Registry[type] | None = None, **params: Any) -> Agent:
    """Turn a spec from the command line or a tournament file into a ready agent.

    ``NAME`` (or an alias) calls ``create(device, env_config, **params)``; ``NAME:PATH`` calls
    ``load(PATH, device=..., env_config=...)`` of that agent class; a bare ``PATH.pt`` reads the
    checkpoint's ``"agent"`` entry to find the class first. Every mistake a user can make raises
    ``AgentSpecError`` with a message fit to print as it is.
    """
    name, path = parse_spec(spec)
    registry = registry if registry is not None else agent_registry()
    if path is not None and name is None:
        name = checkpoint_agent_name(path)
    assert name is not None
    try:
        entry = registry.entry(name)
    except UnknownNameError as exc:
        where = f" (named by checkpoint {path})" if path is not None and not spec.startswith(f"{name}:") else ""
        raise AgentSpecError(f"{exc}{where}") from None
    cls = entry.obj
    if path is None:
        create = getattr(cls, "create", None)
        if not callable(create):
            raise AgentSpecError(f"agent {entry.name!r} from {describe(entry)} has no create(); it cannot be built")
        try:
            agent = call_agent(entry.name, "create", create, device=device, env_config=env_config, **params)
        except AgentCodeError as exc:
            cause = exc.__cause__
            if isinstance(cause, (TypeError, ValueError)):  # most often a bad parameter: say it plainly
                raise AgentSpecError(f"agent {entry.name!r}: {head(str(cause))}") from cause
            raise AgentSpecError(str(exc)) from exc
        return checked_agent(agent, entry.name, "create()")
    loader = getattr(cls, "load", None)
    if loader is None:
        raise AgentSpecError(f"agent {entry.name!r} does not load checkpoints (it has no load()); "
                             f"use plain {entry.name!r}")
    check_file(path)
    try:
        agent = call_agent(entry.name, "load", loader, path, device=device, env_config=env_config, **params)
    except AgentCodeError as exc:  # any failure to load is the file's problem as the user sees it
        cause = exc.__cause__
        if isinstance(cause, AgentSpecError):
            raise cause from None
        text = exc.cause
        if path in text:  # the loader's own message already names the file: say it once
            raise AgentSpecError(text.partition(": ")[2]) from exc
        raise AgentSpecError(f"checkpoint {path}: agent {entry.name!r} could not load it: {text}") from exc
    return checked_agent(agent, entry.name, "load()")


def checked_agent(agent: Any, name: str, made_by: str) -> Agent:
    """Refuse what a plugin's create()/load() returned when it cannot act (None, a number, ...)."""
    if not callable(getattr(agent, "act", None)):
        raise AgentSpecError(f"agent {name!r}: {made_by} returned {type(agent).__name__}, which has no act(); "
                             f"expected an agent object")
    return agent


def checkpoint_agent_name(path: str) -> str:
    """The agent class a checkpoint file belongs to (its ``"agent"`` entry)."""
    data = read_checkpoint(path)
    name = data.get("agent") if isinstance(data, dict) else None
    if not isinstance(name, str) or not name:
        got = f"a dict with keys {sorted(map(str, data))[:8]}" if isinstance(data, dict) else type(data).__name__
        raise AgentSpecError(f"checkpoint {path}: not an arena checkpoint — expected a dict with an 'agent' name "
                             f"and a 'format_version', got {got}")
    return name


def read_checkpoint(path: str) -> Any:
    """``torch.load`` with ``weights_only=True`` (no code runs from the file) and a one-line error."""
    from arena.torchfile import TorchFileError, read_torch_file

    check_file(path)
    try:
        return read_torch_file(path)
    except TorchFileError as exc:
        raise AgentSpecError(str(exc)) from exc


def check_file(path: str) -> None:
    if not os.path.exists(path):
        raise AgentSpecError(f"checkpoint {path}: no such file (expected {SPEC_FORMS})")
    if not os.path.isfile(path):
        raise AgentSpecError(f"checkpoint {path}: not a file; expected a .pt checkpoint")


@dataclass(frozen=True)
class TrainedFor:
    """The battles a checkpoint was trained in, as far as they decide where it can play: its team size
    and the observation it reads (the ``env_config`` its trainer saved in it)."""

    path: str
    team_size: int
    obs_mode: ObsMode


class TeamSizeConflict(AgentSpecError):
    """Team checkpoints trained in teams of different sizes: the battles' size has to be chosen."""


def trained_for(path: str | os.PathLike[str]) -> TrainedFor | None:
    """What checkpoint ``path`` was trained in, read from its ``env_config``; None when it records none
    or cannot be read (building the agent then says what is wrong with the file).

    The tensors are memory-mapped, not read: a league asks this of every checkpoint before loading any.
    """
    from arena.env import EnvConfig
    from arena.torchfile import TorchFileError, read_torch_file

    try:
        data = read_torch_file(path, mmap=True)
    except TorchFileError:  # an old (non-zip) file cannot be mapped; any other fault shows when it loads
        try:
            data = read_torch_file(path)
        except TorchFileError:
            return None
    saved = data.get("env_config") if isinstance(data, dict) else None
    if not isinstance(saved, dict):
        return None
    try:  # checked like any EnvConfig: a malformed entry says nothing rather than something wrong
        config = EnvConfig.from_dict({k: saved[k] for k in ("team_size", "obs_mode") if k in saved})
    except (TypeError, ValueError):
        return None
    return TrainedFor(str(path), config.team_size, config.obs_mode)


def team_size_for(trained: Iterable[TrainedFor | None]) -> int | None:
    """The team size of battles between these checkpoints when nobody gave one; None when none asks.

    A 1-v-1 checkpoint flies any seat of any team, so only team checkpoints ask, and they must agree:
    a MAPPO team plays its own size only, and a team policy's own size is the one it knows best.
    """
    teams = [t for t in trained if t is not None and t.team_size > 1]
    for other in teams[1:]:
        if other.team_size != teams[0].team_size:
            first = teams[0]
            raise TeamSizeConflict(f"checkpoints {first.path} (trained in {first.team_size} v {first.team_size}) and "
                                   f"{other.path} ({other.team_size} v {other.team_size}) disagree on the team size")
    return teams[0].team_size if teams else None


def with_obs_mode(env_config: "EnvConfig", trained: TrainedFor | None) -> "EnvConfig":
    """``env_config`` with the observation ``trained``'s checkpoint reads, to build that agent with.

    Agents in one battle may read different observations: the env adds the extended keys when one of
    them reads those, and hands each agent only its own (arena.loop.observation_config).
    """
    from dataclasses import replace

    if trained is None or trained.obs_mode == env_config.obs_mode:
        return env_config
    return replace(env_config, obs_mode=trained.obs_mode)
