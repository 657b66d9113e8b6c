"""Prioritized fictitious self-play: a run's past checkpoints (and a league's ladder), drawn by how
little the learner beats them, and the record of the games it played against each."""

from __future__ import annotations

import math
import sys
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.guard import AgentCodeError, call_agent
from arena.run_files import CHECKPOINT_PATTERN, files_by_step, list_exploiters

if TYPE_CHECKING:
    import torch

# Every process's picklable object, in rank order (arena.training.process_group.Group.all_gather_object).
GatherObjects = Callable[[Any], list[Any]]


@dataclass
class Tally:
    """Games the learner played against one opponent (or one past checkpoint), from its own side."""

    wins: float = 0.0
    draws: float = 0.0
    losses: float = 0.0

    @property
    def games(self) -> float:
        return self.wins + self.draws + self.losses

    def win_probability(self) -> float:
        """Learner's score against it, with a uniform prior so an unplayed checkpoint reads 0.5."""
        return (self.wins + 0.5 * self.draws + 1.0) / (self.games + 2.0)


@dataclass
class SelfPlayPool:
    """This run's past checkpoints, sampled with priority to those the learner beats least.

    The PFSP weighting ``(1 - p)^power`` (p = learner's estimated score against a checkpoint)
    concentrates play on opponents that still give trouble while every checkpoint keeps a little
    probability (``floor``), so forgotten skills get re-tested. New checkpoints are picked up by
    :meth:`refresh`, which the trainer calls at the start of each rollout.
    """

    directory: Path
    loader: Callable[[Path], Any]  # checkpoint path -> frozen agent in eval mode
    fixed: dict[str, Any] = field(default_factory=dict)  # --vs league: ladder agents drawn with the checkpoints
    # Share of draws that go to ``fixed`` once checkpoints exist (each group by PFSP within it); None:
    # one pool, where every new checkpoint takes a little more from the fixed agents.
    fixed_share: float | None = None
    power: float = 2.0
    floor: float = 0.05
    since: int = 0  # checkpoints of earlier steps are not drawn (a league's warm-up)
    cache_size: int = 8
    records: dict[str, Tally] = field(default_factory=dict)  # file name -> record
    warn: Callable[[str], None] = field(default=lambda text: print(f"warning: {text}", file=sys.stderr))
    skipped: dict[str, str] = field(default_factory=dict)  # unreadable file name -> why (never drawn again)
    # checkpoint files saved off the save schedule (where a run stopped): never drawn, so a resumed run
    # draws as the run that never stopped
    held_out: set[str] = field(default_factory=set)
    _cache: "OrderedDict[str, Any]" = field(default_factory=OrderedDict)

    def refresh(self) -> None:
        for name in self.fixed:
            self.records.setdefault(name, Tally())
        found = files_by_step(self.directory, CHECKPOINT_PATTERN) + list_exploiters(self.directory)
        for step, path in found:  # a league's exploiters join as its past does
            if path.name not in self.skipped and path.name not in self.held_out and step >= self.since:
                self.records.setdefault(path.name, Tally())


    def weights(self) -> dict[str, float]:
        return {name: max((1.0 - rec.win_probability()) ** self.power, self.floor) for name,
                rec in self.records.items()}

    def sample(self, count: int, generator: "torch.Generator") -> list[str]:
        """``count`` checkpoint names drawn by PFSP weight (with replacement); empty when none exist yet."""
        import torch

        weights = self.weights()
        if not weights:
            return []
        names = list(weights)
        probs = torch.tensor([weights[n] for n in names], dtype=torch.float64)
        fixed = torch.tensor([n in self.fixed for n in names])
        if self.fixed_share is not None and fixed.any() and not fixed.all():
            share = torch.where(fixed, self.fixed_share, 1.0 - self.fixed_share)
            probs = share * probs / torch.where(fixed, probs[fixed].sum(), probs[~fixed].sum())
        picks = torch.multinomial(probs, count, replacement=True, generator=generator)
        return [names[i] for i in picks.tolist()]

    def agent(self, name: str) -> Any:
        """The snapshot in file ``name``; :class:`SnapshotError` (after one warning) when it cannot be
        loaded — a damaged or foreign ``ckpt_*.pt`` in the run folder is skipped, never fatal."""
        if name in self.fixed:
            return self.fixed[name]
        if name in self._cache:
            self._cache.move_to_end(name)
            return self._cache[name]
        if name in self.skipped:
            raise SnapshotError(f"{name}: {self.skipped[name]}")
        try:
            agent = call_agent(name, "load", self.loader, self.directory / name)
        except AgentCodeError as exc:
            self.skipped[name] = exc.cause
            self.records.pop(name, None)
            self.warn(f"--vs self: skipping {self.directory / name}: {exc.cause}")
            raise SnapshotError(f"{name}: {exc.cause}") from None
        self._cache[name] = agent
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return agent

    def record(self, name: str, wins: float, draws: float, losses: float) -> None:
        rec = self.records.setdefault(name, Tally())
        rec.wins += wins
        rec.draws += draws
        rec.losses += losses

    def snapshot_records(self) -> dict[str, tuple[float, float, float]]:
        """The records as they are now, for :meth:`merge_records` after this process credits its games."""
        return {name: (t.wins, t.draws, t.losses) for name, t in self.records.items()}

    def merge_records(self, before: dict[str, tuple[float, float, float]], gather: GatherObjects) -> None:
        """Pool the games every process of a run played against each past checkpoint (or ladder agent)
        since ``before``, so every process holds the same records and draws alike; sums run in the
        order ``gather`` returns the processes' parts (rank order)."""
        mine = {}
        for name, tally in self.records.items():
            base = before.get(name, (0.0, 0.0, 0.0))
            delta = (tally.wins - base[0], tally.draws - base[1], tally.losses - base[2])
            if any(delta):
                mine[name] = delta
        every = gather(mine)
        names = list(self.records) + [n for part in every for n in part if n not in self.records]
        for name in dict.fromkeys(names):
            total = list(before.get(name, (0.0, 0.0, 0.0)))
            for part in every:
                for i, value in enumerate(part.get(name, (0.0, 0.0, 0.0))):
                    total[i] += value
            if name in self.records or any(total):
                self.records[name] = Tally(*total)

    def state_dict(self) -> dict[str, Any]:
        return {"records": {n: [r.wins, r.draws, r.losses] for n, r in self.records.items()}}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        records = state.get("records", {})
        if not isinstance(records, dict):
            raise ValueError(f"opponents.self_play.records: expected a dict, got {type(records).__name__}")
        out = {}
        for name, value in records.items():
            ok = isinstance(name, str) and isinstance(value, (list, tuple)) and len(value) == 3 and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v >= 0 for v in value)
            if not ok:
                raise ValueError(f"opponents.self_play.records[{name!r}]: expected [wins, draws, losses] "
                                 f"(finite numbers >= 0), got {value!r}"[:300])
            out[name] = Tally(*map(float, value))
        self.records = out


class SnapshotError(RuntimeError):
    """A self-play checkpoint that cannot be loaded (already reported, and skipped from now on)."""
