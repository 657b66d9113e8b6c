"""The trainer's settings from the outside: the command line, --config and --set, the docs table, the league's
warm-up."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

from arena.cli import main
from arena.training import league_agents
from arena_ppo.train_config import settings_table
from cli_checks import refused

DOCS = Path(__file__).resolve().parents[3] / "docs" / "training.md"
TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=1", "--eval-games", "0",
        "--no-progress", "--threads", "1"]


SMALL = ["--vs", "crank", "--num-envs", "8", "--max-steps", "128", *TINY]  # a run that fails fast, if it runs at all


def train(*args):
    return CliRunner().invoke(main, ["train", *args])


@pytest.mark.parametrize("trainer", ["ppo", "mappo"])
def test_the_command_line_stays_small(trainer):
    text = train(trainer, "--help").output
    options = [line for line in text.splitlines() if re.match(r"\s+-", line)]
    assert len(text.splitlines()) <= 80 and len(options) <= 30, text


def test_the_docs_table_is_the_one_the_settings_declare():
    text = DOCS.read_text()
    begin, end = "<!-- settings table: python -m arena_ppo.train_config -->\n", "<!-- end of the settings table -->"
    assert begin in text and end in text, "docs/training.md lost its settings table markers"
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == settings_table(), \
        "docs/training.md's settings table is stale: paste `python -m arena_ppo.train_config`"


@pytest.mark.parametrize("algorithm, vs", [("ppo", "crank"), ("ppo", "self"), ("ppo", "league"), ("mappo", "crank")])
def test_every_run_reads_the_missile_warning_unless_told_otherwise(algorithm, vs):
    """Without it, a random shot kills a learner that cannot see it (docs/experiments, 2026-12-05)."""
    from arena_ppo.prepare import build_config

    assert build_config(algorithm, {"run.vs": (vs,)}).run.obs_mode == "extended"
    assert build_config(algorithm, {"run.vs": (vs,), "run.obs_mode": "default"}).run.obs_mode == "default"


def test_a_runs_config_yaml_is_a_config_and_the_command_line_wins(tmp_path):
    first = tmp_path / "first"
    result = train("ppo", "--vs", "crank", "--num-envs", "8", "--max-steps", "128", "--seed", "7", "--set",
                   "ppo.clip_epsilon=0.1", "--set", "run.floor=0.5", *TINY, "--out", str(first))
    assert result.exit_code == 0, result.output
    again = tmp_path / "again"
    result = train("ppo", "--config", str(first / "config.yaml"), "--set", "run.floor=0.25", "--seed", "8",
                   "--out", str(again))
    assert result.exit_code == 0, result.output
    a, b = (yaml.safe_load((d / "config.yaml").read_text()) for d in (first, again))
    assert b["run"]["seed"] == 8 and b["run"]["floor"] == 0.25 and b["ppo"]["clip_epsilon"] == 0.1
    a["run"].update(seed=8, floor=0.25)
    assert a == b  # every other setting came from the file


@pytest.mark.parametrize("text, message", [
    ("run: {num_envs: 0}\n", "config.yaml: run.num_envs: expected an integer in [1, 2**24]"),
    ("ppo: {clip_epsilom: 0.1}\n", "unknown setting 'ppo.clip_epsilom'; did you mean ppo.clip_epsilon?"),
    ("run: [1, 2\n", "not valid YAML at line"),
])
def test_a_bad_config_file_is_one_line_naming_the_file_and_key(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    result = train("ppo", "--config", str(path), "--out", str(tmp_path / "run"))
    refused(result, message)
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("text, message", [
    ("ppo:\n  n_epochs: 2\n  gamma: 0.99\n  n_epochs: 3\n", "line 4: key 'n_epochs' appears twice (first on line 2)"),
    ("run:\n  seed: 1\nppo:\n  n_epochs: 2\nrun:\n  seed: 2\n", "line 5: key 'run' appears twice (first on line 1)"),
    ("run:\n  vs: " + "[" * 5000 + "]" * 5000 + "\n", "nested more than 32 levels deep (line 2, column 37); "
                                                    "expected a settings YAML file"),
    ("# " + "x" * (1 << 20) + "\n", "larger than 1024 KiB; expected a settings YAML file"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcdefgh", "bcdefghi")),
     "expands to more than 100,000 values once its aliases (*name) are expanded; expected a small settings YAML "
     "file (a 'billion laughs'?)"),
], ids=["key-twice", "section-twice", "too-deep", "too-large", "alias-bomb"])  # not the texts: ids of up to 1 MB
def test_a_config_file_with_a_key_twice_or_past_the_limits_is_one_line(tmp_path, text, message):
    path = tmp_path / "config.yaml"
    path.write_text(text)
    result = train("ppo", "--config", str(path), "--out", str(tmp_path / "run"))
    refused(result)
    assert result.output == f"Error: --config {path}: {message}\n"
    assert not (tmp_path / "run").exists()


def test_a_binary_config_file_is_one_line_naming_the_option_and_file(tmp_path):
    checkpoint = tmp_path / "ckpt_000000512.pt"
    torch.save({"weights": torch.zeros(64)}, checkpoint)
    latin = tmp_path / "latin.yaml"
    latin.write_bytes(bytes(range(1, 256)))  # no NUL: a byte that is no UTF-8 names where it is
    for path, problem in ((checkpoint, "contains a NUL byte (offset 4); expected a UTF-8 YAML text file, not a "
                                       "binary one"),
                          (latin, "is not UTF-8 text (byte 0x80 at offset 127); expected a UTF-8 YAML file")):
        result = train("ppo", "--config", str(path), "--out", str(tmp_path / "run"))
        assert result.exit_code == 2 and result.output == f"Error: --config {path}: {problem}\n", result.output
    assert not (tmp_path / "run").exists()


def test_a_config_files_records_are_not_read_as_settings(tmp_path):
    """A run's config.yaml records its env, device and processes beside the settings; given as --config
    only the settings count (the env is the standard one with run.team_size and run.obs_mode)."""
    from arena_ppo.prepare import given_settings

    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"env": {"team_size": 1, "max_time": 10.0}, "device": "cuda:3", "processes": 4,
                                    "run": {"team_size": 2}}))
    assert given_settings({"config_file": path}, "ppo") == {"run.team_size": 2}
    assert given_settings({"config_file": path, "team_size": 3}, "ppo") == {"run.team_size": 3}


@pytest.mark.parametrize("assignments, message", [
    (["network.log_std_min=2", "network.log_std_max=-2"],
     "network.log_std_min 2 is above network.log_std_max -2: the rudder's log-std is clamped to [min, max]; give "
     "min <= max"),
    (["network.init_log_std=3"],
     "network.init_log_std 3 is outside [network.log_std_min -5, network.log_std_max 2]: it would start clamped to "
     "the bound; give a value within them"),
])
def test_settings_that_depend_on_each_other_are_checked_together(tmp_path, assignments, message):
    args = [arg for item in assignments for arg in ("--set", item)]
    result = train("ppo", *args, *SMALL, "--out", str(tmp_path / "run"))
    assert result.exit_code == 2 and result.output == f"Error: {message}\n", result.output
    assert not (tmp_path / "run").exists()


def test_a_minibatch_larger_than_the_rollout_is_said(tmp_path):
    result = train("ppo", "--vs", "crank", "--num-envs", "8", "--max-steps", "128", "--set", "ppo.n_steps=16",
                   "--set", "ppo.batch_size=100000", "--set", "ppo.n_epochs=1", "--eval-games", "0", "--no-progress",
                   "--threads", "1", "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert ("note: ppo.batch_size 100,000 is more than a rollout (8 envs x 16 steps = 128 env steps): each epoch is "
            "one minibatch of the whole rollout") in result.output
    from arena_ppo.plan import resolve
    from arena_ppo.train_config import TrainConfig

    cfg = TrainConfig()
    cfg.run.device = "cpu"
    assert resolve(cfg).notes == ()  # the defaults: 1,024 envs x 32 steps, minibatches of 8,192


def test_a_league_setting_on_a_run_without_a_league_is_said_to_be_ignored(tmp_path):
    result = train("ppo", *SMALL, "--set", "run.exploiter_share=0.5", "--set", "run.pfsp_power=1",
                   "--out", str(tmp_path / "run"))
    assert result.exit_code == 0, result.output
    assert ("note: run.exploiter_share 0.5 is ignored: only runs with --vs league read it, and this one plays crank"
            in result.output)
    assert ("note: run.pfsp_power 1.0 is ignored: only runs with --vs self or --vs league read it, and this one "
            "plays crank") in result.output
    from arena_ppo.plan import resolve
    from arena_ppo.train_config import default_config

    given = {"run.exploiter_share": 0.5, "run.pfsp_power": 1.0}
    cfg = default_config("ppo")
    cfg.run.vs, cfg.run.device = ("self=2", "crank"), "cpu"
    assert resolve(cfg, given=given).notes == (
        "note: run.exploiter_share 0.5 is ignored: only runs with --vs league read it, and this one plays self=2, "
        "crank",)
    cfg.run.vs = ("league",)
    assert resolve(cfg, given=given).notes == ()


@pytest.mark.parametrize("name", ["config.yaml", "eval.csv", "best.json"])
def test_a_folder_where_the_run_writes_a_file_is_refused_before_training(tmp_path, name):
    (tmp_path / "run" / name).mkdir(parents=True)
    result = train("ppo", *SMALL, "--out", str(tmp_path / "run"))
    assert result.exit_code == 2, result.output
    assert result.output == (f"Error: --out {tmp_path / 'run'}: {tmp_path / 'run' / name} is a folder; expected the "
                             f"run's {name} there to be a file (or nothing), so move it away or give another --out\n")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [name]


def test_a_league_warms_up_against_the_top_rung_then_opens_with_a_fresh_optimizer(tmp_path):
    """192 steps a rollout, a warm-up of 300: two rollouts against the ace (and the floor), then the league,
    whose pool draws no checkpoint saved before the warm-up ended; a resume across the boundary is exact."""
    common = ["--vs", "league", "--num-envs", "12", "--seed", "3", "--save-interval", "192", *TINY,
              "--set", "run.warm_up_steps=300", "--set", "ppo.lr_schedule=constant"]
    straight, split = tmp_path / "straight", tmp_path / "split"
    result = train("ppo", *common, "--max-steps", "768", "--out", str(straight))
    assert result.exit_code == 0, result.output
    assert ("the league after 300 steps against ace alone; the league draws the ladder 80% of the time, the run's "
            "past and its exploiters the rest; a main exploiter trains against the learner on 20% of the league's "
            "steps (the learner on 80%)") in result.output
    assert "taught by" not in result.output
    assert "warm-up done after 384 steps: the league opens" in result.output
    warm = torch.load(straight / "ckpt_000000384.pt", weights_only=True)
    assert warm["opponents"].get("self_play") is None  # the warm-up pool: the ace and the floor
    league = torch.load(straight / "ckpt_000000576.pt", weights_only=True)
    adam_steps = [{int(s["step"]) for s in data["algorithm"]["optimizer"]["state"].values()} for data in (warm, league)]
    assert adam_steps == [{6}, {3}]  # 3 minibatches an update: the league's first update starts a fresh Adam
    drawn = league["opponents"]["self_play"]["records"]
    assert set(league_agents()) <= set(drawn) and "ckpt_000000192.pt" not in drawn
    assert train("ppo", *common, "--max-steps", "384", "--out", str(split)).exit_code == 0
    resumed = train("ppo", "--resume", str(split / "ckpt_000000384.pt"), "--max-steps", "768", "--no-progress")
    assert resumed.exit_code == 0, resumed.output
    a, b = (torch.load(d / "ckpt_000000768.pt", weights_only=True) for d in (straight, split))
    assert all(torch.equal(v, b["model"][k]) for k, v in a["model"].items())
    assert a["opponents"]["self_play"] == b["opponents"]["self_play"]
    assert (warm["exploiter"]["started"], warm["exploiter"]["steps"]) == (-1, 0)  # it starts with the league
    ea, eb = a["exploiter"], b["exploiter"]
    assert ea["started"] == 384 and ea["steps"] == eb["steps"] > 0
    assert all(torch.equal(v, eb["checkpoint"]["model"][k]) for k, v in ea["checkpoint"]["model"].items())


def test_a_warm_up_longer_than_the_run_is_warned_of(tmp_path):
    result = train("ppo", "--vs", "league", "--num-envs", "8", "--max-steps", "128", *TINY, "--out", str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "warning: the league's warm-up (run.warm_up_steps 12,000,000) takes all of --max-steps 128" in result.output
