"""Agents of one kind acting as one call: the contract a plugin opts into, and the pieces families are built from.

A league of a hundred participants, each acting on its own slice of the batch, makes a hundred calls a
step, each with its own gather, check and scatter around it; on a GPU each call is also a row of small
kernel launches. Participants of one kind (checkpoints of one architecture, CrankAgent variants, seeded
placeholders) can act together instead: one call on all their rows, side by side in member order.

The contract, all optional (an agent that does not opt in is called on its own, as before):

- ``agent.family_key()`` returns something hashable; agents of one class with equal keys can act as one.
  ``None`` (the default) says this one cannot.
- ``type(agent).act_together(members, rows, streams)`` returns a :class:`Family`: one object that acts
  for ``members`` on their rows concatenated (``rows[i]`` rows for member i, member 0's first). While it
  plays, the family keeps the per-row memory; the members are not called. ``streams[i](fn)`` runs
  ``fn`` with torch's global generator switched to member i's stream, so that a sampling member draws
  what it would have drawn alone (a tournament gives each participant a stream of its own).
- The family's ``act``, ``reset`` and ``keep_rows`` mirror an agent's; ``keep_rows(rows)`` keeps only
  the given rows (in that order) when a batch drops its finished battles.

A family acts for its members exactly as they would act alone, within float tolerance
(:func:`arena.testing.check_family` checks it). A fault inside a family's call is every member's.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import torch

Stream = Callable[[Callable[[], Any]], Any]  # runs a call under one member's random stream


def own_stream(call: Callable[[], Any]) -> Any:
    """The stream of a member with none of its own: the caller's generator, in member order."""
    return call()


@runtime_checkable
class Family(Protocol):
    """Several agents acting as one, on their rows side by side (member 0's first)."""

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        ...

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        ...

    def keep_rows(self, rows: "torch.Tensor") -> None:
        ...


def family_key(agent: Any) -> Hashable | None:
    """(class, the agent's own key) when ``agent`` can act with others of its kind; None otherwise."""
    key_of = getattr(agent, "family_key", None)
    if not callable(key_of) or not callable(getattr(type(agent), "act_together", None)):
        return None
    key = key_of()
    return None if key is None else (type(agent), key)


def act_together(members: Sequence[Any], rows: Sequence[int], streams: Sequence[Stream] | None = None) -> Family:
    """The family of ``members`` (all with one :func:`family_key`), on ``rows[i]`` rows each."""
    if not members or len(rows) != len(members):
        raise ValueError(f"act_together: {len(members)} members and {len(rows)} row counts")
    streams = list(streams) if streams is not None else [own_stream] * len(members)
    return type(members[0]).act_together(list(members), list(rows), streams)


class MemberRows:
    """Which member each row of a family belongs to: contiguous spans, member 0's first."""

    def __init__(self, counts: Sequence[int], device: "torch.device") -> None:
        import torch

        self.members = len(counts)
        self.device = device
        self.index = torch.repeat_interleave(torch.arange(self.members, device=device),
                                             torch.tensor(list(counts), device=device))
        self.counts = [int(c) for c in counts]

    @property
    def total(self) -> int:
        return sum(self.counts)

    def spans(self) -> list[tuple[int, int, int]]:
        """(member, start, stop) of every member with rows."""
        out, start = [], 0
        for m, count in enumerate(self.counts):
            if count:
                out.append((m, start, start + count))
            start += count
        return out

    def per_row(self, values: Sequence[float], dtype: "torch.dtype") -> "torch.Tensor":
        """One value a member, as a value a row."""
        import torch

        return torch.tensor(list(values), dtype=dtype, device=self.device)[self.index]

    def keep(self, rows: "torch.Tensor") -> None:
        """Only ``rows`` (increasing) stay; each member keeps its own, in order."""
        import torch

        self.index = self.index[rows.to(self.device)]
        self.counts = torch.bincount(self.index, minlength=self.members).tolist()


class ScriptedFamily:
    """A scripted agent's family: one instance of its class flying every member's rows, with the numeric
    attributes that differ between members (``parameters``, which its ``act`` reads as scalars or per-row
    tensors alike) held per row. Its per-row memory is the instance's own, as for one agent."""

    def __init__(self, members: Sequence[Any], rows: Sequence[int], parameters: Sequence[str]) -> None:
        import torch

        first = members[0]
        spans = MemberRows(rows, first.device)
        self.agent = copy.copy(first)
        self.agent.reset(None)
        self.varying: dict[str, torch.Tensor] = {}
        for name in parameters:
            values = [getattr(m, name) for m in members]
            if any(v != values[0] for v in values):
                dtype = torch.float32 if any(isinstance(v, float) for v in values) else torch.int64
                self.varying[name] = spans.per_row(values, dtype)
                setattr(self.agent, name, self.varying[name])

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        return self.agent.act(observation)

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        self.agent.reset(env_mask)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        self.varying = keep_memory_rows(self.varying, rows)
        for name, value in self.varying.items():
            setattr(self.agent, name, value)
        self.agent.keep_rows(rows)


def numeric_attributes(agent: Any) -> list[str]:
    """The agent's own int and float attributes (not bools): a scripted agent's parameters."""
    return [k for k, v in vars(agent).items() if isinstance(v, (int, float)) and not isinstance(v, bool)]


class ActsWithVariants:
    """Mixin for a scripted agent whose parameters are its numeric attributes and whose ``act`` reads each
    as a scalar or a per-row tensor alike: its variants (other parameters, same class) act as one
    :class:`ScriptedFamily`. The class also implements ``keep_rows`` for its per-row memory."""

    def family_key(self) -> Hashable:
        agent: Any = self
        return (agent.env_config, agent.training, str(agent.device))

    @classmethod
    def act_together(cls, members: Sequence[Any], rows: Sequence[int], streams: Sequence[Stream]) -> Family:
        return ScriptedFamily(members, rows, numeric_attributes(members[0]))


def keep_memory_rows(memory: dict[str, "torch.Tensor"], rows: "torch.Tensor") -> dict[str, "torch.Tensor"]:
    """Per-row memory tensors with only ``rows`` kept."""
    return {k: v[rows.to(v.device)] for k, v in memory.items()}
