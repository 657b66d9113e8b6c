"""A reward function is called as agent code: whatever goes wrong in it names it, what it returned and
what was expected, in every wrapper and in the trainer's league env, never torch's words from inside."""

from __future__ import annotations

import os
import sys

import pytest
import torch

from arena.agent_calls import AgentFailure
from arena.agents import build_agent
from arena.battles import LearnerBattles, shaping
from arena.env import EnvConfig, TensorEnv
from arena.env.observations import obs_keys
from arena.training import OpponentPool, parse_opponent_specs
from arena.training.league_env import LeagueEnv

EXPECTED = "expected a tensor of real numbers of shape [4] on cpu, one value per learner aircraft"
VALUES = "expected finite values within ±1e+06, as the env's own reward parts are"


def returning(value):
    def bad(obs, next_obs, rewards, dones, infos):
        return value(rewards) if callable(value) else value

    return bad


def raising(obs, next_obs, rewards, dones, infos):
    raise ValueError("boom")


def exiting(obs, next_obs, rewards, dones, infos):
    sys.exit(6)


def float64(obs, next_obs, rewards, dones, infos):
    torch.set_default_dtype(torch.float64)
    return torch.zeros_like(rewards)


FAULTS = [  # (reward function, what the failure says after the reward's name)
    (raising, "raised ValueError: boom"),
    (exiting, "raised SystemExit (called sys.exit(6))"),
    (float64, "changed torch's default dtype from torch.float32 to torch.float64 (put back)"),
    (returning(None), f"returned None; {EXPECTED}"),
    (returning(0.5), f"returned float 0.5; {EXPECTED}"),
    (returning(lambda r: r[:-1]), f"returned a tensor of shape [3]; {EXPECTED}"),
    (returning(lambda r: r[:, None]), f"returned a tensor of shape [4, 1]; {EXPECTED}"),
    (returning(lambda r: r.to(torch.complex64)), f"returned a tensor of dtype torch.complex64; {EXPECTED}"),
    (returning(lambda r: r.to("meta")), f"returned a tensor on meta; {EXPECTED}"),
    (returning(lambda r: torch.full_like(r, float("nan"))), f"returned NaN; {VALUES}"),
    (returning(lambda r: torch.full_like(r, -float("inf"))), f"returned an infinite value; {VALUES}"),
    (returning(lambda r: torch.full_like(r, 1e30)), f"returned a value of magnitude 1e+30; {VALUES}"),
]
IDS = ["raise", "exit", "dtype", "none", "float", "short", "column", "complex", "device", "nan", "inf", "huge"]


@pytest.mark.parametrize("fn, said", FAULTS, ids=IDS)
def test_a_faulty_reward_function_is_named_with_what_it_returned(fn, said):
    battles = LearnerBattles(4, "crank", reward=fn)
    battles.reset(seed=1)
    with pytest.raises(AgentFailure) as exc:
        battles.step(torch.zeros(4, 3))
    assert str(exc.value) == f"reward {fn.__name__!r} (given as a function) {said}"
    assert exc.value.kind == "reward" and torch.get_default_dtype() == torch.float32


def test_a_reward_of_the_registry_names_its_distribution(monkeypatch):
    from arena.agents import Registry
    from arena.battles import Shaping
    from arena.plugins import PluginInfo

    registry: Registry = Registry("reward")
    registry.add("lopsided", returning(lambda r: r[:-1]), PluginInfo("lop", "lop-dist", "0.3", "tests"))
    monkeypatch.setattr("arena.agents.reward_registry", lambda host=None: registry)
    reward = shaping("lopsided")
    assert isinstance(reward, Shaping) and shaping(reward) is reward and reward.source == "from lop-dist 0.3"
    battles = LearnerBattles(4, "crank", reward="lopsided")
    battles.reset()
    with pytest.raises(AgentFailure, match=r"^reward 'lopsided' \(from lop-dist 0\.3\) returned a tensor of shape "
                                           r"\[3\]; expected"):
        battles.step(torch.zeros(4, 3))


def test_a_good_reward_is_added_as_its_dtype_and_its_values_pass():
    battles = LearnerBattles(4, "crank", reward=returning(lambda r: torch.ones(4, dtype=torch.int64)))
    plain = LearnerBattles(4, "crank")
    battles.reset(seed=2)
    plain.reset(seed=2)
    for _ in range(3):
        got, want = battles.step(torch.zeros(4, 3))[1], plain.step(torch.zeros(4, 3))[1]
        assert got.dtype == torch.float32 and torch.equal(got, want + 1)


def test_on_a_gpu_the_values_are_watched_on_the_device_and_refused_when_checked():
    battles = LearnerBattles(4, "crank", reward=returning(lambda r: torch.full_like(r, float("nan"))))
    battles.check_every_step = False  # as on a GPU, where the check would wait for the device
    battles.reset()
    for _ in range(3):
        battles.step(torch.zeros(4, 3))
    with pytest.raises(AgentFailure, match=r"^reward 'bad' \(given as a function\) returned NaN; expected finite"):
        battles.check_rewards()
    battles.check_rewards()  # the count starts again


@pytest.mark.parametrize("check_every_step", [True, False], ids=["cpu", "as-on-a-gpu"])
def test_the_league_env_refuses_bad_values_before_the_rollout_is_learned_from(check_every_step):
    config = EnvConfig()
    pool = OpponentPool(parse_opponent_specs(["crank"]), 4, lambda spec: build_agent(spec.target), team_size=1)
    league = LeagueEnv(TensorEnv(4, seed=0, config=config), pool, obs_keys(config),
                       reward_fn=returning(lambda r: torch.full_like(r, 1e30)))
    league.side.check_every_step = check_every_step
    league.begin_rollout(torch.Generator().manual_seed(0))
    with pytest.raises(AgentFailure, match=r"^reward 'bad' \(given as a function\) returned a value of magnitude "
                                           r"1e\+30; "):
        for _ in range(3):
            league.step(torch.zeros(4, 3))
        league.end_rollout()


def test_the_rsl_rl_env_names_the_reward():
    pytest.importorskip("rsl_rl")
    from arena.wrappers.rsl_rl_env import ArenaRslRlEnv

    env = ArenaRslRlEnv(4, "crank", reward=returning(None))
    with pytest.raises(AgentFailure, match=r"^reward 'bad' \(given as a function\) returned None; expected"):
        env.step(torch.zeros(4, 3))


def test_the_torchrl_env_names_the_reward():
    pytest.importorskip("torchrl")
    from tensordict import TensorDict

    from arena.wrappers.torchrl_env import ArenaTorchRLEnv

    env = ArenaTorchRLEnv(4, "crank", reward=returning(lambda r: r[:-1]))
    env.reset()
    with pytest.raises(AgentFailure, match=r"^reward 'bad' \(given as a function\) returned a tensor of shape "
                                           r"\[3\]; expected"):
        env.step(TensorDict({"action": torch.zeros(4, 3)}, batch_size=[4]))


def test_a_reward_that_changes_the_working_directory_is_named(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)

    def wander(obs, next_obs, rewards, dones, infos):
        os.chdir(tmp_path.parent)
        return torch.zeros_like(rewards)

    battles = LearnerBattles(4, "crank", reward=wander)
    battles.reset()
    with pytest.raises(AgentFailure, match=r"^reward 'wander' \(given as a function\) changed the working "
                                           r"directory from .* \(put back\)$"):
        battles.step(torch.zeros(4, 3))
    assert os.getcwd() == str(tmp_path)
