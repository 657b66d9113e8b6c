"""Settings declared once, as dataclass fields, and the one check of a value against its declaration.

A setting is a dataclass field made with :func:`setting`: its default, its help, and what a value may be
(a range with open or closed ends, the choices, a length, a unit) go into the field's metadata as a
:class:`Spec`. :func:`declared` reads a class's settings back (once per class), and :func:`check_value`
checks one value against one of them. The env's constants (``arena.env.config``), the league file
(``arena.tournament.league_config``) and the trainers' settings (``arena.training.settings``) are all
declared, read (:func:`read_section`) and checked this way, and say a refused value in one sentence,
:class:`SettingError`'s: ``WHERE: KEY: expected WHAT, got VALUE`` (``--env: EnvConfig.dt: expected a
number in [0.01, 60] s, got 1e-09``, ``league.yaml: seed: expected …``, ``--set …: run.num_envs:
expected …``).

Low in the package: it imports nothing of arena, nor click or torch, so the env can use it.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import types
import typing
from collections.abc import Iterable, Mapping
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


def bound(value: float) -> str:
    """A bound as its declaration writes it: an int in full (10000000), a power of two from 2**24 as one
    (2**60, 2**62 - 1), a float in short form (1e+06, 0.01)."""
    if not isinstance(value, int):
        return f"{value:g}"
    for near, text in ((value, ""), (value + 1, " - 1")):
        if near >= 2**24 and near & (near - 1) == 0:
            return f"2**{near.bit_length() - 1}{text}"
    return str(value)


def interval(spec: Spec) -> str:
    """The range of a setting bounded at both ends, in interval notation: ``[0.01, 60]``, ``(0, 3600]``."""
    return (f"{'(' if spec.low_open else '['}{bound(typing.cast(float, spec.low))}, "
            f"{bound(typing.cast(float, spec.high))}{')' if spec.high_open else ']'}")


def expected(s: Setting) -> str:
    """What a value of ``s`` must be, in words: the one wording of every refused setting (env, league,
    trainer) and of the docs tables. Its ``expect`` where the declaration gives one."""
    kind, optional = base_kind(s.kind)
    choices = choices_of(s)
    if s.spec.expect:
        return s.spec.expect
    if choices:
        text = f"one of {', '.join(choices)}" if len(choices) > 1 else choices[0]
    elif kind is bool:
        text = "true or false"
    elif kind is Mapping:
        text = "a mapping"
    elif typing.get_origin(kind) is tuple:
        item = typing.get_args(kind)[0]
        count = f"{s.spec.min_items} to {s.spec.max_items}" if s.spec.min_items else f"at most {s.spec.max_items}"
        text = f"a list of {count} {'names' if item is str else 'integers'}"
        if item is int and s.spec.low is not None:
            text += f", each {_number_range(s.spec)}"
    elif kind is str:
        text = ("a string" if s.spec.blank else "a non-empty string") + (
            f" of at most {s.spec.max_length} characters" if s.spec.max_length is not None else "")
    else:
        text = (("an integer" if kind is int else "a number") + " " + _number_range(s.spec)).rstrip()
        if s.spec.low == 0 and s.spec.low_open and s.spec.high is None:
            text = "a positive " + text.split()[1]
        text += f" {s.spec.unit}" if s.spec.unit else ""
    return text + (", or null" if optional else "")


def _number_range(spec: Spec) -> str:
    """``in [0.01, 60]`` with both bounds, ``>= 1`` or ``<= 5`` with one, "" with none."""
    if spec.low is not None and spec.high is not None:
        return f"in {interval(spec)}"
    if spec.low is not None:
        return f"{'>' if spec.low_open else '>='} {bound(spec.low)}"
    if spec.high is not None:
        return f"{'<' if spec.high_open else '<='} {bound(spec.high)}"
    return ""


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
    """A value its setting refuses, in the one sentence every reader says: ``KEY: expected WHAT, got
    VALUE`` (``where`` before it names the file or option). ``problem`` says how (:data:`TYPE`,
    :data:`FINITE`, :data:`NUL` or :data:`RANGE`) and ``value`` is the value as given; :attr:`detail`
    is the sentence without the key, for a reader that names the key its own way (``env.dt``)."""

    def __init__(self, setting: Setting, value: Any, problem: str) -> None:
        self.setting, self.value, self.problem = setting, value, problem
        self.detail = f"expected {expected(setting)}, got {shown(value, 200)}"
        super().__init__(f"{setting.key}: {self.detail}"[:300])


class UnknownSettingError(ValueError):
    """A key (or section) its reader does not declare; ``key`` names it. A checkpoint holding one was
    written by another version of its trainer, which is not the same as a damaged file."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


def nearest(word: str, known: Iterable[str]) -> str:
    """``; did you mean NAME?`` for the known name nearest ``word``, else ``; expected one of …``."""
    names = [str(k) for k in known]
    close = difflib.get_close_matches(str(word), names, n=1)
    return f"; did you mean {close[0]}?" if close else f"; expected one of {', '.join(names)}"[:300]


def read_section(cls: type, data: Any, where: str, section: str = "", *, skip: Iterable[str] = ()) -> dict[str, Any]:
    """The values a mapping gives for the settings dataclass ``cls`` declares, by name, each checked by
    :func:`check_value`: the one reader of the env's settings, a league file's and a trainer's sections.

    ``where`` names the file or option for the messages. A key ``cls`` does not declare is refused with
    the nearest one (:class:`UnknownSettingError`), a value its setting refuses with ``WHERE: KEY:
    expected WHAT, got VALUE`` (:class:`SettingError`, whose ``str()`` is the whole line); a key in
    ``skip`` is accepted and left out (what the caller computes itself). None is a value here: a
    setting that is optional takes it, another refuses it.
    """
    label = f"{where}: {section}" if section else where
    settings = {s.name: s for s in declared(cls, section)}
    if not isinstance(data, Mapping):
        raise ValueError(f"{label}: expected a mapping of settings, got {type(data).__name__}")
    skipped = set(skip)
    out: dict[str, Any] = {}
    for name, value in data.items():
        if name in skipped:
            continue
        if name not in settings:
            key = f"{section}.{name}" if section else str(name)
            keys = [f"{section}.{n}" if section else n for n in settings]
            raise UnknownSettingError(f"{where}: unknown setting {shown(key)}{nearest(key, keys)}"[:300], key)
        try:
            out[name] = check_value(settings[name], value)
        except SettingError as exc:
            exc.args = (f"{where}: {exc}"[:300],)
            raise
    return out


def check_value(s: Setting, value: Any) -> Any:
    """``value`` for setting ``s`` as the config holds it (an int given for a float is a float, a list for
    a tuple is a tuple); :class:`SettingError` otherwise. Text is never a number: arena's YAML reader
    reads ``1e-4`` as the number YAML 1.2 says it is (:mod:`arena.yaml_file`), so only quoted text is
    text."""
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
        return tuple(check_value(one, v) for v in value)
    if kind is bool or kind is Mapping:  # a mapping's entries are its reader's to check
        if not isinstance(value, kind):
            raise SettingError(s, value, TYPE)
        return value
    if kind is str:
        return _check_text(s, value)
    number = value  # the value as a number; ``value`` stays as given, for the error
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
