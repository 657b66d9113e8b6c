"""A league's participants: who they are (agent, parameters, checkpoint hash, database key) and how
each is built into an agent, in this process or on a worker elsewhere."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.tournament.league_config import ConfigError, TournamentConfig

if TYPE_CHECKING:
    from arena.agents import Agent, Registry


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
