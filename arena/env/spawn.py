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
    leaves out the empty missile slots, which an auto-reset does not copy).

    x is drawn within ``spawn_edge_min..max`` of each player's own edge, so the east-west gap already
    lies in 60–80 km; the north-south offset is then capped to keep the separation within
    ``arena_size - 2·spawn_edge_min`` and both aircraft inside the middle band.
    """
    u = torch.rand(num_envs, 8, generator=generator, device=device)
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
    wing_u = torch.rand(num_envs, 2, t - 1, generator=generator, device=device)
    lead_u = u[:, 6:8].unsqueeze(-1)
    state.speed = cfg.spawn_speed_min + speed_span * torch.cat((lead_u, wing_u), -1).flatten(1)
    return state
