"""Random starting positions: p1 in the western band, p2 in the eastern band, facing each other.

Teams fly line abreast: the leads are placed exactly as in a duel (same random draws, so a duel's
battles do not change when teams exist), and wingman ``t`` sits ``formation_spacing · ceil(t/2)`` m
beside its lead, to the lead's left for odd seats and right for even ones, as seen facing the enemy.
Wingmen share their lead's heading and draw their own speed. p2's formation is p1's turned 180°, so
every seat starts in the same place in its own side's frame.
"""

from __future__ import annotations

import math

import torch

from arena.env.config import EnvConfig
from arena.env.state import WorldState


def sample_spawn(cfg: EnvConfig, num_envs: int, generator: torch.Generator, device: torch.device,
                 slots: bool = True) -> WorldState:
    """A fresh episode for every env; the caller keeps only the envs it is resetting (``slots=False``
    leaves out the empty missile slots, which an auto-reset does not copy)."""
    return spawn_from_uniforms(cfg, *spawn_uniforms(cfg, num_envs, generator, device), device, slots)


def spawn_uniforms(cfg: EnvConfig, num_envs: int, generator: torch.Generator, device: torch.device
                   ) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The generator's draws for :func:`spawn_from_uniforms`: [N, 8] for the leads, [N, 2, T-1] for the
    wingmen (None in a duel)."""
    u = torch.rand(num_envs, 8, generator=generator, device=device)
    wing = torch.rand(num_envs, 2, cfg.team_size - 1, generator=generator, device=device) if cfg.team_size > 1 else None
    return u, wing


def seeded_spawn(cfg: EnvConfig, seeds: torch.Tensor, device: torch.device, slots: bool = True) -> WorldState:
    """The start of each env from its own 63-bit seed ([N] int64): the same seed gives the same start
    in any batch, at any position, on any run, so a game can be replayed alone."""
    return spawn_from_uniforms(cfg, *seeded_spawn_uniforms(cfg, seeds.to(device)), device, slots)


def seeded_spawn_uniforms(cfg: EnvConfig, seeds: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor | None]:
    """:func:`spawn_uniforms` of each env from its own seed."""
    t = cfg.team_size
    u = seeded_uniforms(seeds, 8 + 2 * (t - 1))
    wing = u[:, 8:].reshape(-1, 2, t - 1) if t > 1 else None
    return u[:, :8].contiguous(), wing


MASK64 = (1 << 64) - 1


def _signed(value: int) -> int:
    """A 64-bit pattern as the int64 torch stores it."""
    value &= MASK64
    return value - (1 << 64) if value >= 1 << 63 else value


GOLDEN, MIX1, MIX2 = (_signed(c) for c in (0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB))


def _shift_right(x: torch.Tensor, bits: int) -> torch.Tensor:
    """Logical shift of an int64 bit pattern (torch's ``>>`` is arithmetic on signed values)."""
    return (x >> bits) & ((1 << (64 - bits)) - 1)


def seeded_uniforms(seeds: torch.Tensor, count: int) -> torch.Tensor:
    """[N, count] uniforms in [0, 1) from splitmix64 of (seed, k): counter-based, so env n's numbers
    depend on its seed alone. Integer arithmetic wraps modulo 2⁶⁴ the same way on every device."""
    k = torch.arange(1, count + 1, dtype=torch.int64, device=seeds.device)
    z = seeds.to(torch.int64).unsqueeze(-1) + k * GOLDEN
    z = (z ^ _shift_right(z, 30)) * MIX1
    z = (z ^ _shift_right(z, 27)) * MIX2
    z = z ^ _shift_right(z, 31)
    return _shift_right(z, 40).to(torch.float32) / float(1 << 24)  # top 24 bits: exact in float32


def spawn_from_uniforms(cfg: EnvConfig, u: torch.Tensor, wing_u: torch.Tensor | None, device: torch.device,
                        slots: bool = True) -> WorldState:
    """Starting positions from uniforms: ``u`` [N, 8] for the leads, ``wing_u`` [N, 2, T-1] for the
    wingmen's speeds.

    x is drawn within ``spawn_edge_min..max`` of each player's own edge, so the east-west gap already
    lies in 60–80 km; the north-south offset is then capped to keep the separation within
    ``arena_size - 2·spawn_edge_min`` and both aircraft inside the middle band.
    """
    num_envs = u.shape[0]
    size = cfg.arena_size
    edge_span = cfg.spawn_edge_max - cfg.spawn_edge_min
    x1 = cfg.spawn_edge_min + edge_span * u[:, 0]
    x2 = size - cfg.spawn_edge_min - edge_span * u[:, 1]
    dx = x2 - x1
    max_sep = size - 2.0 * cfg.spawn_edge_min
    max_dy = torch.sqrt(torch.clamp(max_sep**2 - dx**2, min=0.0)).clamp(max=cfg.spawn_band)
    dy = (2.0 * u[:, 2] - 1.0) * max_dy
    centre_span = (cfg.spawn_band - dy.abs()).clamp(min=0.0)
    centre = size / 2.0 + (u[:, 3] - 0.5) * centre_span
    y1 = centre - dy / 2.0
    y2 = centre + dy / 2.0

    bearing = torch.atan2(y2 - y1, x2 - x1)
    jitter = cfg.spawn_heading_jitter
    h1 = bearing + (2.0 * u[:, 4] - 1.0) * jitter
    h2 = bearing + math.pi + (2.0 * u[:, 5] - 1.0) * jitter
    speed_span = cfg.spawn_speed_max - cfg.spawn_speed_min

    state = WorldState.empty(num_envs, cfg.missiles, device, cfg.team_size, slots=slots)
    if cfg.team_size == 1:
        state.x = torch.stack((x1, x2), -1)
        state.y = torch.stack((y1, y2), -1)
        state.heading = torch.remainder(torch.stack((h1, h2), -1), 2.0 * math.pi)
        state.speed = cfg.spawn_speed_min + speed_span * u[:, 6:8]
        return state

    t = cfg.team_size
    seat = torch.arange(t, device=device)
    lateral = ((seat + 1) // 2) * torch.where(seat % 2 == 1, 1.0, -1.0) * cfg.formation_spacing  # [T] m, left +
    left_x, left_y = -torch.sin(bearing).unsqueeze(-1), torch.cos(bearing).unsqueeze(-1)  # p1's left, [N, 1]
    x = torch.cat((x1.unsqueeze(-1) + lateral * left_x, x2.unsqueeze(-1) - lateral * left_x), -1)
    y = torch.cat((y1.unsqueeze(-1) + lateral * left_y, y2.unsqueeze(-1) - lateral * left_y), -1)
    state.x = x.clamp(0.0, size)
    state.y = y.clamp(0.0, size)
    heading = torch.cat((h1.unsqueeze(-1).expand(-1, t), h2.unsqueeze(-1).expand(-1, t)), -1)
    state.heading = torch.remainder(heading, 2.0 * math.pi)
    assert wing_u is not None
    lead_u = u[:, 6:8].unsqueeze(-1)
    state.speed = cfg.spawn_speed_min + speed_span * torch.cat((lead_u, wing_u), -1).flatten(1)
    return state
