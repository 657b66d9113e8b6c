"""CrankAgent: a rule-based beyond-visual-range fighter, one state machine per env, all as tensors.

Three states, switched per env every decision step:

- **Approach** — turn toward the enemy.
- **Fire / crank** — entered by a launch: the enemy is inside ``fire_range_frac`` of the published
  missile range and within ``fire_angle_deg`` of the nose, the cooldown has run out and a missile is
  left. After the launch the agent cranks — holds the enemy about ``crank_angle_deg`` off the nose,
  which slows the closure while the missile flies — for ``crank_s`` seconds, then approaches again.
  At most one launch per ``cooldown_s``.
- **Defend** — the enemy is closer than ``defend_range_m``: turn tail and drag at full throttle until
  the range opens past ``defend_range_m + defend_exit_margin_m`` (the margin keeps an env from
  flickering between states at the boundary).

It reads only its own observation and the env's published constants (``missile_max_range``, ``dt``,
``diagonal``). torch is imported inside the methods so that listing plugins never loads it.
"""

from __future__ import annotations

import inspect
import math
from typing import TYPE_CHECKING, Any, ClassVar

from arena.agents import BaseAgent
from arena.families import ActsWithVariants

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig

APPROACH, CRANK, DEFEND = 0, 1, 2
STATE_NAMES: tuple[str, ...] = ("approach", "crank", "defend")


class CrankAgent(ActsWithVariants, BaseAgent):
    """Approach, fire and crank, defend: the rule-based reference opponent.

    Its variants (any parameters) act as one call in a league: every number ``act`` reads may be a
    scalar or a per-env tensor (:class:`arena.families.ScriptedFamily`).
    """

    name: ClassVar[str] = "crank"
    aliases: ClassVar[tuple[str, ...]] = ("rule_based",)
    description: ClassVar[str] = "rule-based: approach, fire at 80% range and crank, defend under 18 km"
    ladder_rung: ClassVar[int] = 1  # above the placeholder, below the sniper (arena_crank/ladder.py)

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 fire_range_frac: float = 0.8, fire_angle_deg: float = 30.0, cooldown_s: float = 10.0,
                 crank_angle_deg: float = 50.0, crank_s: float = 30.0, defend_range_m: float = 18_000.0,
                 defend_exit_margin_m: float = 4_000.0, turn_gain: float = 3.0, throttle: float = 1.0) -> None:
        super().__init__(device, env_config)
        self.params = dict(fire_range_frac=fire_range_frac, fire_angle_deg=fire_angle_deg, cooldown_s=cooldown_s,
                           crank_angle_deg=crank_angle_deg, crank_s=crank_s, defend_range_m=defend_range_m,
                           defend_exit_margin_m=defend_exit_margin_m, turn_gain=turn_gain, throttle=throttle)
        not_numbers = [f"{k}={v!r}" for k, v in self.params.items()
                       if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v)]
        if not_numbers:  # a tournament file's `params: {cooldown_s: "10"}`
            raise ValueError(f"expected numbers, got {', '.join(not_numbers)}")
        checks = {
            "fire_range_frac": 0.0 < fire_range_frac <= 1.5,
            "fire_angle_deg": 0.0 < fire_angle_deg <= 180.0,
            "cooldown_s": cooldown_s >= 0.0,
            "crank_angle_deg": 0.0 <= crank_angle_deg <= 90.0,
            "crank_s": crank_s >= 0.0,
            "defend_range_m": defend_range_m >= 0.0,
            "defend_exit_margin_m": defend_exit_margin_m >= 0.0,
            "turn_gain": turn_gain > 0.0,
            "throttle": 0.0 <= throttle <= 1.0,
        }
        bad = [f"{k}={self.params[k]!r}" for k, ok in checks.items() if not ok]
        if bad:
            raise ValueError(f"invalid parameter(s) {', '.join(bad)}")
        cfg = self.env_config
        self.fire_range_m = fire_range_frac * cfg.missile_max_range
        self.fire_angle = math.radians(fire_angle_deg)
        self.crank_angle = math.radians(crank_angle_deg)
        self.defend_range_m = defend_range_m
        self.defend_exit_m = defend_range_m + defend_exit_margin_m
        # Timers count decision steps: one act() call is one step of cfg.dt seconds.
        self.cooldown_steps = math.ceil(cooldown_s / cfg.dt - 1e-9)
        self.crank_steps = math.ceil(crank_s / cfg.dt - 1e-9)
        self.turn_gain = turn_gain
        self.throttle = throttle
        # Per-env memory, created at the first act() when the batch size is known.
        self.mode: torch.Tensor | None = None  # [N] int8: APPROACH, CRANK or DEFEND
        self.cooldown: torch.Tensor | None = None  # [N] int32: steps until the next launch is allowed
        self.crank_left: torch.Tensor | None = None  # [N] int32: steps of crank still to fly

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        """Forget the state of the envs in ``env_mask`` (every env when None): a new battle starts."""
        import torch

        if env_mask is None or self.mode is None or self.cooldown is None or self.crank_left is None:
            self.mode = self.cooldown = self.crank_left = None  # the three are created together
            return
        self.mode = torch.where(env_mask, torch.zeros_like(self.mode), self.mode)
        self.cooldown = torch.where(env_mask, torch.zeros_like(self.cooldown), self.cooldown)
        self.crank_left = torch.where(env_mask, torch.zeros_like(self.crank_left), self.crank_left)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        """Keep the state of ``rows`` only, in that order (a batch dropped its finished battles)."""
        if self.mode is not None and self.cooldown is not None and self.crank_left is not None:
            self.mode, self.cooldown, self.crank_left = self.mode[rows], self.cooldown[rows], self.crank_left[rows]

    def to(self, device: "str | torch.device") -> "CrankAgent":
        super().to(device)
        if self.mode is not None and self.cooldown is not None and self.crank_left is not None:
            self.mode, self.cooldown, self.crank_left = (
                self.mode.to(self.device), self.cooldown.to(self.device), self.crank_left.to(self.device))
        return self

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        import torch

        bearing = observation["enemy_relative_angle"] * math.pi  # rad, positive: enemy to the left
        dist = observation["enemy_distance"] * self.env_config.diagonal  # m
        n = bearing.shape[0]
        if self.mode is None or self.mode.shape[0] != n or self.mode.device != bearing.device:
            self.mode = torch.zeros(n, dtype=torch.int8, device=bearing.device)
            self.cooldown = torch.zeros(n, dtype=torch.int32, device=bearing.device)
            self.crank_left = torch.zeros(n, dtype=torch.int32, device=bearing.device)
        assert self.cooldown is not None and self.crank_left is not None
        mode = self.mode
        cooldown = (self.cooldown - 1).clamp_min(0)
        crank_left = (self.crank_left - 1).clamp_min(0)

        # Defend overrides everything; it ends only once the range has opened past the margin.
        mode = torch.where(dist < self.defend_range_m, DEFEND, mode).to(torch.int8)
        leave_defend = (mode == DEFEND) & (dist > self.defend_exit_m)
        crank_over = (mode == CRANK) & (crank_left == 0)
        mode = torch.where(leave_defend | crank_over, APPROACH, mode).to(torch.int8)

        fire = ((mode != DEFEND) & (dist < self.fire_range_m) & (bearing.abs() < self.fire_angle)
                & (cooldown == 0) & (observation["missiles"] > 0)
                & (observation["alive"] > 0.5) & (observation["enemy_alive"] > 0.5))
        cooldown = torch.where(fire, self.cooldown_steps, cooldown).to(torch.int32)
        crank_left = torch.where(fire, self.crank_steps, crank_left).to(torch.int32)
        mode = torch.where(fire, CRANK, mode).to(torch.int8)

        # Steer so the enemy sits at a target bearing: dead ahead, at the crank angle on the side it
        # is already on, or dead astern.
        side = torch.where(bearing >= 0, 1.0, -1.0)
        target = torch.where(mode == CRANK, side * self.crank_angle, torch.zeros_like(bearing))
        target = torch.where(mode == DEFEND, side * math.pi, target)
        rudder = (self.turn_gain * (bearing - target)).clamp(-1.0, 1.0)

        self.mode, self.cooldown, self.crank_left = mode, cooldown, crank_left
        return {"rudder": rudder, "throttle": torch.ones_like(rudder) * self.throttle, "fire": fire}

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.params.items() if v != DEFAULTS.get(k)}
        extra = "".join(f", {k}={v}" for k, v in changed.items())
        return f"CrankAgent(device={self.device}{extra})"


DEFAULTS: dict[str, Any] = {k: p.default for k, p in inspect.signature(CrankAgent.__init__).parameters.items()
                            if p.kind is p.KEYWORD_ONLY}
