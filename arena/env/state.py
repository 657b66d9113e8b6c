"""The batched world state: aircraft fields are [N, 2] tensors (env, player), missile fields [M, N, 2].

Player index 0 is p1, 1 is p2. Coordinates are kept as separate x and y tensors rather than a
trailing dimension of 2: reductions over a size-2 axis are slow, plain element-wise arithmetic is not.

Missiles live in fixed slots laid out ``[slot, env, target]``: ``[:, :, j]`` are the missiles chasing
aircraft ``j``, fired by the other one. Slot first keeps every per-aircraft quantity ([N, 2]) a cheap
leading-dimension broadcast against the missiles, and slot ``k`` holds the shooter's ``k``-th launch
of the episode, so an aircraft never has more missiles in the air than it carried.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import ClassVar

import torch


@dataclass
class WorldState:
    x: torch.Tensor  # [N, 2] m, aircraft position east
    y: torch.Tensor  # [N, 2] m, aircraft position north
    heading: torch.Tensor  # [N, 2] rad in [0, 2π), 0 = east, counter-clockwise
    speed: torch.Tensor  # [N, 2] m/s
    alive: torch.Tensor  # [N, 2] bool
    missiles_left: torch.Tensor  # [N, 2] float, missiles still on the rails
    mx: torch.Tensor  # [M, N, 2] m
    my: torch.Tensor  # [M, N, 2] m
    m_heading: torch.Tensor  # [M, N, 2] rad
    m_speed: torch.Tensor  # [M, N, 2] m/s
    m_age: torch.Tensor  # [M, N, 2] s since launch
    m_active: torch.Tensor  # [M, N, 2] bool, in flight
    m_locked: torch.Tensor  # [M, N, 2] bool, seeker still tracks the target
    time: torch.Tensor  # [N] decision steps since the episode began (float)

    @classmethod
    def empty(cls, num_envs: int, missiles: int, device: torch.device) -> "WorldState":
        f = dict(dtype=torch.float32, device=device)
        b = dict(dtype=torch.bool, device=device)
        n, m = num_envs, max(missiles, 1)
        return cls(
            x=torch.zeros(n, 2, **f),
            y=torch.zeros(n, 2, **f),
            heading=torch.zeros(n, 2, **f),
            speed=torch.zeros(n, 2, **f),
            alive=torch.ones(n, 2, **b),
            missiles_left=torch.full((n, 2), float(missiles), **f),
            mx=torch.zeros(m, n, 2, **f),
            my=torch.zeros(m, n, 2, **f),
            m_heading=torch.zeros(m, n, 2, **f),
            m_speed=torch.zeros(m, n, 2, **f),
            m_age=torch.zeros(m, n, 2, **f),
            m_active=torch.zeros(m, n, 2, **b),
            m_locked=torch.zeros(m, n, 2, **b),
            time=torch.zeros(n, **f),
        )

    AIRCRAFT_FIELDS: ClassVar[tuple[str, ...]] = ("x", "y", "heading", "speed", "alive", "missiles_left")

    def restart(self, mask: torch.Tensor, fresh: "WorldState") -> None:
        """Envs where ``mask`` ([N] bool) is set start over from ``fresh``: its aircraft, no missiles.

        Missile slots are only cleared, not copied: a slot's other fields are rewritten at launch.
        """
        m = mask.unsqueeze(-1).expand(-1, 2).contiguous()  # same-shape where is far cheaper on the CPU
        for name in self.AIRCRAFT_FIELDS:
            setattr(self, name, torch.where(m, getattr(fresh, name), getattr(self, name)))
        self.m_active = self.m_active & ~m
        self.m_locked = self.m_locked & ~m
        self.time = torch.where(mask, fresh.time, self.time)

    def clone(self) -> "WorldState":
        return WorldState(**{f.name: getattr(self, f.name).clone() for f in fields(self)})

