"""Aircraft and missile dynamics on whole batches.

Pure tensor code: no Python branch depends on tensor values, so nothing here forces a host
synchronisation and the same code runs at full speed on a GPU. On the CPU the cost is memory traffic,
allocation and dtype conversion, so the hot loop works in place where it can, broadcasts only along
the leading (slot) dimension, and blends with arithmetic rather than ``torch.where`` on missile-sized
tensors.

Missile slots that are not in flight are integrated along with the rest (cheaper than masking every
update); only ``m_active`` makes a missile count, and a launch overwrites its slot.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from arena.env.config import EnvConfig, G
from arena.env.state import WorldState
from arena.env.teams import enemies_of, nearest, pairwise

TWO_PI = 2.0 * math.pi


def launch(state: WorldState, fire: torch.Tensor, cfg: EnvConfig, sparse: bool = False) -> torch.Tensor:
    """Launch one missile for every aircraft whose ``fire`` ([N, A] bool) is set and who can shoot.

    The missile leaves along the shooter's heading at the shooter's speed, at the target chosen by
    :func:`choose_targets`. Returns [N, A] bool: who launched, indexed by shooter. ``sparse`` (team
    battles on the CPU, where listing the shooters costs no synchronisation) writes only the new
    slots instead of blending every slot of every target.
    """
    can = fire & state.alive & (state.missiles_left > 0.5)
    used = (cfg.missiles - state.missiles_left).round().long()  # [N, A] the shooter's next free slot
    t = state.team_size
    if t > 1 and sparse:
        launch_sparse(state, can, used, cfg)
        state.missiles_left = state.missiles_left - can.float()
        return can
    if t == 1:  # the duel: the shooter of missiles at j is 1 - j
        slots = torch.arange(state.m_active.shape[0], device=fire.device).view(-1, 1, 1)
        new = ((slots == used) & can).roll(1, -1)  # [M, N, target]

        def from_shooter(v: torch.Tensor) -> torch.Tensor:
            return swap_players(v)
    else:
        n = can.shape[0]
        m = state.m_active.shape[0] // t

        def from_shooter(v: torch.Tensor) -> torch.Tensor:
            """[T, 1, N, 2, 1]: slot block ``seat`` of target side q holds the launches of side 1-q's ``seat``."""
            return v.view(n, 2, t).roll(1, 1).permute(2, 0, 1).reshape(t, 1, n, 2, 1)

        seats = torch.arange(t, device=fire.device)
        aims = from_shooter(choose_targets(state, cfg)) == seats  # [T, 1, N, 2, T]: the shooter aims at this column
        k = torch.arange(m, device=fire.device).view(1, m, 1, 1, 1)
        new = ((k == from_shooter(used)) & from_shooter(can) & aims).reshape(t * m, n, 2 * t)
    w = new.float()
    for name, source in (("mx", state.x), ("my", state.y), ("m_heading", state.heading), ("m_speed", state.speed)):
        old = getattr(state, name)
        if t == 1:
            setattr(state, name, torch.addcmul(old, w, from_shooter(source) - old))
        else:
            blocks = old.view(t, m, n, 2, t)
            setattr(state, name, torch.addcmul(blocks, w.view_as(blocks), from_shooter(source) - blocks).view_as(old))
    state.m_age = state.m_age * (1.0 - w)
    state.m_active = state.m_active | new
    state.m_locked = state.m_locked | new
    state.missiles_left = state.missiles_left - can.float()
    return can


def launch_sparse(state: WorldState, can: torch.Tensor, used: torch.Tensor, cfg: EnvConfig) -> None:
    """:func:`launch` of a team battle, writing the new slots only (a shooter's ``k``-th launch goes to
    slot ``seat·M + k`` of its target's column)."""
    n, a = can.shape
    t = a // 2
    m = state.m_active.shape[0] // t
    shooters = can.view(-1).nonzero().squeeze(1)  # flat env * A + aircraft
    if shooters.numel() == 0:
        return
    env, aircraft = shooters // a, shooters % a
    side, seat = aircraft // t, aircraft % t
    target = (1 - side) * t + choose_targets(state, cfg).view(-1)[shooters]
    slot = seat * m + used.view(-1)[shooters]
    flat = (slot * n + env) * a + target
    for name, source in (("mx", state.x), ("my", state.y), ("m_heading", state.heading), ("m_speed", state.speed)):
        getattr(state, name).view(-1).index_copy_(0, flat, source.view(-1)[shooters])
    state.m_age.view(-1).index_fill_(0, flat, 0.0)
    state.m_active.view(-1).index_fill_(0, flat, True)
    state.m_locked.view(-1).index_fill_(0, flat, True)


def swap_players(t: torch.Tensor) -> torch.Tensor:
    """Exchange the two entries of the last dimension (a roll is cheaper than ``flip`` on the CPU)."""
    return t.roll(1, -1)


def seeker_view(state: WorldState, cfg: EnvConfig) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """What a missile launched now would see, [N, 2, T, T] by side, shooter seat and enemy seat: the
    cosine of the enemy off the shooter's nose, the squared distance (at least 1 m²), and whether the
    enemy is alive inside the seeker cone."""
    n, t = state.x.shape[0], state.team_size
    rx, ry = pairwise(state.x, t), pairwise(state.y, t)  # [N, 2, T, T] shooter seat x enemy seat
    dist2 = torch.addcmul(rx * rx, ry, ry).clamp_(min=1.0)
    heading = state.heading.view(n, 2, t, 1)
    facing = (rx * torch.cos(heading) + ry * torch.sin(heading)) * dist2.rsqrt()
    alive = enemies_of(state.alive, t).unsqueeze(2)  # [N, 2, 1, T]
    return facing, dist2, alive & (facing >= math.cos(cfg.missile_seeker_half_angle))


def choose_targets(state: WorldState, cfg: EnvConfig) -> torch.Tensor:
    """[N, A] the enemy seat each aircraft's next missile would chase.

    The live enemy nearest to the shooter's nose inside the seeker cone; when none is, the nearest
    live enemy, and the missile leaves unguided (its seeker finds nothing in the cone on the first
    substep): it can then hit that enemy only by flying through it. In a duel that is simply the
    enemy, as it always was.
    """
    n, t = state.x.shape[0], state.team_size
    facing, dist2, seen = seeker_view(state, cfg)
    alive = enemies_of(state.alive, t).unsqueeze(2)  # [N, 2, 1, T]
    best_seen = torch.where(seen, facing, torch.full_like(facing, -2.0)).argmax(-1)
    return torch.where(seen.any(-1), best_seen, nearest(dist2, alive)).view(n, 2 * t)


def launch_ready(state: WorldState, cfg: EnvConfig) -> torch.Tensor:
    """[N, A] whether a launch now would leave with a lock: the aircraft is alive with a missile left,
    and a live enemy is inside its seeker cone within the published ``missile_max_range``. Outside
    these a missile leaves unguided or runs out of energy: a launch a policy can only waste."""
    n, t = state.x.shape[0], state.team_size
    _, dist2, seen = seeker_view(state, cfg)
    locks = (seen & (dist2 <= cfg.missile_max_range**2)).any(-1).view(n, 2 * t)
    return locks & state.alive & (state.missiles_left > 0)


def own_missile_in_flight(state: WorldState) -> torch.Tensor:
    """[N, A] whether a missile this aircraft launched is still in flight. Slot ``seat·M + k`` of the
    enemy side's columns holds the ``k``-th launch of ``seat`` (:mod:`arena.env.state`)."""
    n, t = state.x.shape[0], state.team_size
    flying = state.m_active.view(t, -1, n, 2, t).any(4).any(1)  # [shooter seat, N, side of the targets]
    return flying.permute(1, 2, 0).flip(1).reshape(n, 2 * t)


def move_aircraft(state: WorldState, rudder: torch.Tensor, throttle: torch.Tensor, cfg: EnvConfig, h: float
                  ) -> tuple[torch.Tensor, torch.Tensor]:
    """Advance living aircraft by ``h`` seconds; dead ones stay where they fell.

    ``rudder`` commands a signed load factor (positive turns left); the turn rate is n·g/v. Thrust
    fights parasitic drag (settling near 340 m/s at full throttle) and the induced drag of the turn,
    so a hard turn bleeds speed. Headings are wrapped once per decision step, not here. Returns the
    cosine and sine of the new headings, which the next substep reuses.
    """
    load = rudder * cfg.max_load_factor
    accel = throttle * cfg.thrust_accel - cfg.drag_coef * state.speed**2 - cfg.turn_drag * load**2
    moving = state.alive.float()
    # Dead aircraft keep their speed and stay put: every change below is scaled by ``moving``.
    new_speed = (state.speed + accel * h).clamp_(cfg.speed_min, cfg.speed_max)
    state.speed = torch.addcmul(state.speed, moving, new_speed - state.speed)
    state.heading = state.heading + load * (G * h) * moving / state.speed
    cos_h, sin_h = torch.cos(state.heading), torch.sin(state.heading)
    step = state.speed * (h * moving)
    state.x = torch.addcmul(state.x, step, cos_h)
    state.y = torch.addcmul(state.y, step, sin_h)
    return cos_h, sin_h


@dataclass
class Missiles:
    """The missile fields being integrated, in one of two layouts.

    Dense: the world's own [S, N, A] slot tensors, against which per-aircraft [N, A] tensors broadcast.
    Packed: a [K] list of only the missiles in flight, gathered once per decision step; per-aircraft
    values are gathered to match through ``aircraft`` (flat index ``env * A + target``). Packing pays on
    the CPU, where most slots are empty and reading a tensor's size costs nothing; on a GPU the dense
    layout avoids the host synchronisation that sizing a packed list would need.
    """

    x: torch.Tensor
    y: torch.Tensor
    heading: torch.Tensor
    speed: torch.Tensor
    age: torch.Tensor
    active: torch.Tensor
    locked: torch.Tensor
    slots: torch.Tensor | None = None  # packed: flat indices into the [S, N, A] slot tensors
    aircraft: torch.Tensor | None = None  # packed: flat indices into the [N, A] aircraft tensors
    per_seat: int = 1  # slots per shooter seat (missiles carried)

    FIELDS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("x", "mx"), ("y", "my"), ("heading", "m_heading"), ("speed", "m_speed"), ("age", "m_age"),
        ("active", "m_active"), ("locked", "m_locked"),
    )

    @classmethod
    def dense(cls, state: WorldState) -> "Missiles":
        tensors = {key: getattr(state, name) for key, name in cls.FIELDS}
        return cls(**tensors, per_seat=state.m_active.shape[0] // state.team_size)

    @classmethod
    def packed(cls, state: WorldState) -> "Missiles":
        slots = state.m_active.reshape(-1).nonzero().squeeze(1)
        aircraft = slots % state.x.numel()  # the [S, N, A] slot layout flattens to slot * A·N + env * A + target
        tensors = {key: getattr(state, name).reshape(-1)[slots] for key, name in cls.FIELDS}
        return cls(**tensors, slots=slots, aircraft=aircraft, per_seat=state.m_active.shape[0] // state.team_size)

    def pick(self, t: torch.Tensor) -> torch.Tensor:
        """A per-aircraft [N, A] tensor, seen from each missile (its target's value)."""
        return t if self.aircraft is None else t.reshape(-1)[self.aircraft]

    def pair_hits(self, hit: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
        """[T, N, A] bool: aircraft ``a`` was hit by a missile of the enemy in seat ``t`` (``like``: [N, A])."""
        t = like.shape[-1] // 2
        if self.aircraft is None:
            blocks = hit.view(t, -1, *like.shape)
            out = blocks[:, 0]
            for k in range(1, blocks.shape[1]):  # a chain of | is far cheaper than any(1) on the CPU
                out = out | blocks[:, k]
            return out
        assert self.slots is not None
        block = self.slots // (like.numel() * self.per_seat)  # slot row // missiles per seat
        count = torch.zeros(t * like.numel(), device=hit.device).index_add_(0, block * like.numel() + self.aircraft,
                                                                           hit.float())
        return (count > 0).view(t, *like.shape)

    def store(self, state: WorldState) -> None:
        """Write the integrated fields back into the world."""
        for mine, name in self.FIELDS:
            if self.slots is None:
                setattr(state, name, getattr(self, mine))
            else:
                getattr(state, name).view(-1).index_copy_(0, self.slots, getattr(self, mine))


class MissileIntegrator:
    """Guidance, motor, drag and hit test of every missile, one substep at a time.

    Keeps the cosine and sine of the missile headings between substeps: each is computed once per
    substep, after the turn, and reused for the next guidance solution.
    """

    def __init__(self, m: Missiles, cfg: EnvConfig, h: float) -> None:
        self.cfg, self.h = cfg, h
        self.cos = torch.cos(m.heading)
        self.sin = torch.sin(m.heading)
        self.cone_cos = math.cos(cfg.missile_seeker_half_angle)
        self.hit_r2 = cfg.missile_hit_radius**2

    def guide_and_move(self, m: Missiles, tx: torch.Tensor, ty: torch.Tensor, tvx: torch.Tensor,
                       tvy: torch.Tensor, t_alive: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Proportional navigation against the targets ``t*`` (start of substep), then move.

        A target outside the seeker cone (or dead) breaks lock for good; the missile flies on straight.
        Returns the target-minus-missile offsets at the start of the substep, for the hit test.
        """
        cfg, h, cos_m, sin_m = self.cfg, self.h, self.cos, self.sin
        rx, ry = tx - m.x, ty - m.y
        rvx = torch.addcmul(tvx, m.speed, cos_m, value=-1.0)
        rvy = torch.addcmul(tvy, m.speed, sin_m, value=-1.0)
        dist2 = torch.addcmul(rx * rx, ry, ry).clamp_(min=1.0)
        inv_dist = dist2.rsqrt()
        # a = N · closing speed · LOS rate = -N (r·v_rel)(r×v_rel) / |r|³
        dot = torch.addcmul(rx * rvx, ry, rvy)
        cross = torch.addcmul(rx * rvy, ry, rvx, value=-1.0)
        lateral = dot.mul_(cross).mul_(inv_dist * inv_dist * inv_dist).mul_(-cfg.missile_nav_gain)
        lateral.clamp_(-cfg.missile_max_accel, cfg.missile_max_accel)
        facing = torch.addcmul(rx * cos_m, ry, sin_m).mul_(inv_dist)
        locked = m.locked & t_alive & (facing >= self.cone_cos)
        lateral.mul_(locked.float())

        # The motor burns for the part of this substep that lies before the end of the boost phase.
        burn = (cfg.missile_boost_time - m.age).clamp_(0.0, h)
        dv = (m.speed * m.speed).mul_(-cfg.missile_drag_coef * h)
        speed = dv.add_(burn, alpha=cfg.missile_boost_accel).add_(m.speed).clamp_(min=1.0)
        m.heading = m.heading + lateral.mul_(h).div_(speed)
        self.cos, self.sin = torch.cos(m.heading), torch.sin(m.heading)
        step = speed * h
        m.x = torch.addcmul(m.x, step, self.cos)
        m.y = torch.addcmul(m.y, step, self.sin)
        m.speed = speed
        m.age = m.age + h
        m.locked = locked
        return rx, ry

    def hits(self, m: Missiles, rx0: torch.Tensor, ry0: torch.Tensor, tx1: torch.Tensor, ty1: torch.Tensor,
             t_alive: torch.Tensor) -> torch.Tensor:
        """Bool per missile: the relative segment of this substep passed within the hit radius."""
        return m.active & t_alive & (closest_approach_sq(rx0, ry0, tx1 - m.x, ty1 - m.y) <= self.hit_r2)


def closest_approach_sq(px0: torch.Tensor, py0: torch.Tensor, px1: torch.Tensor, py1: torch.Tensor) -> torch.Tensor:
    """Squared minimum distance along the straight segment p0→p1 of a relative position.

    Checking the whole segment, not just its end points, catches a missile and a target that pass
    through each other within one substep at a closing speed of well over 1 km/s.
    """
    dx, dy = px1 - px0, py1 - py0
    dd = torch.addcmul(dx * dx, dy, dy).clamp_(min=1e-9)
    s = torch.addcmul(px0 * dx, py0, dy).div_(dd).neg_().clamp_(0.0, 1.0)
    cx = torch.addcmul(px0, s, dx)
    cy = torch.addcmul(py0, s, dy)
    return torch.addcmul(cx * cx, cy, cy)


def advance(state: WorldState, rudder: torch.Tensor, throttle: torch.Tensor, cfg: EnvConfig,
            packed: bool = False) -> torch.Tensor:
    """Integrate one decision step in ``cfg.substeps`` substeps: move, score hits, expire, kill strays.

    ``packed`` integrates only the missiles in flight (see :class:`Missiles`); both layouts compute the
    same physics. Returns [N, A] kills: for each aircraft, how many enemies its missiles destroyed.
    """
    h = cfg.dt / cfg.substeps
    m = Missiles.packed(state) if packed else Missiles.dense(state)
    missiles = MissileIntegrator(m, cfg, h)
    size = cfg.arena_size
    cos_h, sin_h = torch.cos(state.heading), torch.sin(state.heading)
    scored: torch.Tensor | None = None  # [T, N, A] target a hit by the enemy in seat t, this step
    for _ in range(cfg.substeps):
        t_alive = m.pick(state.alive)
        tx, ty = m.pick(state.x), m.pick(state.y)
        tvx, tvy = m.pick(state.speed * cos_h), m.pick(state.speed * sin_h)

        cos_h, sin_h = move_aircraft(state, rudder, throttle, cfg, h)
        rx0, ry0 = missiles.guide_and_move(m, tx, ty, tvx, tvy, t_alive)

        hit = missiles.hits(m, rx0, ry0, m.pick(state.x), m.pick(state.y), t_alive)
        stalled = (m.age >= cfg.missile_boost_time) & (m.speed < cfg.missile_min_speed)
        spent = stalled | (m.age >= cfg.missile_lifetime)
        m.active = m.active & ~(hit | spent)
        m.locked = m.locked & m.active
        outside = (state.x < 0.0) | (state.x > size) | (state.y < 0.0) | (state.y > size)
        pairs = m.pair_hits(hit, state.alive)
        struck = pairs[0] if pairs.shape[0] == 1 else pairs.any(0)
        state.alive = state.alive & ~(struck | outside)
        scored = pairs if scored is None else scored | pairs
    state.heading = torch.remainder(state.heading, TWO_PI)
    # Team battles wrap only the missiles in flight (most team slots are empty). A duel keeps wrapping
    # every slot: its launch blends into the old heading of an empty slot, so its bits depend on it.
    if packed and state.team_size > 1:
        m.heading = torch.remainder(m.heading, TWO_PI)
        m.store(state)
    else:
        m.store(state)
        state.m_heading = torch.remainder(state.m_heading, TWO_PI)
    assert scored is not None  # substeps >= 1
    return credit_kills(scored)


def credit_kills(scored: torch.Tensor) -> torch.Tensor:
    """[N, A] float: enemies destroyed by each shooter, from [T, N, A] hits by (shooter seat, target).

    A target dies in one substep; when missiles of several shooters strike it in that substep the kill
    is shared among them, so a side's kills always add up to the enemies its missiles destroyed.
    """
    t, n, a = scored.shape
    if t == 1:
        return swap_players(scored[0]).float()
    share = scored.float() / scored.sum(0, keepdim=True).clamp_(min=1)
    # Block ``seat`` of target side q was fired by side 1-q's ``seat``: sum over the targets, swap sides.
    per_shooter = share.view(t, n, 2, t).sum(-1).permute(1, 2, 0)  # [N, target side, seat]
    return per_shooter.roll(1, 1).reshape(n, a)
