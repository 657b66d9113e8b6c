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

# Limits on what a config may ask for. They are far outside any sensible battle and exist so that a
# typo or a hostile file fails here, naming its key, instead of as an hour-long (or endless) episode,
# an int overflow inside an agent's timer, or NaN physics. The defaults sit well inside all of them.
MAX_EPISODE_STEPS = 100_000  # decision steps per episode (max_time / dt); the default is 300
MAX_EPISODE_SUBSTEPS = 1_000_000  # integration substeps per episode (max_steps · substeps); default 1200
REWARD_LIMIT = 1e6  # |reward part|


class EnvConfigError(ValueError):
    """A config value out of its range or of the wrong type; ``key`` is the field (``dt``,
    ``reward.win``, or "" when no single field is to blame) so callers can name it in their own terms."""

    def __init__(self, key: str, detail: str) -> None:
        self.key, self.detail = key, detail
        super().__init__(f"EnvConfig.{key} {detail}" if key else f"EnvConfig: {detail}")


# field: (low, high, unit); both ends inclusive unless the field is in _OPEN_LOW (then low < value).
BOUNDS: dict[str, tuple[float, float, str]] = {
    "arena_size": (1_000.0, 10_000_000.0, "m"),
    "dt": (0.01, 60.0, "s"),
    "substeps": (1, 100, ""),
    "max_time": (0.0, 86_400.0, "s"),
    "spawn_edge_min": (0.0, 5_000_000.0, "m"),
    "spawn_edge_max": (0.0, 5_000_000.0, "m"),
    "spawn_band": (0.0, 10_000_000.0, "m"),
    "spawn_heading_jitter": (0.0, math.pi, "rad"),
    "spawn_speed_min": (0.0, 10_000.0, "m/s"),
    "spawn_speed_max": (0.0, 10_000.0, "m/s"),
    "speed_min": (0.0, 10_000.0, "m/s"),
    "speed_max": (0.0, 10_000.0, "m/s"),
    "max_load_factor": (0.0, 100.0, "g"),
    "thrust_accel": (0.0, 1_000.0, "m/s²"),
    "drag_coef": (0.0, 1.0, "1/m"),
    "turn_drag": (0.0, 1_000.0, "m/s² per g²"),
    "missiles": (0, 64, ""),
    "missile_boost_time": (0.0, 3_600.0, "s"),
    "missile_boost_accel": (0.0, 100_000.0, "m/s²"),
    "missile_drag_coef": (0.0, 1.0, "1/m"),
    "missile_min_speed": (0.0, 100_000.0, "m/s"),
    "missile_lifetime": (0.0, 3_600.0, "s"),
    "missile_nav_gain": (0.0, 100.0, ""),
    "missile_max_accel": (0.0, 100_000.0, "m/s²"),
    "missile_seeker_half_angle": (0.0, math.pi, "rad"),
    "missile_hit_radius": (0.0, 10_000_000.0, "m"),
    "missile_max_range": (0.0, 100_000_000.0, "m"),
    "team_size": (1, 8, ""),
    "formation_spacing": (0.0, 100_000.0, "m"),
    "obs_neighbours": (1, 7, ""),
}
_OPEN_LOW = frozenset({"max_time", "spawn_speed_min", "spawn_speed_max", "speed_min", "speed_max",
                       "missile_seeker_half_angle", "missile_hit_radius", "missile_max_range"})


@dataclass(frozen=True)
class RewardConfig:
    """The three reward parts, paid to each player every decision step."""

    win: float = 1.0  # paid once to the winner (the loser gets -win); a draw pays 0
    survival: float = 0.001  # per decision step while the episode runs (and the player is alive)
    missile_cost: float = 0.01  # subtracted per missile launched

    def __post_init__(self) -> None:
        for name in ("win", "survival", "missile_cost"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and abs(value) <= REWARD_LIMIT):
                raise EnvConfigError(f"reward.{name}", f"must be a finite number in [-{REWARD_LIMIT:g}, "
                                                       f"{REWARD_LIMIT:g}], got {value!r}")


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

    # Teams (docs/env.md, "Team battles"): p1 and p2 are sides of team_size aircraft each
    team_size: int = 1  # aircraft per side; 1 is the classic duel
    formation_spacing: float = 2_000.0  # m, lateral gap between wingmen at spawn
    obs_neighbours: int = 3  # with team_size > 1: slots for the nearest allies and enemies in the observation

    # Observation and rewards
    obs_mode: ObsMode = "default"  # "extended" adds aspect, enemy missiles and nearest-threat features
    reward: RewardConfig = field(default_factory=RewardConfig)

    def __post_init__(self) -> None:
        problem = _bounds_problem(self)
        if problem is not None:
            raise EnvConfigError(*problem)

    @property
    def max_steps(self) -> int:
        """Decision steps before the time limit."""
        return int(round(self.max_time / self.dt))

    @property
    def aircraft(self) -> int:
        """Aircraft per battle: p1's seats first, then p2's."""
        return 2 * self.team_size

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
                names = ", ".join(f.name for f in fields(RewardConfig))
                raise EnvConfigError("reward", f"must be a mapping with some of {names}, got {_short(reward)}")
        return replace(cls(), **values)


def _bounds_problem(cfg: EnvConfig) -> tuple[str, str] | None:
    """The first field out of range as ``(key, "must be …, got …")``, or None. Single-field bounds come
    first, then the relations between fields (which assume each field is sane on its own)."""
    if cfg.obs_mode not in ("default", "extended"):
        return "obs_mode", f"must be 'default' or 'extended', got {cfg.obs_mode!r}"
    for name, (low, high, unit) in BOUNDS.items():
        value = getattr(cfg, name)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return name, f"must be a number, got {value!r}"
        if isinstance(low, int) and not isinstance(value, int):
            return name, f"must be int, got {value!r}"
        open_low = name in _OPEN_LOW
        ok = math.isfinite(value) and (low < value if open_low else low <= value) and value <= high
        if not ok:
            left = "(" if open_low else "["
            return name, f"must be in {left}{_num(low)}, {_num(high)}]{' ' + unit if unit else ''}, got {value!r}"
    if cfg.speed_min >= cfg.speed_max:
        return "speed_min", f"must be below speed_max ({cfg.speed_max:g}), got {cfg.speed_min:g}"
    if cfg.spawn_speed_min > cfg.spawn_speed_max:
        return "spawn_speed_min", (f"must be at most spawn_speed_max ({cfg.spawn_speed_max:g}), "
                                   f"got {cfg.spawn_speed_min:g}")
    if cfg.spawn_edge_min > cfg.spawn_edge_max:
        return "spawn_edge_min", f"must be at most spawn_edge_max ({cfg.spawn_edge_max:g}), got {cfg.spawn_edge_min:g}"
    if cfg.spawn_edge_max >= cfg.arena_size / 2:
        return "spawn_edge_max", (f"must be below half the arena_size ({cfg.arena_size / 2:g} m) so the two "
                                  f"aircraft spawn on their own sides, got {cfg.spawn_edge_max:g}")
    if cfg.spawn_band > cfg.arena_size:
        return "spawn_band", f"must be at most arena_size ({cfg.arena_size:g} m), got {cfg.spawn_band:g}"
    if (cfg.team_size // 2) * cfg.formation_spacing > cfg.arena_size / 4:
        return "formation_spacing", (f"puts the outer wingmen of a team of {cfg.team_size} more than a quarter of "
                                     f"the arena ({cfg.arena_size / 4:g} m) from the lead, "
                                     f"got {cfg.formation_spacing:g}")
    if cfg.missile_hit_radius > cfg.arena_size:
        return "missile_hit_radius", (f"must be at most arena_size ({cfg.arena_size:g} m), "
                                      f"got {cfg.missile_hit_radius:g}")
    steps = cfg.max_time / cfg.dt
    if not 1 <= round(steps) <= MAX_EPISODE_STEPS:
        key = "dt" if cfg.dt != EnvConfig.dt else "max_time"
        return key, (f"gives max_time / dt = {steps:.6g} decision steps per episode (max_time {cfg.max_time:g} s, "
                     f"dt {cfg.dt:g} s); expected 1 to {MAX_EPISODE_STEPS:,}")
    if round(steps) * cfg.substeps > MAX_EPISODE_SUBSTEPS:
        return "substeps", (f"gives {round(steps) * cfg.substeps:,} integration substeps per episode "
                            f"(max_time / dt · substeps); expected at most {MAX_EPISODE_SUBSTEPS:,}")
    return None


def _checked(defaults: Any, data: dict[str, Any], where: str) -> dict[str, Any]:
    """``data`` checked against the fields of the dataclass instance ``defaults``: known keys, and
    values of the default's type (an int is accepted for a float; floats must be finite)."""
    known = [f.name for f in fields(defaults) if f.name != "reward"]
    prefix = where.removeprefix("EnvConfig").removeprefix(".")
    prefix = prefix + "." if prefix else ""
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise EnvConfigError("", f"unknown {where} key(s): {', '.join(map(str, unknown))}; expected some of: "
                                 f"{', '.join(sorted(known))}")
    out: dict[str, Any] = {}
    for key, value in data.items():
        expected = type(getattr(defaults, key))
        if expected is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, expected) or (expected is not bool and isinstance(value, bool)):
            raise EnvConfigError(prefix + key, f"must be {expected.__name__}, got {_short(value)}{_yaml_hint(value)}")
        if expected is float and not math.isfinite(value):
            raise EnvConfigError(prefix + key, f"must be a finite number, got {value!r}")
        out[key] = value
    return out


def _yaml_hint(value: Any) -> str:
    """YAML 1.1 reads ``1e-9`` (no decimal point) as text; say so rather than leave the user puzzled."""
    if isinstance(value, str) and "e" in value.lower() and "." not in value:
        try:
            float(value)
        except ValueError:
            return ""
        example = value.lower().replace("e", ".0e", 1)
        return f" (YAML reads {value} as text; write it with a decimal point, e.g. {example})"
    return ""


def _num(x: float) -> str:
    """A bound as a user would type it: 10000000 rather than 1e+07."""
    return str(int(x)) if float(x).is_integer() else f"{x:.6g}"


def _short(value: Any) -> str:
    """``repr`` cut to one short line: a hostile value may be a megabyte long."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
