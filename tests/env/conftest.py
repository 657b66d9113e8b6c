"""Helpers to build hand-made battle situations."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from arena.env import TensorEnv


def action(n: int, rudder: float | torch.Tensor = 0.0, throttle: float | torch.Tensor = 1.0,
           fire: bool | torch.Tensor = False) -> dict[str, torch.Tensor]:
    def full(v: float | torch.Tensor) -> torch.Tensor:
        return v.float() if isinstance(v, torch.Tensor) else torch.full((n,), float(v))

    f = fire if isinstance(fire, torch.Tensor) else torch.full((n,), bool(fire))
    return {"rudder": full(rudder), "throttle": full(throttle), "fire": f.bool()}


def place(env: TensorEnv, p1: tuple[float, float, float, float], p2: tuple[float, float, float, float]) -> None:
    """Put both aircraft at (x m, y m, heading rad, speed m/s) in every env; no missiles in flight."""
    n = env.num_envs
    s = env.state
    s.x = torch.tensor([[p1[0], p2[0]]]).repeat(n, 1)
    s.y = torch.tensor([[p1[1], p2[1]]]).repeat(n, 1)
    s.heading = torch.remainder(torch.tensor([[p1[2], p2[2]]]), 2 * math.pi).repeat(n, 1)
    s.speed = torch.tensor([[p1[3], p2[3]]]).repeat(n, 1)
    s.alive = torch.ones(n, 2, dtype=torch.bool)
    s.m_active = torch.zeros_like(s.m_active)
    s.m_locked = torch.zeros_like(s.m_locked)


@pytest.fixture(name="action")
def action_fixture():
    return action


@pytest.fixture(name="place")
def place_fixture():
    return place


@pytest.fixture(params=["packed", "static"])
def both_step_paths(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test on the CPU's eager step (packed missiles) and on the static step: the dense graph that
    ``torch.compile`` captures, here run eagerly (``test_compiled_step`` compares it compiled)."""
    if request.param == "static":
        init = TensorEnv.__init__

        def static_init(self: TensorEnv, *args: Any, **kwargs: Any) -> None:
            kwargs.setdefault("packed_missiles", False)
            init(self, *args, **kwargs)

        monkeypatch.setattr(TensorEnv, "__init__", static_init)
    return request.param
