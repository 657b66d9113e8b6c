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
from typing import Any, Literal

from arena.agents import DEFAULT_POLICY, POLICIES
from arena.tournament.sprt import SPRTConfig

Format = Literal["round-robin", "gauntlet"]
FORMATS: tuple[str, ...] = ("round-robin", "gauntlet")
TOP_KEYS = ("name", "output", "seed", "device", "max_envs", "games_per_pairing", "format", "candidates",
            "time_per_move", "env", "rating", "sprt", "replays", "references", "participants")

# Limits. A league file is small hand-written text; these are far beyond any real one and exist so that
# a hostile or mistyped file is refused in a second, naming its key, instead of hanging or crashing
# after games are stored (see docs/hostile-input.md). The file's own size, nesting and alias expansion
# are bounded where every YAML file is read, in arena.yaml_file.
MAX_NAME = 200  # characters of the league's and each participant's display name
MAX_SEED = 2**63 - 1
MAX_ENVS = 1 << 22  # battles stepped at once
MAX_GAMES_PER_PAIRING = 100_000
MAX_TOTAL_GAMES = 10_000_000  # games of the whole schedule: its game numbers are held in memory
MAX_TIME_PER_MOVE = 3600.0  # s
MAX_REPLAYS_PER_PAIRING = 16  # notable games recorded per pairing (each a pair of files)
MAX_BOOTSTRAP_ROUNDS = 10_000
# TrueSkill settings, relative to beta (the scale of the model): the defaults are sigma = 2·beta and
# tau = beta/50. A prior sigma far above beta or a tau near beta lets the first or the last games decide
# the ranking (measured: tau = beta inverts neighbours in most seeded orders; sigma = 1e12 ranks at random).
BETA_RANGE = (1e-3, 1e6)
MAX_ABS_MU = 1e6
MAX_SIGMA_PER_BETA = 20.0
MAX_TAU_PER_BETA = 0.1
DRAW_PROBABILITY_RANGE = (1e-6, 0.99)
PARTICIPANT_KEYS = ("name", "agent", "params", "checkpoint", "checkpoints", "policy")
PARTICIPANT_FORMS = ("an agent name, 'AGENT:CHECKPOINT', or a mapping with 'agent' and optionally 'name', "
                     "'params', one of 'checkpoint' / 'checkpoints' (a glob) and 'policy'")



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
    # The Elo scale's fixed point: this participant's Elo is anchor_elo. Empty: the average of the
    # participants with mixed records (not unbeaten, not winless) is 1000.
    anchor: str = ""
    anchor_elo: float = 1000.0

    @classmethod
    def from_dict(cls, data: Any, file: str | os.PathLike[str] | None = None, key: str = "rating") -> "RatingConfig":
        """Validated settings; raises :class:`ConfigError` naming ``file`` and ``key.FIELD``. Used for the
        league file and again for settings read back from a results database."""
        fpath = Path(file) if file is not None else None
        return _rating(data, _Errors(fpath), key)


@dataclass(frozen=True)
class ParticipantSpec:
    """One player of the league as the file describes it (nothing loaded yet)."""

    name: str  # display name, unique in the league
    agent: str  # agent name in the registry (or an alias)
    params: Mapping[str, Any] = field(default_factory=dict)  # keyword parameters for create()/load()
    checkpoint: Path | None = None  # absolute path, for agents loaded from a file
    key: str = ""  # where it came from in the file, for error messages: "participants[2]"
    obs_mode: str | None = None  # the observation its checkpoint reads, when the league's env names none
    policy: str | None = None  # a checkpoint's: one of POLICIES; None for agents without a checkpoint


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
    references: tuple[str, ...] = ()  # display names whose mutual games fix the reference rating's scale
    time_per_move: float | None = None  # s per act() call over a batch; over it, the participant forfeits
    env: Mapping[str, Any] = field(default_factory=dict)  # EnvConfig overrides
    rating: RatingConfig = field(default_factory=RatingConfig)
    sprt: SPRTConfig | None = None  # gauntlets: stop early once every candidate's test is decided
    replays: int = 0  # notable games recorded per pairing once the league is rated (arena.tournament.replays)
    file: Path | None = None
    warnings: tuple[str, ...] = ()  # things worth saying that do not stop the league (empty globs)

    def with_device(self, device: str | None) -> "TournamentConfig":
        return self if device is None else replace(self, device=device)

    def with_replays(self, replays: int | None) -> "TournamentConfig":
        return self if replays is None else replace(self, replays=replays)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the run record in the results database."""
        return {
            "name": self.name, "output": str(self.output), "seed": self.seed, "device": self.device,
            "max_envs": self.max_envs, "games_per_pairing": self.games_per_pairing, "format": self.format,
            "candidates": list(self.candidates), "references": list(self.references),
            "time_per_move": self.time_per_move, "env": dict(self.env),
            "rating": vars(self.rating).copy(), "sprt": vars(self.sprt).copy() if self.sprt else None,
            "replays": self.replays,
            "participants": [{"name": p.name, "agent": p.agent, "params": dict(p.params),
                              "checkpoint": str(p.checkpoint) if p.checkpoint else None, "policy": p.policy}
                             for p in self.participants],
            "file": str(self.file) if self.file else None,
        }


# -- loading ---------------------------------------------------------------------------------------


def load_config(path: str | os.PathLike[str]) -> TournamentConfig:
    """Read and validate a tournament file; raises :class:`ConfigError`. The YAML is read as every YAML
    file is (:func:`arena.yaml_file.read_yaml_file`: size, nesting, alias expansion and duplicate keys
    bounded before anything walks it)."""
    from arena.yaml_file import YamlFileError, read_yaml_file

    file = Path(path)
    try:
        data = read_yaml_file(file, "tournament YAML file")
    except YamlFileError as exc:
        raise ConfigError(file, "", exc.reason) from None
    except FileNotFoundError:
        raise ConfigError(file, "", "no such file; expected a tournament YAML file") from None
    except OSError as exc:  # a folder, no permission, a NUL in the path
        raise ConfigError(file, "", f"cannot be read ({_os_reason(exc)}); expected a tournament YAML file") from None
    return parse_config(data, file)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def parse_config(data: Any, file: str | os.PathLike[str] | None = None) -> TournamentConfig:
    """Validate already-parsed YAML data. ``file`` anchors relative paths (the cwd when None)."""
    fpath = Path(file) if file is not None else None
    base = fpath.resolve().parent if fpath is not None else Path.cwd()
    err = _Errors(fpath)
    if not isinstance(data, Mapping):
        raise err("", f"expected a mapping of settings at the top level, got {_kind(data)}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise err(_keyname(unknown[0]),
                  f"unknown key; expected one of: {', '.join(TOP_KEYS)}{_close(str(unknown[0]), TOP_KEYS)}")

    name = _get(data, "name", str, err, fpath.stem if fpath is not None else "tournament")
    if not name.strip() or len(name) > MAX_NAME:
        raise err("name", f"expected a non-empty string of at most {MAX_NAME} characters, got {_short(name)}")
    output = _get(data, "output", str, err, f"reports/{name}")
    if not output.strip():
        raise err("output", "expected a folder path, got an empty string")
    seed = _get(data, "seed", int, err, 0)
    if not 0 <= seed <= MAX_SEED:
        raise err("seed", f"expected an integer in [0, 2**63 - 1], got {_short(seed)}")
    device = _get(data, "device", str, err, "auto")
    max_envs = _get(data, "max_envs", int, err, 16384)
    if not 1 <= max_envs <= MAX_ENVS:
        raise err("max_envs", f"expected a positive integer up to {MAX_ENVS}, got {_short(max_envs)}")
    games = _get(data, "games_per_pairing", int, err, 256)
    if not 2 <= games <= MAX_GAMES_PER_PAIRING or games % 2:
        raise err("games_per_pairing", f"expected an even integer in [2, {MAX_GAMES_PER_PAIRING}] (half the games "
                                       f"from each side), got {_short(games)}")
    fmt = _get(data, "format", str, err, "round-robin")
    if fmt not in FORMATS:
        raise err("format", f"expected one of {', '.join(FORMATS)}, got {_short(fmt)}")
    time_per_move = _get(data, "time_per_move", float, err, None)
    if time_per_move is not None and not (0 < time_per_move <= MAX_TIME_PER_MOVE):
        raise err("time_per_move", f"expected seconds per move in (0, {MAX_TIME_PER_MOVE:g}] (or leave it out for no "
                                   f"limit), got {time_per_move!r}")
    replays = _get(data, "replays", int, err, 0)
    if not 0 <= replays <= MAX_REPLAYS_PER_PAIRING:
        raise err("replays", f"expected notable games to record per pairing, an integer in [0, "
                             f"{MAX_REPLAYS_PER_PAIRING}], got {_short(replays)}")
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

    if rating.anchor and rating.anchor not in seen:
        raise err("rating.anchor", f"expected the name of a participant, got {_short(rating.anchor)}"
                                   f"{_close(rating.anchor, list(seen))}")

    names = [p.name for p in participants]
    candidates: tuple[str, ...] = ()
    raw_candidates = data.get("candidates")
    if fmt == "gauntlet":
        candidates = _candidates(raw_candidates, names, err, warnings)
    elif raw_candidates is not None:
        raise err("candidates", "only used with format: gauntlet; remove it or set format: gauntlet")
    references = _references(data.get("references"), names, candidates, err, warnings)
    sprt = _sprt(data.get("sprt"), err)
    if sprt is not None and fmt != "gauntlet":
        raise err("sprt", "only used with format: gauntlet (it tests candidates); remove it or set format: gauntlet")
    if len(participants) < 2:
        raise err("participants", f"expected at least 2 participants after expanding globs, got {len(participants)}"
                                  + (f" ({'; '.join(warnings)})" if warnings else ""))
    env, participants = _trained_settings(env, participants, err)
    n, c, r = len(participants), len(candidates), len(references)
    total = games * (c * (n - c) + r * (r - 1) // 2 if fmt == "gauntlet" else n * (n - 1) // 2)
    if total > MAX_TOTAL_GAMES:
        raise err("games_per_pairing", f"{games} games for each of the {total // games:,} pairings of {n} participants "
                                       f"is {total:,} games; expected at most {MAX_TOTAL_GAMES:,} in one league")

    return TournamentConfig(
        name=name, output=(base / output).resolve() if not os.path.isabs(output) else Path(output),
        participants=tuple(participants), seed=seed, device=device, max_envs=max_envs, games_per_pairing=games,
        format=fmt, candidates=candidates, references=references, time_per_move=time_per_move, env=dict(env),
        rating=rating, sprt=sprt, replays=replays,
        file=fpath,
        warnings=tuple(warnings),
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
    return f"{type(value).__name__} {_short(value)}"


def _short(value: Any) -> str:
    """``repr`` cut to one short line: a hostile value may be a megabyte long (or a 5000-digit int)."""
    try:
        text = repr(value)
    except ValueError:  # an int too long to print
        text = f"<a {value.bit_length()}-bit integer>" if isinstance(value, int) else f"<{type(value).__name__}>"
    text = text.replace("\n", " ")
    return text if len(text) <= 80 else text[:77] + "..."


def _keyname(key: Any) -> str:
    """A key as it can appear in a one-line message."""
    return key if isinstance(key, str) and key.isprintable() and len(key) <= 80 else _short(key)


def _get(data: Mapping[str, Any], key: str, typ: type, err: _Errors, default: Any, prefix: str = "") -> Any:
    """``data[key]`` checked against ``typ`` (an int is a fine float; a bool is never a number)."""
    if key not in data or data[key] is None:
        return default
    value = data[key]
    ok = isinstance(value, typ) and not (typ in (int, float) and isinstance(value, bool))
    if typ is float and isinstance(value, int) and not isinstance(value, bool):
        try:
            value, ok = float(value), True
        except OverflowError:  # 10**400 is an int YAML reads, but no float
            raise err(prefix + key, f"expected a finite number, got {_short(value)}") from None
    if not ok:
        raise err(prefix + key, f"expected {_TYPE_NAMES.get(typ, typ.__name__)}, got {_kind(value)}")
    if isinstance(value, str) and "\x00" in value:  # paths and names reach the OS and SQLite
        raise err(prefix + key, f"expected a string without NUL characters, got {_short(value)}")
    if typ is float and not math.isfinite(value):
        raise err(prefix + key, f"expected a finite number, got {value!r}")
    return value


def _close(word: str, options: tuple[str, ...] | list[str]) -> str:
    import difflib

    match = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def _check_env(env: Mapping[str, Any], err: _Errors) -> None:
    from arena.env.config import EnvConfig, EnvConfigError

    for k in env:
        if not isinstance(k, str):
            raise err("env", f"expected setting names as strings, got {_short(k)}")
    try:
        EnvConfig.from_dict(env)
    except EnvConfigError as exc:
        raise err(f"env.{exc.key}" if exc.key else "env", exc.detail) from None
    except (ValueError, TypeError) as exc:
        raise err("env", str(exc)) from None


def _sprt(raw: Any, err: _Errors) -> SPRTConfig | None:
    if raw is None:
        return None
    known = tuple(vars(SPRTConfig()))
    if not isinstance(raw, Mapping):
        raise err("sprt", f"expected a mapping with some of {', '.join(known)}, got {_kind(raw)}")
    for k in raw:
        if k not in known:
            raise err(f"sprt.{_keyname(k)}", f"unknown key; expected one of: {', '.join(known)}{_close(str(k), known)}")
    v = {k: _get(raw, k, float, err, getattr(SPRTConfig(), k), "sprt.") for k in known}
    for k in ("elo0", "elo1"):
        if not abs(v[k]) <= 2000:
            raise err(f"sprt.{k}", f"expected an Elo difference in [-2000, 2000], got {v[k]!r}")
    if not v["elo0"] < v["elo1"]:
        raise err("sprt", f"expected elo0 < elo1, got elo0 {v['elo0']:g} and elo1 {v['elo1']:g}")
    for k in ("alpha", "beta"):
        if not 0 < v[k] < 0.5:
            raise err(f"sprt.{k}", f"expected an error rate in (0, 0.5), got {v[k]!r}")
    return SPRTConfig(**v)


def _rating(raw: Any, err: _Errors, key: str = "rating") -> RatingConfig:
    if raw is None:
        return RatingConfig()
    if not isinstance(raw, Mapping):
        raise err(key, f"expected a mapping with some of {', '.join(vars(RatingConfig()))}, got {_kind(raw)}")
    known = tuple(vars(RatingConfig()))
    for k in raw:
        if k not in known:
            raise err(f"{key}.{_keyname(k)}", f"unknown key; expected one of: {', '.join(known)}"
                                              f"{_close(str(k), known)}")
    types = {"bootstrap_rounds": int, "anchor": str}
    v = {k: _get(raw, k, types.get(k, float), err, getattr(RatingConfig(), k), key + ".") for k in known}
    if not abs(v["anchor_elo"]) <= 1e6:
        raise err(f"{key}.anchor_elo", f"expected a number in [-1e6, 1e6], got {v['anchor_elo']!r}")
    low, high = BETA_RANGE
    if not low <= v["beta"] <= high:
        raise err(f"{key}.beta", f"expected a number in [{low:g}, {high:g}], got {v['beta']!r}")
    if not abs(v["mu"]) <= MAX_ABS_MU:
        raise err(f"{key}.mu", f"expected a number in [-{MAX_ABS_MU:g}, {MAX_ABS_MU:g}], got {v['mu']!r}")
    if not 0 < v["sigma"] <= MAX_SIGMA_PER_BETA * v["beta"]:
        raise err(f"{key}.sigma", f"expected a positive number at most {MAX_SIGMA_PER_BETA:g}·beta "
                                  f"({MAX_SIGMA_PER_BETA * v['beta']:g}), got {v['sigma']!r}")
    if not 0 <= v["tau"] <= MAX_TAU_PER_BETA * v["beta"]:
        raise err(f"{key}.tau", f"expected a number >= 0 and at most {MAX_TAU_PER_BETA:g}·beta "
                                f"({MAX_TAU_PER_BETA * v['beta']:g}), got {v['tau']!r}")
    low, high = DRAW_PROBABILITY_RANGE  # TrueSkill cannot rate a draw it deems impossible (or certain)
    if not low <= v["draw_probability"] <= high:
        raise err(f"{key}.draw_probability", f"expected a number in [{low:g}, {high:g}], got {v['draw_probability']!r}")
    if not 0 <= v["bootstrap_rounds"] <= MAX_BOOTSTRAP_ROUNDS:
        raise err(f"{key}.bootstrap_rounds", f"expected an integer in [0, {MAX_BOOTSTRAP_ROUNDS}] (0 turns the "
                                             f"interval off), got {_short(v['bootstrap_rounds'])}")
    return RatingConfig(**v)


def _participants(entry: Any, key: str, base: Path, err: _Errors, warnings: list[str]) -> list[ParticipantSpec]:
    """One list entry → zero (an empty glob), one or many participants."""
    if isinstance(entry, str):
        from arena.agents import AgentSpecError, parse_spec

        if not entry.strip():
            raise err(key, f"expected {PARTICIPANT_FORMS}, got an empty string")
        if "\x00" in entry:
            raise err(key, f"expected a string without NUL characters, got {_short(entry)}")
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
            raise err(f"{key}.{_keyname(k)}", f"unknown key; expected one of: {', '.join(PARTICIPANT_KEYS)}"
                                            f"{_close(str(k), PARTICIPANT_KEYS)}")
    if "agent" not in entry:
        raise err(f"{key}.agent", "missing; expected the agent's name (see `arena agents`)")
    agent = _get(entry, "agent", str, err, "", key + ".")
    if not agent.strip():
        raise err(f"{key}.agent", "expected a non-empty agent name")
    name = _get(entry, "name", str, err, None, key + ".")
    if name is not None and len(name) > MAX_NAME:
        raise err(f"{key}.name", f"expected a non-empty display name of at most {MAX_NAME} characters, "
                                 f"got {_short(name)}")
    params = _get(entry, "params", Mapping, err, {}, key + ".")
    for pk in params:
        if not isinstance(pk, str):
            raise err(f"{key}.params", f"expected parameter names as strings, got {_short(pk)}")
    if "checkpoint" in entry and "checkpoints" in entry:
        raise err(key, "expected one of 'checkpoint' (a file) or 'checkpoints' (a glob), not both")
    policy = _get(entry, "policy", str, err, None, key + ".")
    if policy is not None and "checkpoint" not in entry and "checkpoints" not in entry:
        raise err(f"{key}.policy", "only a checkpoint plays by a policy; add 'checkpoint' or 'checkpoints', or "
                                   "remove 'policy'")
    if policy is not None and policy not in POLICIES:
        raise err(f"{key}.policy", f"expected one of {', '.join(POLICIES)}, got {_short(policy)}")
    if policy is None and ("checkpoint" in entry or "checkpoints" in entry):
        policy = DEFAULT_POLICY

    if "checkpoints" in entry:
        pattern = _get(entry, "checkpoints", str, err, "", key + ".")
        full = pattern if os.path.isabs(pattern) else str(base / pattern)
        files = sorted(Path(f).resolve() for f in glob.glob(full, recursive=True) if os.path.isfile(f))
        if not files:
            warnings.append(f"{key}.checkpoints: {pattern!r} matches no file yet; no participant added")
            return []
        labels = _labels(files)
        prefix = name if name is not None else agent
        return [ParticipantSpec(f"{prefix}:{label}", agent, dict(params), f, f"{key} ({f.name})", policy=policy)
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
    elif not name.strip() or len(name) > MAX_NAME:
        raise err(f"{key}.name", f"expected a non-empty display name of at most {MAX_NAME} characters, "
                                 f"got {_short(name)}")
    return [ParticipantSpec(name, agent, dict(params), checkpoint, key, policy=policy)]


def _trained_settings(env: Mapping[str, Any], participants: list[ParticipantSpec],
                      err: _Errors) -> tuple[dict[str, Any], list[ParticipantSpec]]:
    """What ``env`` leaves unset, taken from the checkpoints the checkpoint participants were trained with.

    The league's team size is that of its team checkpoints (a 1-v-1 one flies any seat; a MAPPO team
    plays only its own size), and each checkpoint participant reads its own observation: the env adds
    the extended keys for a batch where one participant reads them.
    """
    from dataclasses import replace

    unset = [k for k in ("team_size", "obs_mode") if k not in env]
    if not unset or all(p.checkpoint is None for p in participants):
        return dict(env), participants  # nothing to read: torch is not even imported
    from arena.agents import TeamSizeConflict, team_size_for, trained_for

    trained = [trained_for(p.checkpoint) if p.checkpoint is not None else None for p in participants]
    env = dict(env)
    if "team_size" in unset:
        try:
            size = team_size_for(trained)
        except TeamSizeConflict as exc:
            raise err("env.team_size", f"{exc}; choose one with env: {{team_size: T}}") from None
        if size is not None:
            env["team_size"] = size
            _check_env(env, err)
    if "obs_mode" in unset:
        participants = [replace(p, obs_mode=t.obs_mode) if t is not None else p for p, t in zip(participants, trained)]
    return env, participants


def _labels(files: list[Path]) -> list[str]:
    """Short unique labels for globbed files: paths below their common folder, without the suffix."""
    if len(files) == 1:
        return [files[0].with_suffix("").name]
    common = Path(os.path.commonpath([str(f.parent) for f in files]))
    return [f.with_suffix("").relative_to(common).as_posix() for f in files]


def _candidates(raw: Any, names: list[str], err: _Errors, warnings: list[str]) -> tuple[str, ...]:
    """Gauntlet candidates: display names or fnmatch patterns (``"ppo:*"``) over the participants."""
    if raw is None:
        raise err("candidates", "missing; expected a list of participant names (or patterns such as "
                                "'ppo:*') that play everyone else in a gauntlet")
    chosen = _chosen(raw, names, "candidates", err, warnings)
    if len(chosen) == len(names):
        raise err("candidates", "every participant is a candidate, so nobody is left to play against; "
                                "expected some participants outside the candidates (or format: round-robin)")
    return chosen


def _references(raw: Any, names: list[str], candidates: tuple[str, ...], err: _Errors,
                warnings: list[str]) -> tuple[str, ...]:
    """The reference pool: at least two participants, none of them a gauntlet candidate."""
    if raw is None:
        return ()
    chosen = _chosen(raw, names, "references", err, warnings)
    if len(chosen) < 2:
        raise err("references", f"a pool of one ({chosen[0]!r}) fixes no scale; expected at least two participants "
                                f"whose games among themselves fix the rating scale")
    both = [n for n in chosen if n in candidates]
    if both:
        raise err("references", f"{both[0]!r} is also a candidate; expected the references among the gauntlet's "
                                f"opponents (a reference's rating is fixed by the other references alone)")
    return chosen


def _chosen(raw: Any, names: list[str], key: str, err: _Errors, warnings: list[str]) -> tuple[str, ...]:
    """Participants named by ``key``: display names or fnmatch patterns (``"ppo:*"``), in league order."""
    import fnmatch

    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise err(key, f"expected a non-empty list of participant names, got {_kind(raw)}")
    chosen: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, str):
            raise err(f"{key}[{i}]", f"expected a participant name, got {_kind(item)}")
        if any(c in item for c in "*?["):
            matched = [n for n in names if fnmatch.fnmatchcase(n, item)]
            if not matched:
                warnings.append(f"{key}[{i}]: pattern {item!r} matches no participant")
        elif item in names:
            matched = [item]
        else:
            raise err(f"{key}[{i}]", f"unknown participant {item!r}; expected one of: {', '.join(names)}"
                                     f"{_close(item, names)}")
        chosen.extend(n for n in matched if n not in chosen)
    if not chosen:
        raise err(key, "no participant matched; expected at least one"
                       + (f" ({'; '.join(warnings)})" if warnings else ""))
    return tuple(n for n in names if n in chosen)
