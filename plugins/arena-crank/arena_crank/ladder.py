"""The ladder: scripted opponents of rising strength above CrankAgent, each flying a written doctrine.

Every doctrine is a small state machine per env, all tensors, like CrankAgent's. The published
missile model (docs/env.md) is what they reason from: a missile fired from beyond about 14.5 km at
a target that turns away and runs is escaped (the no-escape range), while a target that keeps
coming is hit from the full 40 km.

- :class:`Sniper` (``sniper``, standard observation): fires at the full published range, then turns
  tail and extends so the enemy's reply cannot catch it, then comes back for another shot. It beats
  anything that keeps coming (CrankAgent), and wastes missiles on anything that runs.
- :class:`Defender` (``defender``, extended observation): reads the missile warning. When an enemy
  missile is in the air and inside its escape estimate it drags (turns tail at full throttle) until
  the missile has fallen behind or died, then re-commits. It fires only from inside its no-escape
  estimate, and presses in once the enemy has no missiles left.
- :class:`Ace` (``ace``, extended observation): everything the defender does, with a launch zone that
  depends on the geometry: from the published range against a target that points at it and is not
  defending, from inside the no-escape range otherwise, never with a missile of its own still in the
  air. After a launch it cranks (holds the enemy near the seeker's edge, slowing the closure) to
  support the missile, unless warned.

Agents that read the extended observation say so (``obs_mode = "extended"``): play, training and
tournaments then run the env with the extended observation and still hand the standard one to
agents that did not ask for more.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

from arena.agents import BaseAgent
from arena.families import ActsWithVariants, keep_memory_rows

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig

NO_ESCAPE_M = 14_500.0  # docs/env.md: a target that turns and runs escapes any shot from farther


class ScriptedPilot(ActsWithVariants, BaseAgent):
    """Shared pieces: per-env timers created at the first act(), steering to a target bearing. A doctrine's
    variants act as one call: every number its ``act`` reads may be a scalar or a per-env tensor."""

    timers: ClassVar[tuple[str, ...]] = ()  # names of [N] int32 per-env counters

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None,
                 turn_gain: float = 3.0, **params: float) -> None:
        super().__init__(device, env_config)
        params["turn_gain"] = turn_gain
        bad = [f"{k}={v!r}" for k, v in params.items()
               if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v < 0]
        if bad:
            raise ValueError(f"expected non-negative numbers, got {', '.join(bad)}")
        self.params = params
        self.turn_gain = turn_gain
        self.memory: dict[str, torch.Tensor] = {}

    def steps(self, seconds: float) -> int:
        return math.ceil(seconds / self.env_config.dt - 1e-9)

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        import torch

        if env_mask is None or not self.memory:
            self.memory = {}
            return
        self.memory = {k: torch.where(env_mask, torch.zeros_like(v), v) for k, v in self.memory.items()}

    def keep_rows(self, rows: "torch.Tensor") -> None:
        """Keep the memory of ``rows`` only, in that order (a batch dropped its finished battles)."""
        self.memory = keep_memory_rows(self.memory, rows)

    def get_state(self) -> dict[str, "torch.Tensor"]:
        """The per-env memory, for a training run's checkpoint (exact resume)."""
        return {k: v.clone() for k, v in self.memory.items()}

    def set_state(self, state: dict[str, "torch.Tensor"]) -> None:
        unknown = set(state) - set(self.timers)
        if unknown:
            raise ValueError(f"{self.name}: unknown memory {sorted(unknown)}; expected some of {list(self.timers)}")
        self.memory = {k: v.to(self.device) for k, v in state.items()}

    def to(self, device: "str | torch.device") -> "ScriptedPilot":
        super().to(device)
        self.memory = {k: v.to(self.device) for k, v in self.memory.items()}
        return self

    def recall(self, n: int, device: "torch.device") -> dict[str, "torch.Tensor"]:
        """The per-env memory, fresh (zeros) when the batch changed."""
        import torch

        first = next(iter(self.memory.values()), None)
        if first is None or first.shape[0] != n or first.device != device:
            self.memory = {k: torch.zeros(n, dtype=torch.int32, device=device) for k in self.timers}
        return self.memory

    def steer(self, bearing: "torch.Tensor", target: "torch.Tensor") -> "torch.Tensor":
        """Rudder that puts the enemy at ``target`` off the nose (radians, positive: left)."""
        return (self.turn_gain * (bearing - target)).clamp(-1.0, 1.0)

    def clear_of_walls(self, observation: dict[str, "torch.Tensor"], bearing: "torch.Tensor",
                       target: "torch.Tensor", margin_m: float = 12_000.0) -> "torch.Tensor":
        """``target`` unless flying that way leaves the arena within ``margin_m`` (a loss): then beam the
        enemy (hold it 90° off) on the side with more room, or, with no room either way, head for the
        middle of the arena."""
        import torch

        size = self.env_config.arena_size
        x, y = observation["x"] * size, observation["y"] * size
        heading = observation["angle"] * (2 * math.pi)

        def to_wall(pos: torch.Tensor, v: torch.Tensor) -> torch.Tensor:  # along one axis, v = cos or sin
            ahead = torch.where(v > 0, size - pos, pos) / v.abs().clamp_min(1e-6)
            return torch.where(v.abs() > 1e-6, ahead, torch.full_like(pos, 1e9))

        def room(t: torch.Tensor) -> torch.Tensor:  # metres to the wall flying with the enemy at bearing t
            h = heading + bearing - t
            return torch.minimum(to_wall(x, torch.cos(h)), to_wall(y, torch.sin(h)))

        left, right = torch.full_like(bearing, math.pi / 2), torch.full_like(bearing, -math.pi / 2)
        beam = torch.where(room(left) >= room(right), left, right)
        centre = torch.atan2(size / 2 - y, size / 2 - x)
        home = bearing - (centre - heading)  # the enemy's bearing when flying at the centre
        home = torch.remainder(home + math.pi, 2 * math.pi) - math.pi
        safe = torch.where(room(beam) >= margin_m, beam, home)
        return torch.where(room(target) >= margin_m, target, safe)

    @staticmethod
    def tail(bearing: "torch.Tensor") -> "torch.Tensor":
        """Target bearing that puts the enemy dead astern, on the side it already is."""
        import torch

        return torch.where(bearing >= 0, math.pi, -math.pi) * torch.ones_like(bearing)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(device={self.device})"


class Sniper(ScriptedPilot):
    """Shoot at full range, turn tail and extend, come back: see the module docstring."""

    name: ClassVar[str] = "sniper"
    description: ClassVar[str] = "ladder 2: fires at full range, then turns tail and extends before coming back"
    timers: ClassVar[tuple[str, ...]] = ("extend", "cooldown")
    ladder_rung: ClassVar[int | None] = 2

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 fire_range_frac: float = 1.0, fire_angle_deg: float = 20.0, extend_s: float = 25.0,
                 cooldown_s: float = 8.0, defend_range_m: float = 15_000.0, turn_gain: float = 3.0) -> None:
        super().__init__(device, env_config, turn_gain, fire_range_frac=fire_range_frac,
                         fire_angle_deg=fire_angle_deg, extend_s=extend_s, cooldown_s=cooldown_s,
                         defend_range_m=defend_range_m)
        self.fire_range_m = fire_range_frac * self.env_config.missile_max_range
        self.fire_angle = math.radians(fire_angle_deg)
        self.extend_steps, self.cooldown_steps = self.steps(extend_s), self.steps(cooldown_s)
        self.defend_range_m = defend_range_m

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        import torch

        bearing = observation["enemy_relative_angle"] * math.pi
        dist = observation["enemy_distance"] * self.env_config.diagonal
        m = self.recall(bearing.shape[0], bearing.device)
        extend = (m["extend"] - 1).clamp_min(0)
        cooldown = (m["cooldown"] - 1).clamp_min(0)
        fire = ((extend == 0) & (cooldown == 0) & (dist < self.fire_range_m) & (bearing.abs() < self.fire_angle)
                & (observation["missiles"] > 0) & (observation["alive"] > 0.5) & (observation["enemy_alive"] > 0.5))
        extend = torch.where(fire, self.extend_steps, extend).to(torch.int32)
        cooldown = torch.where(fire, self.cooldown_steps, cooldown).to(torch.int32)
        running = (extend > 0) | (dist < self.defend_range_m)
        target = torch.where(running, self.tail(bearing), torch.zeros_like(bearing))
        self.memory = {"extend": extend, "cooldown": cooldown}
        rudder = self.steer(bearing, self.clear_of_walls(observation, bearing, target))
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}


class Salvo(Sniper):
    """The sniper's doctrine with no extension: all missiles at once from full range, then, unarmed, it
    comes on and turns away only inside 15 km. Not a rung: a training partner that shows a learner the
    sniper's endgame (an unarmed enemy coming at it) from the first minute instead of the fourth."""

    name: ClassVar[str] = "salvo"
    description: ClassVar[str] = "training partner: the sniper firing all its missiles at once, then coming on unarmed"
    ladder_rung: ClassVar[None] = None
    league_partner: ClassVar[bool] = True  # --vs league draws it with the rungs

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 extend_s: float = 0.0, cooldown_s: float = 1.0, **params: Any) -> None:
        super().__init__(device, env_config, extend_s=extend_s, cooldown_s=cooldown_s, **params)


class Defender(ScriptedPilot):
    """Drag incoming missiles, re-commit, shoot from inside the no-escape range: see the module docstring."""

    name: ClassVar[str] = "defender"
    description: ClassVar[str] = "ladder 3: reads the missile warning, drags missiles, fires inside the no-escape range"
    obs_mode: ClassVar[str] = "extended"
    timers: ClassVar[tuple[str, ...]] = ("drag", "cooldown", "last_threat_m", "opening")
    ladder_rung: ClassVar[int] = 3

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 fire_range_m: float = 13_000.0, fire_angle_deg: float = 25.0, react_range_m: float = 38_000.0,
                 drag_min_s: float = 8.0, opening_s: float = 3.0, safe_s: float = 25.0, cooldown_s: float = 12.0,
                 crank_angle_deg: float = 45.0, turn_gain: float = 3.0) -> None:
        super().__init__(device, env_config, turn_gain, fire_range_m=fire_range_m, fire_angle_deg=fire_angle_deg,
                         react_range_m=react_range_m, drag_min_s=drag_min_s, opening_s=opening_s, safe_s=safe_s,
                         cooldown_s=cooldown_s, crank_angle_deg=crank_angle_deg)
        self.safe_s = safe_s
        self.fire_range_m, self.fire_angle = fire_range_m, math.radians(fire_angle_deg)
        self.react_range_m = react_range_m
        self.drag_steps, self.opening_steps = self.steps(drag_min_s), self.steps(opening_s)
        self.cooldown_steps = self.steps(cooldown_s)
        self.crank_angle = math.radians(crank_angle_deg)

    def warned(self, observation: dict[str, "torch.Tensor"], m: dict[str, "torch.Tensor"]
               ) -> tuple["torch.Tensor", dict[str, "torch.Tensor"]]:
        """Whether to drag this step, and the updated warning memory.

        Drag while an enemy missile is in the air inside the escape estimate (``react_range_m``), at
        least ``drag_min_s`` once started, until the nearest missile has been beaten for ``opening_s``:
        at its closure it would need more than ``safe_s`` to reach us, and it only slows down from
        there, so re-commit.
        """
        import torch

        if "threat_present" not in observation:
            raise ValueError(f"{self.name} reads the missile warning: it needs the extended observation "
                             f"(EnvConfig(obs_mode='extended'))")
        present = observation["threat_present"] > 0.5
        threat_m = (observation["threat_distance"] * self.env_config.diagonal).round().to(torch.int32)
        last = m["last_threat_m"]
        closure = (last - threat_m).float() / self.env_config.dt  # m/s the nearest missile gains on us
        # Slow enough that it would need more than ``safe_s`` to reach us while still slowing: beaten.
        beaten = present & (last > 0) & (closure * self.safe_s < threat_m.float())
        opening = torch.where(beaten, m["opening"] + 1, 0).to(torch.int32)
        threatened = present & (threat_m < self.react_range_m) & (opening < self.opening_steps)
        drag = torch.where(threatened & (m["drag"] == 0), self.drag_steps, (m["drag"] - 1).clamp_min(0))
        dragging = threatened | (drag > 0)
        memory = {"drag": drag.to(torch.int32), "opening": opening,
                  "last_threat_m": torch.where(present, threat_m, torch.zeros_like(threat_m))}
        return dragging, memory

    def fire_range(self, observation: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        """Inside the no-escape estimate; from 90 % of the published range once the enemy has nothing left
        to shoot (it has no reason to run, and what keeps coming is hit)."""
        import torch

        unarmed = observation["enemy_missiles"] <= 0
        return torch.where(unarmed, self.env_config.missile_max_range * 0.9, self.fire_range_m).to(torch.float32)

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        import torch

        bearing = observation["enemy_relative_angle"] * math.pi
        dist = observation["enemy_distance"] * self.env_config.diagonal
        m = self.recall(bearing.shape[0], bearing.device)
        dragging, warning = self.warned(observation, m)
        cooldown = (m["cooldown"] - 1).clamp_min(0)
        fire = (~dragging & (cooldown == 0) & (dist < self.fire_range(observation))
                & (bearing.abs() < self.fire_angle) & (observation["missiles"] > 0)
                & (observation["alive"] > 0.5) & (observation["enemy_alive"] > 0.5))
        cooldown = torch.where(fire, self.cooldown_steps, cooldown).to(torch.int32)
        side = torch.where(bearing >= 0, 1.0, -1.0)
        supporting = (cooldown > 0) & ~dragging  # a missile of ours is probably still flying
        target = torch.where(supporting, side * self.crank_angle, torch.zeros_like(bearing))
        target = torch.where(dragging, self.tail(bearing), target)
        self.memory = {**warning, "cooldown": cooldown}
        rudder = self.steer(bearing, self.clear_of_walls(observation, bearing, target))
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}


class Ace(Defender):
    """The defender's warning and drag, a geometric launch zone, one missile at a time, crank to support."""

    name: ClassVar[str] = "ace"
    description: ClassVar[str] = "ladder 4: launch zone from the missile model, cranks to support, drags when warned"
    ladder_rung: ClassVar[int] = 4

    def __init__(self, device: "str | torch.device" = "cpu", env_config: "EnvConfig | None" = None, *,
                 hot_range_frac: float = 0.9, hot_aspect_deg: float = 25.0, fire_range_m: float = 13_500.0,
                 cooldown_s: float = 20.0, **params: Any) -> None:
        super().__init__(device, env_config, fire_range_m=fire_range_m, cooldown_s=cooldown_s, **params)
        self.params.update(hot_range_frac=hot_range_frac, hot_aspect_deg=hot_aspect_deg)
        self.hot_range_m = hot_range_frac * self.env_config.missile_max_range
        self.hot_aspect = math.radians(hot_aspect_deg)

    def fire_range(self, observation: dict[str, "torch.Tensor"]) -> "torch.Tensor":
        """From the published range at a target that points at us and has no missile of ours to run
        from (it keeps coming, so the shot lands); from inside the no-escape range otherwise."""
        import torch

        hot = (observation["enemy_aspect"] * math.pi).abs() < self.hot_aspect
        base = super().fire_range(observation)
        return torch.where(hot, base.clamp(min=self.hot_range_m), base)
