"""A league's participants: the file's entries expanded (a ``checkpoints`` glob into one participant per
file, each checkpoint's own settings read), who they are (agent, parameters, checkpoint hash, database
key) and how each is built into an agent, in this process or on a worker elsewhere."""

from __future__ import annotations

import glob
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.declared_settings import shown
from arena.tournament.league_config import (
    MAX_TOTAL_GAMES,
    ConfigError,
    ConfigErrors,
    ParticipantSpec,
    RatingConfig,
    TournamentConfig,
    check_env,
    close_to,
    declared_setting,
)

if TYPE_CHECKING:
    from arena.agents import Agent, Registry, TrainedFor


@dataclass(frozen=True)
class Participant:
    """A participant with its identity settled: canonical agent name, checkpoint hash, database key."""

    name: str
    agent: str
    params: dict[str, Any]
    checkpoint: str | None
    checkpoint_sha256: str | None
    key: str
    spec_key: str  # where it came from in the file
    obs_mode: str | None = None  # the observation it reads when not the league's (its checkpoint's)
    policy: str | None = None  # a checkpoint's "sampled" or "deterministic" play; None: as the agent is written

    @property
    def error_key(self) -> str:
        """The key of the league file to blame when this participant cannot be built."""
        if self.checkpoint:
            return f"{self.spec_key}.checkpoint"
        return f"{self.spec_key}.params" if self.params else self.spec_key


def file_sha256(path: str | Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def expand_league(config: TournamentConfig) -> TournamentConfig:
    """``config`` as the file wrote it (:func:`~arena.tournament.league_config.parse_league`), with its
    participants expanded: each ``checkpoints`` glob into one participant per file (none yet: a warning),
    each checkpoint file checked, names unique, the anchor, candidates and references matched to them,
    and the team size and observations the checkpoints were trained for read from them where ``env``
    leaves them unset. Raises :class:`ConfigError` naming the file and key."""
    err = ConfigErrors(config.file)
    warnings: list[str] = list(config.warnings)
    participants = [p for spec in config.participants for p in _expand(spec, err, warnings)]
    seen: dict[str, str] = {}
    by_name: dict[str, ParticipantSpec] = {}
    for p in participants:
        if p.name in seen:
            other = by_name[p.name]
            both_ways = (p.checkpoint is not None and p.checkpoint == other.checkpoint and p.policy != other.policy)
            why = (f"the same checkpoint played {other.policy} and {p.policy} is two participants, and each needs a "
                   f"name of its own — give one a 'name'" if both_ways else "expected unique names — give one a 'name'")
            raise err(p.key, f"duplicate participant name {p.name!r} (also {seen[p.name]}); {why}")
        seen[p.name], by_name[p.name] = p.key, p

    anchor = config.rating.anchor
    if anchor and anchor not in seen:
        raise err("rating.anchor", f"expected {declared_setting('anchor', RatingConfig).spec.expect}, "
                                   f"got {shown(anchor)}{close_to(anchor, list(seen))}")
    names = [p.name for p in participants]
    candidates = _candidates(config.candidates, names, err, warnings) if config.format == "gauntlet" else ()
    references = _references(config.references, names, candidates, err, warnings)
    if len(participants) < 2:
        raise err("participants", f"expected at least 2 participants after expanding globs, got {len(participants)}"
                                  + (f" ({'; '.join(warnings)})" if warnings else ""))
    env, participants = _trained_settings(config.env, participants, err)
    games, n, c, r = config.games_per_pairing, len(participants), len(candidates), len(references)
    total = games * (c * (n - c) + r * (r - 1) // 2 if config.format == "gauntlet" else n * (n - 1) // 2)
    if total > MAX_TOTAL_GAMES:
        raise err("games_per_pairing", f"{games} games for each of the {total // games:,} pairings of {n} participants "
                                       f"is {total:,} games; expected at most {MAX_TOTAL_GAMES:,} in one league")
    return replace(config, participants=tuple(participants), candidates=candidates, references=references,
                   env=dict(env), warnings=tuple(warnings))


def _expand(spec: ParticipantSpec, err: ConfigErrors, warnings: list[str]) -> list[ParticipantSpec]:
    """One entry of the file → zero (an empty glob), one or many participants; a checkpoint file checked."""
    if spec.pattern is not None:
        files = sorted(Path(f).resolve() for f in glob.glob(spec.pattern, recursive=True) if os.path.isfile(f))
        if not files:
            warnings.append(f"{spec.key}.checkpoints: {spec.written!r} matches no file yet; no participant added")
            return []
        return [replace(spec, name=f"{spec.name}:{label}", checkpoint=f, key=f"{spec.key} ({f.name})", pattern=None,
                        written=None) for f, label in zip(files, _labels(files))]
    if spec.checkpoint is not None and not spec.checkpoint.is_file():
        problem = "not a file" if spec.checkpoint.exists() else "no such file"
        raise err(f"{spec.key}.checkpoint", f"{problem}: {spec.written} (looked at {spec.checkpoint}); expected an "
                                            f"existing checkpoint file, relative to the tournament file's folder")
    return [spec]


def _trained_settings(env: Mapping[str, Any], participants: list[ParticipantSpec],
                      err: ConfigErrors) -> tuple[dict[str, Any], list[ParticipantSpec]]:
    """What ``env`` leaves unset, taken from the checkpoints the checkpoint participants were trained with.

    The league's team size is the one its checkpoints were trained for, when they all agree (an agent
    without a checkpoint plays any size). Checkpoints trained for different sizes are refused, naming
    them: a 1-v-1 one could fly a seat of a team, but a league that turned a duel checkpoint's games into
    team battles without being asked would rate it at something it never trained for. With
    ``env.team_size`` set, every participant is built for that size before a game is played, and one
    that cannot play it is refused then. Each checkpoint participant reads its own observation: the env
    adds the extended keys for a batch where one participant reads them.
    """
    unset = [k for k in ("team_size", "obs_mode") if k not in env]
    if not unset or all(p.checkpoint is None for p in participants):
        return dict(env), participants  # nothing to read: torch is not even imported
    from arena.agents import trained_for

    trained = [trained_for(p.checkpoint) if p.checkpoint is not None else None for p in participants]
    env = dict(env)
    if "team_size" in unset:
        sizes = {t.team_size for t in trained if t is not None}
        if len(sizes) > 1:
            raise err("env.team_size", f"the checkpoints were trained for different team sizes: "
                                       f"{_by_team_size(participants, trained)}; choose the size of every game with "
                                       f"env: {{team_size: T}} (a 1-v-1 checkpoint flies any seat of a team, a "
                                       f"MAPPO team plays only its own size)")
        if sizes and sizes != {1}:
            env["team_size"] = sizes.pop()
            check_env(env, err)
    if "obs_mode" in unset:
        participants = [replace(p, obs_mode=t.obs_mode) if t is not None else p for p, t in zip(participants, trained)]
    return env, participants


def _by_team_size(participants: list[ParticipantSpec], trained: list[TrainedFor | None], shown_names: int = 3) -> str:
    """``ppo:a, ppo:b (1 v 1); mappo:c (2 v 2)``: the checkpoint participants by the team size they were
    trained for, a few names of each."""
    groups: dict[int, list[str]] = {}
    for p, t in zip(participants, trained):
        if t is not None:
            groups.setdefault(t.team_size, []).append(p.name)
    parts = []
    for size, names in sorted(groups.items()):
        more = f" and {len(names) - shown_names} more" if len(names) > shown_names else ""
        parts.append(f"{', '.join(names[:shown_names])}{more} ({size} v {size})")
    return "; ".join(parts)


def _labels(files: list[Path]) -> list[str]:
    """Short unique labels for globbed files: paths below their common folder, without the suffix."""
    if len(files) == 1:
        return [files[0].with_suffix("").name]
    common = Path(os.path.commonpath([str(f.parent) for f in files]))
    return [f.with_suffix("").relative_to(common).as_posix() for f in files]


def _candidates(raw: tuple[str, ...], names: list[str], err: ConfigErrors, warnings: list[str]) -> tuple[str, ...]:
    """Gauntlet candidates: display names or fnmatch patterns (``"ppo:*"``) over the participants."""
    chosen = _chosen(raw, names, "candidates", err, warnings)
    if len(chosen) == len(names):
        raise err("candidates", "every participant is a candidate, so nobody is left to play against; "
                                "expected some participants outside the candidates (or format: round-robin)")
    return chosen


def _references(raw: tuple[str, ...], names: list[str], candidates: tuple[str, ...], err: ConfigErrors,
                warnings: list[str]) -> tuple[str, ...]:
    """The reference pool: at least two participants, none of them a gauntlet candidate."""
    if not raw:
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


def _chosen(raw: tuple[str, ...], names: list[str], key: str, err: ConfigErrors,
            warnings: list[str]) -> tuple[str, ...]:
    """Participants named by ``key`` (as the file writes them: display names or fnmatch patterns such as
    ``"ppo:*"``), in league order."""
    import fnmatch

    chosen: list[str] = []
    for i, item in enumerate(raw):
        if any(c in item for c in "*?["):
            matched = [n for n in names if fnmatch.fnmatchcase(n, item)]
            if not matched:
                warnings.append(f"{key}[{i}]: pattern {item!r} matches no participant")
        elif item in names:
            matched = [item]
        else:
            raise err(f"{key}[{i}]", f"unknown participant {item!r}; expected one of: {', '.join(names)}"
                                     f"{close_to(item, names)}")
        chosen.extend(n for n in matched if n not in chosen)
    if not chosen:
        raise err(key, "no participant matched; expected at least one"
                       + (f" ({'; '.join(warnings)})" if warnings else ""))
    return tuple(n for n in names if n in chosen)


def resolve_participants(config: TournamentConfig, registry: "Registry[type]") -> list[Participant]:
    """Look every agent up and hash every checkpoint; unknown agents are a :class:`ConfigError`."""
    from arena.agents import UnknownNameError

    out = []
    for spec in config.participants:
        try:
            agent = registry.entry(spec.agent).name
        except UnknownNameError as exc:
            raise ConfigError(config.file, f"{spec.key}.agent", f"{exc}; see `arena agents`") from None
        sha = file_sha256(spec.checkpoint) if spec.checkpoint is not None else None
        params = dict(spec.params)
        who: dict[str, Any] = {"name": spec.name, "agent": agent, "params": params, "checkpoint_sha256": sha}
        if spec.policy == "sampled":  # another player than the same weights played deterministically
            who["policy"] = spec.policy
        identity = json.dumps(who, sort_keys=True, default=str)
        key = hashlib.sha256(identity.encode()).hexdigest()[:32]
        out.append(Participant(spec.name, agent, params, str(spec.checkpoint) if spec.checkpoint else None, sha, key,
                               spec.key, spec.obs_mode, spec.policy))
    return out


def build_participant(p: Participant, device: Any, env_config: Any, registry: "Registry[type]",
                      checkpoint: str | None = None) -> "Agent":
    """``p`` as an agent playing by its policy (eval mode, or train mode for a sampled checkpoint);
    ``checkpoint`` reads its weights from another copy of the file (a worker's). A bad checkpoint or
    parameter, or agent code that fails while it is set up (``create``, ``load``, ``eval``), raises
    ``ValueError`` (:class:`arena.agents.AgentSpecError`), ``TypeError`` or ``LookupError``."""
    from dataclasses import replace

    from arena.agents import build_agent, ready_to_play

    path = checkpoint if checkpoint is not None else p.checkpoint
    spec = p.agent if path is None else f"{p.agent}:{path}"
    if p.obs_mode is not None and env_config is not None and p.obs_mode != env_config.obs_mode:
        env_config = replace(env_config, obs_mode=p.obs_mode)  # the batch's env adds the keys it reads
    agent = build_agent(spec, device=device, env_config=env_config, registry=registry, **p.params)
    return ready_to_play(agent, p.agent, p.policy or "deterministic")  # its eval() fails as its create() does


def build_agents(config: TournamentConfig, participants: Sequence[Participant], device: Any, env_config: Any,
                 registry: "Registry[type]") -> list["Agent"]:
    """One agent per participant, playing by its policy; a bad checkpoint or parameter is a :class:`ConfigError`."""
    agents = []
    for p in participants:
        try:
            agents.append(build_participant(p, device, env_config, registry))
        except (ValueError, TypeError, LookupError) as exc:
            raise ConfigError(config.file, p.error_key, str(exc)) from None
    return agents
