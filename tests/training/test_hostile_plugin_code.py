"""Plugin code that misbehaves under `arena train ppo`: a reward function (``--reward``) that raises, exits,
returns the wrong thing or values out of bounds, and an opponent that changes the process under the
trainer. Each ends in one line naming the plugin, what it did and what was expected, exit 2, and the
run keeps what it learned, as a misbehaving opponent's run does (test_hostile_training.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.training import list_checkpoints
from cli_checks import refused
from meddler_plugin import meddler_plugin

TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=1", "--eval-games", "0",
        "--no-progress", "--threads", "1", "--num-envs", "4", "--device", "cpu"]

REWARD_PLUGIN = '''
import sys
import torch
import arena

MODE = {mode!r}
calls = [0]

def bad(obs, next_obs, rewards, dones, infos):
    calls[0] += 1
    if calls[0] < 40:  # fail in the third rollout (16 steps each), after two updates were learned
        return torch.zeros_like(rewards)
    if MODE == "raise":
        raise ValueError("boom")
    if MODE == "exit":
        sys.exit(6)
    if MODE == "none":
        return None
    if MODE == "short":
        return torch.zeros(rewards.shape[0] - 1)
    if MODE == "nan":
        return torch.full_like(rewards, float("nan"))
    if MODE == "inf":
        return torch.full_like(rewards, float("inf"))
    if MODE == "huge":
        return torch.full_like(rewards, 1e30)
    return torch.zeros_like(rewards)

@arena.hookimpl
def arena_rewards():
    return {{"bad": bad}}
'''

EXPECTED = "expected a tensor of real numbers of shape [4] on cpu, one value per learner aircraft"
BOUNDS = "expected finite values within ±1e+06, as the env's own reward parts are"
REWARD_FAULTS = [  # (mode, what the line says after "reward 'bad' (from bad-reward 1.0) ")
    ("raise", "raised ValueError: boom"),
    ("exit", "raised SystemExit (called sys.exit(6))"),
    ("none", f"returned None; {EXPECTED}"),
    ("short", f"returned a tensor of shape [3]; {EXPECTED}"),
    ("nan", f"returned NaN; {BOUNDS}"),
    ("inf", f"returned an infinite value; {BOUNDS}"),
    ("huge", f"returned a value of magnitude 1e+30; {BOUNDS}"),
]


def train(*args: str):
    return CliRunner().invoke(main, ["train", "ppo", *args])


def last_line(result) -> str:
    return refused(result).strip().splitlines()[-1]


def kept_two_updates(out: Path, line: str) -> None:
    """What was learned before the fault is kept: the checkpoints of the two updates, finite."""
    saved = list_checkpoints(out)
    assert [p.name for p in saved] == ["ckpt_000000064.pt", "ckpt_000000128.pt"]
    assert f"what was learned is saved in {saved[-1]}" in line
    data = torch.load(saved[-1], weights_only=True)
    assert data["counters"]["updates"] == 2 and all(torch.isfinite(v).all() for v in data["model"].values())


@pytest.mark.parametrize("mode, said", REWARD_FAULTS, ids=[m for m, _ in REWARD_FAULTS])
def test_a_faulty_reward_plugin_is_named_and_the_run_keeps_what_it_learned(fake_dists, tmp_path, mode, said):
    fake_dists.add("bad-reward", f"bad_reward_{mode}", REWARD_PLUGIN.format(mode=mode))
    out = tmp_path / "run"
    result = train(*TINY, "--vs", "crank", "--reward", "bad", "--max-steps", "256", "--save-interval", "64",
                   "--out", str(out))
    line = last_line(result)
    assert line.startswith(f"Error: training stopped: reward 'bad' (from bad-reward 1.0) {said}; "), line
    assert "learning-rate" not in line and "diverged" not in line
    kept_two_updates(out, line)




@pytest.mark.parametrize("mode, said", [
    ("dtype", "act() changed torch's default dtype from torch.float32 to torch.float64 (put back)"),
    ("cwd", "act() changed the working directory from {here} to {elsewhere} (put back)"),
])
def test_an_opponent_that_changes_the_process_is_named_and_a_relative_out_still_holds_the_run(
        fake_dists, tmp_path, monkeypatch, mode, said):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(here)
    plugin = meddler_plugin(mode, str(elsewhere), call=40)  # in the third rollout, after two updates were learned
    fake_dists.add("meddler", f"meddler_{mode}", plugin)
    result = train(*TINY, "--vs", "crank", "--vs", "meddler", "--set", "run.floor=0", "--max-steps", "256",
                   "--save-interval", "64", "--out", "run")
    line = last_line(result)
    assert line.startswith("Error: training stopped: opponent agent 'meddler' (--vs meddler) "
                           + said.format(here=here, elsewhere=elsewhere)), line
    assert Path(os.getcwd()) == here and torch.get_default_dtype() == torch.float32
    assert not list(elsewhere.iterdir())  # nothing of the run went where the agent wandered
    kept_two_updates(Path("run"), line.replace(f"saved in {here}/", "saved in "))
