"""Actions handed to the Gymnasium and PettingZoo wrappers: anything but the action space's exact shape
and real numbers is refused with a message naming what was expected and what came (and the agent, for
PettingZoo); NaN values fly as 0 and are counted in the info, as the core env counts them."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("gymnasium", reason="the wrappers extra (pip install -e '.[wrappers]')")

from arena.battles import action_array  # noqa: E402
from arena.wrappers import ArenaEnv, ArenaParallelEnv, ArenaVectorEnv  # noqa: E402

GOOD = [0.3, 1.0, 1.0]  # turn, full throttle, fire


def vector_env(as_torch: bool = False) -> ArenaVectorEnv:
    env = ArenaVectorEnv(num_envs=4, as_torch=as_torch)
    env.reset(seed=2)
    return env


def single_env() -> ArenaEnv:
    env = ArenaEnv()
    env.reset(seed=2)
    return env


@pytest.mark.parametrize("actions", [np.zeros(12), np.zeros((2, 6)), np.zeros((4, 2)), np.zeros((5, 3)),
                                     np.zeros((1, 4, 3)), torch.zeros(12), [GOOD] * 3])
def test_vector_env_refuses_any_shape_but_the_action_space_s(actions):
    env = vector_env()
    got = tuple(np.shape(actions))
    with pytest.raises(ValueError, match=rf"ArenaVectorEnv\.step: .*shape \(4, 3\), got .*shape {re_shape(got)}"):
        env.step(actions)
    assert env.step(np.zeros((4, 3), dtype=np.float32))[0].shape == (4, 10), "a refused step leaves the env usable"


@pytest.mark.parametrize("action", [np.zeros(2), np.zeros((1, 3)), np.zeros(6), [0.0, 1.0]])
def test_single_env_refuses_any_shape_but_three(action):
    with pytest.raises(ValueError, match=rf"ArenaEnv\.step: .*shape \(3,\), got .*shape {re_shape(np.shape(action))}"):
        single_env().step(action)


@pytest.mark.parametrize(("action", "named"), [
    ("fire", "str 'fire'"),
    (["0.1", "1", "1"], "list of dtype <U3"),
    (np.zeros(3, dtype=complex), "dtype complex128"),
    (torch.zeros(3, dtype=torch.complex64), "dtype torch.complex64"),
    (None, "NoneType None"),
    ({"rudder": 0.0}, "dict"),
    ([[0.0], 1.0, 1.0], "list that numpy cannot read"),
])
def test_non_numeric_actions_are_refused_by_name(action, named):
    with pytest.raises(ValueError, match=r"ArenaEnv\.step: expected an array of real numbers") as caught:
        single_env().step(action)
    assert named in str(caught.value)


def test_pettingzoo_names_the_agent_whose_action_is_wrong():
    env = ArenaParallelEnv(team_size=2)
    env.reset(seed=0)
    actions = {agent: GOOD for agent in env.agents}
    actions["p2_1"] = [0.0, 1.0]
    with pytest.raises(ValueError, match=r"agent 'p2_1': .*shape \(3,\), got list .*shape \(2,\)"):
        env.step(actions)
    actions["p2_1"] = "fire"
    with pytest.raises(ValueError, match=r"agent 'p2_1': expected an array of real numbers .*got str 'fire'"):
        env.step(actions)


def test_nan_actions_fly_as_zero_and_are_counted_per_battle():
    clean = np.array([GOOD, [0.0, 0.0, 0.0], GOOD, GOOD], dtype=np.float32)
    dirty = clean.copy()
    dirty[1] = np.nan  # all three values: the fire NaN is one the core env never sees
    dirty[2, 2] = np.nan
    expected_obs = vector_env().step(np.where(np.isnan(dirty), 0.0, dirty))[0]
    obs, _, _, _, info = vector_env().step(dirty)
    assert info["nan_actions"].tolist() == [0, 3, 1, 0]
    np.testing.assert_array_equal(obs, expected_obs)
    assert vector_env().step(clean)[4]["nan_actions"].tolist() == [0, 0, 0, 0]

    info = vector_env(as_torch=True).step(torch.from_numpy(dirty))[4]
    assert isinstance(info["nan_actions"], torch.Tensor) and info["nan_actions"].tolist() == [0, 3, 1, 0]


def test_single_and_pettingzoo_envs_count_nan_actions():
    assert single_env().step([np.nan, 1.0, np.nan])[4] == {"nan_actions": 2}
    assert single_env().step(GOOD)[4] == {"nan_actions": 0}
    env = ArenaParallelEnv()
    env.reset(seed=0)
    infos = env.step({"p1_0": [0.0, np.nan, 1.0], "p2_0": GOOD})[4]
    assert infos == {"p1_0": {"nan_actions": 1}, "p2_0": {"nan_actions": 0}}


@pytest.mark.parametrize("as_given", [
    lambda a: a,                                      # float32, as the action space samples
    lambda a: a.astype(np.float64),
    lambda a: a.tolist(),
    lambda a: torch.from_numpy(a),
])
def test_correct_actions_of_every_kind_fly_the_same(as_given):
    actions = np.array([GOOD, [-1.0, 0.5, -1.0], GOOD, [0.0, 1.0, 0.0]], dtype=np.float32)
    expected = vector_env().step(actions)[0]
    np.testing.assert_array_equal(vector_env().step(as_given(actions))[0], expected)
    np.testing.assert_array_equal(single_env().step(as_given(actions[0]))[0], single_env().step(actions[0])[0])


def test_integer_and_bool_actions_are_numbers_too():
    assert single_env().step([0, 1, 1])[4] == {"nan_actions": 0}
    assert single_env().step(np.array([False, True, True]))[4] == {"nan_actions": 0}


def test_a_correct_array_passes_the_check_as_it_is():
    """The check on the hot path reads shape and dtype only: no copy of the learner's batch."""
    array, tensor = np.zeros((4, 3), dtype=np.float32), torch.zeros(4, 3)
    assert action_array(array, (4, 3), "step") is array
    assert action_array(tensor, (4, 3), "step") is tensor


def re_shape(shape: tuple[int, ...]) -> str:
    """``shape`` as it appears in the message, escaped for a regex."""
    return str(tuple(shape)).replace("(", r"\(").replace(")", r"\)")


def test_pettingzoo_refuses_actions_that_leave_out_a_live_agent():
    env = ArenaParallelEnv(team_size=2)
    env.reset(seed=0)
    before = env.env.state_dict()["world"]["x"].clone()
    actions = {agent: GOOD for agent in env.agents if agent != "p2_1"}
    with pytest.raises(ValueError, match=r"^actions: no action for live agent\(s\) 'p2_1'; expected one for every "
                                         r"agent in env.agents \(p1_0, p1_1, p2_0, p2_1\)$"):
        env.step(actions)
    assert torch.equal(env.env.state_dict()["world"]["x"], before)  # nothing flew
    actions["p2_1"] = GOOD
    env.step(actions)  # all of them: it steps
