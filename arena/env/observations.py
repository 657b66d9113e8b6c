"""What each aircraft sees, always from its own side.

p2's view is the world turned 180° about the arena centre, so p2 also "starts in the west": the
rotation keeps left and right, so one policy can fly either side with the same rudder meaning.
"""

from __future__ import annotations

import math

import torch

from arena.env.config import EnvConfig
from arena.env.dynamics import launch_ready, own_missile_in_flight
from arena.env.state import WorldState
from arena.env.teams import nearest, relative, side_slice

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
EXTENDED_ONLY_KEYS: tuple[str, ...] = EXTENDED_OBS_KEYS[len(OBS_KEYS):]  # what the extended mode adds
# In every observation, beside the keys above (not in :func:`obs_keys`, so the inputs of policies trained
# before them stay as they were; a policy reads them by name, and PPO masks its trigger with one):
# 1 where a launch now would leave with a lock (:func:`arena.env.dynamics.launch_ready`), and 1 where
# it would and no missile this aircraft launched is still in flight.
LAUNCH_KEY = "launch_ready"
LAUNCH_CLEAR_KEY = "launch_clear"
PLAYERS: tuple[str, str] = ("p1", "p2")

Observation = dict[str, torch.Tensor]


def obs_keys(cfg: EnvConfig) -> tuple[str, ...]:
    """Every key of an observation, in canonical order: the standard (or extended) keys, then the
    neighbour slots of team battles."""
    base = EXTENDED_OBS_KEYS if cfg.obs_mode == "extended" else OBS_KEYS
    return base + neighbour_keys(cfg)


def wrap_angle(a: torch.Tensor) -> torch.Tensor:
    """Wrap to [-π, π)."""
    return torch.remainder(a + math.pi, TWO_PI) - math.pi


def own_frame(state: WorldState, cfg: EnvConfig, player: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """x, y (m) and headings, each [N, 2], of both aircraft as ``player`` sees them."""
    if player == 0:
        return state.x, state.y, state.heading
    return cfg.arena_size - state.x, cfg.arena_size - state.y, torch.remainder(state.heading + math.pi, TWO_PI)


def primary_enemy(state: WorldState, team_size: int, side: int) -> torch.Tensor | None:
    """[N, T] the enemy seat nearest each of ``side``'s aircraft, live ones first (None in a duel)."""
    if team_size == 1:
        return None
    rx, ry = relative(state.x, team_size, side, 1 - side), relative(state.y, team_size, side, 1 - side)
    return nearest(rx * rx + ry * ry, state.alive[:, side_slice(team_size, 1 - side)].unsqueeze(1))


def launch_flags(state: WorldState, cfg: EnvConfig) -> tuple[torch.Tensor, torch.Tensor]:
    """[N, A] ``launch_ready`` and ``launch_clear`` of every aircraft, both sides at once."""
    ready = launch_ready(state, cfg)
    return ready, ready & ~own_missile_in_flight(state)


def observe(state: WorldState, cfg: EnvConfig, side: int,
            launches: tuple[torch.Tensor, torch.Tensor] | None = None) -> Observation:
    """The observation dict of ``side`` (0 = p1, 1 = p2): each entry [N, T], or [N] in a duel.

    Every aircraft sees itself and its primary enemy (the nearest live one) through the standard
    keys, so a 1-v-1 policy can fly any seat; with teams, ``neighbour_keys`` add the nearest allies
    and enemies. ``launches`` is :func:`launch_flags` of ``state`` where the caller observes both sides.
    """
    t = cfg.team_size
    mine, foes = side_slice(t, side), side_slice(t, 1 - side)
    primary = primary_enemy(state, t, side)

    def own(v: torch.Tensor) -> torch.Tensor:
        return v[:, mine]

    def enemy(v: torch.Tensor) -> torch.Tensor:
        return v[:, foes] if primary is None else v[:, foes].gather(1, primary)

    x, y, heading = own_frame(state, cfg, side)
    dx = enemy(state.x) - own(state.x)
    dy = enemy(state.y) - own(state.y)
    dist = torch.sqrt(dx * dx + dy * dy)
    bearing = torch.atan2(dy, dx)
    carried = float(max(cfg.missiles, 1))
    ready, clear = launches if launches is not None else launch_flags(state, cfg)
    obs: Observation = {
        "x": (own(x) / cfg.arena_size).clamp(0.0, 1.0),
        "y": (own(y) / cfg.arena_size).clamp(0.0, 1.0),
        "angle": own(heading) / TWO_PI,
        "speed": own(state.speed) / SPEED_SCALE,
        "missiles": own(state.missiles_left) / carried,
        "alive": own(state.alive).float(),
        "enemy_distance": (dist / cfg.diagonal).clamp(0.0, 1.0),
        "enemy_relative_angle": wrap_angle(bearing - own(state.heading)) / math.pi,
        "enemy_speed": enemy(state.speed) / SPEED_SCALE,
        "enemy_alive": enemy(state.alive).float(),
        LAUNCH_KEY: own(ready).float(),
        LAUNCH_CLEAR_KEY: own(clear).float(),
    }
    if cfg.obs_mode == "extended":
        obs["enemy_aspect"] = wrap_angle(bearing + math.pi - enemy(state.heading)) / math.pi
        obs["enemy_missiles"] = enemy(state.missiles_left) / carried
        # Nearest enemy missile in flight (missiles are stored by target): the threat to react to.
        rx = state.mx[:, :, mine] - own(state.x)  # [S, N, T]
        ry = state.my[:, :, mine] - own(state.y)
        m_dist = torch.sqrt(rx * rx + ry * ry).masked_fill(~state.m_active[:, :, mine], float("inf"))
        nearest_dist, idx = m_dist.min(dim=0)
        present = torch.isfinite(nearest_dist)
        idx = idx.unsqueeze(0)
        m_bearing = torch.atan2(ry.gather(0, idx).squeeze(0), rx.gather(0, idx).squeeze(0))
        zero = torch.zeros_like(dist)
        obs["threat_distance"] = torch.where(present, (nearest_dist / cfg.diagonal).clamp(0.0, 1.0), zero + 1.0)
        obs["threat_relative_angle"] = torch.where(present, wrap_angle(m_bearing - own(state.heading)) / math.pi, zero)
        obs["threat_present"] = present.float()
    if t > 1:
        obs.update(observe_neighbours(state, cfg, side))
        return obs
    return {k: v.squeeze(-1) for k, v in obs.items()}


def observe_sides(state: WorldState, cfg: EnvConfig) -> dict[str, Observation]:
    """Both sides' observations: {"p1": ..., "p2": ...}."""
    launches = launch_flags(state, cfg)
    return {p: observe(state, cfg, i, launches) for i, p in enumerate(PLAYERS)}


NEIGHBOUR_FEATURES: tuple[str, ...] = ("range", "bearing", "aspect", "speed", "alive", "missiles")


def neighbour_counts(cfg: EnvConfig) -> tuple[int, int]:
    """(ally slots, enemy slots) in each observation: the nearest ``obs_neighbours`` of each; none in a duel."""
    t = cfg.team_size
    if t == 1:
        return 0, 0
    return min(cfg.obs_neighbours, t - 1), min(cfg.obs_neighbours, t)


def neighbour_keys(cfg: EnvConfig) -> tuple[str, ...]:
    allies, enemies = neighbour_counts(cfg)
    return tuple(f"{kind}{k}_{f}" for kind, count in (("ally", allies), ("enemy", enemies))
                 for k in range(1, count + 1) for f in NEIGHBOUR_FEATURES)


def observe_neighbours(state: WorldState, cfg: EnvConfig, side: int) -> Observation:
    """Slots ``ally1..`` and ``enemy1..`` nearest first, live ones before dead ones.

    A dead neighbour's slot reads zeros with ``alive`` 0 (the mask); every feature is relative to the
    observer, so it reads the same from either side's frame.
    """
    t = cfg.team_size
    carried = float(max(cfg.missiles, 1))
    own = side_slice(t, side)
    out: Observation = {}
    allies, enemies = neighbour_counts(cfg)
    n = state.x.shape[0]
    last = 4.0 * cfg.diagonal  # sorts after any live distance
    for kind, other, count in (("ally", side, allies), ("enemy", 1 - side, enemies)):
        cols = side_slice(t, other)
        rx, ry = relative(state.x, t, side, other), relative(state.y, t, side, other)  # [N, T, T]
        dist = torch.sqrt(rx * rx + ry * ry)
        alive = state.alive[:, cols].unsqueeze(1).expand(n, t, t)
        key = dist + (~alive).float() * last
        if other == side:
            key = key + torch.eye(t, device=dist.device) * (2.0 * last)  # oneself sorts last of all
        order = key.argsort(-1)[..., :count]  # [N, T, count]

        def pick(v: torch.Tensor, order: torch.Tensor = order) -> torch.Tensor:
            return v.gather(-1, order)

        def other_value(v: torch.Tensor, cols: slice = cols, pick=pick) -> torch.Tensor:
            return pick(v[:, cols].unsqueeze(1).expand(n, t, t))

        live = pick(alive).float()
        rx, ry, dist = pick(rx), pick(ry), pick(dist)
        bearing = torch.atan2(ry, rx)
        features = {
            "range": (dist / cfg.diagonal).clamp(0.0, 1.0),
            "bearing": wrap_angle(bearing - state.heading[:, own].unsqueeze(-1)) / math.pi,
            "aspect": wrap_angle(bearing + math.pi - other_value(state.heading)) / math.pi,
            "speed": other_value(state.speed) / SPEED_SCALE,
            "missiles": other_value(state.missiles_left) / carried,
        }
        masked = {name: value * live for name, value in features.items()}
        masked["alive"] = live
        for k in range(count):
            for name in NEIGHBOUR_FEATURES:
                out[f"{kind}{k + 1}_{name}"] = masked[name][..., k]
    return out


def obs_vector(obs: Observation, keys: tuple[str, ...] | None = None) -> torch.Tensor:
    """Stack an observation dict into [N, F] in the canonical key order."""
    if keys is None:
        keys = EXTENDED_OBS_KEYS if "threat_present" in obs else OBS_KEYS
    return torch.stack([obs[k] for k in keys], dim=-1)


def global_state_size(cfg: EnvConfig) -> int:
    m = max(cfg.missiles, 1)
    if cfg.team_size == 1:
        return 1 + 2 * 7 + 2 * m * 7
    return 1 + cfg.aircraft * 7 + 2 * cfg.team_size * m * 8


def aircraft_features(state: WorldState, cfg: EnvConfig, side: int) -> torch.Tensor:
    """[N, 7A] of the global state: per aircraft, own side's seats first, x, y, cos and sin of the
    heading (in ``side``'s frame), speed, alive and missiles left."""
    mine, theirs = side_slice(cfg.team_size, side), side_slice(cfg.team_size, 1 - side)

    def ordered(v: torch.Tensor) -> torch.Tensor:
        return torch.cat((v[:, mine], v[:, theirs]), 1)

    x, y, heading = own_frame(state, cfg, side)
    heading = ordered(heading)
    return torch.stack(
        [
            ordered(x) / cfg.arena_size,
            ordered(y) / cfg.arena_size,
            torch.cos(heading),
            torch.sin(heading),
            ordered(state.speed) / SPEED_SCALE,
            ordered(state.alive).float(),
            ordered(state.missiles_left) / float(max(cfg.missiles, 1)),
        ],
        dim=-1,
    ).flatten(1)


def team_global_state(state: WorldState, cfg: EnvConfig, side: int) -> torch.Tensor:
    """:func:`global_state` of a team battle: every aircraft (own seats first), every missile slot.

    A slot ``seat·M + k`` of a side is that seat's ``k``-th launch. Besides the duel's seven missile
    features it carries its target, as (enemy seat + 1) / T (0 while the slot is empty). Missile
    positions are relative to the side's lead (seat 0), alive or not.
    """
    t, dev = cfg.team_size, state.x.device
    mine, theirs = side_slice(t, side), side_slice(t, 1 - side)
    planes = aircraft_features(state, cfg, side)
    sign = 1.0 if side == 0 else -1.0  # the 180° turn flips both vector components
    lead_x, lead_y = state.x[:, mine.start].view(1, -1), state.y[:, mine.start].view(1, -1)
    seat_code = (torch.arange(t, device=dev, dtype=torch.float32) + 1.0) / t
    groups = []
    for owner, targets in ((1.0, theirs), (0.0, mine)):  # own missiles chase the enemy's columns
        act = state.m_active[:, :, targets].float()  # [S, N, T]; a slot is in flight in one column at most

        def merged(v: torch.Tensor, act: torch.Tensor = act, targets: slice = targets) -> torch.Tensor:
            return (v[:, :, targets] * act).sum(-1)

        active = act.sum(-1)
        head = merged(state.m_heading) + (0.0 if side == 0 else math.pi)
        speed = merged(state.m_speed) / MISSILE_SPEED_SCALE
        groups.append(torch.stack([
            sign * (merged(state.mx) - lead_x) / cfg.diagonal * active,
            sign * (merged(state.my) - lead_y) / cfg.diagonal * active,
            speed * torch.cos(head),
            speed * torch.sin(head),
            active,
            merged(state.m_locked.float()),
            torch.full_like(active, owner),
            (act * seat_code).sum(-1),
        ], dim=-1))  # [S, N, 8]
    missiles = torch.stack(groups, 0).permute(2, 0, 1, 3).flatten(1)  # [N, owner, slot, feature] -> [N, ...]
    elapsed = (state.time * cfg.dt / cfg.max_time).unsqueeze(-1)
    return torch.cat([elapsed, planes, missiles], dim=-1)


def global_state(state: WorldState, cfg: EnvConfig, player: int) -> torch.Tensor:
    """[N, S] privileged view from ``player``'s side: both aircraft and every missile slot.

    Per aircraft (own first): x, y, cos, sin heading, speed, alive, missiles left. Per missile slot
    (own missiles first, in launch order): position relative to the player, velocity, active, locked, and 1 for own /
    0 for the enemy's. Positions scale by the arena size or diagonal, speeds by 200 m/s (aircraft)
    or 1000 m/s (missiles). Leading entry: elapsed fraction of the time limit. Team battles:
    :func:`team_global_state`.
    """
    if cfg.team_size > 1:
        return team_global_state(state, cfg, player)
    me = player
    planes = aircraft_features(state, cfg, player)
    sign = 1.0 if player == 0 else -1.0  # the 180° turn flips both vector components
    # Every feature is computed on the [M, N, 2] slots by target and laid out as [N, target, slot] as it
    # is stacked (one pass over the slots); the two targets are then put in owner order, own missiles
    # (those chasing the enemy) first. Cheaper than moving the stacked features about, or a flip.
    active = state.m_active.float()
    m_head = state.m_heading + (0.0 if player == 0 else math.pi)
    m_speed = state.m_speed / MISSILE_SPEED_SCALE * active
    owner = torch.zeros_like(active)
    owner[:, :, 1 - player] = 1.0
    features = [
        sign * (state.mx - state.x[:, me].view(1, -1, 1)) / cfg.diagonal * active,
        sign * (state.my - state.y[:, me].view(1, -1, 1)) / cfg.diagonal * active,
        m_speed * torch.cos(m_head),
        m_speed * torch.sin(m_head),
        active,
        state.m_locked.float(),
        owner,
    ]
    by_target = torch.stack([f.permute(1, 2, 0) for f in features], dim=-1)  # [N, target, slot, feature]
    by_owner = torch.stack((by_target[:, 1], by_target[:, 0]), 1) if player == 0 else by_target
    missiles = by_owner.flatten(1)
    elapsed = (state.time * cfg.dt / cfg.max_time).unsqueeze(-1)
    return torch.cat([elapsed, planes, missiles], dim=-1)
