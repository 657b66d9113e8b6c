"""Where batched play reports: a sink for finished games and batches, which owns the run's game counts
and its progress line, and the executor's own counts (steps, batches, wall time).

The tournament runner's sink writes to the results database; :class:`ListSink` keeps everything in
memory (a distributed league's workers, tests, benchmarks).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from arena.tournament.results import GameResult

if TYPE_CHECKING:
    from arena.progress import Progress


class ResultSink:
    """Where the executor (or the Ray driver) reports: the games as they end, each batch's start and end.

    The sink is the one owner of the games counted so far and of the progress line (``progress``, when
    one is shown): whoever plays only hands it results. ``stop()``, asked before each batch, ends the
    schedule early (a decided SPRT). Subclasses keep the results somewhere (:meth:`keep`)."""

    def __init__(self, progress: "Progress | None" = None) -> None:
        self.progress = progress
        self.games = 0  # games recorded, forfeits included
        self.forfeits = 0

    def batch_started(self, number: int, seed: int, num_envs: int, games: int) -> int:
        """Record a batch about to start; return the id to stamp on its games."""
        return number

    def games_finished(self, results: list[GameResult]) -> None:
        """Games that just ended (played out or forfeited): kept, counted and shown."""
        self.keep(results)
        self.games += len(results)
        self.forfeits += sum(r.forfeit for r in results)
        self.show(forfeits=self.forfeits)

    def keep(self, results: list[GameResult]) -> None:
        """Where the results go; here, nowhere."""

    def batch_finished(self, batch_id: int) -> None:
        """A batch whose games are all kept."""

    def stop(self) -> bool:
        """Whether the games not yet started are no longer wanted."""
        return False

    def show(self, force: bool = False, **fields: object) -> None:
        """The progress line, at the games counted so far (with ``fields`` beside them)."""
        if self.progress is not None:
            self.progress.update(self.games, force=force, **fields)


class ListSink(ResultSink):
    """Collects everything in memory (tests, benchmarks, a Ray worker)."""

    def __init__(self, progress: "Progress | None" = None) -> None:
        super().__init__(progress)
        self.results: list[GameResult] = []
        self.batches: list[tuple[int, int, int, int]] = []

    def batch_started(self, number: int, seed: int, num_envs: int, games: int) -> int:
        self.batches.append((number, seed, num_envs, games))
        return number

    def keep(self, results: list[GameResult]) -> None:
        self.results.extend(results)


@dataclass
class ExecutionStats:
    """What playing cost: the sink counts the games, this the work behind them."""

    batches: int = 0
    steps: int = 0  # env steps over all batches
    env_steps: int = 0  # steps × envs: the simulation work done
    wall_s: float = 0.0
    left: int = 0  # games not started because a participant failed earlier in their batch (played next run)
    stopped_early: bool = False  # the sink's ``stop()`` ended the schedule before its last batch
    lost: list[str] = field(default_factory=list)  # Ray batches given up on after their retries, one line each
