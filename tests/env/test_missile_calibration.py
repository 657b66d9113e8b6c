"""The missile's two calibration points (docs/env.md): long head-on reach, short no-escape range."""

from __future__ import annotations

import math

import pytest
import torch

from arena.env import EnvConfig, TensorEnv

pytestmark = pytest.mark.usefixtures("both_step_paths")  # eager packed and static step

HEAD_ON_RANGE = 40_000.0  # m, must hit a target that keeps coming
NO_ESCAPE_HIT = 12_000.0  # m, a fleeing target is still hit from here
NO_ESCAPE_MISS = 16_000.0  # m, a fleeing target escapes from here


def duel(action, ranges: list[float], flee: bool, steps: int = 150) -> torch.Tensor:
    """p1 fires once at p2, ``range`` metres ahead and flying at it; returns each env's winner."""
    n = len(ranges)
    env = TensorEnv(n, config=EnvConfig())
    env.reset()
    s = env.state
    r = torch.tensor(ranges)
    s.x = torch.stack((torch.full((n,), 10_000.0), 10_000.0 + r), -1)
    s.y = torch.full((n, 2), 50_000.0)
    s.heading = torch.tensor([[0.0, math.pi]]).repeat(n, 1)
    s.speed = torch.full((n, 2), 300.0)
    winner = torch.full((n,), -1, dtype=torch.int8)
    obs = env.observe()
    for t in range(steps):
        if flee:  # turn hard until the shooter is dead astern, then run at full throttle
            rel = obs["p2"]["enemy_relative_angle"]
            rudder = torch.where(rel == 0, torch.ones(n), -torch.sign(rel) * ((1 - rel.abs()) * 5).clamp(0, 1))
            a2 = action(n, rudder=rudder, throttle=1.0)
        else:
            a2 = action(n, rudder=0.0, throttle=0.9)  # holds about 320 m/s, straight at the shooter
        obs, _, dones, infos = env.step(action(n, fire=t == 0), a2)
        winner = torch.where((winner < 0) & dones, infos["winner"], winner)
        if bool((winner >= 0).all()):
            break
    return winner


def test_head_on_shot_at_max_range_hits(action) -> None:
    assert EnvConfig().missile_max_range == HEAD_ON_RANGE
    assert duel(action, [HEAD_ON_RANGE], flee=False).tolist() == [1]


def test_no_escape_range(action) -> None:
    winners = duel(action, [NO_ESCAPE_HIT, NO_ESCAPE_MISS], flee=True)
    assert winners.tolist()[0] == 1, "a fleeing target must be hit from inside the no-escape range"
    assert winners.tolist()[1] != 1, "a fleeing target must escape a shot from beyond the no-escape range"


def test_no_escape_boundary_lies_between_12_and_16_km(action) -> None:
    ranges = [10_000.0 + 500.0 * i for i in range(13)]  # 10 .. 16 km
    hit = [r for r, w in zip(ranges, duel(action, ranges, flee=True).tolist()) if w == 1]
    assert hit, "no hit at all against a fleeing target"
    boundary = max(hit)
    assert 12_000.0 <= boundary < 16_000.0
    # Beyond the boundary every shot misses: the range is a real threshold, not noise.
    assert hit == [r for r in ranges if r <= boundary]
