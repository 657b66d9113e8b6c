"""A setting the run never reads gets one note, the same for every setting and wherever it was written
(the command line, a resumed run's hand-edited config.yaml); a setting it reads gets none."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena_ppo.plan import resolve
from arena_ppo.prepare import build_config

SMALL = ["--num-envs", "8", "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=64", "--eval-games", "0",
         "--no-progress", "--threads", "1"]


def train(*args: str) -> list[str]:
    """The note lines of a finished ``arena train ppo`` run."""
    result = CliRunner().invoke(main, ["train", "ppo", *SMALL, *args])
    assert result.exit_code == 0, result.output
    return [line for line in result.output.splitlines() if line.startswith("note:")]


@pytest.mark.parametrize("args, notes", [
    (["--set", "run.policy=separated"],
     ["note: run.policy 'separated' is ignored: only mappo reads it, and this one is ppo: one shared actor flies "
      "every seat"]),
    (["--set", "ppo.kickstart_coef=0.5"],
     ["note: ppo.kickstart_coef 0.5 is ignored: only runs with --kickstart read it, and this one has no teacher"]),
    (["--set", "run.eval_interval=1024"],
     ["note: run.eval_interval 1024 is ignored: only runs with --eval-games above 0 read it, and this one "
      "evaluates nothing"]),
    (["--set", "ppo.data_chunk_length=16"],
     ["note: ppo.data_chunk_length 16 is ignored: only recurrent runs (network.recurrent true) read it, and this "
      "one is not recurrent"]),
    (["--set", "ppo.lr_schedule=constant", "--set", "ppo.desired_kl=0.02"],
     ["note: ppo.desired_kl 0.02 is ignored: only the adaptive schedule reads it, and this one's ppo.lr_schedule "
      "is constant"]),
    (["--vs", "league ", "--set", "run.warm_up_steps=0"], []),  # a league, read as one by the run and the notes
], ids=["policy-on-ppo", "kickstart-coef-untaught", "eval-interval-no-evals", "chunk-not-recurrent",
        "desired-kl-constant", "league-trailing-space"])
def test_a_setting_the_run_never_reads_is_said_once(tmp_path, args, notes):
    assert train(*args, "--max-steps", "256", "--out", str(tmp_path / "run")) == notes


def test_a_setting_the_run_reads_gets_no_note():
    """Each setting above, on the run that reads it: a league written with a trailing space, taught,
    evaluated, recurrent, on the adaptive schedule; and mappo's per-seat actors."""
    given = {"run.vs": ("league ",), "run.kickstart": "crank", "run.eval_games": 16, "network.recurrent": True,
             "run.device": "cpu", "run.num_envs": 8, "ppo.batch_size": 64, "run.warm_up_steps": 0,
             "run.exploiter_share": 0.5, "run.pfsp_power": 1.0, "ppo.kickstart_coef": 0.5, "run.eval_interval": 1024,
             "run.keep_best": False, "ppo.data_chunk_length": 16, "ppo.desired_kl": 0.02}
    assert resolve(build_config("ppo", given), given=given).notes == ()
    given = {"run.policy": "separated", "run.device": "cpu", "run.num_envs": 8, "ppo.batch_size": 64}
    assert resolve(build_config("mappo", given), "mappo", given=given).notes == ()


def test_a_runs_config_yaml_given_again_says_only_what_differs_from_the_defaults(tmp_path):
    """A run's config.yaml holds every setting: those at their defaults change nothing and get no note."""
    train("--max-steps", "256", "--set", "ppo.desired_kl=0.02", "--set", "ppo.lr_schedule=constant",
          "--out", str(tmp_path / "a"))
    assert train("--config", str(tmp_path / "a" / "config.yaml"), "--seed", "1", "--out", str(tmp_path / "b")) == [
        "note: ppo.desired_kl 0.02 is ignored: only the adaptive schedule reads it, and this one's ppo.lr_schedule "
        "is constant"]
