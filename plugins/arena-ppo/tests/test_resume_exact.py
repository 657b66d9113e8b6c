"""What ``--resume`` promises: the run that stopped and went on saves, draws and learns as the run that
never stopped. Same weights, optimizer, env and opponents' state at every step both saved, the same
metrics rows, for every recipe and every way a run stops (a signal after any update, a step budget
off the save schedule), resumed in its own folder or into a new ``--out``."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.run_files import checkpoint_name, checkpoint_step, list_checkpoints

UPDATE = 8 * 32  # env steps of one update of SMALL
SMALL = ["--num-envs", "8", "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=64", "--eval-games", "0",
         "--no-progress", "--threads", "1", "--save-interval", str(2 * UPDATE)]
RECIPES = {
    "crank": ["--vs", "crank", "--seed", "1"],
    "self-play": ["--vs", "crank", "--vs", "self=0.5", "--seed", "2"],
    "league": ["--vs", "league", "--seed", "0", "--set", "run.warm_up_steps=256", "--set", "run.exploiter_share=0.5"],
}
END = 6 * UPDATE


def train(args: list[str]) -> object:
    return CliRunner().invoke(main, ["train", "ppo", *args])


def tensors(data, prefix=""):
    """Every tensor of a checkpoint by its dotted path."""
    if isinstance(data, torch.Tensor):
        return {prefix: data}
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    return {k: v for key, value in items for k, v in tensors(value, f"{prefix}.{key}" if prefix else str(key)).items()}


def differing(a: Path, b: Path) -> list[str]:
    ta, tb = (tensors(torch.load(path, weights_only=True)) for path in (a, b))
    assert ta.keys() == tb.keys()
    return [key for key in ta if not torch.equal(ta[key], tb[key])]


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.fixture(scope="session")  # with the group mark below: trained once in the suite
def straight(tmp_path_factory):
    """Each recipe's run that never stopped, trained once."""
    cache: dict[str, Path] = {}

    def get(recipe: str) -> Path:
        if recipe not in cache:
            out = tmp_path_factory.mktemp(f"straight-{recipe}")
            result = train([*RECIPES[recipe], *SMALL, "--max-steps", str(END), "--out", str(out)])
            assert result.exit_code == 0, result.output
            cache[recipe] = out
        return cache[recipe]

    return get


def stop_by_signal_after(monkeypatch, updates: int, signum: int) -> None:
    """The process sends itself ``signum`` as the learner's ``updates``-th update is logged (its
    exploiter's turn, where there is one, is still to come at the next update)."""
    from arena_ppo.runners.on_policy_runner import OnPolicyRunner

    log_update, calls = OnPolicyRunner.log_update, []

    def log_then_signal(self):
        calls.append(1)
        if len(calls) == updates:
            os.kill(os.getpid(), signum)
        return log_update(self)

    monkeypatch.setattr(OnPolicyRunner, "log_update", log_then_signal)


# Every recipe stops in every way: by a signal after its 3rd update (SIGINT and SIGTERM share one handler, so
# the recipes take turns), by a step budget off the save schedule, and by a signal after its 1st update,
# resumed into a new --out.
STOPS = [(recipe, stop) for recipe, signal_name in zip(RECIPES, ["SIGINT", "SIGTERM", "SIGINT"], strict=True)
         for stop in (f"{signal_name} after 3", "budget of 3", "SIGTERM after 1, new out")]


@pytest.mark.xdist_group("resume-exact")  # the straight runs are trained on one worker
@pytest.mark.parametrize(("recipe", "stop"), STOPS)
def test_a_stopped_run_resumed_is_the_run_that_never_stopped(recipe, stop, straight, tmp_path, monkeypatch):
    base = straight(recipe)
    split = tmp_path / "split"
    args = [*RECIPES[recipe], *SMALL, "--out", str(split)]
    updates = 1 if "after 1" in stop else 3
    if stop.startswith("budget"):
        result = train([*args, "--max-steps", str(updates * UPDATE)])
        assert result.exit_code == 0, result.output
    else:
        signum = signal.SIGINT if stop.startswith("SIGINT") else signal.SIGTERM
        stop_by_signal_after(monkeypatch, updates, signum)
        result = train([*args, "--max-steps", str(END)])
        assert result.exit_code == 128 + signum, result.output
        monkeypatch.undo()
    stopped_at = updates * UPDATE
    resumed_out = tmp_path / "resumed" if "new out" in stop else split
    resume = ["--resume", str(split / checkpoint_name(stopped_at)), "--max-steps", str(END), "--no-progress"]
    result = train([*resume, *(["--out", str(resumed_out)] if "new out" in stop else [])])
    assert result.exit_code == 0, result.output

    steps = [checkpoint_step(path) for path in list_checkpoints(resumed_out)]
    scheduled = [checkpoint_step(path) for path in list_checkpoints(base)]
    assert scheduled == [2 * UPDATE, 4 * UPDATE, END]
    assert sorted(set(scheduled) | {stopped_at}) == steps  # the stop's checkpoint, and the same schedule
    for step in scheduled:
        if step > stopped_at:
            assert differing(base / checkpoint_name(step), resumed_out / checkpoint_name(step)) == [], step
    losses = [(r["step"], r["policy_loss"], r["value_loss"]) for r in rows(base / "metrics.csv")]
    assert [(r["step"], r["policy_loss"], r["value_loss"]) for r in rows(resumed_out / "metrics.csv")] == losses


SLOW = ["--num-envs", "8", "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=64", "--eval-games", "0",
        "--no-progress", "--threads", "1", "--save-interval", "1024", "--max-steps", "100000000"]


def start_training(out: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "arena", "train", "ppo", "--vs", "crank", *SLOW, *extra,
                             "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def wait_for_rows(path: Path, count: int, proc: subprocess.Popen[str], timeout: float = 120.0) -> None:
    end = time.monotonic() + timeout
    while not (path.exists() and len(rows(path)) >= count):
        assert proc.poll() is None, proc.communicate()[0]
        assert time.monotonic() < end, "timed out waiting for the run's metrics"
        time.sleep(0.1)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM ends a process at once on Windows")
def test_sigterm_finishes_the_update_saves_and_exits_with_the_signals_status(tmp_path):
    """A scheduler's or kill's SIGTERM between two checkpoints: the update is finished, saved with its
    metrics row, and the process ends with status 143, as one a SIGTERM ended."""
    out = tmp_path / "run"
    proc = start_training(out)
    try:
        wait_for_rows(out / "metrics.csv", 2, proc)  # past the first update, before the first scheduled save
        proc.send_signal(signal.SIGTERM)
        output, _ = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM, output
    assert "SIGTERM: stopping after this update and saving a checkpoint" in output
    saved = list_checkpoints(out)
    assert saved, output
    data = torch.load(saved[-1], weights_only=True)
    assert [int(r["update"]) for r in rows(out / "metrics.csv")] == list(range(1, data["counters"]["updates"] + 1))


def test_a_run_folder_another_run_writes_into_is_refused(tmp_path):
    """Two runs started into one folder at once: the second to take the run's lock is refused, naming the
    folder and the holder; once the lock is free the folder can be used."""
    from arena.training.run_dir import lock_run

    out = tmp_path / "run"
    args = ["--vs", "crank", *SMALL, "--max-steps", str(UPDATE), "--out", str(out)]
    with lock_run(out):  # as another process holds it (flock locks each open file on its own)
        result = train(args)
        assert result.exit_code != 0
        assert result.output.strip().splitlines()[-1] == (
            f"Error: --out {out}: another training run (pid {os.getpid()}) is writing into this run folder; wait for "
            f"it to end, or give another --out")
        assert not list_checkpoints(out) and not (out / "metrics.csv").exists()
    assert train(args).exit_code == 0


def test_a_killed_run_leaves_no_lock_behind(tmp_path):
    out = tmp_path / "run"
    proc = start_training(out, "--save-interval", str(UPDATE))
    try:
        wait_for_rows(out / "metrics.csv", 2, proc)
        proc.kill()
        proc.wait(30)
    finally:
        proc.kill()
        proc.communicate()
    assert (out / "train.lock").exists()
    latest = list_checkpoints(out)[-1]
    again = train(["--resume", str(latest), "--max-steps", str(checkpoint_step(latest) + UPDATE), "--no-progress"])
    assert again.exit_code == 0, again.output


def test_a_branch_holds_the_exploiter_snapshots_that_had_joined_its_league(tmp_path):
    """A league's pool draws its exploiters' snapshots with its past: a branch from step 3,072 starts with
    the snapshots that joined by then (and none of the abandoned line's later ones)."""
    from arena.run_files import exploiter_name
    from arena.training.run_dir import branch_history

    source, branch = tmp_path / "league", tmp_path / "league-branch-3072"
    source.mkdir()
    for step in (1024, 3072, 4096):
        (source / checkpoint_name(step)).write_bytes(b"weights")
    for step in (2048, 3072, 5120):
        (source / exploiter_name(step)).write_bytes(b"exploiter")
    branch_history(source, branch, 3072)
    assert sorted(path.name for path in branch.iterdir()) == sorted(
        [checkpoint_name(1024), checkpoint_name(3072), exploiter_name(2048), exploiter_name(3072)])
