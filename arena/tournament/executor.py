"""Batched play of many pairings at once.

All games of a batch (:mod:`arena.tournament.batching`) share one :class:`~arena.env.TensorEnv`. Each
ordered pairing owns a fixed block of env slots and plays its games in them back to back; the batch's
:class:`~arena.tournament.slots.SlotTable` says who plays in each slot, which game, from which start.
Every slot keeps its two players for the whole batch, so each participant acts **once per step** on
one gathered batch (the game loop's seating, :mod:`arena.loop`; a family of agents of one kind, one
call for all: :mod:`arena.families`), and agents with per-env memory stay aligned; ``reset(mask)``
clears the slots whose game ended. In team battles a participant flies every seat of its side.

The executor steps the game loop and judges each step's failures itself (a forfeit, not an error), and
hands the seating who still plays (``set_active``): a participant with no game left in the batch is not called. Once a
quarter of the envs idle, the batch keeps only those that play (:meth:`arena.env.TensorEnv.keep_envs`;
every agent keeps its rows' memory with ``keep_rows``), unless an agent cannot drop rows or the step is
compiled (a fixed batch size).

A participant that raises (``sys.exit`` included), hands back a malformed action or NaNs forfeits the
games it failed in (those in flight), with the reason recorded; everyone else plays on. Its games not
yet started in the batch are left unplayed, for the next run. With a ``time_per_move`` budget, an act()
call that takes longer is a forfeit too, as in fastchess; a move that never returns is one as well
(:func:`arena.agent_calls.timed_move`), and that agent instance is never called again in this process.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arena.env.teams import side_total
from arena.seeds import text_seed
from arena.tournament.batching import Batch, batch_seed, plan_batches
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.results import P1_WINS, P2_WINS, GameResult
from arena.tournament.schedule import Unit
from arena.tournament.sinks import ExecutionStats, ListSink, ResultSink
from arena.tournament.slots import SlotTable

if TYPE_CHECKING:
    import torch

    from arena.agent_calls import AgentFailure

# A batch drops its finished battles once fewer than this share of its envs still play (and at least
# KEEP_MIN_ENVS envs would go): the long games that finish a batch no longer step the short ones' envs.
KEEP_SHARE = 0.75
KEEP_MIN_ENVS = 64
REASON_MAX = 300  # characters of an exception message kept as a forfeit reason


@dataclass(frozen=True)
class BatchSpec:
    """One batch to play: its games, its number in the league's order, its env seed, and (replays) the
    games to record, by slot."""

    batch: Batch
    number: int
    seed: int
    record: Mapping[int, set[int]] = field(default_factory=dict)


def play(plan: LeaguePlan, units: Sequence[Unit], sink: ResultSink, first_batch: int = 0) -> ExecutionStats:
    """Play every game of ``units`` between ``plan.agents`` (indexed by the units' ``p1``/``p2``).

    Batch ``first_batch + i`` is seeded with :func:`batch_seed`, so a run is reproducible on the same
    device, and a resumed run (which passes the number of batches already played) draws new spawns
    instead of repeating old ones. ``sink.stop()``, asked before each batch, ends the schedule early
    (a decided SPRT). The move budget (:attr:`LeaguePlan.time_per_move`) bounds each act() call after a
    batch's first (which may pay one-time costs such as loading CUDA kernels, and is only bounded
    against hangs: :func:`arena.agent_calls.hang_bound`); on a GPU the clock includes a synchronize.
    """
    stats = ExecutionStats()
    start = time.perf_counter()
    try:
        for i, batch in enumerate(plan_batches(units, plan.max_envs)):
            if sink.stop():
                stats.stopped_early = True
                break
            number = first_batch + i
            _BatchRun(BatchSpec(batch, number, batch_seed(plan.seed, number)), plan, sink, stats).run()
            stats.batches += 1
    finally:
        stats.wall_s = time.perf_counter() - start
    return stats


def play_batch(plan: LeaguePlan, batch: Batch, number: int) -> tuple[list[GameResult], ExecutionStats]:
    """Batch ``number`` of the league, alone, exactly as :func:`play` plays it in turn (a worker of a
    distributed league runs this). ``plan.agents`` need only hold the batch's participants. The
    results carry ``number`` as their batch id; the caller stamps the stored id."""
    sink, stats = ListSink(), ExecutionStats(batches=1)
    start = time.perf_counter()
    _BatchRun(BatchSpec(batch, number, batch_seed(plan.seed, number)), plan, sink, stats).run()
    stats.wall_s = time.perf_counter() - start
    return sink.results, stats


def replay_batch(plan: LeaguePlan, batch: Batch, seed: int,
                 record: "Mapping[int, set[int]]") -> tuple[list[GameResult], dict[tuple[int, int], Any]]:
    """Play ``batch`` again exactly as :func:`play` played it (its stored env ``seed``, same layout and
    agents) and record the games ``record`` names (slot -> game numbers). Returns every game's result,
    to check the battles against the stored ones, and the recorded battles by (slot, game)."""
    sink = ListSink()
    runner = _BatchRun(BatchSpec(batch, 0, seed, record), plan, sink, ExecutionStats())
    runner.run()
    return sink.results, runner.recorded


class _BatchRun:
    """The state of one batch while it plays: its slot table, its pairings' queues, its seating."""

    def __init__(self, spec: BatchSpec, plan: LeaguePlan, sink: ResultSink, stats: ExecutionStats) -> None:
        import torch

        self.spec, self.plan, self.sink, self.stats = spec, plan, sink, stats
        self.record = {s: set(g) for s, g in spec.record.items()}  # replays: slot -> games to record
        self.recorder: Any = None
        self.recorded: dict[tuple[int, int], Any] = {}  # what was recorded, by (slot, game)
        self.table = SlotTable.of(spec.batch)
        self.unit_slots = self.table.unit_slots(len(spec.batch.units))
        self.queues = [deque(u.games) for u in spec.batch.units]  # a pairing's games, taken by whichever slot is free
        self.env: Any = None  # while games start from their own seeds: the env whose next starts are aimed
        self.step = 0
        self.members = sorted(set(self.table.p1.tolist()) | set(self.table.p2.tolist()))
        self.member_index = torch.tensor(self.members, dtype=torch.long)
        self.seating: Any = None
        self.failed: set[int] = set()
        self.team_size = plan.env_config.team_size if plan.env_config is not None else 1
        self.batch_id = -1

    # -- main loop -----------------------------------------------------------------------------------

    def run(self) -> None:
        import torch

        from arena.agent_calls import abandoned
        from arena.env import TensorEnv
        from arena.loop import Controller, GameLoop, Seating, observation_config

        plan, spec, n = self.plan, self.spec, len(self.table)
        config = observation_config(plan.env_config, [plan.agents[k] for k in self.members])
        env = TensorEnv(n, device=plan.device, seed=spec.seed, config=config)
        # Each participant draws from a stream of its own in this batch: stochastic agents do not share one.
        controllers = [Controller(plan.agents[k], plan.names[k], "participant",
                                  rng_seed=text_seed(f"arena-agent:{spec.seed}:{plan.names[k]}")) for k in self.members]
        self.batch_id = self.sink.batch_started(spec.number, spec.seed, n, spec.batch.games)
        for k in self.members:  # hung in an earlier batch: its games wait for the next run's fresh instance
            if abandoned(plan.agents[k]):
                self._leave_queued(k)
        self._next_games(list(range(n)))
        # The seating: participant k flies its p1 slots, then its p2 slots, as one batch.
        position = torch.full((int(self.member_index.max()) + 1,), -1, dtype=torch.long)
        position[self.member_index] = torch.arange(len(self.members))
        owner = torch.stack((position[self.table.p1], position[self.table.p2]))
        self.seating = Seating(controllers, owner, env.team_size, plan.device, move_limit=plan.time_per_move,
                               families=True)
        self._update_active()  # a participant with no game from the start (more slots than games) idles
        loop = GameLoop(env, self.seating)
        if self.record:
            from arena.replay import BattleRecorder

            self.recorder = BattleRecorder(sorted(self.record))
            loop.observers.append(self.recorder)
        try:
            self._play(env, loop)
        finally:
            self.seating.close()
        self.sink.batch_finished(self.batch_id)

    def _play(self, env: Any, loop: Any) -> None:
        """Step until every game of the batch is over (or, replaying, every wanted game is recorded), the
        failures of each step judged here."""
        import torch

        plan, table = self.plan, self.table
        devices = [plan.device] if plan.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(self.spec.seed)  # stochastic policies draw from the global generator
            if plan.game_seeds is not None:  # every game from its own start (replayable alone, mirrored pairs)
                starts = [self._seed_of(p1, p2, g) for p1, p2, g in zip(table.p1.tolist(), table.p2.tolist(),
                                                                         table.game.tolist())]
                obs = env.reset(game_seeds=torch.tensor(starts, dtype=torch.int64))
                self.env = env  # from now on a slot's next start follows its pairing's next game
                for u in range(len(self.queues)):
                    self._aim(u)
            else:
                obs = env.reset()
            self._faults(self.seating.reset())
            wanted = sum(len(g) for g in self.record.values())
            while bool(table.playing.any()) and not (wanted and len(self.recorded) == wanted):
                turn = loop.step(obs, judge=self._faults)
                obs = turn.next_obs
                self.step += 1
                self.stats.steps += 1
                self.stats.env_steps += len(table)
                self._faults(self.seating.nan_failures())
                restarted = self._collect(turn.dones, turn.infos)
                if restarted is not None:
                    obs = restarted
                if self._worth_keeping(env):
                    obs = self._keep_playing(env)

    # -- pieces --------------------------------------------------------------------------------------

    def _worth_keeping(self, env: Any) -> bool:
        """Whether to drop the finished battles now: few envs still play, the step's cost scales with the
        batch (not a compiled step), and every agent still playing can drop rows of its memory."""
        n, playing = len(self.table), int(self.table.playing.sum())
        return (0 < playing < KEEP_SHARE * n and n - playing >= KEEP_MIN_ENVS and not env.compiled
                and self.seating.can_keep_envs())

    def _keep_playing(self, env: Any) -> dict[str, Any]:
        """Keep only the envs with a game in play, renumbered in order; returns their observation."""
        import torch

        envs = torch.nonzero(self.table.playing).flatten()
        if self.recorder is not None:
            self.recorder.keep_envs(envs)
            env.watch(None)
        failures = self.seating.keep_envs(envs)
        obs = env.keep_envs(envs)
        if self.recorder is not None:
            env.watch(self.recorder.index)
        self.table.keep(envs)
        self.unit_slots = self.table.unit_slots(len(self.spec.batch.units))
        self._faults(failures)
        return obs

    def _faults(self, failures: "list[AgentFailure]") -> None:
        """Each failing participant forfeits what it has left in the batch; everyone else plays on. A game
        between two participants that failed in the same step (a family's shared call, say) has no
        result: neither is credited, and it is left unplayed for the next run."""
        if not failures:
            return
        together = {self.members[failure.index] for failure in failures if failure.index is not None}
        for failure in failures:
            assert failure.index is not None
            self._forfeit(self.members[failure.index], failure.reason, together)
        self._update_active()

    def _update_active(self) -> None:
        """Hand the seating who still plays: a participant with no game left in the batch (or that failed)
        is not called again, so the steps that finish the others' games cost it nothing."""
        busy = self.table.busy(self.member_index).tolist()
        self.seating.set_active([b > 0 and k not in self.failed for k, b in zip(self.members, busy)])

    def _next_games(self, slots: list[int]) -> bool:
        """Each of ``slots`` (in order) takes its pairing's next game, or idles when there is none; whether
        one idles (its two players then sit in one game fewer)."""
        import torch

        if not slots:
            return False
        index = torch.tensor(slots, dtype=torch.long)
        games = [self.queues[u].popleft() if self.queues[u] else -1 for u in self.table.unit[index].tolist()]
        self.table.game[index] = torch.tensor(games, dtype=torch.long)
        self.table.began[index] = self.step
        return -1 in games

    def _seed_of(self, p1: int, p2: int, game: int, stored: bool = False) -> int:
        """The start seed of ``game`` between ``p1`` and ``p2`` (0 for no game: the slot then idles). ``stored``:
        what the game's record keeps, its batch's seed when games have no starts of their own."""
        if self.plan.game_seeds is None:
            return self.spec.seed if stored else 0
        return self.plan.game_seeds(p1, p2, game) if game >= 0 else 0

    def _collect(self, dones: "torch.Tensor", infos: dict[str, Any]) -> "dict[str, Any] | None":
        """Record games that ended this step and start the next game in their slots; returns the
        observation when some slots had to be restarted from another seed (else None)."""
        import torch

        ended = torch.nonzero(dones).flatten()
        if ended.numel() == 0:
            return None
        ep, t = infos["episode"], self.table
        columns = (infos["winner"], ep["length"], side_total(ep["return"]["p1"]), side_total(ep["return"]["p2"]),
                   side_total(ep["missiles_fired"]["p1"]), side_total(ep["missiles_fired"]["p2"]),
                   side_total(ep["kills"]["p1"]), side_total(ep["kills"]["p2"]))
        stats = torch.stack([c.to(torch.float64) for c in columns], 1)[ended].tolist()
        ended_cpu = ended.cpu()
        rows = zip(ended_cpu.tolist(), *(col[ended_cpu].tolist() for col in (t.p1, t.p2, t.game, t.slot)), stats)
        results, finished = [], []
        for s, p1, p2, game, slot, (winner, length, r1, r2, m1, m2, k1, k2) in rows:
            if game < 0:
                continue  # an idle slot finished a game nobody asked for
            results.append(GameResult(p1, p2, game, int(winner), int(length), r1, r2, int(m1), int(m2), self.batch_id,
                                      slot, self._seed_of(p1, p2, game, stored=True), team_size=self.team_size,
                                      kills_p1=k1, kills_p2=k2))
            if game in self.record.get(slot, ()):
                self._keep_battle(s, slot, p1, p2, game)
            finished.append(s)
        idled = self._next_games(finished)
        wrong: list[tuple[int, int]] = []  # (slot, seed) whose auto-reset start is not its next game's
        if self.env is not None:
            for s, p1, p2, game, aimed in zip(finished, *(col[finished].tolist() for col in (t.p1, t.p2, t.game,
                                                                                              t.aimed))):
                wanted = self._seed_of(p1, p2, game)
                if game >= 0 and wanted != aimed:  # two slots of a pairing ended together: both began its head game
                    wrong.append((s, wanted))
            for u in set(t.unit[ended_cpu].tolist()):
                self._aim(u)
        if idled:  # a slot that took its pairing's next game seats the same two players: nobody's count changed
            self._update_active()
        self._report(results)
        if wrong:
            envs, seeds = zip(*wrong)
            return self.env.restart_envs(torch.tensor(envs), torch.tensor(seeds, dtype=torch.int64))
        return None

    def _keep_battle(self, s: int, slot: int, p1: int, p2: int, game: int) -> None:
        """The recording of ``game``, which just ended in env ``s`` (the batch's ``slot``)."""
        from arena.replay import battle_meta

        a, b = self.plan.names[p1], self.plan.names[p2]
        meta = battle_meta(self.recorder.env.config, a, b, seed=self._seed_of(p1, p2, game, stored=True),
                           title=f"{a} v {b} · game {game}")
        self.recorded[slot, game] = self.recorder.take(self.recorder.envs.index(slot), meta)

    def _aim(self, u: int) -> None:
        """Point the slots of pairing ``u`` at the start of its next game (where one restarts next)."""
        queue, slots = self.queues[u], self.unit_slots[u]
        if not slots:
            return
        unit = self.spec.batch.units[u]
        seed = self._seed_of(unit.p1, unit.p2, queue[0] if queue else -1)  # one pairing, one next game
        self.table.aimed[slots.start:slots.stop] = seed
        self.env.game_seeds[slots.start:slots.stop] = seed

    def _forfeit(self, k: int, reason: str, together: "Collection[int]" = ()) -> None:
        """``k`` loses the games it failed in (those in flight) but those against a participant of
        ``together``, which failed in the same step: they have no result. Its games not yet started in this
        batch are left unplayed, not lost, so the next run plays them (a transient failure costs little)."""
        if k in self.failed:
            return
        self.failed.add(k)
        reason = f"{self.plan.names[k]} {reason}"[:REASON_MAX]
        t, results = self.table, []
        for s in t.involving(k):
            p1, p2, game, slot = (int(col[s]) for col in (t.p1, t.p2, t.game, t.slot))
            other = p2 if k == p1 else p1
            if other != k and other in together:
                self.stats.left += 1  # no result, as for a game not yet started
            else:
                results.append(GameResult(p1, p2, game, P2_WINS if k == p1 else P1_WINS, self.step - int(t.began[s]),
                                          float("nan"), float("nan"), 0, 0, self.batch_id, slot,
                                          self._seed_of(p1, p2, game, stored=True), forfeit_by=k, forfeit_reason=reason,
                                          team_size=self.team_size))
            t.game[s] = -1
        self._leave_queued(k)
        self._report(results)

    def _leave_queued(self, k: int) -> None:
        """Drop ``k``'s games not yet started in this batch: unplayed, so the next run plays them."""
        for u, unit in enumerate(self.spec.batch.units):
            if k in (unit.p1, unit.p2):
                self.stats.left += len(self.queues[u])
                self.queues[u].clear()

    def _report(self, results: list[GameResult]) -> None:
        if results:
            self.sink.games_finished(results)
