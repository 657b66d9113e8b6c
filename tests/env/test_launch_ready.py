"""``launch_ready``: 1 exactly where a launch now would leave with a lock inside the published range;
``launch_clear``: the same while no missile of the aircraft is in flight."""

from __future__ import annotations

import math

import pytest
import torch

from arena.env import EnvConfig, TensorEnv
from arena.env.dynamics import own_missile_in_flight
from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY, obs_keys
from arena.env.state import WorldState

EAST = 0.0


def duel(cases: list[tuple[float, float, float]], missiles_left: float = 4.0, enemy_alive: bool = True
         ) -> TensorEnv:
    """One battle per case: p1 at (20 km, 50 km) flying east, p2 at ``range`` m and ``off`` degrees off p1's
    nose, heading ``heading`` rad."""
    env = TensorEnv(len(cases), config=EnvConfig())
    env.reset()
    s = env.state
    for i, (distance, off, heading) in enumerate(cases):
        s.x[i, 0], s.y[i, 0], s.heading[i, 0] = 20_000.0, 50_000.0, EAST
        s.x[i, 1] = 20_000.0 + distance * math.cos(math.radians(off))
        s.y[i, 1] = 50_000.0 + distance * math.sin(math.radians(off))
        s.heading[i, 1] = heading
    s.missiles_left[:, 0] = missiles_left
    s.alive[:, 1] = enemy_alive
    return env


CASES = [  # (distance m, degrees off p1's nose, p2's heading), p1 ready?, p2 ready?
    ((30_000, 0.0, math.pi), True, True),  # head on inside the range: both can shoot
    ((45_000, 0.0, math.pi), False, False),  # beyond the published 40 km
    ((30_000, 50.0, math.pi), True, True),  # 50° off p1's nose, and p1 50° off p2's: inside both ±60° cones
    ((30_000, 70.0, math.pi), False, False),  # outside the cone
    ((10_000, 0.0, EAST), True, False),  # p2 flies away from p1: p1 sees its tail, p2 sees nothing
]


def test_ready_where_the_enemy_is_inside_the_cone_and_the_range() -> None:
    env = duel([case for case, _, _ in CASES])
    obs = env.observe()
    assert obs["p1"][LAUNCH_KEY].tolist() == [float(p1) for _, p1, _ in CASES]
    assert obs["p2"][LAUNCH_KEY].tolist() == [float(p2) for _, _, p2 in CASES]


def test_never_ready_without_a_missile_or_a_live_enemy() -> None:
    head_on = [(30_000, 0.0, math.pi)]
    assert duel(head_on, missiles_left=0.0).observe()["p1"][LAUNCH_KEY].tolist() == [0.0]
    assert duel(head_on, enemy_alive=False).observe()["p1"][LAUNCH_KEY].tolist() == [0.0]


def test_a_launch_where_ready_leaves_locked_and_where_not_leaves_unguided() -> None:
    """The key's promise in the physics: random duels, every aircraft fires at once; a missile is locked
    after its first step exactly where the shooter's key read 1 (within the range, which the seeker
    does not know, both agree: only cone and lock are compared)."""
    torch.manual_seed(0)
    env = TensorEnv(512, config=EnvConfig(), seed=3)
    obs = env.reset()
    s = env.state
    s.x[:, 1] = s.x[:, 0] + torch.rand(512) * 35_000.0  # inside the arena, every bearing from p1's side
    s.y[:, 1] = s.y[:, 0] + (torch.rand(512) * 2 - 1) * 20_000.0
    s.heading[:, 0] = torch.rand(512) * 2 * math.pi
    keep = torch.hypot(s.x[:, 1] - s.x[:, 0], s.y[:, 1] - s.y[:, 0]) < 38_000.0
    obs = env.observe()
    fire = {"rudder": torch.zeros(512), "throttle": torch.ones(512), "fire": torch.ones(512, dtype=torch.bool)}
    hold = {"rudder": torch.zeros(512), "throttle": torch.ones(512), "fire": torch.zeros(512, dtype=torch.bool)}
    ready = obs["p1"][LAUNCH_KEY] > 0.5
    env.step(fire, hold)
    locked = env.state.m_locked[:, :, 1].any(0)  # p1's missiles chase p2 (column 1); the step replaced the state
    assert ready[keep].any() and (~ready[keep]).any()
    agree = (locked[keep] == ready[keep]).float().mean().item()
    assert agree >= 0.98, agree  # only a target at the cone's very edge may slip out in the first step


@pytest.mark.parametrize("team_size", [2, 3])
def test_in_teams_each_aircraft_is_ready_when_any_enemy_is(team_size: int) -> None:
    cfg = EnvConfig(team_size=team_size)
    env = TensorEnv(1, config=cfg)
    env.reset()
    s = env.state
    t = team_size
    for seat in range(t):  # p1's seats 40 km apart flying east, p2's far to the north-east
        s.x[0, seat], s.y[0, seat], s.heading[0, seat] = 20_000.0, 10_000.0 + 40_000.0 * seat, EAST
        s.x[0, t + seat], s.y[0, t + seat], s.heading[0, t + seat] = 90_000.0, 90_000.0, math.pi
    s.x[0, t], s.y[0, t] = 45_000.0, 10_000.0  # one enemy 25 km ahead of p1's seat 0, level with it
    ready = env.observe()["p1"][LAUNCH_KEY]
    assert ready.shape == (1, t)
    assert ready[0].tolist() == [1.0] + [0.0] * (t - 1)  # seat 1 sees it 58° off its nose, but at 47 km


def test_the_keys_are_published_beside_the_features_not_among_them() -> None:
    """Policies trained before the keys read the same feature vector as before."""
    obs = TensorEnv(2).reset()
    for key in (LAUNCH_KEY, LAUNCH_CLEAR_KEY):
        assert key in obs["p1"] and key not in obs_keys(EnvConfig())


def test_clear_while_no_missile_of_ones_own_flies() -> None:
    """Head on at 30 km both are ready; p1 fires. While its missile flies p1 stays ready but not clear, and
    p2, which has fired nothing, stays clear; once the missile is gone p1 is clear again."""
    env = duel([(30_000, 0.0, math.pi)])
    obs = env.observe()
    assert [obs[p][key].item() for p in ("p1", "p2") for key in (LAUNCH_KEY, LAUNCH_CLEAR_KEY)] == [1.0] * 4
    hold = {"rudder": torch.zeros(1), "throttle": torch.ones(1), "fire": torch.zeros(1, dtype=torch.bool)}
    obs, *_ = env.step({**hold, "fire": torch.ones(1, dtype=torch.bool)}, hold)
    for _ in range(5):  # the missile needs about 30 steps to reach p2
        assert env.state.m_active[:, 0, 1].any()
        assert (obs["p1"][LAUNCH_KEY].item(), obs["p1"][LAUNCH_CLEAR_KEY].item()) == (1.0, 0.0)
        assert obs["p2"][LAUNCH_CLEAR_KEY].item() == obs["p2"][LAUNCH_KEY].item() == 1.0
        obs, *_ = env.step(hold, hold)
    env.state.m_active[:] = False  # the missile is gone (spent)
    obs = env.observe()
    assert (obs["p1"][LAUNCH_KEY].item(), obs["p1"][LAUNCH_CLEAR_KEY].item()) == (1.0, 1.0)


@pytest.mark.parametrize("team_size, carried", [(1, 2), (2, 3), (3, 1)])
def test_a_missile_in_flight_is_its_shooters(team_size: int, carried: int) -> None:
    """Slot ``seat·M + k`` of a target's column is the ``k``-th launch of the enemy in ``seat``: whatever the
    slot, target and layout, the missile counts for its shooter alone."""
    t, m = team_size, carried
    for shooter in range(2 * t):
        side, seat = divmod(shooter, t)
        for target in range(t):
            for k in range(m):
                state = WorldState.empty(2, m, torch.device("cpu"), team_size=t)
                state.m_active[seat * m + k, 1, (1 - side) * t + target] = True  # in battle 1 only
                expected = torch.zeros(2, 2 * t, dtype=torch.bool)
                expected[1, shooter] = True
                assert torch.equal(own_missile_in_flight(state), expected), (shooter, target, k)
