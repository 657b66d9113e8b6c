"""A whole tournament: validate, load, resume from the database, play what is missing, rate, report.

Everything a user can get wrong is checked before the first game: the file (``config``), the device,
every agent name and every checkpoint — the agents are built up front, so a corrupt checkpoint stops
the run at once instead of forfeiting an hour later.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from arena.tournament.batching import GameSeeds
from arena.tournament.executor import play
from arena.tournament.league_config import ConfigError, RatingConfig, TournamentConfig, stored_setting
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.participants import Participant, build_agents, resolve_participants
from arena.tournament.ray_backend import LeagueSpec, RaySettings, RemotePlay, play_on_ray, ray_cluster
from arena.tournament.report import Entrant, TournamentReport, build_report, write_report
from arena.tournament.report.warnings import ReportWarning
from arena.tournament.results import GameResult
from arena.tournament.schedule import Unit, games_per_side, missing, pairings, scheduled_pairs, total_games, units
from arena.tournament.sinks import ExecutionStats, ResultSink
from arena.tournament.sprt import SPRTState
from arena.tournament.store import SCHEMA_VERSION, FolderLock, ResultStore, RunRecord, StoreError, db_path
from arena.tournament.stored_league import StoredLeague, positions_of

if TYPE_CHECKING:
    from arena.agents import Registry


class _StoreSink(ResultSink):
    """Executor results → database rows (positions become participant ids); keeps the league's running
    pair tables for the interim leader shown while playing, and the SPRT state of a gauntlet. It stops
    the schedule once the SPRT has decided, or after ``max_batches`` (tests simulate an interruption)."""

    def __init__(self, store: ResultStore, run_id: int, ids: Sequence[int], device: str, names: Sequence[str],
                 known: Sequence[GameResult] = (), sprt: SPRTState | None = None,
                 max_batches: int | None = None) -> None:
        import numpy as np

        super().__init__()
        self.store, self.run_id, self.ids, self.device = store, run_id, list(ids), device
        self.names, self.sprt, self.max_batches = list(names), sprt, max_batches
        self.batches = 0
        n = len(self.ids)
        self.score, self.count = np.zeros((n, n)), np.zeros((n, n))
        self._tally(known)

    def _tally(self, results: Sequence[GameResult]) -> None:
        from arena.tournament.ratings import pair_tables

        if not results:
            return
        score, count, _ = pair_tables(results, len(self.ids))
        self.score += score
        self.count += count
        if self.sprt is not None:
            for r in results:
                self.sprt.add(r)

    def leader(self) -> str:
        """``name elo`` of the best participant on the games so far (Bradley-Terry, no bootstrap)."""
        from arena.tournament.ratings import ELO_BASE, ELO_SCALE, fit_strengths

        if not self.count.any():
            return ""
        theta = fit_strengths(self.score, self.count, iterations=30)
        best = int(theta.argmax())
        return f"{self.names[best]} {ELO_BASE + ELO_SCALE * (theta[best] - theta.mean()):.0f}"

    def batch_started(self, number: int, seed: int, num_envs: int, games: int) -> int:
        return self.store.start_batch(self.run_id, seed, num_envs, games, self.device)

    def keep(self, results: list[GameResult]) -> None:
        ids = self.ids
        self.store.add_games(replace(r, p1=ids[r.p1], p2=ids[r.p2],
                                     forfeit_by=ids[r.forfeit_by] if r.forfeit_by is not None else None)
                             for r in results)
        self._tally(results)

    def batch_finished(self, batch_id: int) -> None:
        self.store.finish_batch(batch_id)
        self.batches += 1
        if self.progress is not None:  # interim ratings while playing: the leader so far
            fields: dict[str, object] = {"forfeits": self.forfeits, "lead": self.leader()}
            if self.sprt is not None:
                fields["llr"] = " ".join(f"{self.sprt.value(c):+.2f}" for c in self.sprt.candidates)
            self.show(force=True, **fields)

    def decided(self) -> bool:
        return self.sprt is not None and self.sprt.decided()

    def stop(self) -> bool:
        return self.decided() or (self.max_batches is not None and self.batches >= self.max_batches)


def schedule_units(num: int, fmt: str, candidates: Sequence[int], games_per_pairing: int,
                   references: Sequence[int] = ()) -> list[Unit]:
    return units(pairings(num, fmt, candidates, references), games_per_pairing)


def run_tournament(config: TournamentConfig, *, fresh: bool = False, registry: "Registry[type] | None" = None,
                   progress: bool = True, stream: TextIO | None = None, max_batches: int | None = None,
                   notify: bool = True, retry_forfeits: bool = False,
                   ray: RaySettings | None = None) -> TournamentReport:
    """Play what the database is missing and return the report (also written to ``config.output``).
    ``retry_forfeits`` first deletes the stored forfeits among this league's participants, so they are
    played again. ``ray`` plays the batches as Ray tasks (``--ray``); the games are the same.

    Raises :class:`ConfigError` / :class:`StoreError` before anything is played when the league cannot
    be run; ``KeyboardInterrupt`` after flushing every finished game (the next run resumes).
    """
    from arena.agents import agent_registry

    registry = registry if registry is not None else agent_registry()
    plan = resolve_league(config, registry, on_ray=ray is not None)
    options = RunOptions(progress, stream, max_batches)
    cluster = ray_cluster(ray.address) if ray is not None else nullcontext(0.0)
    with cluster as cpus, FolderLock(config.output):  # one tournament per output folder at a time
        if ray is not None:
            options.remote = RemotePlay(LeagueSpec.of(plan, registry, config.device), cpus, ray)
        store = ResultStore(db_path(config.output), fresh=fresh)
        note_migration(store)
        try:
            store.tidy_stale_runs()  # runs left 'running' by a process that was killed
            league = schedule(config, plan, store, retry_forfeits)
            sink, stats = play_league(plan, league, options)
            report = rate(league, sink, stats, options)
            write_league_report(plan, league, report, options)
        finally:
            store.close()
    if notify:
        notify_finished(report)
    return report


def resolve_league(config: TournamentConfig, registry: "Registry[type]",
                   on_ray: bool = False) -> LeaguePlan:
    """The league file as it is played: the device, the env, every participant looked up, hashed and
    built (a corrupt checkpoint stops the run here, not an hour later). ``on_ray``: a device this
    machine lacks is the workers' affair, and the agents here are built on the CPU only to check them."""
    from arena.env import DeviceUnavailableError, EnvConfig, resolve_device

    try:
        device = resolve_device(config.device)
    except ValueError as exc:
        if not on_ray or not isinstance(exc, DeviceUnavailableError):
            raise ConfigError(config.file, "device", str(exc)) from None
        device = resolve_device("cpu")
    env_config = EnvConfig.from_dict(config.env)
    participants = resolve_participants(config, registry)
    agents = build_agents(config, participants, device, env_config, registry)
    return LeaguePlan(agents, [p.name for p in participants], device, env_config, config.seed, config.max_envs,
                      config.time_per_move, league_seeds(config, participants), tuple(participants))


@dataclass
class RunOptions:
    """How this run plays, beside the league itself: the progress line and where it goes, a stop after
    ``max_batches`` (tests), and Ray (``remote``)."""

    progress: bool = True
    stream: TextIO | None = None
    max_batches: int | None = None
    remote: RemotePlay | None = None


def league_seeds(config: TournamentConfig, participants: Sequence[Participant]) -> GameSeeds:
    """Every game's start seed, from the league seed and the participants' keys: the same whether the
    game is played here, on Ray, or again for a replay."""
    return GameSeeds(config.seed, [p.key for p in participants])


def note_migration(store: ResultStore) -> None:
    """Say so when opening the store upgraded an older database (the old file is kept beside it), or
    read one as the current schema without changing it (a read-only open)."""
    if store.migrated_from is not None and store.read_only:
        print(f"note: {store.path} is schema {store.migrated_from}; read as schema {SCHEMA_VERSION} without "
              f"changing the file (the next `arena tournament` into this folder upgrades it)", file=sys.stderr)
    elif store.migrated_from is not None:
        print(f"note: {store.path} upgraded from schema {store.migrated_from} to {SCHEMA_VERSION}: games are now "
              f"stored by side; the old file is kept as {store.path.name}.schema{store.migrated_from}.bak",
              file=sys.stderr)


def same_env(stored: str, env_config: Any) -> bool:
    """Whether settings stored as JSON are ``env_config``'s, keys added since then taking their defaults
    (a database from before team battles was played with ``team_size`` 1)."""
    from arena.env import EnvConfig

    try:
        return EnvConfig.from_dict(json.loads(stored)).to_dict() == env_config.to_dict()
    except (ValueError, TypeError):
        return False


def schedule(config: TournamentConfig, plan: LeaguePlan, store: ResultStore,
             retry_forfeits: bool = False) -> StoredLeague:
    """Step 1: the league's games against the database — which are planned, which are stored, which
    are left — and this run's record. Stored games played under other env settings are an error."""
    import torch

    from arena import __version__
    from arena.env import EnvConfig

    env_config, participants = plan.env_config or EnvConfig(), plan.participants
    env_text = json.dumps(env_config.to_dict(), sort_keys=True)
    stored_env = store.meta("env_config")
    if stored_env not in (None, env_text) and store.game_count() and not same_env(stored_env, env_config):
        raise StoreError(f"{store.path}: its games were played with other env settings than "
                         f"{config.file or 'this config'} asks for; use --fresh to start over, or another "
                         f"output directory")
    store.set_meta("env_config", env_text)
    ids = [store.participant_id(p.key, p.name, p.agent, p.params, p.checkpoint, p.checkpoint_sha256)
           for p in participants]
    names = list(plan.names)
    cand = [names.index(c) for c in config.candidates]
    refs = [names.index(r) for r in config.references]
    planned = schedule_units(len(participants), config.format, cand, config.games_per_pairing, refs)
    retried = store.delete_forfeits(ids) if retry_forfeits else 0
    stored = store.stored_indices(ids)
    position = positions_of(ids)
    stored_pos = {(position[a], position[b]): v for (a, b), v in stored.items()}
    todo = missing(planned, stored_pos)
    versions = {"arena": __version__, "torch": torch.__version__, "python": sys.version.split()[0]}
    run_id = store.start_run(config.to_dict(), ids, str(plan.device), versions)
    sprt = SPRTState.start(config.sprt, tuple(cand)) if config.sprt is not None else None
    known = []  # the league's stored games, positions as ids: the running tables start from them
    if stored:
        ordered = {(u.p1, u.p2) for u in planned}
        known = [g for g in store.games(ids, outcomes_only=True, relabel=position) if (g.p1, g.p2) in ordered]
    return StoredLeague(config, store, run_id, ids, planned, todo, known, retried, sprt)


def play_league(plan: LeaguePlan, league: StoredLeague, options: RunOptions) -> tuple[_StoreSink, ExecutionStats]:
    """Step 2: play what is left, here or on Ray, every finished game stored as it ends; the run's
    record says how it ended, whatever ends it."""
    from arena.errors import is_out_of_memory
    from arena.progress import Progress

    config, store = league.config, league.store
    sink = _StoreSink(store, league.run_id, league.ids, str(plan.device), plan.names, league.known, league.sprt,
                      options.max_batches)
    todo_games = total_games(league.todo)
    stats = ExecutionStats()
    status = "interrupted"  # whatever ends the run early and is not an error: Ctrl-C, SIGTERM, sys.exit
    try:
        bar = Progress(todo_games, unit="games", label=config.name, stream=options.stream,
                       enabled=options.progress and todo_games > 0)
        sink.progress = bar if bar.enabled else None
        try:
            if options.remote is not None:
                stats = play_on_ray(options.remote, league.todo, sink, store.batch_count())
            else:
                stats = play(plan, league.todo, sink, store.batch_count())
        finally:
            bar.close()
        status = "finished" if options.max_batches is None else "stopped"
    except (MemoryError, RuntimeError) as exc:  # torch's OutOfMemoryError is a RuntimeError
        status = "failed"
        if not is_out_of_memory(exc):
            raise
        raise ConfigError(config.file, "max_envs", f"{config.max_envs} battles at once do not fit in the memory "
                                                   f"of {plan.device}; expected a lower max_envs (finished games "
                                                   f"are stored)") from None
    except Exception:
        status = "failed"
        raise
    finally:
        store.finish_run(league.run_id, status, sink.games)
    return sink, stats


def rate(league: StoredLeague, sink: _StoreSink, stats: ExecutionStats, options: RunOptions) -> TournamentReport:
    """Step 3: this run's league rated from the stored games (even if another run came later), with
    what this run did."""
    store, sprt = league.store, league.sprt
    t0 = time.perf_counter()
    report = league_report(store, store.run(league.run_id))
    rating_s = time.perf_counter() - t0
    planned_games = total_games(league.planned)
    report.run = {"played": sink.games, "forfeited": sink.forfeits, "retried_forfeits": league.retried,
                  "left_after_failure": stats.left, "sprt": sprt.summary(sink.names) if sprt is not None else None,
                  "stopped_by_sprt": stats.stopped_early and sink.decided(),
                  "already_stored": planned_games - total_games(league.todo),
                  "wall_s": round(stats.wall_s, 3),
                  "games_per_second": round(sink.games / stats.wall_s if stats.wall_s > 0 else 0.0, 1),
                  "rating_s": round(rating_s, 3), "device": sink.device, "batches": stats.batches}
    if options.remote is not None:
        report.run["ray"] = {"cpus": options.remote.cpus, "retries": options.remote.settings.retries,
                             "lost_batches": len(stats.lost)}
        report.warnings.extend(ReportWarning("batch_lost", note=text) for text in stats.lost)
    return report


def write_league_report(plan: LeaguePlan, league: StoredLeague, report: TournamentReport,
                        options: RunOptions) -> None:
    """Step 4: the notable games recorded (a league played to its end), then the reports written."""
    if league.config.replays and options.max_batches is None:
        t0 = time.perf_counter()
        try:
            report.replays = notable_replays(plan, league, report, options)
        except Exception as exc:  # noqa: BLE001 - the games and ratings are safe; the report still gets written
            from arena.guard import first_line

            report.warnings.append(ReportWarning("replays_failed", note=first_line(exc)))
        report.run["replays_s"] = round(time.perf_counter() - t0, 3)
    t0 = time.perf_counter()
    write_report(report)
    report.run["reports_s"] = round(time.perf_counter() - t0, 3)  # the CSVs, report.md and pictures


def notable_replays(plan: LeaguePlan, league: StoredLeague, report: TournamentReport,
                    options: RunOptions) -> list[Any]:
    """Record the league file's ``replays`` notable games per pairing of the rated league (see replays.py)."""
    from arena.progress import Progress
    from arena.tournament.replays import notable_games, record_replays

    config, names = league.config, plan.names
    board = report.leaderboard.set_index("name")
    elo = [float(board.loc[n, "elo"]) for n in names]
    games = league.store.games(league.ids, max_index=config.games_per_pairing // 2, outcomes_only=True,
                               relabel=league.positions())
    ordered = {(u.p1, u.p2) for u in league.planned}
    picks = notable_games([g for g in games if (g.p1, g.p2) in ordered], elo, names, config.replays)
    meter = Progress(len(picks), unit="games", label="recording replays", stream=options.stream,
                     enabled=options.progress and bool(picks))
    return record_replays(plan, league, picks, meter)


def league_report(store: ResultStore, run: RunRecord, rating: RatingConfig | None = None) -> TournamentReport:
    """The report of ``run`` from the stored games (rated with ``rating`` where given, else as the run
    was); a run record that is not what arena writes (a damaged or hand-edited database) is a one-line
    :class:`StoreError`, not a traceback."""
    try:
        return _league_report(store, run, rating)
    except ConfigError as exc:
        raise StoreError(f"{exc}") from None
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        from arena.guard import first_line

        raise StoreError(f"{store.path}: run {run.id} cannot be rated from its stored record ({first_line(exc)}); "
                         f"expected a database written by `arena tournament`; use --fresh or another output") from None


def _league_report(store: ResultStore, run: RunRecord, rating: RatingConfig | None = None) -> TournamentReport:
    """The report of the league of ``run`` (participants, schedule and rating settings as that run had
    them), from the games in the database: only games of its schedule and within its games per pairing."""
    cfg = run.config
    ids = run.participant_ids
    records = store.participants(ids)
    names = [r.name for r in records]
    games_per_pairing = stored_setting("games_per_pairing", int(cfg["games_per_pairing"]), store.path,
                                       f"runs[{run.id}].games_per_pairing")
    cand = [names.index(c) for c in cfg.get("candidates", []) if c in names]
    refs = [names.index(r) for r in cfg.get("references", []) if r in names]
    wanted = scheduled_pairs(len(ids), cfg.get("format", "round-robin"), cand, refs)
    half = games_per_side(games_per_pairing)
    games = store.outcomes(ids, max_index=half)
    games = games.select(wanted[games.p1, games.p2])
    entrants = [Entrant(r.name, r.agent, r.checkpoint, r.key) for r in records]
    played_with = RatingConfig.from_dict(cfg.get("rating") or {}, store.path, f"runs[{run.id}].rating")
    changed = rating_changes(played_with, rating) if rating is not None else ""
    rating = rating or played_with
    seed = stored_setting("seed", cfg.get("seed", 0), store.path, f"runs[{run.id}].seed")
    other_seeds = seed_changes(store, run, seed, wanted, half)
    report = build_report(cfg.get("name", "tournament"), Path(cfg.get("output", store.path.parent)), entrants,
                          games, rating, seed, int(wanted.sum()) * half, candidates=cand, references=refs,
                          source=str(cfg.get("file") or store.path))
    if changed:
        report.warnings.append(ReportWarning("rating_changed", note=changed))
    if other_seeds:
        report.warnings.append(ReportWarning("seed_changed", note=other_seeds))
    return report


def seed_changes(store: ResultStore, run: RunRecord, seed: int, wanted: Any, half: int) -> str:
    """``seed old -> new: N of the M games …`` when games of ``run``'s league (its pairings ``wanted``, by
    position, game numbers below ``half``) were played by runs under another league seed, so from other
    starting positions than ``seed`` gives them; "" when none was (or it cannot be told: a game of no
    stored batch). A league resumed after its seed was edited reads the stored games as its own: said,
    as a change of the rating settings is (:func:`rating_changes`)."""
    position = positions_of(run.participant_ids)
    by_seed: dict[Any, dict[int, int]] = {}  # other seed -> {run id: games}
    total = 0
    seeds: dict[int, Any] = {run.id: seed}
    for p1, p2, run_id, count in store.games_by_run(half):
        if p1 not in position or p2 not in position or not wanted[position[p1], position[p2]]:
            continue
        total += count
        if run_id is None:
            continue
        if run_id not in seeds:
            seeds[run_id] = store.run(run_id).config.get("seed", 0)
        if seeds[run_id] != seed:
            runs = by_seed.setdefault(seeds[run_id], {})
            runs[run_id] = runs.get(run_id, 0) + count
    parts = []
    for old, runs in by_seed.items():
        listed = ", ".join(str(r) for r in sorted(runs))
        parts.append(f"{sum(runs.values()):,} of its {total:,} games were played under seed {old!r}, by "
                     f"run{'s' if len(runs) > 1 else ''} {listed}")
    return f"seed {', '.join(repr(s) for s in by_seed)} -> {seed!r}: {'; '.join(parts)}" if parts else ""


def rating_changes(before: RatingConfig, after: RatingConfig) -> str:
    """``key: old -> new`` for each rating setting that differs ("" when none does)."""
    from dataclasses import asdict

    old, new = asdict(before), asdict(after)
    return ", ".join(f"{key}: {old[key]} -> {new[key]}" for key in new if old[key] != new[key])


def rebuild_report(directory: str | Path, write: bool = True, rating: RatingConfig | None = None) -> TournamentReport:
    """The report of the latest run stored in ``directory`` (no games played); files rewritten there.
    ``rating`` rates it with other settings than the run's own (the league file's, edited since): they
    change no game, only how the games are read."""
    directory = Path(directory)
    path = directory if directory.name.endswith(".sqlite") else db_path(directory)
    store = ResultStore(path, read_only=True)  # a report never changes the games it is built from
    note_migration(store)
    try:
        report = league_report(store, store.latest_run(), rating)
    finally:
        store.close()
    report.output_dir = path.parent.resolve()
    from arena.tournament.replays import read_index

    report.replays = read_index(report.output_dir)
    if write:
        write_report(report, report.output_dir)
    return report


def notify_finished(report: TournamentReport) -> None:
    """Call ``arena_tournament_finished`` on each observer; one that fails is reported by the plugin
    host and the others are still called (the results are already safe on disk)."""
    from arena.plugins import PluginError, get_host

    try:
        get_host().notify("arena_tournament_finished", report=report)
    except PluginError as exc:  # ARENA_STRICT_PLUGINS=1
        print(str(exc), file=sys.stderr)
