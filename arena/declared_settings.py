"""Settings declared once, as dataclass fields, and the one check of a value against its declaration.

A setting is a dataclass field made with :func:`setting`: its default, its help, and what a value may be
(a range with open or closed ends, the choices, a length, a unit) go into the field's metadata as a
:class:`Spec`. :func:`declared` reads a class's settings back (once per class), and :func:`check_value`
checks one value against one of them. The env's constants (``arena.env.config``), the league file
(``arena.tournament.league_config``) and the trainers' settings (``arena.training.settings``) are all
declared and checked this way; each says a refused value in its own established words (``EnvConfig.dt
must be in [0.01, 60] s``, ``league.yaml: seed: expected …``, ``run.num_envs: expected …``) from the
:class:`SettingError` the check raises, which tells what went wrong and keeps the value.

Low in the package: it imports nothing of arena, nor click or torch, so the env can use it.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import PurePath
from typing import Any

SPEC_KEY = "arena.setting"


@dataclass(frozen=True)
class Spec:
    """What one setting is, beside its default: the field metadata :func:`setting` stores."""

    help: str
    cli: tuple[str, ...] = ()  # the commands (trainer names) whose command line shows it; () = config only
    fixed: bool = False  # a resumed run keeps it: the checkpoint's tensors or streams depend on it
    derived: bool = False  # computed by the trainer (input sizes): written to config.yaml, never set
    low: float | None = None  # an int bound is shown as one (10000000), a float in short form (1e+06)
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    choices: tuple[str, ...] | None = None
    min_items: int = 0  # list settings: at least this many entries
    max_items: int = 64  # and at most this many
    max_length: int | None = None  # text settings: at most this many characters
    blank: bool = True  # text settings: whether an empty (or all-space) string is a value
    unit: str = ""  # what a number counts (m, s, rad, m/s²), said with its range
    expect: str = ""  # what a value must be, in words, where the ones made from the range would not say enough
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
    """One declared field, resolved: its key (``section.name``, or ``name`` outside a section), type and
    :class:`Spec`."""

    section: str
    name: str
    kind: Any  # the resolved annotation: int, float, bool, str, tuple[str, ...], int | None, Literal[...], ...
    spec: Spec
    default: Any  # dataclasses.MISSING where the field has none

    @property
    def key(self) -> str:
        return f"{self.section}.{self.name}" if self.section else self.name

    @property
    def option(self) -> str:
        return self.spec.flag or "--" + self.name.replace("_", "-")

    def shown_by(self, command: str) -> bool:
        return "*" in self.spec.cli or command in self.spec.cli


_DECLARED: dict[tuple[type, str], tuple[Setting, ...]] = {}


def declared(cls: type, section: str = "") -> tuple[Setting, ...]:
    """The settings of dataclass ``cls``, in field order, with their class defaults; fields made without
    :func:`setting` (a nested section, a derived value) are left out. Read once per class (and section
    name, which is in each setting's key)."""
    found = _DECLARED.get((cls, section))
    if found is None:
        hints = typing.get_type_hints(cls)
        found = tuple(Setting(section, f.name, hints[f.name], f.metadata[SPEC_KEY],
                              f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)
                      for f in fields(cls) if SPEC_KEY in f.metadata)
        _DECLARED[(cls, section)] = found
    return found


def undeclared(cls: type) -> list[str]:
    """The fields of dataclass ``cls`` made without :func:`setting`."""
    return [f.name for f in fields(cls) if SPEC_KEY not in f.metadata]


def _optional(kind: Any) -> tuple[Any, bool]:
    """(``kind`` without ``| None``, whether None is allowed)."""
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType) and type(None) in args:
        return [a for a in args if a is not type(None)][0], True
    return kind, False


@functools.cache
def base_kind(kind: Any) -> tuple[Any, bool]:
    """(the type a value must have, whether None is allowed): ``| None`` taken off; a ``Literal`` of
    strings and a path are text, ``Mapping[K, V]`` a mapping. Cached: the env checks every field of every
    config it builds."""
    kind, optional = _optional(kind)
    if typing.get_origin(kind) is typing.Literal or (isinstance(kind, type) and issubclass(kind, PurePath)):
        kind = str
    elif typing.get_origin(kind) is Mapping:
        kind = Mapping
    return kind, optional


def choices_of(s: Setting) -> tuple[str, ...] | None:
    """The values a text setting may take: its declared choices, else its ``Literal``'s, else None (any)."""
    if s.spec.choices:
        return s.spec.choices
    kind = _optional(s.kind)[0]
    return tuple(str(a) for a in typing.get_args(kind)) if typing.get_origin(kind) is typing.Literal else None


# -- words ---------------------------------------------------------------------------------------------


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() and abs(value) >= 10_000 else f"{value:g}"


def _range_text(spec: Spec) -> str:
    parts = []
    if spec.low is not None:
        parts.append(f"{'>' if spec.low_open else '>='} {_number(spec.low)}")
    if spec.high is not None:
        parts.append(f"{'<' if spec.high_open else '<='} {_number(spec.high)}")
    return ", ".join(parts)


def bound(value: float) -> str:
    """A bound as its declaration writes it: an int in full (10000000), a float in short form (1e+06, 0.01)."""
    return str(value) if isinstance(value, int) else f"{value:g}"


def interval(spec: Spec) -> str:
    """The range of a setting bounded at both ends, in interval notation: ``[0.01, 60]``, ``(0, 3600]``."""
    return (f"{'(' if spec.low_open else '['}{bound(typing.cast(float, spec.low))}, "
            f"{bound(typing.cast(float, spec.high))}{')' if spec.high_open else ']'}")


def expected(s: Setting) -> str:
    """What a value of ``s`` must be, in words (error messages and the docs tables): its ``expect`` where
    the declaration gives one."""
    kind, optional = base_kind(s.kind)
    choices = choices_of(s)
    if s.spec.expect:
        return s.spec.expect
    if choices:
        text = ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]
    elif kind is bool:
        text = "true or false"
    elif kind is Mapping:
        text = "a mapping"
    elif typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        count = f"{s.spec.min_items} to {s.spec.max_items}" if s.spec.min_items else f"at most {s.spec.max_items}"
        text = f"a list of {count} {'names' if item is str else 'ints'}"
        if item is int and s.spec.low is not None:
            text += f" {_range_text(s.spec)}"
    elif kind is str:
        text = ("a string" if s.spec.blank else "a non-empty string") + (
            f" of at most {s.spec.max_length} characters" if s.spec.max_length is not None else "")
    else:
        name = {int: "an int", float: "a number"}.get(kind, str(kind))
        bounds = _range_text(s.spec)
        text = f"{name} {bounds}" if bounds else name
    return text + (", or null" if optional else "")


def shown(value: Any, limit: int = 80) -> str:
    """``repr`` cut to one short line: a hostile value may be a megabyte long, or an int too long to print."""
    try:
        text = repr(value)
    except ValueError:  # an int of more digits than Python prints
        text = f"<a {value.bit_length()}-bit integer>" if isinstance(value, int) else f"<{type(value).__name__}>"
    text = text.replace("\n", " ")
    return text if len(text) <= limit else text[:limit - 3] + "..."


# -- the check -----------------------------------------------------------------------------------------

TYPE = "type"  # not of the setting's kind (text for a number, a float for an int, a bool for a number)
FINITE = "finite"  # a number that is NaN or infinite (or an int too large to be a float)
NUL = "nul"  # text with a NUL character: names and paths reach the OS and SQLite
RANGE = "range"  # of the right kind, outside what the setting allows: its range, choices, length


class SettingError(ValueError):
    """A value its setting refuses. ``problem`` says how (:data:`TYPE`, :data:`FINITE`, :data:`NUL` or
    :data:`RANGE`) and ``value`` is the value as given, so each caller can say it in its own words;
    ``str()`` is ``KEY: expected WHAT, got VALUE``."""

    def __init__(self, setting: Setting, value: Any, problem: str) -> None:
        self.setting, self.value, self.problem = setting, value, problem
        super().__init__(f"{setting.key}: expected {expected(setting)}, got {shown(value, 300)}"[:300])


def check_value(s: Setting, value: Any, *, text_numbers: bool = True) -> Any:
    """``value`` for setting ``s`` as the config holds it (an int given for a float is a float, a list for
    a tuple is a tuple); :class:`SettingError` otherwise. ``text_numbers``: a number spelled as text
    (``"1e-4"``, which YAML 1.1 reads as a string) is taken for a float setting."""
    kind, optional = base_kind(s.kind)
    if value is None and optional:
        return None
    item = _item(kind)
    if item is not None:
        if not isinstance(value, (list, tuple)):
            raise SettingError(s, value, TYPE)
        if not s.spec.min_items <= len(value) <= s.spec.max_items:
            raise SettingError(s, value, RANGE)
        one = Setting(s.section, s.name, item, s.spec, None)
        return tuple(check_value(one, v, text_numbers=text_numbers) for v in value)
    if kind is bool or kind is Mapping:  # a mapping's entries are its reader's to check
        if not isinstance(value, kind):
            raise SettingError(s, value, TYPE)
        return value
    if kind is str:
        return _check_text(s, value)
    number = value  # the value as a number; ``value`` stays as given, for the error
    if kind is float and isinstance(value, str) and text_numbers:
        try:
            number = float(value)
        except ValueError:
            raise SettingError(s, value, TYPE) from None
    if isinstance(number, bool) or not isinstance(number, int if kind is int else (int, float)):
        raise SettingError(s, value, TYPE)
    if kind is float:
        try:
            number = float(number)
        except OverflowError:  # 10**400 is an int YAML reads, but no float
            raise SettingError(s, value, FINITE) from None
        if not math.isfinite(number):
            raise SettingError(s, value, FINITE)
    low, high = s.spec.low, s.spec.high
    if low is not None and (number < low or (s.spec.low_open and number == low)):
        raise SettingError(s, value, RANGE)
    if high is not None and (number > high or (s.spec.high_open and number == high)):
        raise SettingError(s, value, RANGE)
    return number


@functools.cache
def _item(kind: Any) -> Any:
    """The type of a list setting's entries (``tuple[int, ...]``: int); None for any other kind."""
    return typing.get_args(kind)[0] if typing.get_origin(kind) is tuple else None


def _check_text(s: Setting, value: Any) -> str:
    if not isinstance(value, str):
        raise SettingError(s, value, TYPE)
    choices = choices_of(s)
    if choices:
        if value not in choices:
            raise SettingError(s, value, RANGE)
        return value
    if "\x00" in value:
        raise SettingError(s, value, NUL)
    if (not s.spec.blank and not value.strip()) or (s.spec.max_length is not None and len(value) > s.spec.max_length):
        raise SettingError(s, value, RANGE)
    return value
