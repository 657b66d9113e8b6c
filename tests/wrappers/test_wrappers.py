"""The standard interfaces: Gymnasium's env checker, PettingZoo's API test, same-step autoreset, seeds,
torch output without a host copy, and the examples run with a tiny budget."""

from __future__ import annotations

import runpy
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

gymnasium = pytest.importorskip("gymnasium", reason="the wrappers extra (pip install -e '.[wrappers]')")

from arena.env import EnvConfig  # noqa: E402
from arena.wrappers import ENV_ID, ArenaEnv, ArenaParallelEnv, ArenaVectorEnv  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_single_env_passes_the_gymnasium_checker():
    from gymnasium.utils.env_checker import check_env

    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=UserWarning, module="gymnasium")  # its checks that only warn
        check_env(gymnasium.make(ENV_ID).unwrapped, skip_render_check=True)
        check_env(ArenaEnv(opponent="defender"), skip_render_check=True)  # an opponent reading the extended obs


def test_the_gymnasium_checker_fails_an_observation_outside_its_box():
    """What the checker test relies on: an observation leaving its Box after a step is an error here."""
    from gymnasium.utils.env_checker import check_env

    class Outside(ArenaEnv):
        def step(self, action):
            obs, *rest = super().step(action)
            return obs + 2.0, *rest

    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=UserWarning, module="gymnasium")
        with pytest.raises(UserWarning, match="not within the observation space"):
            check_env(Outside(), skip_render_check=True)


def test_single_env_seeds_replay_the_battle_and_done_needs_a_reset():
    env = ArenaEnv(opponent="placeholder")
    first = [env.reset(seed=5)[0]] + [env.step(np.array([0.3, 1.0, -1.0]))[0] for _ in range(20)]
    second = [env.reset(seed=5)[0]] + [env.step(np.array([0.3, 1.0, -1.0]))[0] for _ in range(20)]
    assert all(np.array_equal(a, b) for a, b in zip(first, second)), "stochastic opponent included"
    env = ArenaEnv(env_config=EnvConfig(max_time=5.0))
    env.reset(seed=0)
    for _ in range(4):
        assert env.step(env.action_space.sample())[3] is False
    assert env.step(env.action_space.sample())[3] is True
    with pytest.raises(RuntimeError, match="reset"):
        env.step(env.action_space.sample())


def test_vector_env_autoresets_in_the_same_step():
    env = gymnasium.make_vec(ENV_ID, num_envs=6, vectorization_mode="vector_entry_point",
                             env_config=EnvConfig(max_time=5.0))
    assert env.metadata["autoreset_mode"] == gymnasium.vector.AutoresetMode.SAME_STEP
    obs, _ = env.reset(seed=1)
    assert obs.shape == (6, 10) and obs.dtype == np.float32 and env.observation_space.contains(obs)
    for _ in range(5):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert truncated.all() and not terminated.any()
    assert info["_final_obs"].all() and info["final_obs"].shape == (6, 10)
    assert not np.array_equal(info["final_obs"], obs), "the returned obs is already the next battle's"


def test_vector_env_hands_torch_tensors_on_its_device():
    env = ArenaVectorEnv(num_envs=4, as_torch=True)
    obs, _ = env.reset(seed=0)
    assert isinstance(obs, torch.Tensor) and obs.device == env.battles.device
    obs, reward, terminated, truncated, info = env.step(torch.zeros(4, 3))
    assert isinstance(reward, torch.Tensor) and reward.shape == (4,)


def test_teams_are_for_pettingzoo():
    with pytest.raises(ValueError, match="PettingZoo"):
        ArenaVectorEnv(num_envs=2, env_config=EnvConfig(team_size=2))


@pytest.mark.parametrize("make", [lambda config: ArenaVectorEnv(num_envs=2, env_config=config),
                                  lambda config: ArenaEnv(env_config=config),
                                  lambda config: ArenaParallelEnv(team_size=2, env_config=config)],
                         ids=["vector", "single", "pettingzoo"])
def test_an_env_config_that_is_not_one_is_refused_naming_the_argument(make):
    """A dict, say: not an AttributeError (or dataclasses' TypeError) from deep inside."""
    with pytest.raises(ValueError, match=r"^env_config: expected an arena.env.EnvConfig or None, got dict "
                                         r"\{'max_time': 5.0\}; EnvConfig.from_dict\(...\) builds one from a mapping$"):
        make({"max_time": 5.0})


@pytest.mark.parametrize("team_size", [1, 2])
def test_parallel_env_passes_the_pettingzoo_api_test(team_size):
    from pettingzoo.test import parallel_api_test

    with warnings.catch_warnings():
        warnings.filterwarnings("error", category=UserWarning, module="pettingzoo")  # its checks that only warn
        parallel_api_test(ArenaParallelEnv(team_size=team_size), num_cycles=400)


def test_parallel_env_removes_the_lost_and_ends_with_the_battle():
    env = ArenaParallelEnv(team_size=2, env_config=EnvConfig(max_time=30.0))
    env.reset(seed=3)
    steps = 0
    while env.agents:
        _, _, term, trunc, _ = env.step({a: np.array([0.0, 1.0, 1.0], dtype=np.float32) for a in env.agents})
        steps += 1
    assert steps <= 30 and all(term[a] or trunc[a] for a in term)


def run_example(name: str, *args: str):
    saved = sys.argv
    sys.argv = [name, *args]
    try:
        return runpy.run_path(str(EXAMPLES / name), run_name="__example__")["main"](list(args))
    finally:
        sys.argv = saved


def test_sb3_example_trains_through_the_wrapper():
    pytest.importorskip("stable_baselines3", reason="stable-baselines3 (installed by make test)")
    result = run_example("sb3_ppo_vs_crank.py", "--timesteps", "512", "--envs", "2", "--games", "1")
    assert result["wins"] + result["draws"] + result["losses"] == 1


def test_pettingzoo_example_flies_a_whole_battle():
    returns = run_example("pettingzoo_loop.py", "--team-size", "2")
    assert set(returns) == {"p1_0", "p1_1", "p2_0", "p2_1"}


@pytest.mark.parametrize("seed, got", [(-1, "got -1"), (-5, "got -5"), (2**70, "got 1180591620717411303424"),
                                       (2**63, "got 9223372036854775808")])
def test_every_entry_point_refuses_the_same_seeds_in_the_same_words(seed, got):
    """One rule (arena.seeds.check_seed) whether the seed reaches a wrapper's constructor or its reset."""
    message = rf"^seed: expected an integer in \[0, 2\*\*63 - 1\], {got}$"
    makers = [lambda **kw: ArenaEnv(opponent="placeholder", **kw),
              lambda **kw: ArenaVectorEnv(num_envs=2, opponent="placeholder", **kw),
              lambda **kw: ArenaParallelEnv(**kw)]
    for make in makers:
        with pytest.raises(ValueError, match=message):
            make(seed=seed)
        env = make()
        with pytest.raises(ValueError, match=message):
            env.reset(seed=seed)
        env.reset(seed=2**63 - 1)  # the largest seed is one
    vec = gymnasium.make_vec(ENV_ID, num_envs=2, vectorization_mode="vector_entry_point")
    with pytest.raises(ValueError, match=message):
        vec.reset(seed=seed)


def test_a_numpy_integer_seed_is_taken_by_every_entry_point():
    for env in (ArenaEnv(opponent="placeholder"), ArenaVectorEnv(num_envs=2, opponent="placeholder"),
                ArenaParallelEnv()):
        first = env.reset(seed=np.int64(5))[0]
        again = env.reset(seed=5)[0]
        assert all(np.array_equal(first[k], again[k]) for k in first) if isinstance(first, dict) \
            else np.array_equal(first, again)
