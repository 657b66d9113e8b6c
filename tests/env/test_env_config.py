"""EnvConfig bounds (issue 16, item 6): a value that would make an episode endless, overflow an
agent's timer or give NaN physics is refused by name when the config is built."""

from __future__ import annotations

import math
from dataclasses import fields

import pytest

from arena.declared_settings import base_kind, declared, undeclared
from arena.env import EnvConfig, RewardConfig
from arena.env.config import MAX_EPISODE_STEPS, EnvConfigError
from cli_checks import refused

# The range of each bounded field, as its setting() declares it.
BOUNDS = {s.name: (s.spec.low, s.spec.high, s.spec.unit) for s in declared(EnvConfig) if s.spec.low is not None}


def test_defaults_lie_inside_every_bound() -> None:
    cfg = EnvConfig()
    for name, (low, high, _) in BOUNDS.items():
        assert low <= getattr(cfg, name) <= high, name
    assert cfg.max_steps == 300
    assert set(BOUNDS) | {"obs_mode", "reward"} == {f.name for f in fields(EnvConfig)}


@pytest.mark.parametrize("data,key,expected", [
    ({"dt": 1e-9}, "dt", "EnvConfig.dt: expected a number in [0.01, 60] s, got 1e-09"),
    ({"dt": 1e-6}, "dt", "expected a number in [0.01, 60] s"),
    ({"dt": 0.0}, "dt", "expected a number in [0.01, 60] s"),
    ({"dt": 0.01, "max_time": 50_000.0}, "dt", f"expected 1 to {MAX_EPISODE_STEPS:,}"),
    ({"max_time": 0.2}, "max_time", "gives max_time / dt = 0.2 decision steps per episode"),
    ({"max_time": 1e9}, "max_time", "expected a number in (0, 86400] s"),
    ({"substeps": 0}, "substeps", "expected an integer in [1, 100], got 0"),
    ({"substeps": 10**9}, "substeps", "expected an integer in [1, 100]"),
    ({"dt": 0.05, "max_time": 3000.0, "substeps": 100}, "substeps", "integration substeps per episode"),
    ({"arena_size": 1e30}, "arena_size", "expected a number in [1000, 10000000] m"),
    ({"arena_size": -5.0}, "arena_size", "expected a number in [1000, 10000000] m"),
    ({"speed_min": 0.0}, "speed_min", "expected a number in (0, 10000] m/s"),
    ({"speed_min": 500.0}, "speed_min", "expected a number below speed_max (400)"),
    ({"spawn_speed_min": 350.0}, "spawn_speed_min", "expected a number at most spawn_speed_max"),
    ({"spawn_edge_max": 60_000.0}, "spawn_edge_max", "expected a number below half the arena_size (50000 m)"),
    ({"spawn_edge_min": 30_000.0}, "spawn_edge_min", "expected a number at most spawn_edge_max"),
    ({"spawn_band": 200_000.0}, "spawn_band", "expected a number at most arena_size"),
    ({"missiles": -1}, "missiles", "expected an integer in [0, 64]"),
    ({"missiles": 2**40}, "missiles", "expected an integer in [0, 64]"),
    ({"missile_seeker_half_angle": 4.0}, "missile_seeker_half_angle", "expected a number in (0, 3.14159] rad"),
    ({"missile_hit_radius": 0.0}, "missile_hit_radius", "expected a number in (0, 10000000] m"),
    ({"missile_drag_coef": -1e-5}, "missile_drag_coef", "expected a number in [0, 1] 1/m"),
    ({"max_time": math.inf}, "max_time", "expected a number in (0, 86400] s, got inf"),
    ({"dt": math.nan}, "dt", "expected a number in [0.01, 60] s, got nan"),
    ({"substeps": 4.0}, "substeps", "expected an integer in [1, 100], got 4.0"),
    ({"reward": {"win": 1e30}}, "reward.win", "expected a finite number in [-1e+06, 1e+06]"),
    ({"reward": {"survival": "x" * 500}}, "reward.survival", "expected a finite number in [-1e+06, 1e+06], got 'xxxxx"),
    ({"obs_mode": "full"}, "obs_mode", "expected one of default, extended, got 'full'"),
    ({"dt": "1e-9"}, "dt", "expected a number in [0.01, 60] s, got '1e-9'"),  # quoted: text, never a number
])
def test_out_of_range_values_are_refused_by_key(data, key, expected) -> None:
    with pytest.raises(EnvConfigError) as info:
        EnvConfig.from_dict(data)
    assert info.value.key == key
    assert expected in str(info.value)
    assert str(info.value).startswith(f"EnvConfig.{key}: ")
    assert "\n" not in str(info.value) and len(str(info.value)) < 300


def test_direct_construction_is_checked_too() -> None:
    with pytest.raises(EnvConfigError, match=r"EnvConfig\.dt: expected a number in"):
        EnvConfig(dt=1e-9)
    with pytest.raises(EnvConfigError, match=r"EnvConfig\.reward\.win: expected a finite number"):
        RewardConfig(win=math.nan)
    assert isinstance(EnvConfigError("dt", "x"), ValueError)  # callers that catch ValueError keep working


def test_edges_of_the_ranges_are_accepted() -> None:
    assert EnvConfig.from_dict({"dt": 0.01, "max_time": 1000.0}).max_steps == MAX_EPISODE_STEPS
    assert EnvConfig.from_dict({"dt": 60.0, "max_time": 60.0}).max_steps == 1
    assert EnvConfig.from_dict({"missiles": 0, "substeps": 100}).missiles == 0
    small = EnvConfig.from_dict({"arena_size": 40000.0, "spawn_edge_min": 5000.0, "spawn_edge_max": 8000.0,
                                 "spawn_band": 10000.0, "max_time": 60.0})
    assert small.max_steps == 60


def test_cli_env_override_blames_the_key() -> None:
    from click.testing import CliRunner

    from arena.cli import main

    res = CliRunner().invoke(main, ["play", "crank", "placeholder", "--env", "dt=0.000001", "-q"])
    refused(res)
    assert res.stderr.strip() == "Error: --env: EnvConfig.dt: expected a number in [0.01, 60] s, got 1e-06"


# -- one idiom: every field is a setting(), checked by the one checker ------------------------------------

SETTINGS = declared(EnvConfig) + declared(RewardConfig, "reward")


def test_every_field_is_declared_with_setting() -> None:
    # A new field made without setting() would have no range: it is refused here instead.
    assert undeclared(EnvConfig) == ["reward"] and undeclared(RewardConfig) == []
    assert all(s.spec.help for s in SETTINGS)
    numbers = [s for s in SETTINGS if s.name != "obs_mode"]
    assert all(s.spec.low is not None and s.spec.high is not None for s in numbers), "each number has a range"


def outside(s) -> list:
    """Values just outside the declared range of ``s`` (or its choices)."""
    if s.spec.low is None:
        return ["no-such-mode"]
    kind = base_kind(s.kind)[0]
    step = (lambda x: 1) if kind is int else (lambda x: abs(x) * 0.5 or 1.0)
    low = s.spec.low if s.spec.low_open else s.spec.low - step(s.spec.low)
    high = s.spec.high if s.spec.high_open else s.spec.high + step(s.spec.high)
    return [low, high]


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.key for s in SETTINGS])
def test_a_value_outside_a_fields_declaration_is_refused_naming_the_field(setting) -> None:
    for value in [*outside(setting), [1]]:
        data = {"reward": {setting.name: value}} if setting.section == "reward" else {setting.name: value}
        with pytest.raises(EnvConfigError) as info:
            EnvConfig.from_dict(data)
        assert info.value.key == setting.key, (value, str(info.value))
        assert str(info.value).startswith(f"EnvConfig.{setting.key}: expected "), str(info.value)
        if setting.spec.unit and not isinstance(value, list):
            assert f"] {setting.spec.unit}, got " in str(info.value)  # the range, with its unit
