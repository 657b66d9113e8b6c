"""Physical invariants of aircraft and missiles."""

from __future__ import annotations

import math

import pytest
import torch

from arena.env import EnvConfig, TensorEnv
from arena.env.config import G
from arena.env.dynamics import closest_approach_sq

pytestmark = pytest.mark.usefixtures("both_step_paths")  # eager packed and static step

CFG = EnvConfig()


def random_actions(n: int, gen: torch.Generator, fire_p: float = 0.05) -> dict[str, torch.Tensor]:
    return {
        "rudder": torch.rand(n, generator=gen) * 2 - 1,
        "throttle": torch.rand(n, generator=gen),
        "fire": torch.rand(n, generator=gen) < fire_p,
    }


def test_speed_and_turn_rate_stay_within_limits() -> None:
    env = TensorEnv(256, seed=1)
    env.reset()
    gen = torch.Generator().manual_seed(0)
    max_turn = CFG.max_load_factor * G / CFG.speed_min * CFG.dt
    for _ in range(200):
        before = env.state.heading.clone()
        alive_before = env.state.alive.clone()
        _, _, dones, _ = env.step(random_actions(256, gen), random_actions(256, gen))
        s = env.state
        assert bool(((s.speed >= CFG.speed_min - 1e-3) & (s.speed <= CFG.speed_max + 1e-3)).all())
        turned = (torch.remainder(s.heading - before + math.pi, 2 * math.pi) - math.pi).abs()
        running = ~dones.unsqueeze(-1) & alive_before
        assert bool((turned[running] <= max_turn + 1e-4).all())


def test_full_throttle_settles_near_340() -> None:
    env = TensorEnv(4, seed=0)
    env.reset()
    for _ in range(60):  # stays inside the arena: spawned 60+ km apart, flying 60 s ≈ 20 km each
        env.step({"rudder": torch.zeros(4), "throttle": torch.ones(4), "fire": torch.zeros(4, dtype=torch.bool)},
                 {"rudder": torch.zeros(4), "throttle": torch.ones(4), "fire": torch.zeros(4, dtype=torch.bool)})
    assert bool(((env.state.speed - 340.0).abs() < 10.0).all())


def test_hard_turn_bleeds_speed(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (50_000, 50_000, 0.0, 340.0), (90_000, 90_000, 0.0, 340.0))
    for _ in range(5):
        env.step(action(1, rudder=1.0), action(1, rudder=0.0))
    assert env.state.speed[0, 0] < 300.0 < env.state.speed[0, 1]


def test_one_launch_per_fire_and_never_more_than_carried(place, action) -> None:
    env = TensorEnv(8)
    env.reset()
    place(env, (20_000, 20_000, 0.0, 300.0), (80_000, 80_000, 0.0, 300.0))
    launched = []
    for _ in range(CFG.missiles + 3):
        _, _, _, infos = env.step(action(8, fire=True), action(8))
        launched.append(int(env.state.m_active[:, :, 1].sum(0)[0]))
        assert bool((env.state.missiles_left >= 0).all())
    # one missile per fire, capped at the number carried (all still in flight after 7 s)
    assert launched == [1, 2, 3, 4, 4, 4, 4]
    assert env.state.missiles_left[:, 0].tolist() == [0.0] * 8
    assert bool((env.state.m_active[:, :, 0] == 0).all()), "p2 never fired"


def test_missile_launches_along_shooter_heading_at_shooter_speed(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (20_000, 50_000, 0.3, 280.0), (80_000, 50_000, math.pi, 300.0))
    env.step(action(1, fire=True, rudder=0.0), action(1))
    s = env.state
    slot = s.m_active[:, 0, 1].nonzero()[0, 0]
    assert abs(float(s.m_heading[slot, 0, 1]) - float(s.heading[0, 0])) < 0.05  # barely turned in 1 s
    assert float(s.m_speed[slot, 0, 1]) > 280.0  # boosting


def test_missiles_expire(place, action) -> None:
    env = TensorEnv(1, config=EnvConfig(max_time=200.0))
    env.reset()
    # Fire away from a target behind: the seeker never locks, the missile coasts until spent.
    place(env, (50_000, 50_000, 0.0, 300.0), (10_000, 50_000, math.pi, 150.0))
    env.step(action(1, fire=True), action(1, throttle=0.0))
    flight = 1
    while bool(env.state.m_active.any()):
        env.step(action(1, rudder=0.0), action(1, throttle=0.0))
        flight += 1
        assert flight <= CFG.missile_lifetime + 1
    assert flight > CFG.missile_boost_time


def test_seeker_loses_lock_for_good(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (50_000, 50_000, 0.0, 300.0), (60_000, 50_000, math.pi / 2, 300.0))
    env.step(action(1, fire=True), action(1))
    assert bool(env.state.m_locked.any())
    # Target directly behind the missile's nose: outside the ±60° cone.
    env.state.x[:, 1] = 30_000.0
    env.step(action(1), action(1))
    assert not bool(env.state.m_locked.any())
    env.state.x[:, 1] = 90_000.0  # back in front: the lock does not come back
    env.step(action(1), action(1))
    assert not bool(env.state.m_locked.any())


def test_closest_approach_catches_fast_fly_by() -> None:
    # Relative positions straddling the target within one substep: both end points 2 km away.
    p0x, p0y = torch.tensor([-2000.0]), torch.tensor([100.0])
    p1x, p1y = torch.tensor([2000.0]), torch.tensor([100.0])
    assert float(closest_approach_sq(p0x, p0y, p1x, p1y).sqrt()) == 100.0
    # The closest point is an end point when the segment moves away.
    assert float(closest_approach_sq(torch.tensor([300.0]), torch.tensor([400.0]),
                                     torch.tensor([600.0]), torch.tensor([800.0])).sqrt()) == 500.0


def test_hit_at_high_closing_speed(place, action) -> None:
    """A missile at full speed meets a 400 m/s target head-on: 1.4 km/s closing, 350 m per substep."""
    env = TensorEnv(1)
    env.reset()
    place(env, (10_000, 50_000, 0.0, 300.0), (50_000, 50_000, math.pi, 400.0))
    s = env.state
    # A missile already in flight at 1000 m/s, 3 km from the target, dead on course.
    s.mx[0, 0, 1], s.my[0, 0, 1] = 47_000.0, 50_000.0
    s.m_heading[0, 0, 1], s.m_speed[0, 0, 1], s.m_age[0, 0, 1] = 0.0, 1000.0, 10.0
    s.m_active[0, 0, 1] = s.m_locked[0, 0, 1] = True
    s.missiles_left[0, 0] = CFG.missiles - 1
    dones, infos = None, None
    for _ in range(3):
        _, _, dones, infos = env.step(action(1), action(1, throttle=1.0))
        if bool(dones[0]):
            break
    assert bool(dones[0]) and int(infos["winner"][0]) == 1


def test_leaving_the_arena_kills(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (100, 50_000, math.pi, 300.0), (80_000, 50_000, math.pi, 300.0))
    _, rewards, dones, infos = env.step(action(1), action(1))
    assert bool(dones[0]) and bool(infos["terminated"][0])
    assert int(infos["winner"][0]) == 2
    assert float(rewards["p1"][0]) < 0 < float(rewards["p2"][0])


def test_both_dead_in_the_same_step_is_a_draw(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (100, 50_000, math.pi, 300.0), (99_900, 50_000, 0.0, 300.0))
    _, rewards, dones, infos = env.step(action(1), action(1))
    assert bool(dones[0]) and int(infos["winner"][0]) == 0
    assert abs(float(rewards["p1"][0])) < 0.01 and abs(float(rewards["p2"][0])) < 0.01


def test_missile_keeps_flying_after_its_shooter_dies(place, action) -> None:
    """Head-on, p2 fires a second before p1: p2's missile strikes p1 first, and p1's missile, flying on
    without its shooter, strikes p2 later in the same decision step. A draw, a kill each; had p1's
    missile gone with p1, p2 would have won."""

    def battle(cfg: EnvConfig, p1_fires_at: int) -> tuple[int, int, float, float]:
        """(step the battle ends, winner, p1's kills, p2's kills)."""
        env = TensorEnv(1, config=cfg)
        env.reset()
        place(env, (50_000, 50_000, 0.0, 300.0), (64_000, 50_000, math.pi, 300.0))
        for t in range(200):
            _, _, dones, infos = env.step(action(1, fire=t == p1_fires_at), action(1, fire=t == 0))
            if bool(dones[0]):
                return t, int(infos["winner"][0]), float(infos["kills"]["p1"][0]), float(infos["kills"]["p2"][0])
        raise AssertionError("no missile hit")

    # The same flight decided every quarter second (one substep a step): p1 is hit first, and p2 wins.
    quarter, winner, p1_kills, p2_kills = battle(EnvConfig(dt=0.25, substeps=1), p1_fires_at=4)
    assert (winner, p1_kills, p2_kills) == (2, 0.0, 1.0)
    assert quarter % 4 != 3, "p1 is hit before the last quarter of its step: p2 can still be hit after it"
    # In steps of 1 s (four substeps), p2 is hit in the step p1 was, by the missile of the dead p1.
    assert battle(EnvConfig(), p1_fires_at=1) == (quarter // 4, 0, 1.0, 1.0)


def test_rewards_parts(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (20_000, 50_000, 0.0, 300.0), (80_000, 50_000, math.pi, 300.0))
    _, rewards, _, _ = env.step(action(1, fire=True), action(1))
    rc = CFG.reward
    assert math.isclose(float(rewards["p1"][0]), rc.survival - rc.missile_cost, rel_tol=1e-5)
    assert math.isclose(float(rewards["p2"][0]), rc.survival, rel_tol=1e-5)
