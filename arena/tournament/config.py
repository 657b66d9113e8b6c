"""The tournament file: YAML in, validated dataclasses out.

Every mistake is reported as one :class:`ConfigError` naming the file, the key (``participants[3].
checkpoint``) and what was expected, before a single game is played — a league that stops after an
hour because of a typo in its last participant wastes the hour. Relative paths (``output``,
``checkpoint``, ``checkpoints``) are resolved against the YAML file's folder, so a league file means
the same thing whatever directory it is run from.
"""

from __future__ import annotations

import glob
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from arena.env.config import EnvConfig

Format = Literal["round-robin", "gauntlet"]
FORMATS: tuple[str, ...] = ("round-robin", "gauntlet")
TOP_KEYS = ("name", "output", "seed", "device", "max_envs", "games_per_pairing", "format", "candidates",
            "env", "rating", "participants")
PARTICIPANT_KEYS = ("name", "agent", "params", "checkpoint", "checkpoints")
PARTICIPANT_FORMS = ("an agent name, 'AGENT:CHECKPOINT', or a mapping with 'agent' and optionally 'name', "
                     "'params' and one of 'checkpoint' / 'checkpoints' (a glob)")


class ConfigError(ValueError):
    """A tournament file that cannot be played; ``str()`` is the one line the user sees."""

    def __init__(self, file: str | os.PathLike[str] | None, key: str, message: str) -> None:
        self.file, self.key, self.message = (str(file) if file is not None else "<config>"), key, message
        super().__init__(f"{self.file}: {key}: {message}" if key else f"{self.file}: {message}")


@dataclass(frozen=True)
class RatingConfig:
    """TrueSkill settings (the ``trueskill`` package's names and defaults) and the bootstrap size."""

    mu: float = 25.0  # prior mean skill
    sigma: float = 25.0 / 3.0  # prior uncertainty
    beta: float = 25.0 / 6.0  # performance noise: a skill gap of beta wins about 76 % of games
    tau: float = 25.0 / 300.0  # dynamics: sigma grows by this before each game, so ratings can move
    draw_probability: float = 0.1  # prior share of draws, sets the draw margin
    bootstrap_rounds: int = 1000  # resamples for the Bradley-Terry/Elo confidence interval


@dataclass(frozen=True)
class ParticipantSpec:
    """One player of the league as the file describes it (nothing loaded yet)."""

    name: str  # display name, unique in the league
    agent: str  # agent name in the registry (or an alias)
    params: Mapping[str, Any] = field(default_factory=dict)  # keyword parameters for create()/load()
    checkpoint: Path | None = None  # absolute path, for agents loaded from a file
    key: str = ""  # where it came from in the file, for error messages: "participants[2]"


@dataclass(frozen=True)
class TournamentConfig:
    """A validated tournament file."""

    name: str
    output: Path
    participants: tuple[ParticipantSpec, ...]
    seed: int = 0
    device: str = "auto"
    max_envs: int = 16384
    games_per_pairing: int = 256
    format: Format = "round-robin"
    candidates: tuple[str, ...] = ()  # display names of the gauntlet's candidates (patterns expanded)
    env: Mapping[str, Any] = field(default_factory=dict)  # EnvConfig overrides
    rating: RatingConfig = field(default_factory=RatingConfig)
    file: Path | None = None
    warnings: tuple[str, ...] = ()  # things worth saying that do not stop the league (empty globs)

    def with_device(self, device: str | None) -> "TournamentConfig":
        return self if device is None else replace(self, device=device)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the run record in the results database."""
        return {
            "name": self.name, "output": str(self.output), "seed": self.seed, "device": self.device,
            "max_envs": self.max_envs, "games_per_pairing": self.games_per_pairing, "format": self.format,
            "candidates": list(self.candidates), "env": dict(self.env), "rating": vars(self.rating).copy(),
            "participants": [{"name": p.name, "agent": p.agent, "params": dict(p.params),
                              "checkpoint": str(p.checkpoint) if p.checkpoint else None} for p in self.participants],
            "file": str(self.file) if self.file else None,
        }


# -- loading ---------------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> TournamentConfig:
    """Read and validate a tournament file; raises :class:`ConfigError`."""
    import yaml

    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(file, "", "no such file; expected a tournament YAML file") from None
    except OSError as exc:
        raise ConfigError(file, "", f"cannot be read ({exc.strerror or exc})") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        from arena.agents import head

        problem = getattr(exc, "problem", None) or head(str(exc)) or type(exc).__name__
        raise ConfigError(file, "", f"not valid YAML ({where}{problem})") from None
    return parse_config(data, file)


def parse_config(data: Any, file: str | os.PathLike[str] | None = None) -> TournamentConfig:
    """Validate already-parsed YAML data. ``file`` anchors relative paths (the cwd when None)."""
    fpath = Path(file) if file is not None else None
    base = fpath.resolve().parent if fpath is not None else Path.cwd()
    err = _Errors(fpath)
    if not isinstance(data, Mapping):
        raise err("", f"expected a mapping of settings at the top level, got {_kind(data)}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise err(str(unknown[0]), f"unknown key; expected one of: {', '.join(TOP_KEYS)}{_close(unknown[0], TOP_KEYS)}")

    name = _get(data, "name", str, err, fpath.stem if fpath is not None else "tournament")
    if not name.strip():
        raise err("name", "expected a non-empty string")
    output = _get(data, "output", str, err, f"reports/{name}")
    seed = _get(data, "seed", int, err, 0)
    device = _get(data, "device", str, err, "auto")
    max_envs = _get(data, "max_envs", int, err, 16384)
    if max_envs < 1:
        raise err("max_envs", f"expected a positive integer, got {max_envs}")
    games = _get(data, "games_per_pairing", int, err, 256)
    if games < 2 or games % 2:
        raise err("games_per_pairing", f"expected an even integer >= 2 (half the games from each side), got {games}")
    fmt = _get(data, "format", str, err, "round-robin")
    if fmt not in FORMATS:
        raise err("format", f"expected one of {', '.join(FORMATS)}, got {fmt!r}")
    env = _get(data, "env", Mapping, err, {}) or {}
    _check_env(env, err)
    rating = _rating(data.get("rating"), err)

    warnings: list[str] = []
    raw_participants = data.get("participants")
    if not isinstance(raw_participants, list) or not raw_participants:
        raise err("participants", f"expected a non-empty list of participants ({PARTICIPANT_FORMS}), "
                                  f"got {_kind(raw_participants)}")
    participants: list[ParticipantSpec] = []
    for i, entry in enumerate(raw_participants):
        participants.extend(_participants(entry, f"participants[{i}]", base, err, warnings))
    seen: dict[str, str] = {}
    for p in participants:
        if p.name in seen:
            raise err(p.key, f"duplicate participant name {p.name!r} (also {seen[p.name]}); "
                             f"expected unique names — give one a 'name'")
        seen[p.name] = p.key

    candidates: tuple[str, ...] = ()
    raw_candidates = data.get("candidates")
    if fmt == "gauntlet":
        candidates = _candidates(raw_candidates, [p.name for p in participants], err, warnings)
    elif raw_candidates is not None:
        raise err("candidates", "only used with format: gauntlet; remove it or set format: gauntlet")
    if len(participants) < 2:
        raise err("participants", f"expected at least 2 participants after expanding globs, got {len(participants)}"
                                  + (f" ({'; '.join(warnings)})" if warnings else ""))

    return TournamentConfig(
        name=name, output=(base / output).resolve() if not os.path.isabs(output) else Path(output),
        participants=tuple(participants), seed=seed, device=device, max_envs=max_envs, games_per_pairing=games,
        format=fmt,  # type: ignore[arg-type]
        candidates=candidates, env=dict(env), rating=rating, file=fpath, warnings=tuple(warnings),
    )


# -- pieces ------------------------------------------------------------------------------------------


class _Errors:
    def __init__(self, file: Path | None) -> None:
        self.file = file

    def __call__(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.file, key, message)


_TYPE_NAMES = {str: "a string", int: "an integer", float: "a number", bool: "true or false", Mapping: "a mapping",
               list: "a list"}


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {value!r}"


def _get(data: Mapping[str, Any], key: str, typ: type, err: _Errors, default: Any, prefix: str = "") -> Any:
    """``data[key]`` checked against ``typ`` (an int is a fine float; a bool is never a number)."""
    if key not in data or data[key] is None:
        return default
    value = data[key]
    ok = isinstance(value, typ) and not (typ in (int, float) and isinstance(value, bool))
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        value, ok = float(value), True
    if not ok:
        raise err(prefix + key, f"expected {_TYPE_NAMES.get(typ, typ.__name__)}, got {_kind(value)}")
    return value


def _close(word: str, options: tuple[str, ...] | list[str]) -> str:
    import difflib

    match = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _check_env(env: Mapping[str, Any], err: _Errors) -> None:
    from arena.env.config import EnvConfig

    try:
        EnvConfig.from_dict(env)
    except (ValueError, TypeError) as exc:
        raise err("env", f"{exc}") from None


def _rating(raw: Any, err: _Errors) -> RatingConfig:
    if raw is None:
        return RatingConfig()
    if not isinstance(raw, Mapping):
        raise err("rating", f"expected a mapping with some of {', '.join(vars(RatingConfig()))}, got {_kind(raw)}")
    known = tuple(vars(RatingConfig()))
    for key in raw:
        if key not in known:
            raise err(f"rating.{key}", f"unknown key; expected one of: {', '.join(known)}{_close(key, known)}")
    values = {k: _get(raw, k, int if k == "bootstrap_rounds" else float, err, getattr(RatingConfig(), k), "rating.")
              for k in known}
    for k in ("sigma", "beta"):
        if not values[k] > 0 or not math.isfinite(values[k]):
            raise err(f"rating.{k}", f"expected a positive number, got {values[k]}")
    if not math.isfinite(values["mu"]):
        raise err("rating.mu", f"expected a finite number, got {values['mu']}")
    if not values["tau"] >= 0:
        raise err("rating.tau", f"expected a number >= 0, got {values['tau']}")
    if not 0.0 < values["draw_probability"] < 1.0:  # TrueSkill cannot rate a draw it deems impossible
        raise err("rating.draw_probability", f"expected a number in (0, 1), got {values['draw_probability']}")
    if values["bootstrap_rounds"] < 0:
        raise err("rating.bootstrap_rounds", f"expected an integer >= 0 (0 turns the interval off), "
                                             f"got {values['bootstrap_rounds']}")
    return RatingConfig(**values)


def _participants(entry: Any, key: str, base: Path, err: _Errors, warnings: list[str]) -> list[ParticipantSpec]:
    """One list entry → zero (an empty glob), one or many participants."""
    if isinstance(entry, str):
        from arena.agents import AgentSpecError, parse_spec

        if not entry.strip():
            raise err(key, f"expected {PARTICIPANT_FORMS}, got an empty string")
        try:
            agent, path = parse_spec(entry)
        except AgentSpecError as exc:  # 'ppo:' without a path
            raise err(key, str(exc)) from None
        if agent is None:  # a bare path: the league file names the agent, it does not open files to find out
            raise err(key, f"{entry!r}: expected AGENT:CHECKPOINT, e.g. 'ppo:{path}'")
        entry = {"agent": agent} if path is None else {"agent": agent, "checkpoint": path}
    if not isinstance(entry, Mapping):
        raise err(key, f"expected {PARTICIPANT_FORMS}, got {_kind(entry)}")
    for k in entry:
        if k not in PARTICIPANT_KEYS:
            raise err(f"{key}.{k}", f"unknown key; expected one of: {', '.join(PARTICIPANT_KEYS)}"
                                    f"{_close(k, PARTICIPANT_KEYS)}")
    if "agent" not in entry:
        raise err(f"{key}.agent", "missing; expected the agent's name (see `arena agents`)")
    agent = _get(entry, "agent", str, err, "", key + ".")
    if not agent.strip():
        raise err(f"{key}.agent", "expected a non-empty agent name")
    name = _get(entry, "name", str, err, None, key + ".")
    params = _get(entry, "params", Mapping, err, {}, key + ".")
    for pk in params:
        if not isinstance(pk, str):
            raise err(f"{key}.params", f"expected parameter names as strings, got {pk!r}")
    if "checkpoint" in entry and "checkpoints" in entry:
        raise err(key, "expected one of 'checkpoint' (a file) or 'checkpoints' (a glob), not both")

    if "checkpoints" in entry:
        pattern = _get(entry, "checkpoints", str, err, "", key + ".")
        full = pattern if os.path.isabs(pattern) else str(base / pattern)
        files = sorted(Path(f).resolve() for f in glob.glob(full, recursive=True) if os.path.isfile(f))
        if not files:
            warnings.append(f"{key}.checkpoints: {pattern!r} matches no file yet; no participant added")
            return []
        labels = _labels(files)
        prefix = name if name is not None else agent
        return [ParticipantSpec(f"{prefix}:{label}", agent, dict(params), f, f"{key} ({f.name})")
                for f, label in zip(files, labels)]

    checkpoint = None
    if "checkpoint" in entry:
        raw = _get(entry, "checkpoint", str, err, "", key + ".")
        checkpoint = (base / raw).resolve() if not os.path.isabs(raw) else Path(raw)
        if not checkpoint.is_file():
            problem = "not a file" if checkpoint.exists() else "no such file"
            raise err(f"{key}.checkpoint", f"{problem}: {raw} (looked at {checkpoint}); expected an existing "
                                           f"checkpoint file, relative to the tournament file's folder")
    if name is None:
        name = agent if checkpoint is None else f"{agent}:{checkpoint.with_suffix('').name}"
    elif not name.strip():
        raise err(f"{key}.name", "expected a non-empty display name")
    return [ParticipantSpec(name, agent, dict(params), checkpoint, key)]


def _labels(files: list[Path]) -> list[str]:
    """Short unique labels for globbed files: paths below their common folder, without the suffix."""
    if len(files) == 1:
        return [files[0].with_suffix("").name]
    common = Path(os.path.commonpath([str(f.parent) for f in files]))
    return [f.with_suffix("").relative_to(common).as_posix() for f in files]


def _candidates(raw: Any, names: list[str], err: _Errors, warnings: list[str]) -> tuple[str, ...]:
    """Gauntlet candidates: display names or fnmatch patterns (``"ppo:*"``) over the participants."""
    import fnmatch

    if raw is None:
        raise err("candidates", "missing; expected a list of participant names (or patterns such as "
                                "'ppo:*') that play everyone else in a gauntlet")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise err("candidates", f"expected a non-empty list of participant names, got {_kind(raw)}")
    chosen: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, str):
            raise err(f"candidates[{i}]", f"expected a participant name, got {_kind(item)}")
        if any(c in item for c in "*?["):
            matched = [n for n in names if fnmatch.fnmatchcase(n, item)]
            if not matched:
                warnings.append(f"candidates[{i}]: pattern {item!r} matches no participant")
        elif item in names:
            matched = [item]
        else:
            raise err(f"candidates[{i}]", f"unknown participant {item!r}; expected one of: {', '.join(names)}"
                                          f"{_close(item, names)}")
        chosen.extend(n for n in matched if n not in chosen)
    if not chosen:
        raise err("candidates", "no participant matched; expected at least one candidate"
                                + (f" ({'; '.join(warnings)})" if warnings else ""))
    if len(chosen) == len(names):
        raise err("candidates", "every participant is a candidate, so nobody is left to play against; "
                                "expected some participants outside the candidates (or format: round-robin)")
    return tuple(n for n in names if n in chosen)
