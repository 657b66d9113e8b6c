"""The seeds' runs of a sweep: settings files, the worker processes that train and score them, their records.

Each seed is one process (:mod:`arena_ppo.sweep.job`: ``arena train … --threads 1`` then the score),
at most ``workers`` at a time (:class:`Pool`). A seed's run is the folder ``…/seed-<S>``; beside it
``seed-<S>.log`` holds what the process printed and ``seed-<S>.json`` its result, written last and
atomically, so a seed with a result is done: a sweep that stopped and starts again reuses it (when
its settings file, algorithm and games are still the ones it was scored with) and trains the others
again from the start in a clean folder.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from arena.folder_lock import FolderBusy
from arena.training.best import training_aim
from arena.training.metrics import write_text_atomically
from arena.training.run_dir import lock_run
from arena.training.settings import by_key
from arena_ppo.train_config import default_config

STOP_WAIT = 60.0  # seconds a stopped run gets to save and end before it is killed


def settings_text(algorithm: str, settings: Mapping[str, Any], header: str = "") -> str:
    """``settings`` (by key) as a ``--config`` file: a mapping of sections, in the trainer's order, each
    float written so that it reads back to the same bits."""
    order = list(by_key(default_config(algorithm)))
    sections: dict[str, dict[str, Any]] = {}
    for key in sorted(settings, key=lambda k: order.index(k) if k in order else len(order)):
        section, name = key.split(".", 1)
        value = settings[key]
        sections.setdefault(section, {})[name] = list(value) if isinstance(value, tuple) else value
    body = yaml.safe_dump(sections, sort_keys=False, default_flow_style=False)
    return "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines()) + body


def digest(*parts: str) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class SeedJob:
    """One seed's run of one group of settings (a trial, or one side of ``--confirm``)."""

    key: tuple[Any, int]  # (the trial's number or the group's name, the seed)
    algorithm: str
    settings: Path  # the --config file the run trains with
    seed: int
    run_dir: Path
    games: int  # score games against each reference (0: the evaluation's record)

    @property
    def result_path(self) -> Path:
        return self.run_dir.parent / f"{self.run_dir.name}.json"

    @property
    def log_path(self) -> Path:
        return self.run_dir.parent / f"{self.run_dir.name}.log"

    @property
    def digest(self) -> str:
        return digest(self.settings.read_text(encoding="utf-8"), self.algorithm, str(self.games), str(self.seed))

    def train_args(self) -> list[str]:
        """The ``arena train`` command line of this run (what ``arena train`` would be given by hand)."""
        return ["train", self.algorithm, "--config", str(self.settings), "--seed", str(self.seed), "--threads", "1",
                "--out", str(self.run_dir), "--no-progress"]

    def command(self) -> list[str]:
        return [sys.executable, "-m", "arena_ppo.sweep.job", "--result", str(self.result_path), "--run-dir",
                str(self.run_dir), "--algorithm", self.algorithm, "--games", str(self.games), "--digest", self.digest,
                "--seed", str(self.seed), "--parent", str(os.getpid()), "--", *self.train_args()]

    def done(self) -> dict[str, Any] | None:
        """The result of an earlier process for these very settings, or None."""
        try:
            data = json.loads(self.result_path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("digest") != self.digest or not isinstance(data.get("score"), float):
            return None
        return data


@dataclass
class SeedResult:
    """How one seed's run ended: a ``score``, or an ``error`` line."""

    job: SeedJob
    score: float | None = None
    error: str | None = None
    reused: bool = False  # the result of an earlier sweep process
    stopped: bool = False  # stopped by the sweep (pruned, interrupted)
    busy: bool = False  # not started: an earlier process still holds its folder (start it again later)
    seconds: float = 0.0


@dataclass
class Running:
    job: SeedJob
    process: subprocess.Popen[bytes]
    started: float
    stopping: bool = False


class Pool:
    """At most ``workers`` seed processes at once."""

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self.running: dict[tuple[Any, int], Running] = {}

    def free(self) -> int:
        return self.workers - len(self.running)

    def start(self, job: SeedJob) -> SeedResult | None:
        """Start ``job``'s process, or return its result where an earlier process left one (or where its
        folder cannot be cleaned for a new run: ``busy`` where a process still trains there)."""
        data = job.done()
        if data is not None:
            return SeedResult(job, float(data["score"]), reused=True)
        try:
            clean_run_dir(job.run_dir)
        except ValueError as exc:
            return SeedResult(job, error=str(exc), busy=isinstance(exc.__context__, FolderBusy))
        job.run_dir.parent.mkdir(parents=True, exist_ok=True)
        job.result_path.unlink(missing_ok=True)
        with open(job.log_path, "wb") as log:
            process = subprocess.Popen(job.command(), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                       start_new_session=True)  # Ctrl-C reaches the sweep, which stops them
        self.running[job.key] = Running(job, process, time.perf_counter())
        return None

    def poll(self) -> list[SeedResult]:
        """The runs that ended since the last call."""
        ended = []
        for key, run in list(self.running.items()):
            status = run.process.poll()
            if status is None:
                continue
            del self.running[key]
            ended.append(self.result(run, status))
        return ended

    def result(self, run: Running, status: int) -> SeedResult:
        seconds = time.perf_counter() - run.started
        job = run.job
        if run.stopping:
            return SeedResult(job, error="stopped by the sweep", stopped=True, seconds=seconds)
        data = job.done() if status == 0 else None
        if data is None:
            why = last_error(job.log_path) or f"exit status {status}"
            return SeedResult(job, error=why, seconds=seconds)
        return SeedResult(job, float(data["score"]), seconds=seconds)

    def stop(self, keys: list[tuple[Any, int]]) -> list[SeedResult]:
        """Stop these runs (SIGTERM: a run saves and ends; killed after a minute) and wait for them."""
        runs = [self.running[key] for key in keys if key in self.running]
        for run in runs:
            run.stopping = True
            signal_group(run.process, signal.SIGTERM)
        deadline = time.monotonic() + STOP_WAIT
        out = []
        for run in runs:
            try:
                run.process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                signal_group(run.process, signal.SIGKILL)
                run.process.wait()
            del self.running[run.job.key]
            out.append(self.result(run, run.process.returncode))
        return out

    def stop_all(self) -> list[SeedResult]:
        return self.stop(list(self.running))


def signal_group(process: subprocess.Popen[bytes], signum: int) -> None:
    try:
        os.killpg(process.pid, signum)
    except (ProcessLookupError, PermissionError):
        pass


def clean_run_dir(run_dir: Path) -> None:
    """Remove what a stopped process left in ``run_dir``, so the seed trains again from the start;
    ``ValueError`` where a live process still writes there (:func:`~arena.training.run_dir.lock_run`'s, its
    ``__context__`` the :class:`~arena.folder_lock.FolderBusy`) or the folder cannot be removed."""
    if not run_dir.exists():
        return
    lock = lock_run(run_dir)
    try:
        shutil.rmtree(run_dir)
    except OSError as exc:
        raise ValueError(f"{run_dir}: cannot remove the unfinished run ({exc.strerror or exc})") from None
    finally:
        lock.release()


def last_error(log: Path) -> str:
    """The line a failed run ended with (click's ``Error: …``, or the last line of a traceback)."""
    try:
        lines = [line.strip() for line in log.read_text(encoding="utf-8", errors="replace").splitlines()]
    except OSError:
        return ""
    lines = [line for line in lines if line]
    for line in reversed(lines):
        if line.startswith(("Error: ", "error: ")):
            return line.split(": ", 1)[1][:300]
    return lines[-1][:300] if lines else ""


def eval_scores(run_dir: Path, mix: Mapping[str, float] | None) -> dict[int, float]:
    """The score of each evaluation in ``run_dir``'s eval.csv, by step: the aim over ``mix`` (each
    opponent's share of the training envs, as best.pt is kept by), else the mean over the references;
    a row cut short by a stopped run is skipped. eval.csv keeps fractions of the games, so an opponent's
    score (a win 1, a draw 1/2) is its win fraction plus half its draw fraction."""
    path = run_dir / "eval.csv"
    out: dict[int, float] = {}
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    except (OSError, csv.Error, UnicodeDecodeError):
        return out
    for row in rows:
        try:
            step = int(row["step"])
            scores = {col[5:-4]: float(value) + 0.5 * float(row[col[:-4] + "_draw"])
                      for col, value in row.items() if col and col.startswith("eval_") and col.endswith("_win")}
        except (KeyError, TypeError, ValueError):
            continue
        if not scores:
            continue
        aim = training_aim(scores, mix)
        out[step] = aim if aim is not None else sum(scores.values()) / len(scores)
    return out


def write_text(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, text)
