"""Configuration of the air-combat simulation.

Every constant carries its unit in the field comment. The missile is calibrated in two dimensions,
with the target's turn included: a head-on shot at ``missile_max_range`` (40 km) hits a target that
keeps coming (it reaches about 54 km), while a target that turns away at launch and runs at full
throttle escapes any shot fired from beyond about 14.5 km. A 1-D estimate (no turn) suggests a drag
coefficient of 3e-5 /m; the 180° turn the target must make first costs it several kilometres, so the
coefficient that gives the intended no-escape range is 5e-5 /m. ``tests/env/test_missile_calibration.py``
keeps both ranges in place.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from typing import Any, Literal

ObsMode = Literal["default", "extended"]
G = 9.81  # m/s², standard gravity


@dataclass(frozen=True)
class RewardConfig:
    """The three reward parts, paid to each player every decision step."""

    win: float = 1.0  # paid once to the winner (the loser gets -win); a draw pays 0
    survival: float = 0.001  # per decision step while the episode runs (and the player is alive)
    missile_cost: float = 0.01  # subtracted per missile launched


@dataclass(frozen=True)
class EnvConfig:
    """Constants of the world. Units are SI (m, s, rad) unless a comment says otherwise."""

    # World and time
    arena_size: float = 100_000.0  # m, side of the square arena
    dt: float = 1.0  # s, one decision step
    substeps: int = 4  # integration substeps per decision step
    max_time: float = 300.0  # s, simulated time limit; reaching it is a draw (truncation)

    # Spawn (p1 west, p2 east; mirrored for p2)
    spawn_edge_min: float = 10_000.0  # m, nearest spawn distance from the own edge
    spawn_edge_max: float = 20_000.0  # m, farthest spawn distance from the own edge
    spawn_band: float = 40_000.0  # m, height of the band around the middle where aircraft spawn
    spawn_heading_jitter: float = 0.5235987755982988  # rad (30°), max heading error off the enemy
    spawn_speed_min: float = 250.0  # m/s
    spawn_speed_max: float = 300.0  # m/s

    # Aircraft
    speed_min: float = 150.0  # m/s, the aircraft cannot fly slower
    speed_max: float = 400.0  # m/s, the aircraft cannot fly faster
    max_load_factor: float = 9.0  # g, load factor at |rudder| = 1
    thrust_accel: float = 10.0  # m/s², acceleration from full throttle
    drag_coef: float = 10.0 / 340.0**2  # 1/m, parasitic drag: a = -drag_coef·v² (settles at 340 m/s)
    turn_drag: float = 0.2  # m/s² per g², induced drag of a turn: a = -turn_drag·n²

    # Missiles
    missiles: int = 4  # carried per aircraft
    missile_boost_time: float = 3.0  # s, motor burn after launch
    missile_boost_accel: float = 260.0  # m/s², thrust acceleration while the motor burns
    missile_drag_coef: float = 5.0e-5  # 1/m, coasting drag a = -k·v²
    missile_min_speed: float = 250.0  # m/s, below this the missile is spent
    missile_lifetime: float = 80.0  # s, maximum flight time
    missile_nav_gain: float = 4.0  # proportional-navigation constant N
    missile_max_accel: float = 30.0 * G  # m/s², lateral acceleration limit
    missile_seeker_half_angle: float = 1.0471975511965976  # rad (60°), lock is lost for good outside
    missile_hit_radius: float = 150.0  # m, closest approach that counts as a hit
    missile_max_range: float = 40_000.0  # m, nominal range published to agents

    # Observation and rewards
    obs_mode: ObsMode = "default"  # "extended" adds aspect, enemy missiles and nearest-threat features
    reward: RewardConfig = field(default_factory=RewardConfig)

    def __post_init__(self) -> None:
        problems = []
        if self.substeps < 1:
            problems.append(f"substeps must be >= 1, got {self.substeps}")
        if self.obs_mode not in ("default", "extended"):
            problems.append(f"obs_mode must be 'default' or 'extended', got {self.obs_mode!r}")
        for name in ("arena_size", "dt", "max_time", "speed_min", "missile_hit_radius"):
            if getattr(self, name) <= 0:
                problems.append(f"{name} must be > 0, got {getattr(self, name)}")
        if self.speed_min >= self.speed_max:
            problems.append("speed_min must be below speed_max")
        if self.missiles < 0:
            problems.append(f"missiles must be >= 0, got {self.missiles}")
        if problems:
            raise ValueError("invalid EnvConfig: " + "; ".join(problems))

    @property
    def max_steps(self) -> int:
        """Decision steps before the time limit."""
        return int(round(self.max_time / self.dt))

    @property
    def diagonal(self) -> float:
        """Arena diagonal in m, the distance normaliser."""
        return self.arena_size * 2.0**0.5

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EnvConfig":
        """Build from plain data (YAML, checkpoints, ``--env`` flags), refusing unknown keys and wrong
        types by name, so a bad value fails here and not deep inside the first step."""
        data = dict(data)
        reward = data.pop("reward", None)
        values = _checked(cls(), data, "EnvConfig")
        if reward is not None:
            if isinstance(reward, RewardConfig):
                values["reward"] = reward
            elif isinstance(reward, Mapping):
                values["reward"] = replace(RewardConfig(), **_checked(RewardConfig(), dict(reward), "EnvConfig.reward"))
            else:
                raise ValueError(f"EnvConfig.reward must be a mapping with some of "
                                 f"{', '.join(f.name for f in fields(RewardConfig))}, got {reward!r}")
        return replace(cls(), **values)


def _checked(defaults: Any, data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data`` checked against the fields of the dataclass instance ``defaults``: known keys, and
    values of the default's type (an int is accepted for a float; floats must be finite)."""
    known = [f.name for f in fields(defaults) if f.name != "reward"]
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown {where} key(s): {', '.join(unknown)}; expected some of: {', '.join(sorted(known))}")
    out: dict[str, Any] = {}
    for key, value in data.items():
        expected = type(getattr(defaults, key))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise ValueError(f"{where}.{key} must be {expected.__name__}, got {value!r}")
        if expected is float and not math.isfinite(value):
            raise ValueError(f"{where}.{key} must be a finite number, got {value!r}")
        out[key] = value
    return out
