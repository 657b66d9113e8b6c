"""Batched play of many pairings at once.

All games of a batch share one :class:`~arena.env.TensorEnv`. Each ordered pairing (a schedule
:class:`~arena.tournament.schedule.Unit`) owns a fixed block of env slots and plays its games in them
back to back: when a game ends the env resets that slot in place and the slot starts the pairing's next
game, until the pairing has none left. Because every slot keeps its two players for the whole batch,
each participant sees the same envs, in the same order, at every step — so it acts **once per step**
on one gathered batch (its p1 slots, then its p2 slots: the shared game loop's seating,
:mod:`arena.loop`), and agents with per-env memory (CrankAgent's state machine, a recurrent policy)
stay aligned; ``reset(mask)`` clears the slots whose game ended. In team battles a participant flies
every seat of its side. Participants of one kind (checkpoints of one architecture, CrankAgent
variants, seeded placeholders) act as one family: one call a step for all of them
(:mod:`arena.families`).

Games end at different times, and a batch steps until its longest game is over. Once a quarter of
its envs idle, it keeps only those (:meth:`arena.env.TensorEnv.keep_envs`, and every agent
keeps its rows' memory: ``keep_rows``), so the envs of finished games stop costing steps. A batch
with an agent that cannot drop rows, or a compiled step (fixed batch size), plays to the end whole.

A participant is called only while it has a game in the batch. One that raises (``sys.exit``
included), hands back a malformed action or NaNs forfeits the games it failed in (those in flight)
with the reason recorded; its slots idle and everyone else plays on. Its games not yet started in
that batch are left unplayed, so the next run plays them; it gets a fresh chance in the next batch.
With a ``time_per_move`` budget, an act() call (one move on all the participant's battles) that
takes longer is a forfeit too, like a time forfeit in fastchess: a slow agent must not hold the
whole league hostage. Each timed call runs on a watchdog thread, so a move that never returns is a
time forfeit as well (:meth:`arena.loop.Seating._timed`); that agent instance is then abandoned and
never called again in this process, and its games in later batches are left unplayed for the next
run, which builds it afresh.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from arena.env.teams import side_total
from arena.seeds import text_seed
from arena.tournament.results import P1_WINS, P2_WINS, GameResult
from arena.tournament.schedule import Unit

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.loop import AgentFailure
    from arena.progress import Progress

GAMES_PER_SLOT = 4  # games a slot plays back to back in one batch; bounds what one forfeit can cost
# A batch drops its finished battles once fewer than this share of its envs still play (and at least
# KEEP_MIN_ENVS envs would go): the long games that finish a batch no longer step the short ones' envs.
KEEP_SHARE = 0.75
KEEP_MIN_ENVS = 64
REASON_MAX = 300  # characters of an exception message kept as a forfeit reason


@dataclass(frozen=True)
class Batch:
    """Games played together in one env: ``slots[i]`` env slots serve ``units[i]``."""

    units: tuple[Unit, ...]
    slots: tuple[int, ...]

    @property
    def num_envs(self) -> int:
        return sum(self.slots)

    @property
    def games(self) -> int:
        return sum(len(u.games) for u in self.units)


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

    @property
    def games_per_second(self) -> float:
        return self.games / self.wall_s if self.wall_s > 0 else 0.0


def plan_batches(units: Sequence[Unit], max_envs: int, games_per_slot: int = GAMES_PER_SLOT) -> list[Batch]:
    """Cut the schedule into batches of at most ``max_envs`` slots and ``max_envs·games_per_slot`` games.

    Slots go to pairings in proportion to their games (at least one each), so every pairing of a batch
    finishes at about the same time and few slots idle at the end.
    """
    if max_envs < 1:
        raise ValueError(f"max_envs must be >= 1, got {max_envs}")
    cap = max_envs * max(1, games_per_slot)
    units = tiled(units, cap)
    batches: list[Batch] = []
    current: list[Unit] = []
    count = 0

    def close() -> None:
        nonlocal current, count
        if current:
            batches.append(Batch(tuple(current), tuple(allocate([len(u.games) for u in current],
                                                                 min(max_envs, count)))))
        current, count = [], 0

    for unit in units:
        games = list(unit.games)
        while games:
            if len(current) == max_envs or count == cap:
                close()
            take = min(len(games), cap - count)
            current.append(Unit(unit.p1, unit.p2, games[:take]))
            games = games[take:]
            count += take
    close()
    return batches


def tiled(units: Sequence[Unit], games_per_batch: int) -> list[Unit]:
    """``units`` in blocks of participants, so that a batch meets as few participants as it can.

    Every participant in a batch acts once per step on all its battles there, so a step costs a call
    per participant present. In list order, a league's first batch would hold participant 0 against
    everyone; in b × b blocks of pairings (b about the square root of the pairings a batch holds) it
    holds at most 2b participants. Both sides of a pairing stay next to each other.
    """
    if not units:
        return list(units)
    per_unit = max(1.0, sum(len(u.games) for u in units) / len(units))
    pairings_per_batch = max(1.0, games_per_batch / per_unit / 2.0)
    side = max(1, int(math.sqrt(pairings_per_batch)))

    def block(u: Unit) -> tuple[int, int, int, int, bool]:
        lo, hi = min(u.p1, u.p2), max(u.p1, u.p2)
        return lo // side, hi // side, lo, hi, u.p1 != lo

    return sorted(units, key=block)


def allocate(games: Sequence[int], slots: int) -> list[int]:
    """Split ``slots`` among units with ``games[i]`` games: one each, the rest by largest remainder."""
    n = len(games)
    if n > slots:
        raise ValueError(f"{n} pairings cannot share {slots} slots")
    out = [1] * n
    spare = slots - n
    weights = [g - 1 for g in games]
    total = sum(weights)
    if spare <= 0 or total <= 0:
        return out
    spare = min(spare, total)
    quotas = [spare * w / total for w in weights]
    floors = [int(q) for q in quotas]
    left = spare - sum(floors)
    order = sorted(range(n), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [o + f for o, f in zip(out, floors)]


def slot_ranges(slot_unit: Sequence[int], units: int) -> list[range]:
    """The envs of each unit, given the unit of each env (a unit's envs are next to each other)."""
    first = [len(slot_unit)] * units
    last = [0] * units
    for s, u in enumerate(slot_unit):
        first[u] = min(first[u], s)
        last[u] = s + 1
    return [range(f, max(f, e)) for f, e in zip(first, last)]


def batch_seed(seed: int, number: int) -> int:
    """The env seed of batch ``number``: distinct per batch, stable for the same (seed, number)."""
    return text_seed(f"arena-tournament:{seed}:{number}")


class GameSeeds:
    """The start of game g of a pairing, from (league seed, the pairing's two keys, g) alone.

    Both orders of a pairing share it: game g of (a, b) and game g of (b, a) start from the same
    positions with the sides swapped (paired openings, as chess engine testers play them), so the
    side a participant is dealt cancels out of its score. A game can be replayed alone, and a league
    played in another batch layout or on other machines starts every game the same way.
    """

    def __init__(self, league_seed: int, keys: Sequence[str]) -> None:
        self.league_seed, self.keys = league_seed, list(keys)

    def __call__(self, p1: int, p2: int, game: int) -> int:
        lo, hi = sorted((self.keys[p1], self.keys[p2]))
        return text_seed(f"arena-game:{self.league_seed}:{lo}:{hi}:{game}")


def play(agents: Sequence["Agent"], units: Sequence[Unit], sink: ResultSink, *, device: "str | torch.device" = "cpu",
         env_config: "EnvConfig | None" = None, max_envs: int = 16384, seed: int = 0, first_batch: int = 0,
         names: Sequence[str] | None = None, progress: "Progress | None" = None,
         max_batches: int | None = None, time_per_move: float | None = None,
         stop: "Callable[[], bool] | None" = None,
         game_seed: "Callable[[int, int, int], int] | None" = None) -> ExecutionStats:
    """Play every game of ``units`` between ``agents`` (indexed by the units' ``p1``/``p2``).

    Batch ``first_batch + i`` is seeded with :func:`batch_seed`, so a run is reproducible on the same
    device, and a resumed run (which passes the number of batches already played) draws new spawns
    instead of repeating old ones. ``max_batches`` stops early (tests simulate an interruption with it).
    ``game_seed(p1, p2, game)`` gives every game its own start (else each batch's envs draw theirs from
    the batch seed). ``stop()``, asked before each batch, ends the schedule early. ``time_per_move``
    (seconds) bounds each act() call after a batch's first (which may pay one-time costs such as loading
    CUDA kernels, and is only bounded against hangs: :func:`arena.loop.hang_bound`); on a GPU the clock
    includes a synchronize.
    """
    from arena.env import resolve_device

    dev = resolve_device(device)
    names = list(names) if names is not None else [f"#{i}" for i in range(len(agents))]
    stats = ExecutionStats()
    start = time.perf_counter()
    try:
        for i, batch in enumerate(plan_batches(units, max_envs)):
            if max_batches is not None and i >= max_batches:
                break
            if stop is not None and stop():  # e.g. a decided SPRT: the remaining games are not needed
                stats.stopped_early = True
                break
            number = first_batch + i
            runner = _BatchRun(batch, number, batch_seed(seed, number), agents, names, dev, env_config, sink,
                               stats, progress, start, time_per_move, game_seed)
            runner.run()
            stats.batches += 1
    finally:
        stats.wall_s = time.perf_counter() - start
    return stats


def play_batch(batch: Batch, number: int, seed: int, agents: Sequence["Agent"], names: Sequence[str], *,
               device: "torch.device", env_config: "EnvConfig | None" = None, time_per_move: float | None = None,
               game_seed: "Callable[[int, int, int], int] | None" = None) -> tuple[list[GameResult], ExecutionStats]:
    """Batch ``number`` of a league seeded ``seed``, alone, exactly as :func:`play` plays it in turn (a
    worker of a distributed league runs this). ``agents`` need only hold the batch's participants. The
    results carry ``number`` as their batch id; the caller stamps the stored id."""
    sink, stats = ListSink(), ExecutionStats()
    start = time.perf_counter()
    _BatchRun(batch, number, batch_seed(seed, number), agents, names, device, env_config, sink, stats, None, start,
              time_per_move, game_seed).run()
    stats.batches, stats.wall_s = 1, time.perf_counter() - start
    return sink.results, stats


def replay_batch(batch: Batch, seed: int, agents: Sequence["Agent"], names: Sequence[str],
                 record: "Mapping[int, set[int]]", *, device: "torch.device", env_config: "EnvConfig | None" = None,
                 time_per_move: float | None = None, game_seed: "Callable[[int, int, int], int] | None" = None
                 ) -> tuple[list[GameResult], dict[tuple[int, int], Any]]:
    """Play ``batch`` again exactly as :func:`play` played it (same seed, layout and agents) and record
    the games ``record`` names (slot -> game numbers). Returns every game's result, to check the battles
    against the stored ones, and the recorded battles by (slot, game)."""
    sink = ListSink()
    runner = _BatchRun(batch, 0, seed, agents, names, device, env_config, sink, ExecutionStats(), None,
                       time.perf_counter(), time_per_move, game_seed, record=record)
    runner.run()
    return sink.results, runner.recorded


class _BatchRun:
    """The state of one batch while it plays."""

    def __init__(self, batch: Batch, number: int, seed: int, agents: Sequence["Agent"], names: Sequence[str],
                 device: "torch.device", env_config: "EnvConfig | None", sink: ResultSink, stats: ExecutionStats,
                 progress: "Progress | None", start: float, time_per_move: float | None = None,
                 game_seed: "Callable[[int, int, int], int] | None" = None,
                 record: "Mapping[int, set[int]] | None" = None) -> None:
        import torch

        self.batch, self.number, self.seed = batch, number, seed
        # Replays: slot -> games of it to record; what was recorded, by (slot, game).
        self.record = {s: set(g) for s, g in (record or {}).items()}
        self.recorder: Any = None
        self.recorded: dict[tuple[int, int], Any] = {}
        self.game_seed = game_seed
        self.agents, self.names, self.device = agents, names, device
        self.env_config, self.sink, self.stats, self.progress, self.start = env_config, sink, stats, progress, start
        n = batch.num_envs
        self.num_envs = n
        self.slot_unit: list[int] = [u for u, k in enumerate(batch.slots) for _ in range(k)]
        self.unit_slots = slot_ranges(self.slot_unit, len(batch.units))
        self.slot_id = list(range(n))  # each env's slot in the batch's layout (envs are renumbered when kept)
        self.queues = [deque(u.games) for u in batch.units]  # a pairing's games, taken by whichever slot is free
        self.env: Any = None
        self.aimed: list[int] = [0] * n  # the seed each slot's env will restart from
        self.p1 = [batch.units[u].p1 for u in self.slot_unit]
        self.p2 = [batch.units[u].p2 for u in self.slot_unit]
        self.game: list[int] = [-1] * n  # game index playing in each slot, -1 when idle
        self.playing = 0  # slots with a game, kept with ``game`` so the loop need not scan every slot
        self.began: list[int] = [0] * n  # step at which the slot's game began
        self.step = 0
        # The seating: participant k flies its p1 slots, then its p2 slots, as one batch.
        self.members = sorted(set(self.p1) | set(self.p2))
        position = {k: i for i, k in enumerate(self.members)}
        owner = torch.tensor([[position[k] for k in self.p1], [position[k] for k in self.p2]], dtype=torch.long)
        self.owner = owner
        self.position = position
        self.busy = dict.fromkeys(self.members, 0)  # slots with a game, per participant
        self.seating: Any = None
        self.failed: set[int] = set()
        self.team_size = env_config.team_size if env_config is not None else 1
        self.batch_id = -1
        self.time_per_move = time_per_move

    # -- main loop -----------------------------------------------------------------------------------

    def run(self) -> None:
        from arena.env import TensorEnv
        from arena.loop import Controller, GameLoop, Seating, abandoned, observation_config

        config = observation_config(self.env_config, [self.agents[k] for k in self.members])
        env = TensorEnv(self.num_envs, device=self.device, seed=self.seed, config=config)
        controllers = [Controller(self.agents[k], self.names[k], "participant", rng_seed=self._agent_seed(k))
                       for k in self.members]
        self.batch_id = self.sink.batch_started(self.number, self.seed, self.num_envs, self.batch.games)
        for k in self.members:  # hung in an earlier batch: its games wait for the next run's fresh instance
            if abandoned(self.agents[k]):
                self._leave_queued(k)
        for s in range(self.num_envs):
            self._next_game(s)
        self.seating = Seating(controllers, self.owner, env.team_size, self.device, move_limit=self.time_per_move,
                               families=True)
        for k in self.members:  # in a slot with no game from the start (more slots than games)
            if self.busy[k] == 0:
                self.seating.disable(self.position[k])
        loop = GameLoop(env, self.seating, on_fault=self._faults)
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
        """Step until every game of the batch is over (or, replaying, every wanted game is recorded)."""
        import torch

        devices = [self.device] if self.device.type == "cuda" else []
        with torch.random.fork_rng(devices=devices), torch.no_grad():
            torch.manual_seed(self.seed)  # stochastic policies draw from the global generator
            if self.game_seed is not None:  # every game from its own start (replayable alone, mirrored pairs)
                starts = [self._seed_of(s, self.game[s]) for s in range(self.num_envs)]
                obs = env.reset(game_seeds=torch.tensor(starts, dtype=torch.int64))
                self.env = env  # from now on a slot's next start follows its pairing's next game
                for u in range(len(self.queues)):
                    self._aim(u)
            else:
                obs = env.reset()
            loop.reset_agents()
            wanted = sum(len(g) for g in self.record.values())
            while self.playing and not (wanted and len(self.recorded) == wanted):  # replays: stop once recorded
                turn = loop.step(obs)
                obs = turn.next_obs
                self.step += 1
                self.stats.steps += 1
                self.stats.env_steps += self.num_envs
                self._faults(self.seating.nan_failures())
                restarted = self._collect(turn.dones, turn.infos)
                if restarted is not None:
                    obs = restarted
                if self.playing and self._worth_keeping(env):
                    obs = self._keep_playing(env)

    # -- pieces --------------------------------------------------------------------------------------

    def _worth_keeping(self, env: Any) -> bool:
        """Whether to drop the finished battles now: few envs still play, the step's cost scales with the
        batch (not a compiled step), and every agent still playing can drop rows of its memory."""
        idle = self.num_envs - self.playing
        return (self.playing < KEEP_SHARE * self.num_envs and idle >= KEEP_MIN_ENVS and not env.compiled
                and self.seating.can_keep_envs())

    def _keep_playing(self, env: Any) -> dict[str, Any]:
        """Keep only the envs with a game in play, renumbered in order; returns their observation."""
        import torch

        keep = [s for s in range(self.num_envs) if self.game[s] >= 0]
        envs = torch.tensor(keep, dtype=torch.long)
        if self.recorder is not None:
            self.recorder.keep_envs(envs)
            env.watch(None)
        failures = self.seating.keep_envs(envs)
        obs = env.keep_envs(envs)
        if self.recorder is not None:
            env.watch(self.recorder.index)
        for name in ("slot_unit", "p1", "p2", "game", "began", "aimed", "slot_id"):
            values = getattr(self, name)
            setattr(self, name, [values[s] for s in keep])
        self.num_envs = len(keep)
        self.unit_slots = slot_ranges(self.slot_unit, len(self.batch.units))
        self._faults(failures)
        return obs

    def _faults(self, failures: "list[AgentFailure]") -> None:
        """Each failing participant forfeits what it has left in the batch; everyone else plays on. A game
        between two participants that failed in the same step (a family's shared call, say) has no
        result: neither is credited, and it is left unplayed for the next run."""
        together = {self.members[failure.index] for failure in failures if failure.index is not None}
        for failure in failures:
            assert failure.index is not None
            self.seating.disable(failure.index)
            self._forfeit(self.members[failure.index], failure.reason, together)

    def _next_game(self, s: int) -> None:
        queue = self.queues[self.slot_unit[s]]
        self._set_game(s, queue.popleft() if queue else -1)
        self.began[s] = self.step

    def _agent_seed(self, k: int) -> int:
        """Participant ``k``'s own random stream in this batch: stochastic agents do not share one."""
        return text_seed(f"arena-agent:{self.seed}:{self.names[k]}")

    def _seed_of(self, s: int, game: int) -> int:
        """The start seed of ``game`` in slot ``s`` (0 for no game: the slot then idles)."""
        if self.game_seed is None or game < 0:
            return 0
        return self.game_seed(self.p1[s], self.p2[s], game)

    def _set_game(self, s: int, game: int) -> None:
        """Slot ``s`` now plays ``game`` (-1: idle). A participant left with no game in the batch stops
        being called: its rows idle, so the steps that finish the others' games cost it nothing."""
        players = (self.p1[s], self.p2[s])
        if self.game[s] >= 0:
            self.playing -= 1
            for k in players:
                self.busy[k] -= 1
        self.game[s] = game
        if game >= 0:
            self.playing += 1
            for k in players:
                self.busy[k] += 1
        elif self.seating is not None:
            for k in players:
                if self.busy[k] == 0:
                    self.seating.disable(self.position[k])

    def _collect(self, dones: "torch.Tensor", infos: dict[str, Any]) -> "dict[str, Any] | None":
        """Record games that ended this step and start the next game in their slots; returns the
        observation when some slots had to be restarted from another seed (else None)."""
        import torch

        ended = torch.nonzero(dones).flatten()
        if ended.numel() == 0:
            return None
        ep = infos["episode"]
        columns = (infos["winner"], ep["length"], side_total(ep["return"]["p1"]), side_total(ep["return"]["p2"]),
                   side_total(ep["missiles_fired"]["p1"]), side_total(ep["missiles_fired"]["p2"]),
                   side_total(ep["kills"]["p1"]), side_total(ep["kills"]["p2"]))
        table = torch.stack([c.to(torch.float64) for c in columns], 1)[ended].tolist()
        results = []
        wrong: list[tuple[int, int]] = []  # (slot, seed) whose auto-reset start is not its next game's
        for s, (winner, length, r1, r2, m1, m2, k1, k2) in zip(ended.tolist(), table):
            if self.game[s] < 0:
                continue  # an idle slot finished a game nobody asked for
            results.append(GameResult(self.p1[s], self.p2[s], self.game[s], int(winner), int(length), r1, r2,
                                      int(m1), int(m2), self.batch_id, self.slot_id[s],
                                      self._stored_seed(s, self.game[s]), team_size=self.team_size,
                                      kills_p1=k1, kills_p2=k2))
            if self.game[s] in self.record.get(self.slot_id[s], ()):
                self._keep_battle(s, self.game[s])
            self._next_game(s)
            if self.env is not None and self.game[s] >= 0:
                wanted = self._seed_of(s, self.game[s])
                if wanted != self.aimed[s]:  # two slots of a pairing ended together: both began its head game
                    wrong.append((s, wanted))
        if self.env is not None:
            for u in {self.slot_unit[s] for s in ended.tolist()}:
                self._aim(u)
        self._report(results)
        if wrong:
            envs, seeds = zip(*wrong)
            return self.env.restart_envs(torch.tensor(envs), torch.tensor(seeds, dtype=torch.int64))
        return None

    def _keep_battle(self, s: int, game: int) -> None:
        """The recording of ``game``, which just ended in slot ``s``."""
        from arena.replay import battle_meta

        p1, p2 = self.names[self.p1[s]], self.names[self.p2[s]]
        meta = battle_meta(self.recorder.env.config, p1, p2, seed=self._stored_seed(s, game),
                           title=f"{p1} v {p2} · game {game}")
        slot = self.slot_id[s]
        self.recorded[slot, game] = self.recorder.take(self.recorder.envs.index(slot), meta)

    def _aim(self, u: int) -> None:
        """Point the slots of pairing ``u`` at the start of its next game (where one restarts next)."""
        queue = self.queues[u]
        slots = self.unit_slots[u]
        if not slots:
            return
        seed = self._seed_of(slots.start, queue[0] if queue else -1)  # one pairing, one next game
        self.aimed[slots.start:slots.stop] = [seed] * len(slots)
        self.env.game_seeds[slots.start:slots.stop] = seed

    def _forfeit(self, k: int, reason: str, together: "Collection[int]" = ()) -> None:
        """``k`` loses the games it failed in (those in flight) but those against a participant of
        ``together``, which failed in the same step: they have no result. Its games not yet started in this
        batch are left unplayed, not lost, so the next run plays them (a transient failure costs little)."""
        if k in self.failed:
            return
        self.failed.add(k)
        reason = f"{self.names[k]} {reason}"[:REASON_MAX]
        results = []
        for s in range(self.num_envs):
            if self.game[s] >= 0 and k in (self.p1[s], self.p2[s]):
                other = self.p2[s] if k == self.p1[s] else self.p1[s]
                if other != k and other in together:
                    self.stats.left += 1  # no result, as for a game not yet started
                else:
                    results.append(self._forfeit_result(s, self.game[s], k, self.step - self.began[s], reason))
                self._set_game(s, -1)
        self._leave_queued(k)
        self._report(results)

    def _leave_queued(self, k: int) -> None:
        """Drop ``k``'s games not yet started in this batch: unplayed, so the next run plays them."""
        for u, unit in enumerate(self.batch.units):
            if k in (unit.p1, unit.p2):
                self.stats.left += len(self.queues[u])
                self.queues[u].clear()

    def _forfeit_result(self, s: int, game: int, k: int, length: int, reason: str) -> GameResult:
        p1, p2 = self.p1[s], self.p2[s]
        nan = float("nan")
        return GameResult(p1, p2, game, P2_WINS if k == p1 else P1_WINS, length, nan, nan, 0, 0, self.batch_id,
                          self.slot_id[s],
                          self._stored_seed(s, game), forfeit_by=k, forfeit_reason=reason, team_size=self.team_size)

    def _stored_seed(self, s: int, game: int) -> int:
        """What a game record keeps as its seed: the game's own start seed, else its batch's."""
        return self._seed_of(s, game) if self.game_seed is not None else self.seed

    def _report(self, results: list[GameResult]) -> None:
        if not results:
            return
        self.sink.games_finished(results)
        self.stats.games += len(results)
        self.stats.forfeits += sum(r.forfeit for r in results)
        if self.progress is not None:
            self.progress.update(self.stats.games, forfeits=self.stats.forfeits)

