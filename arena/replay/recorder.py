"""Recording chosen battles while they are played, into tensors allocated once.

A :class:`BattleRecorder` is a game-loop observer (:mod:`arena.loop`). Before each step it copies the
state of the watched battles that just began (frame 0); after each step it copies their state as the
step left it, before auto-reset (the env's ``watch``), so the last frame of a battle is the moment it
was decided. Both copies touch only the watched envs and land in preallocated ring buffers at
per-battle positions kept on the device. On a GPU nothing waits for the host: recording adds no sync
per step. (On the CPU, where asking costs nothing, the recorder checks whether a watched battle began
and skips the first-frame copy when none did.) It only reads the env: a battle is the same recorded
or not.

A watched env plays battle after battle (auto-reset); each battle's frames lie in the ring from its
start, and :meth:`BattleRecorder.take` copies the last finished one of an env to the host. The ring
holds two battles' worth of frames per env, so a finished battle stays readable until the env has
played another whole battle. With ``first_only`` an env records its first battle and then stops (and
the ring holds one battle). A battle of the default 301 frames takes about 56 KB in a duel and 0.75 MB
at 4 v 4 (the ring of two battles doubles it): record a few battles, not a whole league (tournaments
record their notable games by playing them again, see arena.tournament.replays).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

import numpy as np
import torch

if TYPE_CHECKING:
    from arena.env import TensorEnv
    from arena.env.state import WorldState
    from arena.loop import Turn

# Per-aircraft and per-missile fields kept in each frame, in buffer order.
AIRCRAFT_FLOATS: tuple[str, ...] = ("x", "y", "heading", "speed", "missiles_left")
MISSILE_FLOATS: tuple[str, ...] = ("mx", "my", "m_heading", "m_speed")
MISSILE_FLAGS: tuple[str, ...] = ("m_active", "m_locked")


@dataclass
class BattleMeta:
    """What a recorded battle is, beside its frames: who flew each side and the world it was flown in."""

    p1: str
    p2: str
    team_size: int
    dt: float
    arena_size: float
    missiles: int  # carried per aircraft: slot ``seat·M + k`` of a target column is the enemy seat's k-th launch
    missile_max_range: float
    seeker_half_angle: float
    hit_radius: float
    title: str = "battle"
    seed: int | None = None


@dataclass
class Battle:
    """One recorded battle on the host: ``F`` frames, one per decision step (frame 0 = the start).

    Aircraft arrays are [F, A] (aircraft ``0..T-1`` are p1's seats, ``T..2T-1`` p2's); missile arrays
    are [F, S, A] in the env's slot layout (``[:, :, j]`` chase aircraft ``j``). ``winner`` is 1 or 2
    for the side that won, 0 for a draw.
    """

    meta: BattleMeta
    x: np.ndarray
    y: np.ndarray
    heading: np.ndarray
    speed: np.ndarray
    missiles_left: np.ndarray
    alive: np.ndarray
    mx: np.ndarray
    my: np.ndarray
    m_heading: np.ndarray
    m_speed: np.ndarray
    m_active: np.ndarray
    m_locked: np.ndarray
    winner: int

    @property
    def frames(self) -> int:
        return int(self.x.shape[0])

    @property
    def aircraft(self) -> int:
        return int(self.x.shape[1])

    @property
    def length(self) -> int:
        """Decision steps the battle lasted."""
        return self.frames - 1

    def side_of(self, aircraft: int) -> int:
        """0 for p1's aircraft, 1 for p2's."""
        return aircraft // self.meta.team_size

    def shooter_of(self, slot: int, target: int) -> int:
        """The aircraft that fired the missile in ``slot`` of ``target``'s column."""
        t = self.meta.team_size
        return (1 - self.side_of(target)) * t + slot // self.meta.missiles


class BattleRecorder:
    """Records the battles of ``envs`` (env indices) of the loop it observes; see the module docstring.

    ``max_frames`` bounds a battle's frames (the env's ``max_steps + 1``, taken from the env when None).
    """

    # Per watched env [K], set up by _attach at the first step (when the env is known): the ring row
    # where the battle being recorded starts and its frames so far, the last finished battle's start,
    # frames and winner, finished battles, and whether the env is still being recorded.
    start: torch.Tensor
    count: torch.Tensor
    last_start: torch.Tensor
    last_count: torch.Tensor
    last_winner: torch.Tensor
    ended: torch.Tensor
    recording: torch.Tensor
    dropped: torch.Tensor
    index: torch.Tensor  # the watched envs' places in the env (they move when the env keeps fewer)
    fresh_pending: bool  # some watched battle may have begun since the last frame was taken

    def __init__(self, envs: Sequence[int], *, first_only: bool = False, max_frames: int | None = None) -> None:
        if len(envs) == 0:
            raise ValueError("BattleRecorder: expected at least one env to watch")
        if len(set(envs)) != len(envs):
            raise ValueError(f"BattleRecorder: env indices must be distinct, got {list(envs)}")
        self.envs = [int(e) for e in envs]
        self.first_only = first_only
        self.max_frames = max_frames
        self.env: "TensorEnv | None" = None

    # -- observer protocol -----------------------------------------------------------------------------

    def before_step(self, env: "TensorEnv") -> None:
        """Frame 0 of every watched battle that has just begun (at the first step: all of them)."""
        if self.env is None:
            self._attach(env)
        elif not self.fresh_pending:
            return
        cur = env.state.select(self.index)
        fresh = (self.count == 0) & self.recording
        self._write(cur, torch.where(fresh, self.start, self.scratch))
        self.count = torch.where(fresh, torch.ones_like(self.count), self.count)
        self.fresh_pending = False

    def __call__(self, turn: "Turn") -> None:
        """The frame each watched battle reached this step; closes the battles that ended."""
        state = turn.infos["watched_state"]
        on = self.recording & (self.count > 0)
        self._write(state, torch.where(on, (self.start + self.count) % self.ring, self.scratch))
        self.count = self.count + on.long()
        done = turn.dones.index_select(0, self.index) & on
        self.last_start = torch.where(done, self.start, self.last_start)
        self.last_count = torch.where(done, self.count, self.last_count)
        self.last_winner = torch.where(done, turn.infos["winner"].index_select(0, self.index).long(),
                                       self.last_winner)
        self.start = torch.where(done, (self.start + self.count) % self.ring, self.start)
        self.count = torch.where(done, torch.zeros_like(self.count), self.count)
        self.ended = self.ended + done.long()
        if self.first_only:
            # and no battle of a watched env is recorded from its start again
            self.recording = (self.ended == 0) & ~self.dropped
        else:  # a battle just began where one ended; on the CPU asking costs nothing, on a GPU assume so
            self.fresh_pending = self.start.device.type != "cpu" or bool(done.any())

    # -- results ---------------------------------------------------------------------------------------

    def finished(self) -> list[int]:
        """Positions (in ``envs`` order) whose env has finished at least one recorded battle (a host sync)."""
        if self.env is None:
            return []
        return [k for k, n in enumerate(self.ended.tolist()) if n > 0]

    def take(self, k: int, meta: BattleMeta) -> Battle:
        """The last finished battle of the ``k``-th watched env, on the host (its first, with ``first_only``)."""
        if self.env is None or int(self.ended[k]) == 0:
            raise ValueError(f"env {self.envs[k] if k < len(self.envs) else k}: no finished battle was recorded")
        start, count = int(self.last_start[k]), int(self.last_count[k])
        rows = (start + torch.arange(count, device=self.start.device)) % self.ring
        aircraft = self.aircraft_f[rows, k].cpu().numpy()  # [F, fields, A]
        alive = self.alive[rows, k].cpu().numpy()
        missiles = self.missile_f[rows, k].cpu().numpy()  # [F, fields, S, A]
        flags = self.missile_b[rows, k].cpu().numpy()
        fields = {name: aircraft[:, i] for i, name in enumerate(AIRCRAFT_FLOATS)}
        fields.update({name: missiles[:, i] for i, name in enumerate(MISSILE_FLOATS)})
        fields.update({name: flags[:, i] for i, name in enumerate(MISSILE_FLAGS)})
        return Battle(meta=meta, alive=alive, winner=int(self.last_winner[k]), **fields)

    def keep_envs(self, envs: torch.Tensor) -> None:
        """The env about to keep only ``envs`` (increasing, renumbered in that order): follow
        the watched battles to their new places. One not kept is recorded no further; what it finished
        stays to be taken. The caller points the env's watch at :attr:`index` again."""
        if self.env is None:
            raise RuntimeError("BattleRecorder.keep_envs: not attached to an env yet")
        position = torch.full((self.env.num_envs,), -1, dtype=torch.long, device=self.index.device)
        position[envs.to(self.index.device)] = torch.arange(envs.numel(), device=self.index.device)
        moved = position[self.index]
        self.dropped = self.dropped | (moved < 0)
        self.recording = self.recording & ~self.dropped
        self.index = moved.clamp_min(0)  # a battle not kept reads env 0 and writes to the scratch row

    def detach(self) -> None:
        """Stop the env handing back watched states (it stays usable)."""
        if self.env is not None:
            self.env.watch(None)

    # -- pieces ----------------------------------------------------------------------------------------

    def _attach(self, env: "TensorEnv") -> None:
        if max(self.envs) >= env.num_envs:
            raise ValueError(f"BattleRecorder: env {max(self.envs)} to watch, but the env has {env.num_envs}")
        self.env = env
        dev = env.device
        self.index = torch.tensor(self.envs, dtype=torch.long, device=dev)
        env.watch(self.index)
        frames = self.max_frames if self.max_frames is not None else env.config.max_steps + 1
        k, a = len(self.envs), env.state.x.shape[1]
        s = env.state.mx.shape[0]
        self.ring = frames if self.first_only else 2 * frames  # a first battle is never written over
        self.scratch = torch.full((k,), self.ring, dtype=torch.long, device=dev)  # a row nobody reads
        rows = self.ring + 1
        self.aircraft_f = torch.zeros(rows, k, len(AIRCRAFT_FLOATS), a, device=dev)
        self.alive = torch.zeros(rows, k, a, dtype=torch.bool, device=dev)
        self.missile_f = torch.zeros(rows, k, len(MISSILE_FLOATS), s, a, device=dev)
        self.missile_b = torch.zeros(rows, k, len(MISSILE_FLAGS), s, a, dtype=torch.bool, device=dev)
        zeros = torch.zeros(k, dtype=torch.long, device=dev)
        self.start, self.count, self.ended = zeros.clone(), zeros.clone(), zeros.clone()
        self.last_start, self.last_count, self.last_winner = zeros.clone(), zeros.clone(), zeros.clone()
        self.recording = torch.ones(k, dtype=torch.bool, device=dev)
        self.dropped = torch.zeros(k, dtype=torch.bool, device=dev)  # no longer in the env (keep_envs)
        self.fresh_pending = True  # some watched battle may have begun since the last frame was taken
        self.columns = torch.arange(k, device=dev)

    def _write(self, state: "WorldState", rows: torch.Tensor) -> None:
        """Frame ``rows[k]`` of watched env ``k`` := ``state``'s battle ``k`` (row ``scratch``: dropped)."""
        where = (rows, self.columns)
        self.aircraft_f.index_put_(where, torch.stack([getattr(state, f) for f in AIRCRAFT_FLOATS], 1))
        self.alive.index_put_(where, state.alive)
        # missiles are [S, K, A]: battle first
        for buffer, names in ((self.missile_f, MISSILE_FLOATS), (self.missile_b, MISSILE_FLAGS)):
            buffer.index_put_(where, torch.stack([getattr(state, f) for f in names], 0).permute(2, 0, 1, 3))


def battle_meta(env_config, p1: str, p2: str, title: str = "battle", seed: int | None = None) -> BattleMeta:
    """The :class:`BattleMeta` of a battle flown under ``env_config`` (an :class:`~arena.env.EnvConfig`)."""
    return BattleMeta(p1=p1, p2=p2, team_size=env_config.team_size, dt=env_config.dt, arena_size=env_config.arena_size,
                      missiles=max(env_config.missiles, 1), missile_max_range=env_config.missile_max_range,
                      seeker_half_angle=env_config.missile_seeker_half_angle, hit_radius=env_config.missile_hit_radius,
                      title=title, seed=seed)
