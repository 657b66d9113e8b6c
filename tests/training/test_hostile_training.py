"""Hostile input to `arena train ppo`: damaged checkpoints, misbehaving opponents, bad options, resume branches.

Every case must end in one clear line (exit 2) naming the file/key/agent, never a traceback, and a run
that has to stop keeps what it learned.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.training import list_checkpoints
from cli_checks import refused, succeeded

TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=1", "--eval-games", "0",
        "--no-progress", "--threads", "1", "--num-envs", "4"]


def train(*args: str):
    # The CPU unless a test says otherwise: the misbehaving agents here answer with CPU tensors.
    return CliRunner().invoke(main, ["train", "ppo", "--device", "cpu", *args])


def one_clean_line(result, *words: str) -> str:
    """Exit 2, no traceback, the last line says everything."""
    output = refused(result)
    line = output.strip().splitlines()[-1]
    for word in words:
        assert word in line, (word, line)
    return line


@pytest.fixture(scope="module")
def base_run(tmp_path_factory) -> Path:
    """A tiny finished run with checkpoints at 64 and 128 env steps."""
    out = tmp_path_factory.mktemp("base") / "run"
    result = train(*TINY, "--vs", "crank", "--max-steps", "128", "--save-interval", "64", "--out", str(out))
    assert result.exit_code == 0, result.output
    return out


def rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


# -- item 8: damaged trainer state -----------------------------------------------------------------


def setp(data: dict[str, Any], path: str, value: Any) -> None:
    keys = path.split(".")
    target = data
    for key in keys[:-1]:
        target = target[int(key)] if isinstance(target, list) else target[key]
    if isinstance(target, list):
        target[int(keys[-1])] = value
    else:
        target[keys[-1]] = value


DAMAGE = [  # (path, value, words the error line must hold)
    ("config", 42, ["config: expected a mapping of sections", "got int"]),
    ("config.run", [1], ["config: run: expected a mapping of settings", "got list"]),
    ("config.run.num_envs", "abc", ["config: run.num_envs: expected an int", "got 'abc'"]),
    ("config.run.num_envs", 99999999999, ["config: run.num_envs", "got 99999999999"]),
    ("config.run.vs", 5, ["config: run.vs: expected a list", "names", "got 5"]),
    ("config.run.obs_mode", "weird", ["config: run.obs_mode", "got 'weird'"]),
    ("config.ppo.learning_rate", float("nan"), ["config: ppo.learning_rate: expected a number", "got nan"]),
    ("config.ppo.n_steps", -1, ["config: ppo.n_steps", "got -1"]),
    ("config.ppo.clip_epsilonn", 0.1, ["config: unknown setting 'ppo.clip_epsilonn'", "did you mean ppo.clip_epsilon"]),
    ("config.network.actor_hidden", [100000000], ["network.actor_hidden", "4096"]),
    ("counters", None, ["counters: expected a dict", "got NoneType"]),
    ("counters.env_steps", "x", ["counters.env_steps", "expected an int"]),
    ("counters.updates", -4, ["counters.updates", "expected an int >= 0"]),
    ("counters.elapsed", float("inf"), ["counters.elapsed"]),
    ("rng", None, ["rng", "expected a dict"]),
    ("rng.torch", torch.zeros(3, dtype=torch.uint8), ["rng.torch", "shape"]),
    ("rng.action", "seed", ["rng.action"]),
    ("env", [], ["env", "expected a dict"]),
    ("env.world.x", torch.zeros(7), ["env.world.x", "shape [7]"]),
    ("env.generator", torch.zeros(2), ["env.generator"]),
    ("env.num_envs", 9, ["9 envs"]),
    ("opponents", None, ["opponents", "expected a dict"]),
    ("opponents.slots", "x", ["opponents.slots"]),
    ("opponents.slots.0.memory", "x", ["opponents.slots[0].memory"]),
    ("opponents.slots.0.left", "soon", ["opponents.slots[0].left", "expected a whole number of rollouts"]),
    ("opponents.slots.0.memory.tensor:mode", "abc", ["opponents.slots[0].memory", "tensor:mode", "expected a tensor"]),
    ("opponents.slots.0.memory.evil", torch.zeros(1), ["opponents.slots[0].memory", "unexpected entry 'evil'"]),
    ("opponents.specs", ["placeholder"], ["trained --vs placeholder"]),
    ("algorithm", None, ["algorithm", "expected a dict"]),
    ("algorithm.learning_rate", "fast", ["algorithm.learning_rate"]),
    ("algorithm.optimizer.param_groups", [], ["algorithm.optimizer.param_groups"]),
    ("algorithm.optimizer.state.0.exp_avg", torch.zeros(3), ["algorithm.optimizer.state[0].exp_avg", "shape"]),
    ("algorithm.optimizer.state.1.exp_avg_sq", None, ["algorithm.optimizer.state[1].exp_avg_sq"]),
    ("metrics", "x", ["metrics", "expected a dict"]),
    ("best", "top", ["best", "expected a dict"]),
    ("best", {"step": 64, "worst": 2.0, "mean": 0.5, "scores": {}}, ["best", "worst", "expected a fraction"]),
    ("obs_normalizer", None, ["obs_normalizer"]),
    ("format_version", "1", ["format_version", "malformed", "expected an int"]),
    ("agent", 5, ["written by agent 5"]),
]


@pytest.mark.parametrize("path, value, words", DAMAGE, ids=[f"{p}={type(v).__name__}" for p, v, _ in DAMAGE])
def test_damaged_trainer_state_is_one_line_naming_file_and_key(base_run, tmp_path, path, value, words):
    data = torch.load(base_run / "ckpt_000000064.pt", weights_only=True)
    if path.startswith("opponents.slots.0.memory."):
        data["opponents"]["slots"][0]["memory"][path.rpartition(".")[2]] = value
    elif path.startswith("algorithm.optimizer.state"):
        _, _, _, pid, key = path.split(".")
        data["algorithm"]["optimizer"]["state"][int(pid)][key] = value
    else:
        setp(data, path, value)
    bad = tmp_path / "ckpt_000000064.pt"
    torch.save(data, bad)
    result = train("--resume", str(bad), "--max-steps", "128", "--no-progress")
    one_clean_line(result, str(bad), *words)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["ckpt_000000064.pt"]  # nothing written
    assert not (tmp_path / "metrics.csv").exists()


@pytest.mark.parametrize("what", ["nan-weight", "wrong-shape", "missing-key"])
def test_damaged_weights_name_the_key_and_shapes(base_run, tmp_path, what):
    data = torch.load(base_run / "ckpt_000000064.pt", weights_only=True)
    key = next(k for k in data["model"] if k.endswith("weight"))
    if what == "nan-weight":
        data["model"][key] = torch.full_like(data["model"][key], float("nan"))
        words = [key, "NaN"]
    elif what == "wrong-shape":
        shape = list(data["model"][key].shape)
        data["model"][key] = torch.zeros(shape[0] + 1, shape[1])
        words = [key, str(shape), str([shape[0] + 1, shape[1]])]
    else:
        del data["model"][key]
        words = [key, "missing"]
    bad = tmp_path / "bad.pt"
    torch.save(data, bad)
    one_clean_line(train("--resume", str(bad), "--max-steps", "128", "--no-progress"), str(bad), *words)
    play = CliRunner().invoke(main, ["play", str(bad), "crank", "-n", "2", "-q"])
    one_clean_line(play, str(bad), *words)


def test_huge_layer_is_refused_before_allocating(base_run, tmp_path):
    data = torch.load(base_run / "ckpt_000000064.pt", weights_only=True)
    data["network"]["actor_hidden"] = [100_000_000]
    bad = tmp_path / "huge.pt"
    torch.save(data, bad)
    play = CliRunner().invoke(main, ["play", str(bad), "crank", "-n", "2", "-q"])
    one_clean_line(play, str(bad), "network.actor_hidden", "4096")


# -- item 3: resume never overwrites or mixes runs -------------------------------------------------


def test_resume_from_an_older_checkpoint_branches(base_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    result = train("--resume", str(run / "ckpt_000000064.pt"), "--max-steps", "192", "--no-progress")
    assert result.exit_code == 0, result.output
    branch = tmp_path / "run-branch-64"
    assert "note:" in result.output and str(branch) in result.output
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before  # the old line is untouched
    assert [p.name for p in list_checkpoints(branch)] == ["ckpt_000000064.pt", "ckpt_000000128.pt",
                                                          "ckpt_000000192.pt"]
    steps = [int(r["step"]) for r in rows(branch / "metrics.csv")]
    assert steps == [64, 128, 192]  # history up to 64 copied, then this branch's rows, no duplicates
    again = train("--resume", str(run / "ckpt_000000064.pt"), "--max-steps", "128", "--no-progress")
    assert again.exit_code == 0 and (tmp_path / "run-branch-64-2").is_dir()


def test_resume_from_the_latest_continues_in_place(base_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    result = train("--resume", str(run / "ckpt_000000128.pt"), "--max-steps", "192", "--no-progress")
    assert result.exit_code == 0, result.output
    assert "note:" not in result.output
    assert [int(r["step"]) for r in rows(run / "metrics.csv")] == [64, 128, 192]
    assert not list(tmp_path.glob("run-branch-*"))


def test_resume_into_a_folder_of_another_run_is_refused(base_run, tmp_path):
    import shutil

    other = tmp_path / "other"
    shutil.copytree(base_run, other)
    before = sorted(p.name for p in other.iterdir())
    result = train("--resume", str(base_run / "ckpt_000000064.pt"), "--out", str(other), "--max-steps", "192",
                   "--no-progress")
    one_clean_line(result, f"--out {other}", "another training run")
    assert sorted(p.name for p in other.iterdir()) == before


def test_resume_older_checkpoint_with_its_own_folder_as_out_is_refused(base_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    result = train("--resume", str(run / "ckpt_000000064.pt"), "--out", str(run), "--max-steps", "192",
                   "--no-progress")
    one_clean_line(result, "would overwrite", "ckpt_000000128.pt")


def test_resume_into_a_new_out_starts_with_the_history(base_run, tmp_path):
    fork = tmp_path / "fork"
    result = train("--resume", str(base_run / "ckpt_000000064.pt"), "--out", str(fork), "--max-steps", "128",
                   "--no-progress")
    assert result.exit_code == 0, result.output
    assert [int(r["step"]) for r in rows(fork / "metrics.csv")] == [64, 128]
    assert [p.name for p in list_checkpoints(fork)] == ["ckpt_000000064.pt", "ckpt_000000128.pt"]


def test_stale_temp_files_of_dead_writers_are_cleaned_on_resume(base_run, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(base_run, run)
    dead = run / ".ckpt_000000192.pt.999999999.abc123.tmp"  # no such pid
    dead.write_bytes(b"partial")
    result = train("--resume", str(run / "ckpt_000000128.pt"), "--max-steps", "192", "--no-progress")
    assert result.exit_code == 0, result.output
    assert not dead.exists() and "unfinished write" in result.output


# -- items 9, 10, 11: misbehaving --vs opponents ---------------------------------------------------

OPPONENT_PLUGIN = '''
import sys
import numpy as np
import torch
import arena

MODE = {mode!r}

class Bad(arena.BaseAgent):
    name = "bad"

    def __init__(self, device="cpu", env_config=None):
        if MODE == "init":
            raise RuntimeError("cannot initialise")
        super().__init__(device, env_config)
        self.calls = 0

    @classmethod
    def create(cls, device="cpu", env_config=None, **params):
        if MODE == "create":
            raise OSError("weights server down")
        if MODE == "create-exit":
            sys.exit(3)
        return cls(device=device, env_config=env_config, **params)

    def eval(self):
        if MODE == "eval":
            raise RuntimeError("eval broke")
        return super().eval()

    def act(self, obs):
        self.calls += 1
        n = obs["x"].shape[0]
        good = {{"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}}
        if self.calls < 40:  # fail in the third rollout (16 steps each), after two updates were learned
            return good
        if MODE == "raise":
            raise ValueError("boom")
        if MODE == "exit":
            sys.exit(0)
        if MODE == "kbint":
            raise KeyboardInterrupt
        if MODE == "shape":
            good["rudder"] = torch.zeros(n + 1)
        if MODE == "dtype":
            good["rudder"] = torch.zeros(n, dtype=torch.int64)
        if MODE == "missing":
            del good["fire"]
        if MODE == "extra":
            good["flaps"] = torch.zeros(n)
        if MODE == "none":
            return None
        if MODE == "list":
            return {{k: v.tolist() for k, v in good.items()}}
        if MODE == "numpy":
            return {{k: v.numpy() for k, v in good.items()}}
        if MODE == "tuple":
            return (good["rudder"], good["throttle"], good["fire"])
        if MODE == "nan":
            good["rudder"] = torch.full((n,), float("nan"))
        return good

@arena.hookimpl
def arena_agents():
    return [Bad]
'''

STOPS = [  # (mode, words)
    ("raise", ["raised ValueError: boom"]),
    ("exit", ["SystemExit"]),
    ("kbint", ["KeyboardInterrupt", "not a Ctrl-C"]),
    ("shape", ["expected shape [2], got [3]"]),
    ("dtype", ["rudder", "floating point"]),
    ("missing", ["missing key(s) ['fire']"]),
    ("extra", ["unexpected key(s) ['flaps']"]),
    ("none", ["expected a dict", "NoneType"]),
    ("list", ["expected a torch.Tensor", "list"]),
    ("numpy", ["expected a torch.Tensor", "ndarray"]),
    ("tuple", ["expected a dict", "tuple"]),
    ("nan", ["NaN"]),
]


@pytest.mark.parametrize("mode, words", STOPS, ids=[m for m, _ in STOPS])
def test_a_misbehaving_opponent_stops_training_cleanly_and_keeps_the_checkpoint(fake_dists, tmp_path, mode, words):
    fake_dists.add("bad-opponent", f"bad_opp_{mode}", OPPONENT_PLUGIN.format(mode=mode))
    out = tmp_path / "run"
    result = train(*TINY, "--vs", "crank", "--vs", "bad", "--set", "run.floor=0", "--max-steps", "256",
                   "--save-interval", "64", "--out", str(out))
    line = one_clean_line(result, "training stopped", "'bad' (--vs bad)", *words)
    saved = list_checkpoints(out)
    assert f"saved in {saved[-1]}" in line and [p.name for p in saved] == ["ckpt_000000064.pt", "ckpt_000000128.pt"]
    data = torch.load(saved[-1], weights_only=True)
    assert data["counters"]["updates"] == 2 and all(torch.isfinite(v).all() for v in data["model"].values())


@pytest.mark.parametrize("mode, words", [("create", ["create() raised OSError: weights server down"]),
                                         ("create-exit", ["SystemExit", "sys.exit(3)"]),
                                         ("init", ["RuntimeError: cannot initialise"]),
                                         ("eval", ["eval() raised RuntimeError: eval broke"])])
def test_an_opponent_that_cannot_be_built_is_one_line(fake_dists, tmp_path, mode, words):
    fake_dists.add("bad-opponent", f"bad_opp_{mode.replace('-', '_')}", OPPONENT_PLUGIN.format(mode=mode))
    result = train(*TINY, "--vs", "bad", "--max-steps", "64", "--out", str(tmp_path / "run"))
    one_clean_line(result, "--vs bad", "'bad'", *words)
    assert not list_checkpoints(tmp_path / "run")


def test_unreadable_self_play_checkpoint_is_skipped_with_a_warning(base_run, tmp_path):
    out = tmp_path / "run"
    first = train(*TINY, "--vs", "self", "--max-steps", "64", "--out", str(out))
    assert first.exit_code == 0, first.output
    (out / "ckpt_000000010.pt").write_bytes(b"not a checkpoint")
    (out / "ckpt_000000020.pt").write_bytes(b"")
    result = train("--resume", str(out / "ckpt_000000064.pt"), "--max-steps", "256", "--no-progress")
    output = succeeded(result)
    assert "skipping" in output and "ckpt_000000010.pt" in output


# -- item 16: options out of range -----------------------------------------------------------------


@pytest.mark.parametrize("args, words", [
    (["--out", "/proc/arena-x"], ["--out /proc/arena-x", "cannot write"]),
    (["--out", "/dev/null/x"], ["--out /dev/null/x", "cannot write"]),
    (["--num-envs", "99999999999"], ["--num-envs", "99999999999"]),
    (["--max-time", "nan"], ["--max-time", "nan"]),
    (["--max-time", "inf"], ["--max-time"]),
    (["--max-time", "-1"], ["--max-time"]),
    (["--learning-rate", "nan"], ["Invalid value for '--learning-rate'", "'nan'", "expected a number in (0, 1]"]),
    (["--learning-rate", "inf"], ["Invalid value for '--learning-rate'", "'inf'"]),
    # Every other setting goes through --set, its value read as YAML: one line naming the item and the key.
    (["--set", "ppo.gamma=nan"], ["--set ppo.gamma=nan: ppo.gamma: expected a number in [0, 1]", "got 'nan'"]),
    (["--set", "ppo.gamma=.nan"], ["--set ppo.gamma=.nan: ppo.gamma: expected a number in [0, 1]", "got nan"]),
    (["--set", "ppo.gamma=.inf"], ["--set ppo.gamma=.inf: ppo.gamma", "got inf"]),
    (["--set", "ppo.clip_epsilon=-1"], ["--set ppo.clip_epsilon=-1: ppo.clip_epsilon: expected a number in (0, 10]",
                                        "got -1"]),
    (["--set", "ppo.n_steps=1.5"], ["--set ppo.n_steps=1.5: ppo.n_steps: expected an int", "got 1.5"]),
    (["--set", "run.obs_norm=maybe"], ["--set run.obs_norm=maybe: run.obs_norm: expected true or false"]),
    (["--set", "ppo.clip_epsilonn=0.1"], ["--set ppo.clip_epsilonn=0.1: unknown setting 'ppo.clip_epsilonn'",
                                          "did you mean ppo.clip_epsilon?"]),
    (["--set", "network.obs_dim=3"], ["--set network.obs_dim=3: network.obs_dim is computed by the trainer"]),
    (["--set", "ppo.gamma"], ["--set 'ppo.gamma': expected SECTION.NAME=VALUE"]),
    (["--threads", "99999"], ["--threads"]),
    (["--seed", "99999999999999999999999"], ["--seed"]),
    (["--device", "mps"], ["--device", "MPS is not available"]),
    (["--device", "cpu:5"], ["--device", "cpu:5"]),
])
def test_out_of_range_options_are_one_line(tmp_path, args, words):
    if args[0] == "--device" and args[1] == "mps" and torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    base = [*TINY, "--vs", "crank", "--max-steps", "64"]
    if args[0] != "--out":
        base += ["--out", str(tmp_path / "run")]
    result = train(*base, *args)
    one_clean_line(result, *words)
    assert not list_checkpoints(tmp_path / "run")


@pytest.mark.parametrize("args, words", [
    (["--set", "run.self_slots=2"], ["--resume: cannot change run.self_slots of a run"]),
    (["--num-envs", "8"], ["--resume: cannot change run.num_envs (--num-envs) of a run"]),
])
def test_resume_cannot_change_a_fixed_setting(base_run, args, words):
    result = train("--resume", str(base_run / "ckpt_000000128.pt"), *args, "--no-progress")
    one_clean_line(result, *words)


@pytest.mark.parametrize("text, words", [
    ("ppo:\n  gamma: 2\n", ["ppo.gamma: expected a number in [0, 1]", "got 2"]),
    ("ppo:\n  gammma: 0.9\n", ["unknown setting 'ppo.gammma'", "did you mean ppo.gamma?"]),
    ("rn:\n  num_envs: 4\n", ["unknown section 'rn'", "did you mean run?"]),
    ("run: [4]\n", ["run: expected a mapping of settings"]),
    ("ppo:\n  gamma: [\n", ["not valid YAML"]),
])
def test_a_bad_config_file_is_one_line_naming_the_file_and_the_key(tmp_path, text, words):
    config = tmp_path / "settings.yaml"
    config.write_text(text)
    result = train(*TINY, "--vs", "crank", "--max-steps", "64", "--config", str(config), "--out", str(tmp_path / "run"))
    one_clean_line(result, f"--config {config}", *words)
    assert not (tmp_path / "run").exists()


def test_checkpoint_temp_files_carry_the_writer_pid(tmp_path):
    import os

    from arena.output_files import temp_prefix
    from arena.training import clean_stale_temp_files

    live = tmp_path / f"{temp_prefix(tmp_path / 'ckpt_000000001.pt')}x1.tmp"
    live.write_bytes(b"mine")
    dead = tmp_path / ".metrics.csv.999999999.w.tmp"
    dead.write_bytes(b"")
    other = tmp_path / "notes.tmp"
    other.write_bytes(b"")
    assert clean_stale_temp_files(tmp_path) == [dead]
    assert live.exists() and other.exists() and str(os.getpid()) in live.name
