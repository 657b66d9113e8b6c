"""Training settings declared once, as dataclass fields, and everything derived from them.

A trainer's config is a few dataclasses of sections (``run``, ``ppo``, ``network``). Each field is made
with :func:`setting`, which puts its help, its range or choices, whether the command line shows it and
whether a resumed run may change it in the field's metadata. From that one declaration come the click
options (:func:`click_options`), the check of every value read from a ``--config`` file, a ``--set
KEY=VALUE`` or a checkpoint (:func:`check_value`), the resume rule (:func:`fixed_changes`) and the
settings table of the docs (:func:`markdown_table`), so the five can no longer disagree.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import click
import yaml

from arena.yaml_file import YamlFileError, YamlSyntaxError, load_yaml_value, read_yaml_file

SPEC_KEY = "arena.setting"


@dataclass(frozen=True)
class Spec:
    """What one setting is, beside its default: the field metadata :func:`setting` stores."""

    help: str
    cli: tuple[str, ...] = ()  # the commands (trainer names) whose command line shows it; () = config only
    fixed: bool = False  # a resumed run keeps it: the checkpoint's tensors or streams depend on it
    derived: bool = False  # computed by the trainer (input sizes): written to config.yaml, never set
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    min_items: int = 0  # list settings: at least this many entries
    max_items: int = 64  # and at most this many
    flag: str = ""  # the option's name when it is not --field-name
    metavar: str | None = None


def setting(default: Any = dataclasses.MISSING, help: str = "", *, factory: Any = dataclasses.MISSING,
            cli: tuple[str, ...] | bool = (), **spec: Any) -> Any:
    """A dataclass field with its :class:`Spec`. ``cli=True`` shows it on every trainer's command line."""
    shown = ("*",) if cli is True else (() if cli is False else tuple(cli))
    metadata = {SPEC_KEY: Spec(help=help, cli=shown, **spec)}
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata=metadata)
    return field(default=default, metadata=metadata)


@dataclass(frozen=True)
class Setting:
    """One field of one section, resolved: its key (``section.name``), type and :class:`Spec`."""

    section: str
    name: str
    kind: Any  # the resolved annotation: int, float, bool, str, tuple[str, ...], int | None, ...
    spec: Spec
    default: Any

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}"

    @property
    def option(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    def shown_by(self, command: str) -> bool:
        return "*" in self.spec.cli or command in self.spec.cli


def settings_of(config: Any) -> Iterator[Setting]:
    """Every setting of a config made of section dataclasses (``config.run``, ``config.ppo``, ...)."""
    for section in fields(config):
        value = getattr(config, section.name)
        hints = typing.get_type_hints(type(value))
        for f in fields(value):
            spec = f.metadata.get(SPEC_KEY)
            if spec is None:
                raise TypeError(f"{type(value).__name__}.{f.name} is not declared with setting()")
            yield Setting(section.name, f.name, hints[f.name], spec, getattr(value, f.name))


def _base(kind: Any) -> tuple[Any, bool]:
    """(the type without ``| None``, whether None is allowed)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        rest = [a for a in args if a is not type(None)]
        return rest[0], True
    return kind, False


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) >= 10_000 else f"{value:g}"


def _range_text(spec: Spec) -> str:
    parts = []
    if spec.low is not None:
        parts.append(f"{'>' if spec.low_open else '>='} {_number(spec.low)}")
    if spec.high is not None:
        parts.append(f"{'<' if spec.high_open else '<='} {_number(spec.high)}")
    return ", ".join(parts)


def expected(s: Setting) -> str:
    """What a value of ``s`` must be, in words (error messages and the docs table)."""
    kind, optional = _base(s.kind)
    if s.spec.choices:
        text = ", ".join(s.spec.choices[:-1]) + f" or {s.spec.choices[-1]}"
    elif kind is bool:
        text = "true or false"
    elif typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        count = f"{s.spec.min_items} to {s.spec.max_items}" if s.spec.min_items else f"at most {s.spec.max_items}"
        text = f"a list of {count} {'names' if item is str else 'ints'}"
        if item is int and s.spec.low is not None:
            text += f" {_range_text(s.spec)}"
    else:
        name = {int: "an int", float: "a number", str: "a string"}.get(kind, str(kind))
        bounds = _range_text(s.spec)
        text = f"{name} {bounds}" if bounds and kind is not str else name
    return text + (", or null" if optional else "")


def check_value(s: Setting, value: Any) -> Any:
    """``value`` for setting ``s`` as the config holds it; ``ValueError`` naming ``s.key`` otherwise."""
    kind, optional = _base(s.kind)
    if value is None and optional:
        return None
    wrong = ValueError(f"{s.key}: expected {expected(s)}, got {value!r}"[:300])
    if typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        if not isinstance(value, (list, tuple)) or not s.spec.min_items <= len(value) <= s.spec.max_items:
            raise wrong
        return tuple(check_value(Setting(s.section, s.name, item, s.spec, None), v) for v in value)
    if kind is bool:
        if not isinstance(value, bool):
            raise wrong
        return value
    if kind is str:
        if not isinstance(value, str) or (s.spec.choices and value not in s.spec.choices):
            raise wrong
        return value
    if kind is float and isinstance(value, str):  # YAML 1.1 reads 1e-4 (no dot) as a string
        try:
            value = float(value)
        except ValueError:
            raise wrong from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (kind is int and not isinstance(value, int)):
        raise wrong
    if not math.isfinite(value):
        raise wrong
    low, high = s.spec.low, s.spec.high
    if low is not None and (value < low or (s.spec.low_open and value == low)):
        raise wrong
    if high is not None and (value > high or (s.spec.high_open and value == high)):
        raise wrong
    return float(value) if kind is float else value


# -- the command line ------------------------------------------------------------------------------


class _SettingType(click.ParamType):
    """A click type that parses one command-line word and checks it with :func:`check_value`."""

    def __init__(self, s: Setting) -> None:
        self.setting = s
        kind, _ = _base(s.kind)
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
        kind, _ = _base(s.kind)
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


def unknown_key(key: str, known: Mapping[str, Setting], where: str) -> ValueError:
    close = difflib.get_close_matches(key, list(known), n=1)
    hint = f"; did you mean {close[0]}?" if close else f"; expected one of {len(known)} SECTION.NAME keys"
    return ValueError(f"{where}: unknown setting {key!r}{hint}")


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
        if isinstance(value, str) and typing.get_origin(_base(s.kind)[0]) is tuple:
            value = [value]  # --set run.vs=crank: one entry
        if isinstance(value, (int, float)) and not isinstance(value, bool) and _base(s.kind)[0] is str:
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
    known = by_key(config)
    sections = {f.name for f in fields(config)}
    out: dict[str, Any] = {}
    for section, values in data.items():
        if section in ignore:
            continue
        if section not in sections:
            close = difflib.get_close_matches(str(section), sorted(sections), n=1)
            hint = f"; did you mean {close[0]}?" if close else f"; expected {', '.join(sorted(sections))}"
            raise ValueError(f"{where}: unknown section {section!r}{hint}")
        if not isinstance(values, Mapping):
            raise ValueError(f"{where}: {section}: expected a mapping of settings, got {type(values).__name__}")
        for name, value in values.items():
            key = f"{section}.{name}"
            if key not in known:
                raise unknown_key(key, known, where)
            if known[key].spec.derived:
                continue
            try:
                out[key] = check_value(known[key], value)
            except ValueError as exc:
                raise ValueError(f"{where}: {exc}") from None
    return out


def read_config_file(config: Any, path: Path, ignore: tuple[str, ...] = ()) -> dict[str, Any]:
    """A ``--config`` YAML file's settings by key; ``ValueError`` naming the file and the key. The file
    is read as every YAML file is (:func:`arena.yaml_file.read_yaml_file`): size, nesting, alias
    expansion and duplicate keys bounded."""
    try:
        data = read_yaml_file(path, "settings YAML file")
    except OSError as exc:
        raise ValueError(f"--config {path}: cannot read it ({exc.strerror or exc})") from None
    except YamlSyntaxError as exc:
        where = f" at line {exc.line}" if exc.line is not None else ""
        raise ValueError(f"--config {path}: not valid YAML{where} ({exc.problem})") from None
    except YamlFileError as exc:
        raise ValueError(f"--config {path}: {exc.reason}") from None
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
