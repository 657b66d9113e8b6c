"""Settings declared once: checks, --set, config files, click options and the docs table, on a small config."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import click
import pytest
from click.testing import CliRunner

from arena.training.settings import (
    apply,
    check_value,
    click_options,
    fixed_changes,
    given_options,
    markdown_table,
    parse_assignments,
    read_config_file,
    read_sections,
    setting,
    settings_of,
)


@dataclass
class Run:
    envs: int = setting(8, "Battles at once.", cli=True, fixed=True, low=1, high=64)
    vs: tuple[str, ...] = setting(factory=lambda: ("crank",), help="Opponents.", cli=True)
    mode: str = setting("default", "Observation.", choices=("default", "extended"))
    share: float | None = setting(0.5, "A share.", low=0, low_open=True, high=1)
    fast: bool = setting(False, "Go fast.", cli=("b",))
    size: int = setting(4, "Derived.", derived=True)


@dataclass
class Update:
    rate: float = setting(3e-4, "Step size.", cli=True, low=0, low_open=True, high=1)
    widths: tuple[int, ...] = setting(factory=lambda: (4, 2), help="Layers.", low=1, high=16, min_items=1,
                                      max_items=3)


@dataclass
class Config:
    run: Run = field(default_factory=Run)
    update: Update = field(default_factory=Update)


def setting_named(key):
    return {s.key: s for s in settings_of(Config())}[key]


@pytest.mark.parametrize("key, value, expected", [
    ("run.envs", 8, 8), ("update.rate", 1, 1.0), ("update.rate", 1e-4, 1e-4), ("run.share", None, None),
    ("run.vs", ["crank", "self"], ("crank", "self")), ("update.widths", [3], (3,)),
    ("run.mode", "extended", "extended"),
])
def test_values_in_range_are_kept_in_the_settings_type(key, value, expected):
    assert check_value(setting_named(key), value) == expected


@pytest.mark.parametrize("key, value, message", [
    ("run.envs", 0, "run.envs: expected an integer in [1, 64], got 0"),
    ("run.envs", 2.5, "expected an integer"), ("run.envs", True, "expected an integer"),
    ("update.rate", 0, "update.rate: expected a number in (0, 1], got 0"),
    ("update.rate", float("nan"), "expected a number"), ("update.rate", "fast", "expected a number"),
    ("run.mode", "wide", "run.mode: expected one of default, extended, got 'wide'"),
    ("run.fast", "yes", "run.fast: expected true or false"),
    ("run.vs", "crank", "run.vs: expected a list of at most 64 names"),
    ("update.widths", [], "update.widths: expected a list of 1 to 3 integers, each in [1, 16]"),
    ("update.widths", [99], "update.widths"),
    ("run.envs", None, "expected an integer"),
])
def test_a_bad_value_names_its_key_and_what_was_expected(key, value, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        check_value(setting_named(key), value)


def test_set_reads_yaml_values_and_suggests_the_nearest_key():
    values = parse_assignments(Config(), ["run.envs=16", "update.rate=1e-3", "run.vs=[crank, self]", "run.vs=ace",
                                          "run.share=null", "run.fast=true"])
    assert values == {"run.envs": 16, "update.rate": 1e-3, "run.vs": ("ace",), "run.share": None, "run.fast": True}
    with pytest.raises(ValueError, match="unknown setting 'run.env'; did you mean run.envs"):
        parse_assignments(Config(), ["run.env=3"])
    with pytest.raises(ValueError, match="expected SECTION.NAME=VALUE"):
        parse_assignments(Config(), ["run.envs"])
    with pytest.raises(ValueError, match="run.size is computed by the trainer"):
        parse_assignments(Config(), ["run.size=3"])


def test_a_config_file_is_checked_key_by_key(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("run:\n  envs: 16\n  size: 99\nupdate:\n  rate: 0.001\nenv: {team_size: 2}\n")
    assert read_config_file(Config(), path, ignore=("env",)) == {"run.envs": 16, "update.rate": 0.001}
    path.write_text("run:\n  envs: 1\n  : : -\n")
    with pytest.raises(ValueError, match=r"--config .*run.yaml: not valid YAML at line 3"):
        read_config_file(Config(), path)
    path.write_text("runn:\n  envs: 2\n")
    with pytest.raises(ValueError, match="unknown section 'runn'; did you mean run"):
        read_config_file(Config(), path)
    path.write_text("run:\n  envs: 200\n")
    with pytest.raises(ValueError, match=r"run.yaml: run.envs: expected an integer in \[1, 64\], got 200"):
        read_config_file(Config(), path)
    with pytest.raises(ValueError, match="cannot read it"):
        read_config_file(Config(), tmp_path / "missing.yaml")
    with pytest.raises(ValueError, match="expected a mapping of sections"):
        read_sections(Config(), ["run"], "config")


def test_a_config_file_with_a_key_twice_is_refused_naming_the_file_line_and_key(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("update:\n  rate: 0.001\nrun:\n  envs: 2\n  vs: [crank]\n  envs: 3\n")
    with pytest.raises(ValueError) as info:
        read_config_file(Config(), path)
    assert str(info.value) == f"--config {path}: line 6: key 'envs' appears twice (first on line 4)"
    path.write_text("run:\n  envs: 2\nupdate:\n  rate: 0.001\nrun:\n  envs: 3\n")
    with pytest.raises(ValueError, match=r"run.yaml: line 5: key 'run' appears twice \(first on line 1\)$"):
        read_config_file(Config(), path)


@pytest.mark.parametrize("text, message", [
    ("run:\n  vs: " + "[" * 40 + "]" * 40 + "\n", "nested more than 32 levels deep (line 2, column 37); expected a "
                                                 "settings YAML file"),
    ("# " + "x" * (1 << 20) + "\nrun: {envs: 2}\n", "larger than 1024 KiB; expected a settings YAML file"),
    ("a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{n}: &{n} [{', '.join([f'*{p}'] * 10)}]\n" for p, n in zip("abcde", "bcdef")),
     "expands to more than 100,000 values once its aliases (*name) are expanded"),
], ids=["too-deep", "too-large", "alias-bomb"])  # the texts themselves would make a test id of 1 MB
def test_a_config_file_too_deep_or_too_large_is_one_line(tmp_path, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ValueError) as info:
        read_config_file(Config(), path)
    assert str(info.value).startswith(f"--config {path}: ") and message in str(info.value)
    assert "\n" not in str(info.value)


def test_a_set_value_with_a_key_twice_is_refused():
    with pytest.raises(ValueError, match=r"^--set run.vs=\{a: 1, a: 2\}: key 'a' appears twice$"):
        parse_assignments(Config(), ["run.vs={a: 1, a: 2}"])


def test_fixed_settings_cannot_change_on_resume():
    saved = apply(Config(), {"run.envs": 16})
    assert [s.key for s in fixed_changes(Config(), saved, {"run.envs": 8, "update.rate": 0.1})] == ["run.envs"]
    assert fixed_changes(Config(), saved, {"run.envs": 16}) == []


def test_the_command_line_shows_only_its_settings_and_tells_what_was_typed():
    seen = {}

    @click.command()
    def command(**params):
        seen.update(given_options(Config(), params))

    func = command
    for option in reversed(click_options(Config(), "a")):
        func = option(func)
    names = {p.name for p in func.params}
    assert names == {"envs", "vs", "rate"}  # "fast" is shown by command "b" only; config-only ones never
    result = CliRunner().invoke(func, ["--envs", "16", "--vs", "crank", "--vs", "self"])
    assert result.exit_code == 0, result.output
    assert seen == {"run.envs": 16, "run.vs": ("crank", "self")}
    bad = CliRunner().invoke(func, ["--envs", "0"])
    assert bad.exit_code == 2 and "expected an integer in [1, 64]" in bad.output
    assert "[default: 0.0003]" in CliRunner().invoke(func, ["--help"]).output


def test_the_docs_table_lists_every_setting_but_the_derived():
    table = markdown_table(Config(), {"b": apply(Config(), {"run.envs": 2})})
    lines = table.splitlines()
    assert len(lines) == 2 + 7
    assert "| `run.envs` | `--envs` | `8 (b: 2)` | an integer in [1, 64] | fixed | Battles at once. |" in lines
    assert any(line.startswith("| `run.fast` | `--fast` (b) |") for line in lines)
    assert not any("run.size" in line for line in lines)
