"""Reward shaping: what each term pays, that the aim term of ``decisive`` sums to nothing, and the
price ``economy`` puts on missiles."""

from __future__ import annotations

import math

import torch

from arena_ppo.rewards import AIM_TURN_COEF, CLOSE_COEF, MISSILE_COEF, TIME_COEF, decisive, economy, pursuit


def obs(angle: list[float], distance: list[float], alive: list[float], enemy_alive: list[float]) -> dict:
    return {"enemy_relative_angle": torch.tensor(angle), "enemy_distance": torch.tensor(distance),
            "alive": torch.tensor(alive), "enemy_alive": torch.tensor(enemy_alive)}


def call(fn, before, after):
    rewards = torch.zeros(len(before["alive"]))
    return fn(before, after, rewards, torch.zeros_like(rewards, dtype=torch.bool), {})


def test_decisive_charges_each_step_both_fly_and_pays_for_closing() -> None:
    before = obs([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1, 1, 1], [1, 1, 1])
    after = obs([0.0, 0.0, 0.0], [0.5, 0.4, 0.5], [1, 1, 0], [1, 1, 1])
    r = call(decisive, before, after)
    assert math.isclose(float(r[0]), -TIME_COEF, abs_tol=1e-7)  # nose on, no closing: only the clock
    assert math.isclose(float(r[1]), CLOSE_COEF * 0.1 - TIME_COEF, rel_tol=1e-5)
    assert float(r[2]) == 0.0  # the learner is down: nothing more to pay or charge


def test_decisive_pays_for_turning_toward_the_enemy_not_for_pointing_at_it() -> None:
    path = [1.0, 0.5, 0.1, 0.0, 0.0, 0.0, 0.3, 1.0]  # tail-on, nose-on for a while, tail-on again
    total = 0.0
    for a, b in zip(path, path[1:]):
        step = call(decisive, obs([a], [0.5], [1], [1]), obs([b], [0.5], [1], [1]))
        total += float(step[0]) + TIME_COEF
    assert math.isclose(total, 0.0, abs_tol=1e-6)  # a potential: back where it started, back to zero
    turned = call(decisive, obs([1.0], [0.5], [1], [1]), obs([0.0], [0.5], [1], [1]))
    assert math.isclose(float(turned[0]) + TIME_COEF, 2 * AIM_TURN_COEF, rel_tol=1e-5)
    held = call(pursuit, obs([0.0], [0.5], [1], [1]), obs([0.0], [0.5], [1], [1]))
    assert float(held[0]) > 0  # pursuit pays for every step held nose-on; decisive does not


def with_missiles(o: dict, own: list[float], enemy: list[float] | None) -> dict:
    o = dict(o, missiles=torch.tensor(own))
    if enemy is not None:
        o["enemy_missiles"] = torch.tensor(enemy)
    return o


def test_economy_prices_own_launches_and_pays_for_the_enemy_s() -> None:
    flying = obs([0.0, 0.0, 0.0], [0.5, 0.5, 0.5], [1, 1, 1], [1, 1, 1])
    before = with_missiles(flying, [1.0, 1.0, 0.75], [1.0, 1.0, 0.5])
    after = with_missiles(flying, [0.75, 1.0, 0.75], [1.0, 0.75, 0.5])  # we fire; they fire; nobody fires
    base = call(pursuit, flying, flying)
    extra = call(economy, before, after) - base
    assert math.isclose(float(extra[0]), -MISSILE_COEF * 0.25, rel_tol=1e-5)
    assert math.isclose(float(extra[1]), MISSILE_COEF * 0.25, rel_tol=1e-5)
    assert float(extra[2]) == 0.0
    # Over a battle the missile term is the change in (own - enemy) load, whatever the order of launches.
    loads = [(1.0, 1.0), (0.75, 1.0), (0.75, 0.5), (0.25, 0.5), (0.25, 0.0)]
    total = sum(float((call(economy, with_missiles(flying, [a[0]] * 3, [a[1]] * 3),
                            with_missiles(flying, [b[0]] * 3, [b[1]] * 3)) - base)[0])
                for a, b in zip(loads, loads[1:]))
    assert math.isclose(total, MISSILE_COEF * ((1.0 - 0.0) - (1.0 - 0.25)), rel_tol=1e-5)


def test_economy_without_the_enemy_count_prices_own_launches_only() -> None:
    flying = obs([0.0], [0.5], [1], [1])
    r = call(economy, with_missiles(flying, [1.0], None), with_missiles(flying, [0.5], None))
    assert math.isclose(float(r[0] - call(pursuit, flying, flying)[0]), -MISSILE_COEF * 0.5, rel_tol=1e-5)
