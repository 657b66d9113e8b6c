"""Where batched play reports: a sink for finished games and batches, and the run's counts.

The tournament runner's sink writes to the results database; :class:`ListSink` keeps everything in
memory (a distributed league's workers, tests, benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from arena.tournament.results import GameResult


class ResultSink(Protocol):
    """Where the executor reports progress; the runner's adapter writes to the results database."""

    def batch_started(self, number: int, seed: int, num_envs: int, games: int) -> int:
        """Record a batch about to start; return the id to stamp on its games."""

    def games_finished(self, results: list[GameResult]) -> None:
        """Games that just ended (played out or forfeited)."""

    def batch_finished(self, batch_id: int) -> None:
        ...


@dataclass
class ListSink:
    """Collects everything in memory (tests, benchmarks)."""

    results: list[GameResult] = field(default_factory=list)
    batches: list[tuple[int, int, int, int]] = field(default_factory=list)

    def batch_started(self, number: int, seed: int, num_envs: int, games: int) -> int:
        self.batches.append((number, seed, num_envs, games))
        return number

    def games_finished(self, results: list[GameResult]) -> None:
        self.results.extend(results)

    def batch_finished(self, batch_id: int) -> None:
        pass


@dataclass
class ExecutionStats:
    games: int = 0  # games recorded, forfeits included
    forfeits: int = 0
    batches: int = 0
    steps: int = 0  # env steps over all batches
    env_steps: int = 0  # steps × envs: the simulation work done
    wall_s: float = 0.0
    left: int = 0  # games not started because a participant failed earlier in their batch (played next run)
    stopped_early: bool = False  # ``stop()`` ended the schedule before its last batch

    def count(self, results: list[GameResult]) -> None:
        """Games just recorded, forfeits included."""
        self.games += len(results)
        self.forfeits += sum(r.forfeit for r in results)

    @property
    def games_per_second(self) -> float:
        return self.games / self.wall_s if self.wall_s > 0 else 0.0
