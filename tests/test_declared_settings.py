"""The one way a setting is declared and checked (arena.declared_settings): what the env's fields, the
league file's keys and the trainers' settings are all made with."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

from arena.declared_settings import (
    FINITE,
    NUL,
    RANGE,
    TYPE,
    SettingError,
    UnknownSettingError,
    bound,
    check_value,
    declared,
    expected,
    interval,
    read_section,
    setting,
    undeclared,
)
from arena.yaml_file import load_yaml, load_yaml_value


@dataclass(frozen=True)
class Section:
    label: str = setting(help="A label.", blank=False, max_length=5)  # no default: first
    count: int = setting(4, "A count.", low=1, high=100)
    rate: float = setting(0.5, "A rate.", low=0.0, low_open=True, high=1_000_000, unit="s")
    limit: float | None = setting(None, "A limit.", low=0.01, high=60.0)
    mode: Literal["a", "b"] = setting("a", "A mode.")
    path: Path = setting(Path("x"), "A path.")
    names: tuple[str, ...] = setting(factory=lambda: ("x",), help="Names.", max_items=2)
    plain: int = 3  # not a setting
    nested: dict = field(default_factory=dict)


def one(name: str):
    return {s.name: s for s in declared(Section)}[name]


def test_declared_reads_the_settings_once_per_class_and_leaves_other_fields_out():
    settings = declared(Section, "sec")
    assert [s.name for s in settings] == ["label", "count", "rate", "limit", "mode", "path", "names"]
    assert settings is declared(Section, "sec")  # cached
    assert settings[1].key == "sec.count" and declared(Section)[1].key == "count"
    assert settings[6].default == ("x",) and settings[0].default is dataclasses.MISSING
    assert undeclared(Section) == ["plain", "nested"]


@pytest.mark.parametrize("name, value, kept", [
    ("count", 1, 1), ("count", 100, 100), ("rate", 1, 1.0), ("rate", 1_000_000, 1_000_000.0), ("limit", None, None),
    ("mode", "b", "b"), ("label", "ab", "ab"), ("path", "out/x", "out/x"), ("names", ["a", "b"], ("a", "b")),
])
def test_values_in_range_are_kept_as_the_field_holds_them(name, value, kept):
    result = check_value(one(name), value)
    assert result == kept and type(result) is type(kept)


@pytest.mark.parametrize("name, value, problem", [
    ("count", 0, RANGE), ("count", 101, RANGE), ("count", 2.0, TYPE), ("count", True, TYPE), ("count", "3", TYPE),
    ("count", None, TYPE), ("count", 10**400, RANGE),
    ("rate", 0, RANGE), ("rate", 0.0, RANGE), ("rate", 1e7, RANGE), ("rate", math.nan, FINITE),
    ("rate", math.inf, FINITE), ("rate", 10**400, FINITE), ("rate", False, TYPE), ("rate", "fast", TYPE),
    ("limit", 0.001, RANGE), ("mode", "c", RANGE), ("mode", 1, TYPE),
    ("label", "", RANGE), ("label", "   ", RANGE), ("label", "toolong", RANGE), ("label", "a\0b", NUL),
    ("label", 5, TYPE),
    ("path", "a\0b", NUL), ("names", "a", TYPE), ("names", ["a", "b", "c"], RANGE), ("names", [1], TYPE),
])
def test_a_refused_value_says_how_and_keeps_the_value(name, value, problem):
    with pytest.raises(SettingError) as info:
        check_value(one(name), value)
    assert info.value.problem == problem
    if not isinstance(value, list):  # a list's entry is refused as itself
        assert info.value.value is value
    assert str(info.value).startswith(f"{name}: expected ") and len(str(info.value)) <= 300
    assert isinstance(info.value, ValueError)


def test_text_is_never_a_number_and_the_yaml_reader_reads_1e_4_as_one():
    """One rule for the env, the league and the trainer: quoted text is text; YAML 1.2's 1e-4 is a number
    in every file and value arena reads."""
    for text in ("1e-4", "nan", "0.5"):
        with pytest.raises(SettingError) as info:
            check_value(one("rate"), text)
        assert info.value.problem == TYPE and info.value.value == text
    assert check_value(one("rate"), load_yaml_value("1e-4")) == 1e-4
    assert load_yaml("rate: 2E3\nlabel: '1e-4'\n") == {"rate": 2000.0, "label": "1e-4"}


def test_words_for_a_range():
    assert interval(one("rate").spec) == "(0, 1000000]"  # an int bound in full, a float in short form
    assert interval(one("limit").spec) == "[0.01, 60]"
    assert expected(one("count")) == "an integer in [1, 100]"
    assert expected(one("rate")) == "a number in (0, 1000000] s"
    assert expected(one("limit")) == "a number in [0.01, 60], or null"
    assert expected(one("mode")) == "one of a, b"
    assert expected(one("label")) == "a non-empty string of at most 5 characters"
    assert [bound(v) for v in (2**60, 2**62 - 1, 10_000_000, 1e6)] == ["2**60", "2**62 - 1", "10000000", "1e+06"]
    with pytest.raises(SettingError, match=r"^count: expected an integer in \[1, 100\], got <a \d+-bit integer>$"):
        check_value(one("count"), 10**5000)  # more digits than Python prints


def test_read_section_is_the_one_reader_and_says_one_sentence():
    assert read_section(Section, {"count": 7, "rate": 2}, "f.yaml") == {"count": 7, "rate": 2.0}
    with pytest.raises(SettingError) as info:
        read_section(Section, {"count": 0}, "f.yaml", "sec")
    assert str(info.value) == "f.yaml: sec.count: expected an integer in [1, 100], got 0"
    assert info.value.detail == "expected an integer in [1, 100], got 0"
    with pytest.raises(UnknownSettingError, match=r"^f\.yaml: unknown setting 'sec\.cuont'; did you mean sec\.count"):
        read_section(Section, {"cuont": 1}, "f.yaml", "sec")
    assert read_section(Section, {"count": 2, "plain": 9}, "f.yaml", skip=["plain"]) == {"count": 2}
    with pytest.raises(ValueError, match=r"^f\.yaml: sec: expected a mapping of settings, got list$"):
        read_section(Section, [1], "f.yaml", "sec")


def test_a_mapping_setting_takes_a_mapping_and_leaves_its_entries_to_the_reader():
    @dataclass(frozen=True)
    class WithParams:
        params: Mapping[str, Any] = setting(factory=dict, help="Parameters.")

    (params,) = declared(WithParams)
    kept = {"fire_km": 25}
    assert check_value(params, kept) is kept and expected(params) == "a mapping"
    for value in ([1], "a=1", None):
        with pytest.raises(SettingError, match=r"^params: expected a mapping, got ") as info:
            check_value(params, value)
        assert info.value.problem == TYPE
