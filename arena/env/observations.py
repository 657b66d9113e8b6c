"""What each player sees, always from its own side.

p2's view is the world turned 180° about the arena centre, so p2 also "starts in the west": the
rotation keeps left and right, so one policy can fly either side with the same rudder meaning.
"""

from __future__ import annotations

import math

import torch

from arena.env.config import EnvConfig
from arena.env.state import WorldState

TWO_PI = 2.0 * math.pi
SPEED_SCALE = 200.0  # m/s, speed normaliser of the observation
MISSILE_SPEED_SCALE = 1000.0  # m/s, velocity normaliser in the global state

OBS_KEYS: tuple[str, ...] = (
    "x", "y", "angle", "speed", "missiles", "alive",
    "enemy_distance", "enemy_relative_angle", "enemy_speed", "enemy_alive",
)
EXTENDED_OBS_KEYS: tuple[str, ...] = OBS_KEYS + (
    "enemy_aspect", "enemy_missiles", "threat_distance", "threat_relative_angle", "threat_present",
)
PLAYERS: tuple[str, str] = ("p1", "p2")

Observation = dict[str, torch.Tensor]


def obs_keys(cfg: EnvConfig) -> tuple[str, ...]:
    return EXTENDED_OBS_KEYS if cfg.obs_mode == "extended" else OBS_KEYS


def wrap_angle(a: torch.Tensor) -> torch.Tensor:
    """Wrap to [-π, π)."""
    return torch.remainder(a + math.pi, TWO_PI) - math.pi


def own_frame(state: WorldState, cfg: EnvConfig, player: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x, y (m) and headings, each [N, 2], of both aircraft as ``player`` sees them."""
    if player == 0:
        return state.x, state.y, state.heading
    return cfg.arena_size - state.x, cfg.arena_size - state.y, torch.remainder(state.heading + math.pi, TWO_PI)


def observe(state: WorldState, cfg: EnvConfig, player: int) -> Observation:
    """The observation dict of ``player`` (0 = p1, 1 = p2), each entry [N] float32."""
    me, foe = player, 1 - player
    x, y, heading = own_frame(state, cfg, player)
    dx = state.x[:, foe] - state.x[:, me]
    dy = state.y[:, foe] - state.y[:, me]
    dist = torch.sqrt(dx * dx + dy * dy)
    bearing = torch.atan2(dy, dx)
    carried = float(max(cfg.missiles, 1))
    obs: Observation = {
        "x": (x[:, me] / cfg.arena_size).clamp(0.0, 1.0),
        "y": (y[:, me] / cfg.arena_size).clamp(0.0, 1.0),
        "angle": heading[:, me] / TWO_PI,
        "speed": state.speed[:, me] / SPEED_SCALE,
        "missiles": state.missiles_left[:, me] / carried,
        "alive": state.alive[:, me].float(),
        "enemy_distance": (dist / cfg.diagonal).clamp(0.0, 1.0),
        "enemy_relative_angle": wrap_angle(bearing - state.heading[:, me]) / math.pi,
        "enemy_speed": state.speed[:, foe] / SPEED_SCALE,
        "enemy_alive": state.alive[:, foe].float(),
    }
    if cfg.obs_mode == "extended":
        obs["enemy_aspect"] = wrap_angle(bearing + math.pi - state.heading[:, foe]) / math.pi
        obs["enemy_missiles"] = state.missiles_left[:, foe] / carried
        # Nearest enemy missile in flight (missiles are stored by target): the threat to react to.
        rx = state.mx[:, :, me] - state.x[:, me]  # [M, N]
        ry = state.my[:, :, me] - state.y[:, me]
        m_dist = torch.sqrt(rx * rx + ry * ry).masked_fill(~state.m_active[:, :, me], float("inf"))
        nearest_dist, idx = m_dist.min(dim=0)
        present = torch.isfinite(nearest_dist)
        idx = idx.unsqueeze(0)
        m_bearing = torch.atan2(ry.gather(0, idx).squeeze(0), rx.gather(0, idx).squeeze(0))
        zero = torch.zeros_like(dist)
        obs["threat_distance"] = torch.where(present, (nearest_dist / cfg.diagonal).clamp(0.0, 1.0), zero + 1.0)
        obs["threat_relative_angle"] = torch.where(present, wrap_angle(m_bearing - state.heading[:, me]) / math.pi, zero)
        obs["threat_present"] = present.float()
    return obs


def obs_vector(obs: Observation, keys: tuple[str, ...] | None = None) -> torch.Tensor:
    """Stack an observation dict into [N, F] in the canonical key order."""
    if keys is None:
        keys = EXTENDED_OBS_KEYS if "threat_present" in obs else OBS_KEYS
    return torch.stack([obs[k] for k in keys], dim=-1)


def global_state_size(cfg: EnvConfig) -> int:
    m = max(cfg.missiles, 1)
    return 1 + 2 * 7 + 2 * m * 7


def global_state(state: WorldState, cfg: EnvConfig, player: int) -> torch.Tensor:
    """[N, S] privileged view from ``player``'s side: both aircraft and every missile slot.

    Per aircraft (own first): x, y, cos, sin heading, speed, alive, missiles left. Per missile slot
    (own missiles first, in launch order): position relative to the player, velocity, active, locked, and 1 for own /
    0 for the enemy's. Positions scale by the arena size or diagonal, speeds by 200 m/s (aircraft)
    or 1000 m/s (missiles). Leading entry: elapsed fraction of the time limit.
    """
    me, foe = player, 1 - player
    order = [me, foe]
    x, y, heading = own_frame(state, cfg, player)
    heading = heading[:, order]
    planes = torch.stack(
        [
            x[:, order] / cfg.arena_size,
            y[:, order] / cfg.arena_size,
            torch.cos(heading),
            torch.sin(heading),
            state.speed[:, order] / SPEED_SCALE,
            state.alive[:, order].float(),
            state.missiles_left[:, order] / float(max(cfg.missiles, 1)),
        ],
        dim=-1,
    ).flatten(1)
    # Own missiles chase the enemy (target index ``foe``); list them first, then the enemy's.
    sign = 1.0 if player == 0 else -1.0  # the 180° turn flips both vector components
    m_order = [foe, me]
    active = state.m_active[:, :, m_order].float()  # [M, N, 2]
    m_head = state.m_heading[:, :, m_order] + (0.0 if player == 0 else math.pi)
    m_speed = state.m_speed[:, :, m_order] / MISSILE_SPEED_SCALE * active
    owner = torch.zeros_like(active)
    owner[:, :, 0] = 1.0
    missiles = torch.stack(
        [
            sign * (state.mx[:, :, m_order] - state.x[:, me].view(1, -1, 1)) / cfg.diagonal * active,
            sign * (state.my[:, :, m_order] - state.y[:, me].view(1, -1, 1)) / cfg.diagonal * active,
            m_speed * torch.cos(m_head),
            m_speed * torch.sin(m_head),
            active,
            state.m_locked[:, :, m_order].float(),
            owner,
        ],
        dim=-1,
    ).permute(1, 2, 0, 3).flatten(1)  # [N, owner, slot, feature] -> [N, S]
    elapsed = (state.time * cfg.dt / cfg.max_time).unsqueeze(-1)
    return torch.cat([elapsed, planes, missiles], dim=-1)
