"""arena.guard: an agent call leaves the process as it found it, or the agent is blamed by name.

torch's default dtype and device, gradient tracking and the working directory are put back after every
call into agent code, and a change is the agent's failure as an exception is; a child the agent forked
that comes back out of its code ends on the spot instead of playing on beside its parent.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.guard import AgentCodeError, call_agent
from cli_checks import refused
from meddler_plugin import meddler_plugin

ROOT = Path(__file__).resolve().parent.parent
FAST = ["-n", "4", "--env", "max_time=30", "-q", "--device", "cpu"]


def set_dtype() -> None:
    torch.set_default_dtype(torch.float64)


def set_device() -> None:
    torch.set_default_device("meta")


def grad_off() -> None:
    torch.set_grad_enabled(False)


def chdir_to(path: Path):
    return lambda: os.chdir(path)


@pytest.mark.parametrize("fn, words", [
    (set_dtype, ["act() changed torch's default dtype from torch.float32 to torch.float64 (put back)"]),
    (set_device, ["act() changed torch's default device from cpu to meta (put back)"]),
    (grad_off, ["act() changed gradient tracking from on to off (put back)"]),
], ids=["dtype", "device", "grad"])
def test_a_change_of_torch_s_defaults_is_put_back_and_blamed(fn, words):
    with pytest.raises(AgentCodeError) as exc:
        call_agent("meddler", "act", fn)
    assert exc.value.changed and str(exc.value).startswith("agent 'meddler': ")
    for word in words:
        assert word in str(exc.value)
    assert torch.get_default_dtype() == torch.float32 and torch.get_default_device() == torch.device("cpu")
    assert torch.is_grad_enabled() and torch.zeros(1).device.type == "cpu"


def test_a_change_of_the_working_directory_is_put_back_and_blamed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with pytest.raises(AgentCodeError, match=f"reset\\(\\) changed the working directory from {tmp_path} to "
                                             f"{elsewhere} \\(put back\\)"):
        call_agent("wanderer", "reset", chdir_to(elsewhere))
    assert Path.cwd() == tmp_path


def test_a_call_that_raises_and_changes_is_blamed_for_the_raise_and_put_back():
    def both():
        torch.set_default_dtype(torch.float64)
        raise ValueError("boom")

    with pytest.raises(AgentCodeError) as exc:
        call_agent("messy", "act", both)
    assert exc.value.cause.startswith("ValueError: boom (it also changed torch's default dtype")
    assert not exc.value.changed and torch.get_default_dtype() == torch.float32


def test_a_call_that_changes_nothing_is_untouched(tmp_path):
    assert call_agent("tidy", "act", lambda: torch.zeros(2, dtype=torch.float64).sum()).dtype == torch.float64


FORK = """
import os, sys
from arena.guard import AgentCodeError, call_agent

def forks(how):
    if os.fork() == 0:  # the child comes back out of the agent's code, one way or another
        if how == "exit":
            sys.exit(0)
        if how == "raise":
            raise RuntimeError("child")
        return "child's action"
    os.wait()
    return "parent's action"

for how in ("exit", "raise", "return"):
    try:
        print(how, call_agent("forker", "act", forks, how), flush=True)
    except AgentCodeError as exc:
        print(how, "failed:", exc, flush=True)
print("the arena goes on once", flush=True)
"""


def test_a_forked_child_that_leaves_the_agent_s_code_ends_there():
    done = subprocess.run([sys.executable, "-c", FORK], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["exit parent's action", "raise parent's action", "return parent's action",
                                        "the arena goes on once"]
    assert done.stderr.count("a process that agent 'forker' forked in act() came back out of it") == 3


# -- as a user meets it -------------------------------------------------------------------------------



@pytest.mark.parametrize("mode, words", [
    ("dtype", ["act() changed torch's default dtype from torch.float32 to torch.float64 (put back)"]),
    ("cwd", ["act() changed the working directory from", "(put back)"]),
])
def test_arena_play_names_an_agent_that_changes_the_process(fake_dists, tmp_path, monkeypatch, mode, words):
    monkeypatch.chdir(tmp_path)
    fake_dists.add("meddler", f"meddler_{mode}", meddler_plugin(mode, str(tmp_path.parent), call=3))
    result = CliRunner().invoke(main, ["play", "meddler", "crank", *FAST])
    line = refused(result).strip().splitlines()[-1]
    assert line.startswith("Error: agent 'meddler' (A) ")
    for word in words:
        assert word in line
    assert Path.cwd() == tmp_path and torch.get_default_dtype() == torch.float32


LEAGUE = """
name: forked
output: out
seed: 1
device: cpu
max_envs: 16
games_per_pairing: 2
env: {max_time: 30}
rating: {bootstrap_rounds: 10}
participants: [meddler, crank]
"""


def test_a_forking_agent_leaves_one_process_playing_the_league_and_one_report(tmp_path):
    """In a process of its own: the child a forking agent leaves behind would otherwise run on in pytest."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "meddler_fork.py").write_text(textwrap.dedent(meddler_plugin("fork", "", call=3)))
    info = plugins / "meddler_fork-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: meddler-fork\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[arena]\nmeddler_fork = meddler_fork\n")
    (tmp_path / "league.yaml").write_text(LEAGUE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "arena", "tournament", "league.yaml", "-q", "--json"],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # one object: a second process playing on would print a second report
    assert report["played"] == 2 and report["forfeited"] == 0 and report["complete"]
    assert "a process that agent 'meddler' forked in act() came back out of it" in done.stderr
