"""Thread defaults: one torch thread and a passive OpenMP wait policy unless the user says otherwise."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

import arena.threads as threads
from arena.cli import main
from arena.env import TensorEnv
from arena.threads import (
    ENV_VAR,
    LARGE_BATCH,
    MAX_THREADS,
    ThreadsError,
    apply_threads,
    auto_threads,
    check_threads,
    default_threads,
    settle_threads,
    usable_cores,
)


@pytest.fixture(autouse=True)
def restore_threads(monkeypatch: pytest.MonkeyPatch):
    before = torch.get_num_threads()
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.setattr(threads, "_chosen", False)  # as in a fresh process
    monkeypatch.setattr(threads, "_settled", None)
    yield
    torch.set_num_threads(before)


def test_default_is_one_thread() -> None:
    torch.set_num_threads(2)
    assert apply_threads() == 1
    assert torch.get_num_threads() == 1


@pytest.mark.parametrize("idle, cores, expected", [(2.0, 2, 2), (1.0, 2, 1), (0.1, 2, 1), (1.8, 2, 2), (15.2, 16, 15),
                                                    (None, 4, 1)])
def test_auto_takes_one_thread_per_idle_core(monkeypatch: pytest.MonkeyPatch, idle, cores, expected) -> None:
    monkeypatch.setattr(threads, "idle_cores", lambda: idle)
    monkeypatch.setattr(threads, "usable_cores", lambda: cores)
    assert auto_threads() == expected


def test_large_batches_get_the_idle_cores_small_ones_one_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "auto_threads", lambda: 2)
    assert default_threads(batch=LARGE_BATCH) == 2
    assert default_threads(batch=LARGE_BATCH - 1) == 1
    assert default_threads() == 1
    monkeypatch.setenv(ENV_VAR, "auto")
    assert default_threads(batch=8) == 2
    monkeypatch.setenv(ENV_VAR, "1")
    assert default_threads(batch=10**6) == 1


def test_processes_on_one_machine_share_its_idle_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "auto_threads", lambda: 4)
    assert default_threads(batch=LARGE_BATCH, processes=2) == 2
    assert default_threads(batch=LARGE_BATCH, processes=8) == 1
    assert default_threads(batch=8, processes=2) == 1
    monkeypatch.setenv(ENV_VAR, "3")
    assert default_threads(batch=LARGE_BATCH, processes=2) == 3  # a count the user set is kept


def test_idle_cores_reads_this_machine() -> None:
    idle = threads.idle_cores(sample_s=0.01)
    assert idle is not None and 0.0 <= idle <= (threads.os.cpu_count() or 1) + 0.01


def test_environment_variable_sets_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "2")
    assert default_threads() == 2
    assert apply_threads(None) == 2
    assert apply_threads(1) == 1  # an explicit count wins over the variable


def test_zero_keeps_torchs_own_count() -> None:
    torch.set_num_threads(2)
    assert apply_threads(0) == 2


@pytest.mark.parametrize("value", ["two", "-1", str(MAX_THREADS + 1), "1.5"])
def test_bad_environment_variable_names_it(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv(ENV_VAR, value)
    with pytest.raises(ThreadsError, match=ENV_VAR):
        default_threads()


@pytest.mark.parametrize("value", [-1, MAX_THREADS + 1, True, 1.0, "1"])
def test_bad_counts_are_refused(value: object) -> None:
    with pytest.raises(ThreadsError, match="--threads"):
        check_threads(value)  # type: ignore[arg-type]


def test_bad_environment_variable_is_one_line_on_the_command_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_VAR, "lots")
    result = CliRunner().invoke(main, ["play", "crank", "placeholder", "--games", "2", "--device", "cpu", "-q"])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"Error: {ENV_VAR}='lots': expected auto or an integer from 0 (torch's default) to {MAX_THREADS}"]


def test_play_runs_with_the_thread_count_asked_for() -> None:
    result = CliRunner().invoke(main, ["play", "crank", "placeholder", "--games", "2", "--device", "cpu", "-q",
                                       "--threads", "2", "--json"])
    assert result.exit_code == 0, result.output
    assert torch.get_num_threads() == 2


PROBE = ("import json, os, sys; {first}; import torch; "
         "print(json.dumps([os.environ.get('OMP_WAIT_POLICY'), 'torch' in sys.modules]))")


def probe(first: str, **env: str) -> list[object]:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", ENV_VAR)}
    out = subprocess.run([sys.executable, "-c", PROBE.format(first=first)], env={**clean, **env}, check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def test_importing_arena_first_makes_openmp_threads_sleep() -> None:
    assert probe("import arena") == ["PASSIVE", True]


def test_a_wait_policy_the_user_chose_is_kept() -> None:
    assert probe("import arena", OMP_WAIT_POLICY="ACTIVE") == ["ACTIVE", True]


def test_too_late_once_torch_is_loaded() -> None:
    # OpenMP has read its policy by then; setting the variable would only mislead child processes.
    assert probe("import torch, arena") == [None, True]


def test_an_env_settles_the_default_for_its_batch_unless_a_count_was_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_torch_default", 3)  # torch's own count, as arena first saw it
    monkeypatch.setattr(threads, "auto_threads", lambda: 2)
    torch.set_num_threads(3)
    TensorEnv(8, device="cpu")
    assert torch.get_num_threads() == 1  # small batch: one thread
    assert settle_threads(LARGE_BATCH) == 2  # still the env's own count: a larger batch takes the idle cores
    torch.set_num_threads(3)  # the user's choice now: kept
    TensorEnv(8, device="cpu")
    assert torch.get_num_threads() == 3


def test_a_count_the_user_or_a_command_chose_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(threads, "_torch_default", 3)
    torch.set_num_threads(2)  # not torch's default: someone chose it
    TensorEnv(8, device="cpu")
    assert torch.get_num_threads() == 2
    monkeypatch.setenv(ENV_VAR, "1")  # the variable applies to a count nobody chose on the command line
    TensorEnv(8, device="cpu")
    assert torch.get_num_threads() == 1
    apply_threads(3)  # --threads 3 wins over the variable and every env built afterwards
    TensorEnv(8, device="cpu")
    assert torch.get_num_threads() == 3


THREADS_PROBE = ("{first}; import torch; from arena.env import TensorEnv; TensorEnv(64, device='cpu'); "
                 "print(torch.get_num_threads())")


@pytest.mark.skipif(usable_cores() < 2, reason="one core: one thread whatever the order")
def test_import_order_does_not_change_the_thread_count() -> None:
    clean = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", ENV_VAR)}
    counts = [subprocess.run([sys.executable, "-c", THREADS_PROBE.format(first=first)], env=clean, check=True,
                             capture_output=True, text=True).stdout.strip()
              for first in ("import arena", "import torch")]
    assert counts == ["1", "1"]
