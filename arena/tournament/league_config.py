"""The tournament file: YAML in, validated dataclasses out, as the file writes it.

Every mistake is reported as one :class:`ConfigError` naming the file, the key (``participants[3].
checkpoint``) and what was expected, before a single game is played — a league that stops after an
hour because of a typo in its last participant wastes the hour. Relative paths (``output``,
``checkpoint``, ``checkpoints``) are resolved against the YAML file's folder, so a league file means
the same thing whatever directory it is run from.

This module reads the file and touches nothing else: it globs no folder and opens no checkpoint. The
participants' expansion (a ``checkpoints`` glob into one participant per file, the checkpoints' own
settings, the names that candidates, references and the anchor must match) is
:func:`arena.tournament.participants.expand_league`'s; :mod:`arena.tournament.league_file` does both.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal, get_args

from arena.agents import DEFAULT_POLICY, POLICIES
from arena.declared_settings import (
    Setting,
    SettingError,
    check_value,
    declared,
    expected,
    read_section,
    setting,
    shown,
)
from arena.seeds import MAX_SEED, SEED_RANGE
from arena.tournament.sprt import SPRTConfig

Format = Literal["round-robin", "gauntlet"]
RankBy = Literal["elo", "reference_elo"]  # the leaderboard column that ranks it (arena.tournament.ordering)
RANK_BY: tuple[str, ...] = get_args(RankBy)

# Limits, in the declarations of the settings below and in the checks that relate two of them. A league
# file is small hand-written text; these are far beyond any real one and exist so that a hostile or
# mistyped file is refused in a second, naming its key, instead of hanging or crashing after games are
# stored (see docs/hostile-input.md). The file's own size, nesting and alias expansion are bounded where
# every YAML file is read, in arena.yaml_file.
MAX_NAME = 200  # characters of the league's and each participant's display name
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
MAX_ABS_ANCHOR_ELO = 1e6
PARTICIPANT_FORMS = ("an agent name, 'AGENT:CHECKPOINT', or a mapping with 'agent' and optionally 'name', "
                     "'params', one of 'checkpoint' / 'checkpoints' (a glob) and 'policy'")



class ConfigError(ValueError):
    """A tournament file that cannot be played; ``str()`` is the one line the user sees."""

    def __init__(self, file: str | os.PathLike[str] | None, key: str, message: str) -> None:
        self.file, self.key, self.message = (str(file) if file is not None else "<config>"), key, message
        super().__init__(f"{self.file}: {key}: {message}" if key else f"{self.file}: {message}")


@dataclass(frozen=True)
class RatingConfig:
    """TrueSkill settings (the ``trueskill`` package's names and defaults) and the bootstrap size: the
    league file's ``rating`` section."""

    mu: float = setting(25.0, "TrueSkill prior mean", low=-MAX_ABS_MU, high=MAX_ABS_MU)
    sigma: float = setting(25.0 / 3.0, "TrueSkill prior uncertainty", low=0.0, low_open=True,
                           expect=f"a positive number at most {MAX_SIGMA_PER_BETA:g}·beta")
    beta: float = setting(25.0 / 6.0, "performance noise: a skill gap of β wins about 76 % of games",
                          low=BETA_RANGE[0], high=BETA_RANGE[1])
    tau: float = setting(25.0 / 300.0, "added to σ before each game, so ratings can still move", low=0.0,
                         expect=f"a number >= 0 and at most {MAX_TAU_PER_BETA:g}·beta")
    draw_probability: float = setting(0.1, "TrueSkill's prior share of draws (sets the draw margin)",
                                      low=DRAW_PROBABILITY_RANGE[0], high=DRAW_PROBABILITY_RANGE[1])
    bootstrap_rounds: int = setting(1000, "resamples for the Elo interval and rank bounds; 0 turns them off",
                                    low=0, high=MAX_BOOTSTRAP_ROUNDS)
    anchor: str = setting("", "fixes the Elo scale: this participant's Elo is `anchor_elo`; empty: the "
                              "participants with mixed records (not unbeaten, not winless) average 1000",
                          expect="the name of a participant")
    anchor_elo: float = setting(1000.0, "the anchor's Elo", low=-MAX_ABS_ANCHOR_ELO, high=MAX_ABS_ANCHOR_ELO)
    rank_by: RankBy = setting("elo", "what ranks the leaderboard: `elo`, the Elo of all games (who beats whom), or "
                                     "`reference_elo`, the Elo against the `references` alone (below)")

    @classmethod
    def from_dict(cls, data: Any, file: str | os.PathLike[str] | None = None, key: str = "rating") -> "RatingConfig":
        """Validated settings; raises :class:`ConfigError` naming ``file`` and ``key.FIELD``. Used for the
        league file and again for settings read back from a results database."""
        fpath = Path(file) if file is not None else None
        return _rating(data, ConfigErrors(fpath), key)


@dataclass(frozen=True)
class ParticipantEntry:
    """The keys of one participant entry of the league file, each read and checked by its declaration."""

    agent: str = setting(help="the agent's name", blank=False, expect="a non-empty agent name")
    name: str | None = setting(None, "display name, unique in the league", blank=False, max_length=MAX_NAME,
                               expect=f"a non-empty display name of at most {MAX_NAME} characters")
    params: Mapping[str, Any] = setting(factory=dict, help="keyword parameters for create()/load()")
    checkpoint: str | None = setting(None, "a checkpoint file, relative to the league file's folder")
    checkpoints: str | None = setting(None, "a glob of checkpoint files, relative to the league file's folder")
    policy: str | None = setting(None, "how a checkpoint plays", choices=POLICIES)


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
    pattern: str | None = None  # a 'checkpoints' glob (absolute), expanded into one participant per file
    written: str | None = None  # its 'checkpoint' or 'checkpoints' as the file writes it (for messages)


@dataclass(frozen=True)
class TournamentConfig:
    """A validated tournament file."""

    # The league file's scalar keys are the fields made with setting(): each is read and checked by its
    # declaration (_read), as a participant entry's keys are (ParticipantEntry); the other fields have
    # code of their own. The name and the output have no default here: the parser makes them from the
    # file's name.
    participants: tuple[ParticipantSpec, ...]
    name: str = setting(help="the league's name in reports; by default the file's name", blank=False,
                        max_length=MAX_NAME)
    output: Path = setting(help="folder for `results.sqlite` and the reports; by default `reports/<name>`",
                           blank=False, expect="a folder path")
    seed: int = setting(0, "seeds each batch's battles and the order TrueSkill sees the games in", low=0,
                        high=MAX_SEED, expect=SEED_RANGE)
    device: str = setting("auto", "where the battles and the agents run")
    max_envs: int = setting(16384, "battles stepped at once; lower it when memory is short", low=1, high=MAX_ENVS,
                            expect=f"a positive integer up to {MAX_ENVS}")
    games_per_pairing: int = setting(256, "games between two participants", low=2,
                                     high=MAX_GAMES_PER_PAIRING, expect=f"an even integer in [2, "
                                     f"{MAX_GAMES_PER_PAIRING}] (half the games from each side)")
    format: Format = setting("round-robin", "who plays whom (below)")
    candidates: tuple[str, ...] = ()  # display names of the gauntlet's candidates (patterns, until expanded)
    references: tuple[str, ...] = ()  # display names whose mutual games fix the reference rating's scale (same)
    time_per_move: float | None = setting(None, "time budget of one move: an act() call over a batch; a "
                                          "slower one forfeits (below)", low=0.0, low_open=True,
                                          high=MAX_TIME_PER_MOVE, unit="s", expect=f"seconds per move in (0, "
                                          f"{MAX_TIME_PER_MOVE:g}] (or leave it out for no limit)")
    env: Mapping[str, Any] = field(default_factory=dict)  # EnvConfig overrides
    rating: RatingConfig = field(default_factory=RatingConfig)
    sprt: SPRTConfig | None = None  # gauntlets: stop early once every candidate's test is decided
    replays: int = setting(0, "notable games per pairing recorded after rating (upsets, longest, shortest); "
                              "`--replays N` overrides it ([docs/replays.md](replays.md))", low=0,
                           high=MAX_REPLAYS_PER_PAIRING)
    file: Path | None = None
    warnings: tuple[str, ...] = ()  # things worth saying that do not stop the league (empty globs)

    def with_device(self, device: str | None) -> "TournamentConfig":
        return self if device is None else replace(self, device=device)

    def with_replays(self, replays: int | None) -> "TournamentConfig":
        return self if replays is None else replace(self, replays=replays)

    def to_dict(self) -> dict[str, Any]:
        """Plain data for the run record in the results database."""
        return {
            **{s.name: getattr(self, s.name) for s in declared(TournamentConfig)}, "output": str(self.output),
            "candidates": list(self.candidates), "references": list(self.references), "env": dict(self.env),
            "rating": vars(self.rating).copy(), "sprt": vars(self.sprt).copy() if self.sprt else None,
            "participants": [{"name": p.name, "agent": p.agent, "params": dict(p.params),
                              "checkpoint": str(p.checkpoint) if p.checkpoint else None, "policy": p.policy}
                             for p in self.participants],
            "file": str(self.file) if self.file else None,
        }


# The keys of a league file: TournamentConfig's fields but what the parser adds.
TOP_KEYS = tuple(f.name for f in fields(TournamentConfig) if f.name not in ("file", "warnings"))


# -- loading ---------------------------------------------------------------------------------------


def read_league(path: str | os.PathLike[str]) -> TournamentConfig:
    """Read and validate a tournament file as it is written (:func:`parse_league`); raises
    :class:`ConfigError`. The YAML is read as every YAML file is (:func:`arena.yaml_file.read_yaml_file`:
    size, nesting, alias expansion and duplicate keys bounded before anything walks it)."""
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
    return parse_league(data, file)


def _os_reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def parse_league(data: Any, file: str | os.PathLike[str] | None = None) -> TournamentConfig:
    """Validate already-parsed YAML data as the file writes it: every key, value and section, a
    ``checkpoints`` glob kept as a pattern and candidates and references as written. ``file`` anchors
    relative paths (the cwd when None)."""
    fpath = Path(file) if file is not None else None
    base = fpath.resolve().parent if fpath is not None else Path.cwd()
    err = ConfigErrors(fpath)
    if not isinstance(data, Mapping):
        raise err("", f"expected a mapping of settings at the top level, got {kind_of(data)}")
    unknown = [k for k in data if k not in TOP_KEYS]
    if unknown:
        raise err(_keyname(unknown[0]),
                  f"unknown key; expected one of: {', '.join(TOP_KEYS)}{close_to(str(unknown[0]), TOP_KEYS)}")

    data = dict(data)
    if data.get("name") is None:  # the file's name, checked as a name given would be
        data["name"] = fpath.stem if fpath is not None else "tournament"
    values = _read(TournamentConfig, data, err)
    name = values["name"]
    output = values.setdefault("output", f"reports/{name}")
    games, fmt = values["games_per_pairing"], values["format"]
    if games % 2:
        raise err("games_per_pairing", f"expected {declared_setting('games_per_pairing').spec.expect}, got {games}")
    env = data.get("env") or {}
    if not isinstance(env, Mapping):
        raise err("env", f"expected a mapping, got {kind_of(env)}")
    check_env(env, err)
    rating = _rating(data.get("rating"), err)

    raw_participants = data.get("participants")
    if not isinstance(raw_participants, list) or not raw_participants:
        raise err("participants", f"expected a non-empty list of participants ({PARTICIPANT_FORMS}), "
                                  f"got {kind_of(raw_participants)}")
    participants = [_participant(entry, f"participants[{i}]", base, err) for i, entry in enumerate(raw_participants)]

    raw_candidates = data.get("candidates")
    candidates: tuple[str, ...] = ()
    if fmt == "gauntlet":
        if raw_candidates is None:
            raise err("candidates", "missing; expected a list of participant names (or patterns such as "
                                    "'ppo:*') that play everyone else in a gauntlet")
        candidates = _names(raw_candidates, "candidates", err)
    elif raw_candidates is not None:
        raise err("candidates", "only used with format: gauntlet; remove it or set format: gauntlet")
    raw_references = data.get("references")
    references = _names(raw_references, "references", err) if raw_references is not None else ()
    if rating.rank_by == "reference_elo" and not references:
        raise err("rating.rank_by", "reference_elo ranks by the Elo against the references, and this league has "
                                    "none; expected `references:` (two or more participants) or rank_by: elo")
    sprt = _sprt(data.get("sprt"), err)
    if sprt is not None and fmt != "gauntlet":
        raise err("sprt", "only used with format: gauntlet (it tests candidates); remove it or set format: gauntlet")

    values["output"] = (base / output).resolve() if not os.path.isabs(output) else Path(output)
    return TournamentConfig(**values, participants=tuple(participants), candidates=candidates, references=references,
                            env=dict(env), rating=rating, sprt=sprt, file=fpath)


# -- pieces ------------------------------------------------------------------------------------------


class ConfigErrors:
    def __init__(self, file: Path | None) -> None:
        self.file = file

    def __call__(self, key: str, message: str) -> ConfigError:
        return ConfigError(self.file, key, message)


def kind_of(value: Any) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"a boolean ({value})"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    return f"{type(value).__name__} {shown(value)}"


def _keyname(key: Any) -> str:
    """A key as it can appear in a one-line message."""
    return key if isinstance(key, str) and key.isprintable() and len(key) <= 80 else shown(key)


def _read(cls: type, raw: Mapping[str, Any], err: ConfigErrors, prefix: str = "") -> dict[str, Any]:
    """The settings ``cls`` declares, by name, from the mapping ``raw`` (other keys are the caller's): each value given
    read by :func:`~arena.declared_settings.read_section` (None is no value), each one not given its
    default (the fields without one are left out); :class:`ConfigError` naming ``prefix + name`` in the
    one wording (``expected WHAT, got VALUE``) otherwise. Checks that relate two settings are the
    caller's, after this."""
    settings = declared(cls)
    names = {s.name for s in settings}
    try:
        given = read_section(cls, {k: v for k, v in raw.items() if k in names and v is not None}, "")
    except SettingError as exc:
        raise err(prefix + exc.setting.name, exc.detail) from None
    defaults = {s.name: s.default for s in settings if s.default is not dataclasses.MISSING}
    return {**defaults, **given}


def _section(cls: type, raw: Any, err: ConfigErrors, key: str) -> Mapping[str, Any]:
    """``raw`` if it is a mapping of settings that ``cls`` declares; :class:`ConfigError` naming ``key`` (or
    the unknown key, with the nearest known one) otherwise."""
    known = [s.name for s in declared(cls)]
    if not isinstance(raw, Mapping):
        raise err(key, f"expected a mapping with some of {', '.join(known)}, got {kind_of(raw)}")
    _refuse_unknown(raw, known, key, err)
    return raw


def _refuse_unknown(raw: Mapping[Any, Any], known: tuple[str, ...] | list[str], key: str, err: ConfigErrors) -> None:
    """:class:`ConfigError` naming the first key of ``raw`` not in ``known`` (``key.NAME``), with the nearest."""
    for k in raw:
        if k not in known:
            raise err(f"{key}.{_keyname(k)}", f"unknown key; expected one of: {', '.join(known)}"
                                              f"{close_to(str(k), known)}")


def declared_setting(name: str, cls: type = TournamentConfig) -> Setting:
    return next(s for s in declared(cls) if s.name == name)


def stored_setting(name: str, value: Any, file: str | os.PathLike[str] | None, key: str) -> Any:
    """``value`` of the league setting ``name`` as a results database holds it (a run's record), checked
    by the setting's declaration; :class:`ConfigError` naming ``file`` and ``key`` otherwise."""
    try:
        return check_value(declared_setting(name), value)
    except SettingError as exc:
        raise ConfigError(file, key, exc.detail) from None


def close_to(word: str, options: tuple[str, ...] | list[str]) -> str:
    import difflib

    match = difflib.get_close_matches(str(word), list(options), n=1)
    return f" (did you mean {match[0]!r}?)" if match else ""


def check_env(env: Mapping[str, Any], err: ConfigErrors) -> None:
    from arena.env.config import EnvConfig, EnvConfigError

    for k in env:
        if not isinstance(k, str):
            raise err("env", f"expected setting names as strings, got {shown(k)}")
    try:
        EnvConfig.from_dict(env)
    except EnvConfigError as exc:
        raise err(f"env.{exc.key}" if exc.key else "env", exc.detail) from None
    except (ValueError, TypeError) as exc:
        raise err("env", str(exc)) from None


def _sprt(raw: Any, err: ConfigErrors) -> SPRTConfig | None:
    if raw is None:
        return None
    v = _read(SPRTConfig, _section(SPRTConfig, raw, err, "sprt"), err, "sprt.")
    if not v["elo0"] < v["elo1"]:
        raise err("sprt", f"expected elo0 < elo1, got elo0 {v['elo0']:g} and elo1 {v['elo1']:g}")
    return SPRTConfig(**v)


def _rating(raw: Any, err: ConfigErrors, key: str = "rating") -> RatingConfig:
    if raw is None:
        return RatingConfig()
    v = _read(RatingConfig, _section(RatingConfig, raw, err, key), err, key + ".")
    for name, most in (("sigma", MAX_SIGMA_PER_BETA), ("tau", MAX_TAU_PER_BETA)):  # TrueSkill is scale-free
        if v[name] > most * v["beta"]:
            expect = declared_setting(name, RatingConfig).spec.expect
            raise err(f"{key}.{name}", f"expected {expect} ({most * v['beta']:g}), got {v[name]!r}")
    return RatingConfig(**v)


def _participant(entry: Any, key: str, base: Path, err: ConfigErrors) -> ParticipantSpec:
    """One list entry as written: an agent, a checkpoint (its path resolved, not opened) or a
    ``checkpoints`` glob (kept as an absolute pattern)."""
    if isinstance(entry, str):
        from arena.agents import AgentSpecError, parse_spec

        if not entry.strip():
            raise err(key, f"expected {PARTICIPANT_FORMS}, got an empty string")
        if "\x00" in entry:
            raise err(key, f"expected a string without NUL characters, got {shown(entry)}")
        try:
            agent, path = parse_spec(entry)
        except AgentSpecError as exc:  # 'ppo:' without a path
            raise err(key, str(exc)) from None
        if agent is None:  # a bare path: the league file names the agent, it does not open files to find out
            raise err(key, f"{entry!r}: expected AGENT:CHECKPOINT, e.g. 'ppo:{path}'")
        entry = {"agent": agent} if path is None else {"agent": agent, "checkpoint": path}
    if not isinstance(entry, Mapping):
        raise err(key, f"expected {PARTICIPANT_FORMS}, got {kind_of(entry)}")
    _section(ParticipantEntry, entry, err, key)
    if entry.get("agent") is None:
        raise err(f"{key}.agent", "missing; expected the agent's name (see `arena agents`)")
    v = _read(ParticipantEntry, entry, err, key + ".")
    agent, name, params, policy = v["agent"], v["name"], v["params"], v["policy"]
    for pk in params:
        if not isinstance(pk, str):
            raise err(f"{key}.params", f"expected parameter names as strings, got {shown(pk)}")
    if v["checkpoint"] is not None and v["checkpoints"] is not None:
        raise err(key, "expected one of 'checkpoint' (a file) or 'checkpoints' (a glob), not both")
    if policy is not None and v["checkpoint"] is None and v["checkpoints"] is None:
        raise err(f"{key}.policy", "only a checkpoint plays by a policy; add 'checkpoint' or 'checkpoints', or "
                                   "remove 'policy'")
    if policy is None and (v["checkpoint"] is not None or v["checkpoints"] is not None):
        policy = DEFAULT_POLICY

    if v["checkpoints"] is not None:
        pattern = v["checkpoints"]
        full = pattern if os.path.isabs(pattern) else str(base / pattern)
        return ParticipantSpec(name if name is not None else agent, agent, dict(params), None, key, policy=policy,
                               pattern=full, written=pattern)

    checkpoint = None
    if v["checkpoint"] is not None:
        raw = v["checkpoint"]
        checkpoint = (base / raw).resolve() if not os.path.isabs(raw) else Path(raw)
    if name is None:
        name = agent if checkpoint is None else f"{agent}:{checkpoint.with_suffix('').name}"
    return ParticipantSpec(name, agent, dict(params), checkpoint, key, policy=policy, written=v["checkpoint"])


def _names(raw: Any, key: str, err: ConfigErrors) -> tuple[str, ...]:
    """Candidates or references as written: participant names or fnmatch patterns (``"ppo:*"``)."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list) or not raw:
        raise err(key, f"expected a non-empty list of participant names, got {kind_of(raw)}")
    for i, item in enumerate(raw):
        if not isinstance(item, str):
            raise err(f"{key}[{i}]", f"expected a participant name, got {kind_of(item)}")
    return tuple(raw)


# -- the docs --------------------------------------------------------------------------------------------


def _default(value: Any) -> str:
    if value is dataclasses.MISSING:  # the parser makes it from the file
        return "derived"
    if value is None or value == "":
        return "none"
    return f"`{value:.4g}`" if isinstance(value, float) else f"`{value}`"


def settings_table() -> str:
    """The table of the league file's settings in docs/tournaments.md: key, what it takes, default and
    what it does, from their declarations (the keys of TournamentConfig, RatingConfig and SPRTConfig)."""
    rows = ["| key | takes | default | what it does |", "|---|---|---|---|"]
    for cls, section in ((TournamentConfig, ""), (RatingConfig, "rating"), (SPRTConfig, "sprt")):
        for s in declared(cls, section):
            rows.append(f"| `{s.key}` | {expected(s)} | {_default(s.default)} | {s.spec.help.replace('|', '/')} |")
    return "\n".join(rows) + "\n"

