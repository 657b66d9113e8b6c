"""The search space of a sweep: a YAML file of settings that ``arena train`` takes, each with its distribution.

.. code-block:: yaml

    ppo.learning_rate: {type: loguniform, low: 1.0e-4, high: 1.0e-3}
    ppo.entropy_coef: {type: loguniform, low: 1.0e-4, high: 1.0e-2}
    ppo.n_epochs: {type: int, low: 2, high: 8}
    ppo.lr_schedule: {type: categorical, choices: [constant, adaptive]}

An entry may also sit in its section (``ppo: {learning_rate: {type: ...}}``). Every bound and choice is
checked as a value of its setting, by the check ``--config`` and ``--set`` use
(:func:`arena.declared_settings.check_value`), so a space can only propose values a run accepts.
Anything wrong is one :class:`SpaceError` line naming the file and the entry.
"""

from __future__ import annotations

import math
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.declared_settings import Setting, base_kind, check_value, expected, shown
from arena.training.settings import by_key, read_settings_data, unknown_key
from arena_ppo.train_config import default_config

KINDS = ("loguniform", "uniform", "int", "categorical")
FIELDS = {"loguniform": ("low", "high"), "uniform": ("low", "high"), "int": ("low", "high", "log"),
          "categorical": ("choices",)}
# Settings a sweep sets itself: each seed's run gets its seed, the budget and one thread.
RESERVED = {"run.seed": "the sweep trains each trial on its own seeds (--seeds, --seed-offset)",
            "run.max_steps": "every run trains for the sweep's budget (--budget)",
            "run.threads": "each run is one process of one thread"}
MAX_CHOICES = 64


class SpaceError(ValueError):
    """A space file that cannot be searched: one line naming the file and the entry."""


@dataclass(frozen=True)
class Dimension:
    """One searched setting: ``key`` (``ppo.learning_rate``) and its distribution."""

    key: str
    kind: str  # one of KINDS
    low: float | int | None = None
    high: float | int | None = None
    choices: tuple[Any, ...] = ()
    log: bool = False  # an int searched on a log scale

    def suggest(self, trial: Any) -> Any:
        """This dimension's value for an Optuna trial."""
        if self.kind == "categorical":
            return trial.suggest_categorical(self.key, list(self.choices))
        assert self.low is not None and self.high is not None  # a number's entry has both (read_entry)
        if self.kind == "int":
            return trial.suggest_int(self.key, int(self.low), int(self.high), log=self.log)
        return trial.suggest_float(self.key, float(self.low), float(self.high), log=self.kind == "loguniform")

    def to_dict(self) -> dict[str, Any]:
        """As the space file spells it (``sweep.json`` keeps it to tell a resumed sweep from another)."""
        if self.kind == "categorical":
            return {"type": self.kind, "choices": list(self.choices)}
        out: dict[str, Any] = {"type": self.kind, "low": self.low, "high": self.high}
        if self.log:
            out["log"] = True
        return out

    def describe(self) -> str:
        if self.kind == "categorical":
            return f"{self.key}: one of {', '.join(shown(c) for c in self.choices)}"
        scale = " (log scale)" if self.kind == "loguniform" or self.log else ""
        return f"{self.key}: {self.kind} {shown(self.low)} .. {shown(self.high)}{scale}"


def read_space(path: Path, algorithm: str = "ppo") -> list[Dimension]:
    """The dimensions of the space file ``path`` for ``arena train ALGORITHM``; :class:`SpaceError` naming
    the file and the entry for a malformed file, a setting the trainer does not take, a distribution it
    cannot search, or a bound or choice outside the setting's declared range."""
    where = f"space {path}"
    try:
        data = read_settings_data(path, where)
    except ValueError as exc:
        raise SpaceError(str(exc)) from None
    if not isinstance(data, Mapping) or not data:
        got = "an empty file" if data is None or data == {} else type(data).__name__
        raise SpaceError(f"{where}: expected a mapping of settings to distributions, e.g. "
                         f"'ppo.learning_rate: {{type: loguniform, low: 1.0e-4, high: 1.0e-3}}', got {got}")
    known = by_key(default_config(algorithm))
    sections = {k.split(".", 1)[0] for k in known}
    entries: list[tuple[str, Any]] = []
    for name, value in data.items():
        key = str(name)
        if "." not in key and key in sections and isinstance(value, Mapping) and "type" not in value:
            entries += [(f"{key}.{sub}", spec) for sub, spec in value.items()]  # a section of entries
        else:
            entries.append((key, value))
    dims: list[Dimension] = []
    seen: set[str] = set()
    for key, spec in entries:
        if key in seen:
            raise SpaceError(f"{where}: {key}: given twice")
        seen.add(key)
        dims.append(read_entry(key, spec, known, where))
    return dims


def read_entry(key: str, spec: Any, known: Mapping[str, Setting], where: str) -> Dimension:
    """One entry of a space file, checked against its setting's declaration."""
    if key not in known or known[key].spec.derived:
        takes = {k: s for k, s in known.items() if not s.spec.derived}
        if key in known:
            raise SpaceError(f"{where}: {key}: computed by the trainer (from the env and the other settings), "
                             f"not set")
        raise SpaceError(f"{unknown_key(key, takes, where)} (the settings arena train takes: docs/training.md)")
    if key in RESERVED:
        raise SpaceError(f"{where}: {key}: cannot be searched: {RESERVED[key]}")
    s = known[key]
    at = f"{where}: {key}"
    if not isinstance(spec, Mapping):
        raise SpaceError(f"{at}: expected a mapping such as {{type: uniform, low: 0.1, high: 0.3}}, got "
                         f"{shown(spec)}")
    kind = spec.get("type")
    if kind not in KINDS:
        raise SpaceError(f"{at}: type: expected {', '.join(KINDS[:-1])} or {KINDS[-1]}, got {shown(kind)}")
    extra = [str(k) for k in spec if k != "type" and k not in FIELDS[kind]]
    if extra:
        raise SpaceError(f"{at}: {extra[0]}: not a field of a {kind} entry (it takes {', '.join(FIELDS[kind])})")
    missing = [f for f in FIELDS[kind] if f != "log" and f not in spec]
    if missing:
        raise SpaceError(f"{at}: a {kind} entry needs {' and '.join(missing)}")
    setting_kind, _ = base_kind(s.kind)
    if typing.get_origin(setting_kind) is tuple:
        raise SpaceError(f"{at}: takes a list ({expected(s)}); a space searches settings of one value")
    if kind == "categorical":
        return Dimension(key, kind, choices=read_choices(s, spec["choices"], at))
    if kind == "int" and setting_kind is not int:
        raise SpaceError(f"{at}: type int: the setting takes {expected(s)}; "
                         f"{'use uniform or loguniform' if setting_kind is float else 'use categorical'}")
    if kind in ("uniform", "loguniform") and setting_kind is not float:
        what = "use int" if setting_kind is int else "use categorical"
        raise SpaceError(f"{at}: type {kind}: the setting takes {expected(s)}; {what}")
    low, high = (read_bound(s, spec[name], at, name, kind) for name in ("low", "high"))
    if not low < high:
        raise SpaceError(f"{at}: low {shown(low)} must be below high {shown(high)}")
    log = spec.get("log", False)
    if not isinstance(log, bool):
        raise SpaceError(f"{at}: log: expected true or false, got {shown(log)}")
    if (kind == "loguniform" or log) and low <= 0:
        raise SpaceError(f"{at}: low {shown(low)}: a log scale needs a low above 0")
    return Dimension(key, kind, low, high, log=log)


def read_bound(s: Setting, value: Any, at: str, name: str, kind: str) -> float | int:
    """``low`` or ``high``, a value of the setting (``1e-4`` spelled as text is a number, as --config reads it)."""
    if kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
        raise SpaceError(f"{at}: {name}: expected an int, got {shown(value)}")
    checked = setting_value(s, value, f"{at}: {name}")
    if isinstance(checked, float) and not math.isfinite(checked):
        raise SpaceError(f"{at}: {name}: expected a finite number, got {shown(value)}")
    return typing.cast("float | int", checked)


def setting_value(s: Setting, value: Any, what: str) -> Any:
    """``value`` as the setting holds it (:func:`check_value`), or a :class:`SpaceError` naming ``what``."""
    try:
        return check_value(s, value)
    except ValueError as exc:
        raise SpaceError(f"{what} {shown(value)} is not a value of the setting: "
                         f"{str(exc).removeprefix(s.key + ': ')}") from None


def read_choices(s: Setting, choices: Any, at: str) -> tuple[Any, ...]:
    """A categorical entry's choices, each a value of the setting."""
    if not isinstance(choices, list) or not choices:
        raise SpaceError(f"{at}: choices: expected a non-empty list of values, got {shown(choices)}")
    if len(choices) > MAX_CHOICES:
        raise SpaceError(f"{at}: choices: {len(choices)} of them; at most {MAX_CHOICES}")
    out: list[Any] = []
    for choice in choices:
        if choice is not None and not isinstance(choice, (bool, int, float, str)):
            raise SpaceError(f"{at}: choices: {shown(choice)}: expected a number, a string, true or false")
        value = setting_value(s, choice, f"{at}: choice")
        if value in out and any(type(value) is type(v) for v in out if v == value):
            raise SpaceError(f"{at}: choices: {shown(choice)} given twice")
        out.append(value)
    return tuple(out)
