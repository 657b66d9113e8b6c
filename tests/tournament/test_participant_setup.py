"""A participant whose set-up fails (its constructor, ``create``, ``eval``) is named the same way wherever it
is set up: a tournament, ``arena play``, a trainer's opponents and an evaluation. One line, exit 2, the
agent's name and the method, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
import yaml
from click.testing import CliRunner

from arena.cli import main
from cli_checks import refused
from tourney_helpers import FAST_ENV

SETUP_PLUGIN = '''
import sys
import torch
import arena

MODE = {mode!r}

class Bad(arena.BaseAgent):
    name = "bad"

    def __init__(self, device="cpu", env_config=None):
        if MODE == "init":
            raise RuntimeError("cannot initialise")
        super().__init__(device, env_config)

    @classmethod
    def create(cls, device="cpu", env_config=None, **params):
        if MODE == "create-exit":
            sys.exit(3)
        return cls(device=device, env_config=env_config, **params)

    def eval(self):
        if MODE == "eval":
            raise RuntimeError("eval broke")
        if MODE == "eval-exit":
            sys.exit(0)
        if MODE == "eval-dtype":
            torch.set_default_dtype(torch.float64)
        return super().eval()

    def train(self, mode=True):
        if MODE == "train" and not mode:  # BaseAgent.eval() is train(False)
            raise KeyError("no such mode")
        return super().train(mode)

    def act(self, obs):
        n = obs["x"].shape[0]
        return {{"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}}

@arena.hookimpl
def arena_agents():
    return [Bad]
'''

FAULTS = [  # (mode, what every surface says after naming agent 'bad')
    ("init", "create() raised RuntimeError: cannot initialise"),
    ("create-exit", "create() raised SystemExit (called sys.exit(3))"),
    ("eval", "eval() raised RuntimeError: eval broke"),
    ("eval-exit", "eval() raised SystemExit (called sys.exit(0))"),
    ("train", "eval() raised KeyError: 'no such mode'"),
    ("eval-dtype", "eval() changed torch's default dtype from torch.float32 to torch.float64 (put back)"),
]
EVAL_FAULTS = [f for f in FAULTS if f[0].startswith(("eval", "train"))]


def league(tmp_path: Path) -> Path:
    path = tmp_path / "league.yaml"
    path.write_text(yaml.safe_dump({"name": "setup", "output": str(tmp_path / "out"), "seed": 1, "device": "cpu",
                                    "max_envs": 16, "games_per_pairing": 2, "env": dict(FAST_ENV),
                                    "rating": {"bootstrap_rounds": 10}, "participants": ["crank", "bad"]}))
    return path


def line_of(result) -> str:
    return refused(result).strip().splitlines()[-1]


@pytest.fixture
def bad_agent(fake_dists, request):
    mode = request.param
    fake_dists.add("bad-agent", f"bad_setup_{mode.replace('-', '_')}", SETUP_PLUGIN.format(mode=mode))
    yield mode
    torch.set_default_dtype(torch.float32)  # a surface that did not put it back must not spoil the next test


@pytest.mark.parametrize("bad_agent, said", FAULTS, ids=[m for m, _ in FAULTS], indirect=["bad_agent"])
def test_a_tournament_names_a_participant_that_cannot_be_set_up(bad_agent, tmp_path, said):
    file = league(tmp_path)
    line = line_of(CliRunner().invoke(main, ["tournament", str(file), "-q"]))
    assert line == f"Error: {file}: participants[1]: agent 'bad': {said}"
    assert torch.get_default_dtype() == torch.float32
    assert not (tmp_path / "out" / "results.sqlite").exists()  # stopped before anything was played


@pytest.mark.parametrize("bad_agent, said", FAULTS, ids=[m for m, _ in FAULTS], indirect=["bad_agent"])
def test_arena_play_names_it_the_same_way(bad_agent, said):
    line = line_of(CliRunner().invoke(main, ["play", "bad", "crank", "-n", "2", "-q", "--device", "cpu",
                                             "--env", "max_time=20"]))
    assert line.startswith("Error: agent 'bad'") and line.endswith(said), line


@pytest.mark.parametrize("bad_agent, said", FAULTS, ids=[m for m, _ in FAULTS], indirect=["bad_agent"])
def test_a_trainer_s_opponent_is_named_the_same_way(bad_agent, tmp_path, said):
    result = CliRunner().invoke(main, ["train", "ppo", "--vs", "bad", "--device", "cpu", "--num-envs", "4",
                                       "--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--eval-games", "0",
                                       "--no-progress", "--threads", "1", "--max-steps", "64",
                                       "--out", str(tmp_path / "run")])
    assert line_of(result) == f"Error: --vs bad: agent 'bad': {said}"


@pytest.mark.parametrize("bad_agent, said", EVAL_FAULTS, ids=[m for m, _ in EVAL_FAULTS], indirect=["bad_agent"])
def test_an_evaluation_names_it_the_same_way(bad_agent, said):
    from arena.agents import agent_registry, build_agent
    from arena.match import AgentFailure
    from arena.training import evaluate

    opponent = agent_registry().get("bad")()  # built as a caller of evaluate() may, set up by the evaluation
    with pytest.raises(AgentFailure) as exc:
        evaluate(build_agent("crank"), opponent, 2, env_config=None)
    assert str(exc.value) == f"agent 'bad' (B) {said}"


@pytest.mark.parametrize("bad_agent, said", FAULTS, ids=[m for m, _ in FAULTS], indirect=["bad_agent"])
def test_a_wrapper_s_opponent_is_named_the_same_way(bad_agent, said):
    from arena.agents import AgentSpecError
    from arena.battles import LearnerBattles

    with pytest.raises(AgentSpecError) as exc:
        LearnerBattles(4, "bad")
    assert str(exc.value).endswith(f"agent 'bad': {said}")
    assert torch.get_default_dtype() == torch.float32
