"""The batched world state: aircraft fields are [N, A] tensors (env, aircraft), missile fields [S, N, A].

A battle has two sides of T aircraft each (``EnvConfig.team_size``), A = 2T: aircraft ``0..T-1`` are
p1's seats and ``T..2T-1`` p2's. At T = 1 this is the duel's [N, 2] layout, index 0 = p1, 1 = p2.
Coordinates are kept as separate x and y tensors rather than a trailing dimension of 2: reductions
over a size-2 axis are slow, plain element-wise arithmetic is not.

Missiles live in fixed slots laid out ``[slot, env, target]``: ``[:, :, j]`` are the missiles chasing
aircraft ``j``, fired by the other side. There are S = T·M slots per target (M = missiles carried):
slot ``seat·M + k`` holds the ``k``-th launch of the enemy aircraft in ``seat``. So the layout itself
records each missile's shooter (its slot) and target (its column), a missile can only ever be tested
against its own target, and a shooter never has more missiles in the air than it carried. Slot first
keeps every per-aircraft quantity ([N, A]) a cheap leading-dimension broadcast against the missiles.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar

import torch


@dataclass
class WorldState:
    x: torch.Tensor  # [N, A] m, aircraft position east
    y: torch.Tensor  # [N, A] m, aircraft position north
    heading: torch.Tensor  # [N, A] rad in [0, 2π), 0 = east, counter-clockwise
    speed: torch.Tensor  # [N, A] m/s
    alive: torch.Tensor  # [N, A] bool
    missiles_left: torch.Tensor  # [N, A] float, missiles still on the rails
    mx: torch.Tensor  # [S, N, A] m
    my: torch.Tensor  # [S, N, A] m
    m_heading: torch.Tensor  # [S, N, A] rad
    m_speed: torch.Tensor  # [S, N, A] m/s
    m_age: torch.Tensor  # [S, N, A] s since launch
    m_active: torch.Tensor  # [S, N, A] bool, in flight
    m_locked: torch.Tensor  # [S, N, A] bool, seeker still tracks the target
    time: torch.Tensor  # [N] decision steps since the episode began (float)

    @classmethod
    def empty(cls, num_envs: int, missiles: int, device: torch.device, team_size: int = 1,
              slots: bool = True) -> "WorldState":
        """A world of aircraft at the origin and empty missile slots (none at all with ``slots=False``:
        the aircraft of fresh battles that :meth:`restart` copies from)."""
        f: dict[str, Any] = {"dtype": torch.float32, "device": device}
        b: dict[str, Any] = {"dtype": torch.bool, "device": device}
        n, a = num_envs, 2 * team_size
        s = team_size * max(missiles, 1) if slots else 0
        return cls(
            x=torch.zeros(n, a, **f),
            y=torch.zeros(n, a, **f),
            heading=torch.zeros(n, a, **f),
            speed=torch.zeros(n, a, **f),
            alive=torch.ones(n, a, **b),
            missiles_left=torch.full((n, a), float(missiles), **f),
            mx=torch.zeros(s, n, a, **f),
            my=torch.zeros(s, n, a, **f),
            m_heading=torch.zeros(s, n, a, **f),
            m_speed=torch.zeros(s, n, a, **f),
            m_age=torch.zeros(s, n, a, **f),
            m_active=torch.zeros(s, n, a, **b),
            m_locked=torch.zeros(s, n, a, **b),
            time=torch.zeros(n, **f),
        )

    AIRCRAFT_FIELDS: ClassVar[tuple[str, ...]] = ("x", "y", "heading", "speed", "alive", "missiles_left")

    @property
    def team_size(self) -> int:
        return self.x.shape[-1] // 2

    def restart(self, mask: torch.Tensor, fresh: "WorldState") -> None:
        """Envs where ``mask`` ([N] bool) is set start over from ``fresh``: its aircraft, no missiles.

        Missile slots are only cleared, not copied: a slot's other fields are rewritten at launch.
        """
        m = mask.unsqueeze(-1).expand(-1, self.x.shape[-1]).contiguous()  # same-shape where is far cheaper on the CPU
        for name in self.AIRCRAFT_FIELDS:
            setattr(self, name, torch.where(m, getattr(fresh, name), getattr(self, name)))
        self.m_active = self.m_active & ~m
        self.m_locked = self.m_locked & ~m
        self.time = torch.where(mask, fresh.time, self.time)

    def select(self, envs: torch.Tensor) -> "WorldState":
        """A copy of the battles ``envs`` (an index tensor), in that order."""
        picked = {}
        for f in fields(self):
            value = getattr(self, f.name)
            picked[f.name] = value.index_select(1 if value.dim() == 3 else 0, envs)  # missiles are [S, N, A]
        return WorldState(**picked)

    def as_tuple(self) -> tuple[torch.Tensor, ...]:
        """The fields in declaration order: ``WorldState(*state.as_tuple())`` rebuilds it."""
        return tuple(getattr(self, f.name) for f in fields(self))

    def clone(self) -> "WorldState":
        return WorldState(**{f.name: getattr(self, f.name).clone() for f in fields(self)})
