"""The search: an Optuna study in ``DIR/study.db`` whose trials train their settings on every seed.

One sweep process runs up to ``workers`` seed processes (:class:`~arena_ppo.sweep.runs.Pool`), the
seeds of the oldest trial first; when a worker is free and no trial has a seed left to start, it asks
the study for a new trial (TPE, seeded) until the study holds ``trials`` of them. A trial ends when
all its seeds are scored (its objective over their scores), when a seed fails (FAIL, with the
run's message), or when the median pruner stops it: each time every seed of a trial has made its
n-th evaluation, the objective over their evaluation scores is reported to Optuna as the trial's
step n (the evaluation's number, not its env step, which depends on the run's batch), and a trial
below the median of the trials before it at that step is stopped there (PRUNED).

Several processes, and a sweep that stopped, share the study safely:

* each process holds a lock file ``DIR/workers/<id>.lock`` while it lives and writes its id into the
  trials it runs; a RUNNING trial whose process no longer holds its lock (killed, crashed) is failed
  and retried, and so is one whose Optuna heartbeat is older than the grace period (a process on
  another machine);
* so is a RUNNING trial without a process, older than the grace period (one stopped between
  asking for it and writing its process's id);
* a retried trial (Optuna's :class:`~optuna.storages.RetryHeartbeatStaleTrialCallback`: a WAITING
  copy with the same settings) keeps its folder, so the seeds already scored are reused and the
  others train again from the start; the failed original does not count, so every requested trial
  ends once. A trial is retried at most ``MAX_RETRY`` times for processes that died; a stop asked
  for (Ctrl-C, SIGTERM, SIGHUP) does not count;
* asking for a trial, counting the trials and recovering stale ones happen under one lock
  (``DIR/study.lock``), so two processes never both ask for the last trial.

Ctrl-C (or SIGTERM, SIGHUP: :class:`arena.training.interrupt.StopRequest`, whose flag the loop
checks) stops the seeds' processes and hands this process's trials back for a retry: the same
command continues the sweep.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import socket
import statistics
import time
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.folder_lock import FolderBusy, FolderLock, FolderUnusable
from arena.progress import format_duration
from arena_ppo.launch import fail
from arena_ppo.sweep.runs import Pool, SeedJob, SeedResult, eval_scores, settings_text, write_text
from arena_ppo.sweep.space import Dimension

if TYPE_CHECKING:
    from arena.training.interrupt import StopRequest

STUDY_NAME = "sweep"
STUDY_FILE = "study.db"
SPEC_FILE = "sweep.json"
BEST_FILE = "best.yaml"
TRIAL_SETTINGS = "settings.yaml"
TRIAL_HEADER = ("arena sweep: the settings every seed of this trial trains with\n"
                "(arena train ALGORITHM --config THIS --seed S --threads 1)")
HEARTBEAT = 30  # seconds between the heartbeats of a running trial
GRACE = 300  # a RUNNING trial without a heartbeat for this long is stale (a process on another machine)
# No trial is pruned before its second evaluation (half its budget at the interval the sweep sets): at the
# first, seeds that ended among the best trials' were stopped (docs/training.md, "Tuning with arena sweep").
PRUNE_FROM = 2
MAX_RETRY = 3  # times a trial whose sweep process died is tried again (a stop asked for does not count)
POLL = 0.25  # seconds between looks at the running seeds
PRUNE_EVERY = 2.0  # seconds between reads of the running seeds' evaluations
ASK_AGAIN = 5.0  # seconds before a process with nothing left to ask looks again (a retry may appear)
OBJECTIVES = ("worst", "mean", "mean-std")


def objective(kind: str, scores: list[float]) -> float:
    """A trial's value from its seeds' scores: the worst seed, the mean, or the mean less the spread
    (population standard deviation), so a failing seed costs the trial."""
    if kind == "worst":
        return min(scores)
    mean = sum(scores) / len(scores)
    return mean if kind == "mean" else mean - statistics.pstdev(scores)


@dataclass(frozen=True)
class SweepSpec:
    """What defines a sweep, kept in ``DIR/sweep.json``: a process that continues it must be given the same."""

    algorithm: str
    space: tuple[Dimension, ...]
    settings: dict[str, Any]  # every trial's settings besides the space, by key (the budget included)
    seeds: tuple[int, ...]
    objective: str
    games: int  # score games against each reference
    own: tuple[str, ...] = ()  # keys of settings the sweep set itself (run.eval_interval): not in best.yaml

    def to_dict(self) -> dict[str, Any]:
        return json.loads(json.dumps({
            "algorithm": self.algorithm, "space": {d.key: d.to_dict() for d in self.space},
            "settings": {k: list(v) if isinstance(v, tuple) else v for k, v in self.settings.items()},
            "seeds": list(self.seeds), "objective": self.objective, "score_games": self.games,
            "set_by_sweep": list(self.own)}))

    def trial_settings(self, params: dict[str, Any]) -> dict[str, Any]:
        return {**self.settings, **params}


@dataclass(frozen=True)
class Options:
    """How this process takes part: trials the study should end with, its workers, and the search's knobs."""

    trials: int
    workers: int
    prune: bool = True
    sampler_seed: int = 0
    keep: str = "runs"  # runs: every seed's folder as trained; best: only best.pt (or the last checkpoint)


@dataclass
class TrialRun:
    """A trial this process runs."""

    trial: Any  # optuna.Trial
    folder: Path
    seeds: tuple[int, ...]
    pending: list[int]
    mix: dict[str, float] | None
    started: float = field(default_factory=time.perf_counter)
    scores: dict[int, float] = field(default_factory=dict)
    reported: int = 0  # evaluations reported to the pruner
    waiting: set[int] = field(default_factory=set)  # seeds whose folder an earlier process still holds

    @property
    def number(self) -> int:
        return int(self.trial.number)


@contextmanager
def held(folder: Path, name: str) -> Iterator[None]:
    """Wait for and hold the lock file ``folder/name``."""
    lock = FolderLock(folder, name)
    while True:
        try:
            lock.acquire()
            break
        except FolderBusy:
            time.sleep(0.05)
        except FolderUnusable as exc:
            raise fail(f"--out {folder}: cannot hold a lock file there ({exc.reason})") from None
    try:
        yield
    finally:
        lock.release()


def open_study(out: Path, prune: bool = True) -> Any:
    """The sweep's study in ``out/study.db``, created on first use (under the study lock)."""
    import optuna
    from optuna.storages import RDBStorage

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
    # the heartbeats are recorded here (Sweep.heartbeat), not by Study.optimize's thread
    warnings.filterwarnings("ignore", message="Heartbeat of storage is supposed to be used with Study.optimize")
    storage = RDBStorage(f"sqlite:///{(out / STUDY_FILE).resolve()}", engine_kwargs={"connect_args": {"timeout": 300}},
                         heartbeat_interval=HEARTBEAT, grace_period=GRACE, heartbeat_stale_trial_callback=retry)
    pruner = (optuna.pruners.MedianPruner(n_startup_trials=5, n_warmup_steps=PRUNE_FROM) if prune
              else optuna.pruners.NopPruner())
    return optuna.create_study(study_name=STUDY_NAME, storage=storage, direction="maximize", load_if_exists=True,
                               pruner=pruner)


def retry(study: Any, trial: Any) -> None:
    """Enqueue a WAITING copy of the failed ``trial`` (Optuna's ``RetryHeartbeatStaleTrialCallback``), unless
    it was retried ``MAX_RETRY`` times for processes that died already: the retries of a stop asked for
    (its ``interrupts``) are not counted, so Ctrl-C never uses up the budget."""
    from optuna.storages import RetryHeartbeatStaleTrialCallback

    RetryHeartbeatStaleTrialCallback(MAX_RETRY + int(trial.user_attrs.get("interrupts", 0)))(study, trial)


def replaced_numbers(trials: list[Any]) -> set[int]:
    """The failed trials that a retry took over: they end as their retry does."""
    return {n for t in trials for n in t.system_attrs.get("retry_history", [])}


class Sweep:
    """One process of a sweep in ``out``."""

    def __init__(self, spec: SweepSpec, options: Options, out: Path, echo: Callable[[str], None]) -> None:
        self.spec, self.options, self.out, self.echo = spec, options, out, echo
        self.pool = Pool(options.workers)
        self.active: dict[int, TrialRun] = {}
        self.worker = f"{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"
        self.study: Any = None
        self.me: FolderLock | None = None
        self.asked_out = -math.inf  # when the study last had no trial left to ask for
        self.last_heartbeat = self.last_prune_look = -math.inf
        self.ran = 0  # trials this process ended

    # -- the study -------------------------------------------------------------------------------------

    def open(self) -> None:
        """Create or join the sweep in ``out``; refuses a folder that holds another sweep."""
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise fail(f"--out {self.out}: cannot create it ({exc.strerror or exc})") from None
        with held(self.out, "study.lock"):
            check_spec(self.out, self.spec)
            self.study = open_study(self.out, self.options.prune)
        self.me = FolderLock(self.out / "workers", f"{self.worker}.lock")
        try:
            self.me.acquire()
        except (FolderBusy, FolderUnusable) as exc:
            raise fail(f"--out {self.out}: cannot hold this process's lock file ({exc})") from None

    def close(self) -> None:
        if self.me is None:
            return
        self.me.release()
        (self.out / "workers" / f"{self.worker}.lock").unlink(missing_ok=True)

    def storage(self) -> Any:
        return self.study._storage  # the study's own (cached) storage: what it reads, it sees written

    def owner_alive(self, worker: str) -> bool:
        """Whether the sweep process ``worker`` still runs: it holds its lock file while it lives (a process of
        another machine is taken as alive: its heartbeat says when it is not)."""
        if worker.rsplit("-", 2)[0] != socket.gethostname():
            return True
        path = self.out / "workers" / f"{worker}.lock"
        if not path.exists():
            return False
        lock = FolderLock(path.parent, path.name)
        try:
            lock.acquire()
        except (FolderBusy, FolderUnusable):
            return True
        lock.release()
        path.unlink(missing_ok=True)
        return False

    def recover(self) -> None:
        """Fail and retry the RUNNING trials whose process is gone (under the study lock), and those without a
        process older than the grace period (a process stopped between asking for one and naming itself)."""
        from optuna.storages import fail_stale_trials
        from optuna.trial import TrialState

        self.heartbeat(force=True)  # this process's trials are never stale in its own eyes (after a sleep, say)
        fail_stale_trials(self.study)
        for t in self.study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
            worker = t.user_attrs.get("worker")
            if worker is None:
                started = t.datetime_start
                if started is None or datetime.now() - started < timedelta(seconds=GRACE):
                    continue
                why = "it was asked for but no sweep process took it"
            elif worker == self.worker or self.owner_alive(worker):
                continue
            else:
                why = "its sweep process ended before it did"
            self.echo(f"trial {t.number}: {why}: trying it again")
            self.fail_and_retry(t, why)

    def fail_and_retry(self, trial: Any, note: str, interrupted: bool = False) -> None:
        """End ``trial`` (a FrozenTrial of this study, RUNNING) as FAIL and enqueue a copy of it (:func:`retry`);
        ``interrupted``: a stop asked for, which the retry budget does not count."""
        from optuna.exceptions import UpdateFinishedTrialError
        from optuna.trial import TrialState

        storage = self.storage()
        try:
            storage.set_trial_user_attr(trial._trial_id, "note", note)
            if interrupted:
                interrupts = int(trial.user_attrs.get("interrupts", 0)) + 1
                storage.set_trial_user_attr(trial._trial_id, "interrupts", interrupts)
            if not storage.set_trial_state_values(trial._trial_id, state=TrialState.FAIL):
                return
        except UpdateFinishedTrialError:  # another process ended it first
            return
        retry(self.study, storage.get_trial(trial._trial_id))

    def ask(self) -> TrialRun | None:
        """A new trial (a waiting retry first), or None when the study holds all the trials asked for."""
        import optuna
        from optuna.trial import TrialState

        with held(self.out, "study.lock"):
            self.recover()
            trials = self.study.get_trials(deepcopy=False)
            waiting = any(t.state == TrialState.WAITING for t in trials)
            counted = len(trials) - len(replaced_numbers(trials))
            if not waiting and counted >= self.options.trials:
                return None
            # seeded by the trial's place, so one process asks the same settings again from the same history
            self.study.sampler = optuna.samplers.TPESampler(seed=self.options.sampler_seed * 1_000_003 + len(trials),
                                                            constant_liar=True)
            trial = self.study.ask()
            params = {d.key: d.suggest(trial) for d in self.spec.space}
            folder = trial.user_attrs.get("dir") or f"trials/{trial.number}"
            for name, value in (("worker", self.worker), ("dir", folder), ("seeds", list(self.spec.seeds)),
                                ("scores", {}), ("note", "")):
                trial.set_user_attr(name, value)
            self.storage().record_heartbeat(trial._trial_id)
        settings = self.spec.trial_settings(params)
        path = self.out / folder / TRIAL_SETTINGS
        write_text(path, settings_text(self.spec.algorithm, settings, TRIAL_HEADER))
        run = TrialRun(trial, self.out / folder, self.spec.seeds, list(self.spec.seeds), trial_mix(self.spec, settings))
        retry = self.storage().get_trial(trial._trial_id).system_attrs.get("failed_trial")
        again = f" (trial {retry} again)" if retry is not None else ""
        self.echo(f"trial {trial.number}{again}: {describe_params(params)}")
        self.active[run.number] = run
        return run

    # -- the loop --------------------------------------------------------------------------------------

    def run(self, stop: StopRequest) -> None:
        """Run trials until the study holds the trials asked for and this process's have ended, or until
        ``stop`` is requested (then this process's trials are handed back, to be retried)."""
        try:
            while not stop.requested:
                for result in self.pool.poll():
                    self.seed_ended(result)
                self.look_for_pruning()
                self.heartbeat()
                if self.fill():
                    return
                time.sleep(POLL)
        finally:  # a second signal (KeyboardInterrupt) hands them back too
            if stop.requested:
                self.interrupted()
            self.pool.stop_all()

    def fill(self) -> bool:
        """Start seeds while workers are free: the oldest trial's first, then a new trial's. True when this
        process is done: nothing runs here and the study has no trial left to ask for."""
        while self.pool.free() > 0:
            run = next((r for r in self.active.values() if r.pending), None)
            if run is None:
                idle = not self.active and not self.pool.running
                if not idle and time.monotonic() - self.asked_out < ASK_AGAIN:
                    return False
                run = self.ask()
                if run is None:
                    self.asked_out = time.monotonic()
                    return idle
                self.asked_out = -math.inf
            seed = run.pending.pop(0)
            job = SeedJob((run.number, seed), self.spec.algorithm, run.folder / TRIAL_SETTINGS, seed,
                          run.folder / f"seed-{seed}", self.spec.games)
            result = self.pool.start(job)
            if result is not None and result.busy:  # the run of a process that is stopping: start it later
                run.pending.insert(0, seed)
                if seed not in run.waiting:
                    run.waiting.add(seed)
                    self.echo(f"trial {run.number} seed {seed}: waiting for an earlier run to leave its folder "
                              f"({result.error})")
                return False
            if result is not None:
                self.seed_ended(result)
        return False

    def heartbeat(self, force: bool = False) -> None:
        if not force and time.monotonic() - self.last_heartbeat < HEARTBEAT:
            return
        self.last_heartbeat = time.monotonic()
        for run in self.active.values():
            self.storage().record_heartbeat(run.trial._trial_id)

    def seed_ended(self, result: SeedResult) -> None:
        number, seed = result.job.key
        run = self.active.get(number)
        if run is None or result.stopped:
            return
        if result.error is not None:
            self.end_failed(run, f"seed {seed}: {result.error}")
            return
        assert result.score is not None
        run.scores[seed] = result.score
        if not self.write(run, lambda: run.trial.set_user_attr("scores", {str(s): v for s, v in
                                                                          sorted(run.scores.items())})):
            return
        if self.options.keep == "best":
            keep_best_only(result.job.run_dir)
        how = " (scored before)" if result.reused else f" in {format_duration(result.seconds)}"
        self.echo(f"trial {number} seed {seed}: score {result.score:.3f}{how}; {len(run.scores)}/{len(run.seeds)} "
                  f"seeds{self.best_so_far()}")
        if len(run.scores) == len(run.seeds):
            self.end_complete(run)

    def end_complete(self, run: TrialRun) -> None:
        scores = [run.scores[s] for s in run.seeds]
        value = objective(self.spec.objective, scores)
        if not self.write(run, lambda: self.study.tell(run.trial, value)):
            return
        del self.active[run.number]
        self.ran += 1
        write_best(self.out, self.spec, self.study)
        self.echo(f"trial {run.number} done: {self.spec.objective} {value:.3f} (seeds "
                  f"{' '.join(f'{s:.3f}' for s in scores)}) in {format_duration(time.perf_counter() - run.started)}; "
                  f"{self.progress()}{self.best_so_far()}")

    def end_failed(self, run: TrialRun, note: str) -> None:
        from optuna.trial import TrialState

        self.end(run, TrialState.FAIL, note, lambda: f"failed: {note}; {self.progress()}")

    def thin(self, run: TrialRun) -> None:
        """``--keep best``: every seed's run of an ended (pruned, failed) trial keeps only its best weights."""
        if self.options.keep == "best":
            for seed in run.seeds:
                keep_best_only(run.folder / f"seed-{seed}")

    def look_for_pruning(self) -> None:
        """Report each evaluation that every seed of a trial has made (its number n as the step, the objective
        over the seeds' n-th evaluation scores as the value: trials of other batch sizes evaluate at other env
        steps), and stop a trial the pruner says to."""
        if not self.options.prune or time.monotonic() - self.last_prune_look < PRUNE_EVERY:
            return
        self.last_prune_look = time.monotonic()
        for run in list(self.active.values()):
            if run.pending:  # a seed not started has no evaluation yet
                continue
            series = [sorted(eval_scores(run.folder / f"seed-{s}", run.mix).items()) for s in run.seeds]
            for n in range(run.reported + 1, min(len(s) for s in series) + 1):
                value = objective(self.spec.objective, [s[n - 1][1] for s in series])
                if not self.write(run, lambda: run.trial.report(value, n)):  # noqa: B023 - called at once
                    break
                run.reported = n
                if run.trial.should_prune():
                    self.prune(run, n, series[0][n - 1][0], value)
                    break

    def prune(self, run: TrialRun, n: int, step: int, value: float) -> None:
        from optuna.trial import TrialState

        note = (f"pruned at evaluation {n} (step {step:,}): {self.spec.objective} evaluation score {value:.3f} below "
                f"the median of the trials before it")
        self.end(run, TrialState.PRUNED, note, lambda: f"{note}; {self.progress()}{self.best_so_far()}")

    def end(self, run: TrialRun, state: Any, note: str, said: Callable[[], str]) -> None:
        """End ``run`` before its seeds finished (pruned, failed): stop its runs, tell the study with ``note``,
        thin its folders and say ``said`` (read once the trial is counted, so the progress includes it)."""
        self.pool.stop([(run.number, s) for s in run.seeds])
        if not self.write(run, lambda: (run.trial.set_user_attr("note", note),
                                        self.study.tell(run.trial, state=state))):
            return
        del self.active[run.number]
        self.ran += 1
        self.thin(run)
        self.echo(f"trial {run.number} {said()}")

    def write(self, run: TrialRun, action: Callable[[], Any]) -> bool:
        """Do ``action`` (a write of ``run``'s trial); False where another process has ended the trial meanwhile
        (its heartbeat looked stale: this process slept, or its disk stalled): the trial is then left to the
        retry that process made, and its runs here are stopped."""
        from optuna.exceptions import UpdateFinishedTrialError

        try:
            action()
            return True
        except (UpdateFinishedTrialError, ValueError):  # ValueError: Optuna's "Cannot tell a FAIL trial"
            if self.storage().get_trial(run.trial._trial_id).state.name == "RUNNING":
                raise
        self.pool.stop([(run.number, s) for s in run.seeds])
        self.active.pop(run.number, None)
        self.echo(f"trial {run.number}: ended by another sweep process meanwhile (it found its heartbeat late); "
                  f"left to the retry it made")
        return False

    def interrupted(self) -> None:
        """Ctrl-C or a signal: stop the seeds and hand this process's trials back, to be retried."""
        self.pool.stop_all()
        for run in list(self.active.values()):
            trial = self.storage().get_trial(run.trial._trial_id)
            self.fail_and_retry(trial, "the sweep was stopped", interrupted=True)
        self.active.clear()

    # -- lines -----------------------------------------------------------------------------------------

    def progress(self) -> str:
        from optuna.trial import TrialState

        trials = self.study.get_trials(deepcopy=False)
        replaced = replaced_numbers(trials)
        ended = sum(1 for t in trials if t.state.is_finished() and t.number not in replaced)
        running = sum(1 for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING))
        return f"{ended}/{self.options.trials} trials ended" + (f", {running} running" if running else "")

    def best_so_far(self) -> str:
        try:
            best = self.study.best_trial
        except ValueError:  # no trial complete yet
            return ""
        return f"; best so far: trial {best.number}, {self.spec.objective} {best.value:.3f}"


def describe_params(params: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v:.4g}" if isinstance(v, float) else f"{k} {v}" for k, v in params.items())


def trial_mix(spec: SweepSpec, settings: dict[str, Any]) -> dict[str, float] | None:
    """Each opponent's share of a trial's training envs, as its evaluations weigh them."""
    from arena_ppo.plan import opponent_specs
    from arena_ppo.prepare import build_config
    from arena_ppo.runners.evaluator import training_mix

    cfg = build_config(spec.algorithm, dict(settings))
    try:
        return training_mix(opponent_specs(cfg.run, cfg.run.num_envs))
    except ValueError:
        return None


def check_spec(out: Path, spec: SweepSpec) -> None:
    """Write ``sweep.json``, or refuse a folder whose sweep is defined otherwise."""
    path = out / SPEC_FILE
    wanted = spec.to_dict()
    if path.exists():
        try:
            stored = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise fail(f"--out {out}: {SPEC_FILE} cannot be read ({exc}); give another --out") from None
        differ = [k for k in wanted if stored.get(k) != wanted[k]] if isinstance(stored, dict) else list(wanted)
        if differ:
            raise fail(f"--out {out}: holds a sweep of other {', '.join(differ)} (its {SPEC_FILE}); give the same "
                       f"space, settings, --seeds, --seed-offset, --objective and --score-games to continue it, or "
                       f"another --out")
        return
    if (out / STUDY_FILE).exists():
        raise fail(f"--out {out}: holds a {STUDY_FILE} without its {SPEC_FILE}; give another --out")
    write_text(path, json.dumps(wanted, indent=2) + "\n")


def keep_best_only(run_dir: Path) -> None:
    """``--keep best``: a scored seed keeps best.pt (or, without one, its last checkpoint), not the others."""
    from arena.training import BEST_CHECKPOINT, list_checkpoints

    if not run_dir.is_dir():
        return
    saved = list_checkpoints(run_dir)
    keep = [] if (run_dir / BEST_CHECKPOINT).is_file() else saved[-1:]
    for path in saved:
        if path not in keep:
            path.unlink(missing_ok=True)


def best_header(out: Path, spec: SweepSpec, best: Any, total: int) -> str:
    scores = best.user_attrs.get("scores", {})
    per_seed = ", ".join(f"seed {s} {float(v):.3f}" for s, v in scores.items())
    return (f"arena sweep {out}: the best of {total} trials: trial {best.number}, {spec.objective} {best.value:.4f} "
            f"({per_seed})\n"
            f"searched: {', '.join(d.key for d in spec.space)}\n"
            f"train with it: arena train {spec.algorithm} --config {out / BEST_FILE}")


def write_best(out: Path, spec: SweepSpec, study: Any) -> Path | None:
    """``DIR/best.yaml``: the best trial's settings as a ``--config`` file, the very file its seeds trained
    with but for the comments at its top and the settings the sweep set itself (``spec.own``: its
    evaluation interval, so ``arena train --config best.yaml`` evaluates at its own)."""
    try:
        best = study.best_trial
    except ValueError:
        return None
    total = len(study.get_trials(deepcopy=False))
    settings = {k: v for k, v in spec.trial_settings(dict(best.params)).items() if k not in spec.own}
    path = out / BEST_FILE
    write_text(path, settings_text(spec.algorithm, settings, best_header(out, spec, best, total)))
    return path
