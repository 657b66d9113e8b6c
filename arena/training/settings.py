"""Training settings declared once, as dataclass fields, and everything derived from them.

A trainer's config is a few dataclasses of sections (``run``, ``ppo``, ``network``). Each field is made
with :func:`arena.declared_settings.setting`, which puts its help, its range or choices, whether the
command line shows it and whether a resumed run may change it in the field's metadata. From that one
declaration come the click options (:func:`click_options`), the check of every value read from a
``--config`` file, a ``--set KEY=VALUE`` or a checkpoint (:func:`arena.declared_settings.check_value`,
the one the env and the league file are checked with too), the resume rule (:func:`fixed_changes`)
and the settings table of the docs (:func:`markdown_table`), so the five can no longer disagree. This
module holds what is about sections, the command line, files and resuming.
"""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator, Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import click
import yaml

from arena.declared_settings import (
    Setting,
    Spec,
    UnknownSettingError,
    base_kind,
    check_value,
    declared,
    expected,
    nearest,
    read_section,
    setting,
    shown,
    undeclared,
)
from arena.yaml_file import YamlFileError, YamlSyntaxError, load_yaml_value, read_yaml_file

# Setting, Spec, setting, check_value and expected come from arena.declared_settings (the env and the league
# declare their settings with them too) and are named here as well, for the trainers.
__all__ = ["Setting", "Spec", "apply", "by_key", "check_value", "click_options",
           "expected", "fixed_changes", "given_options", "markdown_table", "parse_assignments",
           "read_config_file", "read_sections", "read_settings_data", "setting", "settings_of", "unknown_key",
           "UnknownSettingError"]


def settings_of(config: Any) -> Iterator[Setting]:
    """Every setting of a config made of section dataclasses (``config.run``, ``config.ppo``, ...), with
    the config's values as defaults."""
    for section in fields(config):
        value = getattr(config, section.name)
        missing = undeclared(type(value))
        if missing:
            raise TypeError(f"{type(value).__name__}.{missing[0]} is not declared with setting()")
        for s in declared(type(value), section.name):
            yield dataclasses.replace(s, default=getattr(value, s.name))


# -- the command line ------------------------------------------------------------------------------


class _SettingType(click.ParamType):
    """A click type that parses one command-line word and checks it with :func:`check_value`."""

    def __init__(self, s: Setting) -> None:
        self.setting = s
        kind, _ = base_kind(s.kind)
        if typing.get_origin(kind) is tuple:
            kind = typing.get_args(kind)[0]
        self.item = kind
        self.name = {int: "integer", float: "float", str: "text"}.get(kind, "value")

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        parsed: Any = value
        if self.item in (int, float):
            try:
                parsed = int(value) if self.item is int else float(value)
            except ValueError:
                self.fail(f"{value!r} is not {'an int' if self.item is int else 'a number'}", param, ctx)
        if self.setting.spec.choices and parsed not in self.setting.spec.choices:
            self.fail(f"{value!r} is not one of {', '.join(self.setting.spec.choices)}", param, ctx)
        try:
            check_value(Setting(self.setting.section, self.setting.name, self.item, self.setting.spec, None), parsed)
        except ValueError:
            self.fail(f"{value!r}: expected {expected(self.setting)}", param, ctx)
        return parsed


def click_options(config: Any, command: str) -> list[Any]:
    """click option decorators for the settings ``command`` shows, in declaration order.

    Every option defaults to None, so the values a user typed are exactly the ones that are not None
    (:func:`given_options`); the default shown in the help is the config's.
    """
    decorators = []
    for s in settings_of(config):
        if not s.shown_by(command) or s.spec.derived:
            continue
        kind, _ = base_kind(s.kind)
        shown = " ".join(s.default) if isinstance(s.default, tuple) else s.default
        help_text = f"{s.spec.help} [default: {shown}]" if shown not in (None, "") else s.spec.help
        name = s.name
        if kind is bool:
            decorators.append(click.option(f"{s.option}/--no-{s.option[2:]}", name, default=None, help=help_text))
        else:
            multiple = typing.get_origin(kind) is tuple
            metavar = s.spec.metavar or ("[" + "|".join(s.spec.choices) + "]" if s.spec.choices else None)
            decorators.append(click.option(s.option, name, type=_SettingType(s), default=None, multiple=multiple,
                                           metavar=metavar, help=help_text))
    return decorators


def given_options(config: Any, params: Mapping[str, Any]) -> dict[str, Any]:
    """The settings a command line gave, by key (``run.num_envs``): the options that are not None."""
    out = {}
    for s in settings_of(config):
        value = params.get(s.name)
        if value is None or (isinstance(value, tuple) and not value):
            continue
        out[s.key] = tuple(value) if isinstance(value, (list, tuple)) else value
    return out


# -- files and KEY=VALUE -----------------------------------------------------------------------------


def by_key(config: Any) -> dict[str, Setting]:
    return {s.key: s for s in settings_of(config)}


def unknown_key(key: str, known: Mapping[str, Setting], where: str) -> UnknownSettingError:
    """A ``--set`` key no setting has, in the readers' words (:func:`arena.declared_settings.nearest`)."""
    return UnknownSettingError(f"{where}: unknown setting {shown(key)}{nearest(key, known)}"[:300], key)


def parse_assignments(config: Any, items: tuple[str, ...] | list[str]) -> dict[str, Any]:
    """``--set section.name=VALUE`` items as checked values by key; VALUE is read as YAML (``0.1``,
    ``true``, ``[crank, self]``)."""
    known = by_key(config)
    out: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ValueError(f"--set {item!r}: expected SECTION.NAME=VALUE, e.g. ppo.clip_epsilon=0.1")
        if key in known and known[key].spec.derived:
            raise ValueError(f"--set {item}: {key} is computed by the trainer (from the env and the other "
                             f"settings), not set")
        if key not in known:
            raise unknown_key(key, {k: v for k, v in known.items() if not v.spec.derived}, f"--set {item}")
        try:
            value = load_yaml_value(text) if text.strip() else ""
        except ValueError as exc:  # YAML, but not a usable value: a key twice, nested too deep
            raise ValueError(f"--set {item}: {exc}") from None
        s = known[key]
        if isinstance(value, str) and typing.get_origin(base_kind(s.kind)[0]) is tuple:
            value = [value]  # --set run.vs=crank: one entry
        if isinstance(value, (int, float)) and not isinstance(value, bool) and base_kind(s.kind)[0] is str:
            value = text.strip()
        try:
            out[key] = check_value(s, value)
        except ValueError as exc:
            raise ValueError(f"--set {item}: {exc}") from None
    return out


def read_sections(config: Any, data: Any, where: str, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """Checked values by key from a mapping of sections (a ``--config`` file, a checkpoint's config).

    Unknown sections and keys are refused with the nearest known name, except the top-level keys in
    ``ignore`` (what config.yaml records beside the settings: the env, the device, processes); a
    derived setting (an input size) is accepted and left to the trainer, which computes it again.
    """
    if not isinstance(data, Mapping):
        raise ValueError(f"{where}: expected a mapping of sections ({', '.join(f.name for f in fields(config))}), "
                         f"got {type(data).__name__}")
    sections = {f.name for f in fields(config)}
    out: dict[str, Any] = {}
    for section, values in data.items():
        if section in ignore:
            continue
        if section not in sections:
            raise UnknownSettingError(f"{where}: unknown section {section!r}{nearest(str(section), sorted(sections))}",
                                      str(section))
        cls = type(getattr(config, section))
        derived = [s.name for s in declared(cls, section) if s.spec.derived]
        out.update({f"{section}.{name}": value
                    for name, value in read_section(cls, values, where, section, skip=derived).items()})
    return out


def read_settings_data(path: Path, where: str) -> Any:
    """The YAML data of a settings file (a ``--config``, a run's config.yaml), read as every YAML file is
    (:func:`arena.yaml_file.read_yaml_file`: UTF-8 text, size, nesting, alias expansion and duplicate
    keys bounded); ``ValueError`` starting with ``where`` (``--config FILE``) for anything else, a binary
    file included."""
    try:
        return read_yaml_file(path, "settings YAML file")
    except OSError as exc:
        raise ValueError(f"{where}: cannot read it ({exc.strerror or exc})") from None
    except YamlSyntaxError as exc:
        line = f" at line {exc.line}" if exc.line is not None else ""
        raise ValueError(f"{where}: not valid YAML{line} ({exc.problem})") from None
    except YamlFileError as exc:
        raise ValueError(f"{where}: {exc.reason}") from None


def read_config_file(config: Any, path: Path, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ``--config`` YAML file's settings by key; ``ValueError`` naming the file and the key."""
    data = read_settings_data(path, f"--config {path}")
    if data is None:
        return {}
    return read_sections(config, data, f"--config {path}", ignore)


def apply(config: Any, values: Mapping[str, Any]) -> Any:
    """``config`` with ``values`` (by key) set in place; returns it."""
    for key, value in values.items():
        section, name = key.split(".", 1)
        setattr(getattr(config, section), name, value)
    return config


def fixed_changes(config: Any, saved: Any, given: Mapping[str, Any]) -> list[Setting]:
    """The fixed settings that ``given`` would change from ``saved`` (a resumed run's config)."""
    changed = []
    for s in settings_of(saved):
        if s.spec.fixed and s.key in given and given[s.key] != getattr(getattr(saved, s.section), s.name):
            changed.append(s)
    return changed


# -- the docs ------------------------------------------------------------------------------------------


def _yaml(value: Any) -> str:
    """A value as a YAML file spells it, on one line."""
    text = yaml.safe_dump(list(value) if isinstance(value, tuple) else value, default_flow_style=True)
    return text.strip().removesuffix("...").strip()


def markdown_table(config: Any, commands: Mapping[str, Any] | None = None) -> str:
    """The settings table of the docs: key, option, default, what it takes, whether fixed on resume, help.

    ``commands`` maps a trainer name to its default config where it differs (mappo's team defaults).
    """
    rows = ["| setting | option | default | takes | resume | what it does |", "|---|---|---|---|---|---|"]
    others = commands or {}
    for s in settings_of(config):
        if s.spec.derived:
            continue
        default = _yaml(s.default)
        for name, other in others.items():
            value = getattr(getattr(other, s.section), s.name)
            if value != s.default:
                default += f" ({name}: {_yaml(value)})"
        option = f"`{s.option}`" if s.spec.cli else ""
        if s.spec.cli and "*" not in s.spec.cli:
            option += f" ({', '.join(s.spec.cli)})"
        rows.append(f"| `{s.key}` | {option} | `{default}` | {expected(s)} | {'fixed' if s.spec.fixed else ''} | "
                    f"{s.spec.help.replace('|', '/')} |")
    return "\n".join(rows) + "\n"
