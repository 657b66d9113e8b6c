"""Configuration of the air-combat simulation.

Every constant is declared with :func:`arena.declared_settings.setting`: its default, what it does, its
unit and the range a config may ask for, checked by the one check every setting of the arena has
(:func:`arena.declared_settings.check_value`). The missile is calibrated in two dimensions,
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
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

from arena.declared_settings import (
    SettingError,
    UnknownSettingError,
    check_value,
    declared,
    nearest,
    read_section,
    setting,
    shown,
)

ObsMode = Literal["default", "extended"]
G = 9.81  # m/s², standard gravity

# Limits on what a config may ask for: the range of each field (in its declaration below) and these. They
# are far outside any sensible battle and exist so that a typo or a hostile file fails here, naming its
# key, instead of as an hour-long (or endless) episode, an int overflow inside an agent's timer, or NaN
# physics. The defaults sit well inside all of them.
MAX_EPISODE_STEPS = 100_000  # decision steps per episode (max_time / dt); the default is 300
MAX_EPISODE_SUBSTEPS = 1_000_000  # integration substeps per episode (max_steps · substeps); default 1200
REWARD_LIMIT = 1e6  # |reward part|


class EnvConfigError(ValueError):
    """A config value out of its range or of the wrong type; ``key`` is the field (``dt``,
    ``reward.win``, or "" when no single field is to blame) so callers can name it in their own terms."""

    def __init__(self, key: str, detail: str) -> None:
        self.key, self.detail = key, detail
        super().__init__(f"EnvConfig.{key}: {detail}" if key else f"EnvConfig: {detail}")


# A field's range has both ends inclusive unless low_open; a bound of a million or more is written as an
# int, as the message shows it (10000000 m, not 1e+07 m). What relates two fields (speed_min < speed_max,
# the spawn edges, the steps per episode) a field's declaration cannot say: _relations_problem checks it
# once every field is in its own range.
_REWARD = f"a finite number in [-{REWARD_LIMIT:g}, {REWARD_LIMIT:g}]"


@dataclass(frozen=True)
class RewardConfig:
    """The three reward parts, paid to each player every decision step."""

    win: float = setting(1.0, "paid once to the winner (the loser gets -win); a draw pays 0",
                         low=-REWARD_LIMIT, high=REWARD_LIMIT, expect=_REWARD)
    survival: float = setting(0.001, "per decision step while the episode runs (and the player is alive)",
                              low=-REWARD_LIMIT, high=REWARD_LIMIT, expect=_REWARD)
    missile_cost: float = setting(0.01, "subtracted per missile launched",
                                  low=-REWARD_LIMIT, high=REWARD_LIMIT, expect=_REWARD)

    def __post_init__(self) -> None:
        _check_fields(self, "reward")


@dataclass(frozen=True)
class EnvConfig:
    """Constants of the world. Units are SI (m, s, rad) unless the unit says otherwise."""

    # World and time
    arena_size: float = setting(100_000.0, "side of the square arena", low=1_000, high=10_000_000, unit="m")
    dt: float = setting(1.0, "one decision step", low=0.01, high=60.0, unit="s")
    substeps: int = setting(4, "integration substeps per decision step", low=1, high=100)
    max_time: float = setting(300.0, "simulated time limit; reaching it is a draw (truncation)",
                              low=0.0, low_open=True, high=86_400.0, unit="s")

    # Spawn (p1 west, p2 east; mirrored for p2)
    spawn_edge_min: float = setting(10_000.0, "nearest spawn distance from the own edge",
                                    low=0.0, high=5_000_000, unit="m")
    spawn_edge_max: float = setting(20_000.0, "farthest spawn distance from the own edge",
                                    low=0.0, high=5_000_000, unit="m")
    spawn_band: float = setting(40_000.0, "height of the band around the middle where aircraft spawn",
                                low=0.0, high=10_000_000, unit="m")
    spawn_heading_jitter: float = setting(0.5235987755982988, "(30°) max heading error off the enemy",
                                          low=0.0, high=math.pi, unit="rad")
    spawn_speed_min: float = setting(250.0, "slowest speed at spawn", low=0.0, low_open=True, high=10_000.0,
                                     unit="m/s")
    spawn_speed_max: float = setting(300.0, "fastest speed at spawn", low=0.0, low_open=True, high=10_000.0,
                                     unit="m/s")

    # Aircraft
    speed_min: float = setting(150.0, "the aircraft cannot fly slower", low=0.0, low_open=True, high=10_000.0,
                               unit="m/s")
    speed_max: float = setting(400.0, "the aircraft cannot fly faster", low=0.0, low_open=True, high=10_000.0,
                               unit="m/s")
    max_load_factor: float = setting(9.0, "load factor at |rudder| = 1", low=0.0, high=100.0, unit="g")
    thrust_accel: float = setting(10.0, "acceleration from full throttle", low=0.0, high=1_000.0, unit="m/s²")
    drag_coef: float = setting(10.0 / 340.0**2, "parasitic drag: a = -drag_coef·v² (settles at 340 m/s)",
                               low=0.0, high=1.0, unit="1/m")
    turn_drag: float = setting(0.2, "induced drag of a turn: a = -turn_drag·n²", low=0.0, high=1_000.0,
                               unit="m/s² per g²")

    # Missiles
    missiles: int = setting(4, "carried per aircraft", low=0, high=64)
    missile_boost_time: float = setting(3.0, "motor burn after launch", low=0.0, high=3_600.0, unit="s")
    missile_boost_accel: float = setting(260.0, "thrust acceleration while the motor burns",
                                         low=0.0, high=100_000.0, unit="m/s²")
    missile_drag_coef: float = setting(5.0e-5, "coasting drag a = -k·v²", low=0.0, high=1.0, unit="1/m")
    missile_min_speed: float = setting(250.0, "below this the missile is spent", low=0.0, high=100_000.0,
                                       unit="m/s")
    missile_lifetime: float = setting(80.0, "maximum flight time", low=0.0, high=3_600.0, unit="s")
    missile_nav_gain: float = setting(4.0, "proportional-navigation constant N", low=0.0, high=100.0)
    missile_max_accel: float = setting(30.0 * G, "lateral acceleration limit", low=0.0, high=100_000.0,
                                       unit="m/s²")
    missile_seeker_half_angle: float = setting(1.0471975511965976, "(60°) lock is lost for good outside",
                                               low=0.0, low_open=True, high=math.pi, unit="rad")
    missile_hit_radius: float = setting(150.0, "closest approach that counts as a hit",
                                        low=0.0, low_open=True, high=10_000_000, unit="m")
    missile_max_range: float = setting(40_000.0, "nominal range published to agents",
                                       low=0.0, low_open=True, high=100_000_000, unit="m")

    # Teams (docs/env.md, "Team battles"): p1 and p2 are sides of team_size aircraft each
    team_size: int = setting(1, "aircraft per side; 1 is the classic duel", low=1, high=8)
    formation_spacing: float = setting(2_000.0, "lateral gap between wingmen at spawn", low=0.0, high=100_000.0,
                                       unit="m")
    obs_neighbours: int = setting(3, "with team_size > 1: slots for the nearest allies and enemies in the "
                                     "observation", low=1, high=7)

    # Observation and rewards
    obs_mode: ObsMode = setting("default", '"extended" adds aspect, enemy missiles and nearest-threat features')
    reward: RewardConfig = field(default_factory=RewardConfig)

    def __post_init__(self) -> None:
        _check_fields(self)
        problem = _relations_problem(self)
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
        values = _checked(cls, data, "EnvConfig")
        if reward is not None:
            if isinstance(reward, RewardConfig):
                values["reward"] = reward
            elif isinstance(reward, Mapping):
                values["reward"] = RewardConfig(**_checked(RewardConfig, dict(reward), "EnvConfig.reward", "reward"))
            else:
                names = ", ".join(f.name for f in fields(RewardConfig))
                raise EnvConfigError("reward", f"expected a mapping with some of {names}, got {shown(reward)}")
        return cls(**values)


def env_config_of(value: object, who: str = "env_config") -> EnvConfig:
    """``value`` as an env's config: an :class:`EnvConfig` as it is, None as the default one; anything else
    is a ``ValueError`` naming ``who`` (a dict would otherwise fail deep inside, as an AttributeError)."""
    if value is None:
        return EnvConfig()
    if isinstance(value, EnvConfig):
        return value
    hint = "; EnvConfig.from_dict(...) builds one from a mapping" if isinstance(value, Mapping) else ""
    raise ValueError(f"{who}: expected an arena.env.EnvConfig or None, got {type(value).__name__} "
                     f"{shown(value, 60)}{hint}")


def _checked(cls: type, data: dict[str, Any], where: str, section: str = "") -> dict[str, Any]:
    """``data`` read by :func:`~arena.declared_settings.read_section` against the declared fields of
    ``cls``, each value held as the field holds it (an int given for a float is a float);
    :class:`EnvConfigError` naming the key otherwise."""
    try:
        return read_section(cls, data, where, section)
    except SettingError as exc:
        raise EnvConfigError(exc.setting.key, exc.detail) from None
    except UnknownSettingError as exc:
        keys = [s.key for s in declared(cls, section)]
        raise EnvConfigError("", f"unknown setting {shown(exc.key)}{nearest(exc.key, keys)}") from None


def _check_fields(config: Any, section: str = "") -> None:
    """Every declared field of ``config`` (built from code, not only from data) checked by its setting;
    :class:`EnvConfigError` naming the key in the one wording (``expected a number in [0.01, 60] s, got
    1e-09``) otherwise."""
    for s in declared(type(config), section):
        try:
            check_value(s, getattr(config, s.name))
        except SettingError as exc:
            raise EnvConfigError(s.key, exc.detail) from None


def _relations_problem(cfg: EnvConfig) -> tuple[str, str] | None:
    """The first relation between fields that ``cfg`` breaks, as ``(key, "expected …, got …")``, or None.
    Each field is known to be in its own range."""
    if cfg.speed_min >= cfg.speed_max:
        return "speed_min", f"expected a number below speed_max ({cfg.speed_max:g}), got {cfg.speed_min:g}"
    if cfg.spawn_speed_min > cfg.spawn_speed_max:
        return "spawn_speed_min", (f"expected a number at most spawn_speed_max ({cfg.spawn_speed_max:g}), "
                                   f"got {cfg.spawn_speed_min:g}")
    if cfg.spawn_edge_min > cfg.spawn_edge_max:
        return "spawn_edge_min", (f"expected a number at most spawn_edge_max ({cfg.spawn_edge_max:g}), "
                                  f"got {cfg.spawn_edge_min:g}")
    if cfg.spawn_edge_max >= cfg.arena_size / 2:
        return "spawn_edge_max", (f"expected a number below half the arena_size ({cfg.arena_size / 2:g} m) so the "
                                  f"two aircraft spawn on their own sides, got {cfg.spawn_edge_max:g}")
    if cfg.spawn_band > cfg.arena_size:
        return "spawn_band", f"expected a number at most arena_size ({cfg.arena_size:g} m), got {cfg.spawn_band:g}"
    if (cfg.team_size // 2) * cfg.formation_spacing > cfg.arena_size / 4:
        return "formation_spacing", (f"puts the outer wingmen of a team of {cfg.team_size} more than a quarter of "
                                     f"the arena ({cfg.arena_size / 4:g} m) from the lead, "
                                     f"got {cfg.formation_spacing:g}")
    if cfg.missile_hit_radius > cfg.arena_size:
        return "missile_hit_radius", (f"expected a number at most arena_size ({cfg.arena_size:g} m), "
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
