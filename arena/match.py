"""Batched play of two agents: one TensorEnv, sides swapped for half of the games.

Each agent acts once per step on the whole batch (the shared game loop, :mod:`arena.loop`), so a match
costs two ``act`` calls per step however many games it holds. Where an agent plays p1 it sees p1's
observation, elsewhere p2's; both views are drawn from the player's own side, so no agent needs to
know which side it flies.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from arena.agent_calls import AgentFailure, checked_call, raise_failures  # noqa: F401 - AgentFailure re-exported
from arena.seeds import text_seed

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.loop import Observer

RESULT_KEYS: tuple[str, ...] = ("a", "b", "games", "wins", "draws", "losses", "mean_length", "games_per_second")
SYNC_EVERY = 16  # steps between "all finished?" checks: the only host syncs of the loop


MAX_GAMES = 1 << 24  # battles in one batch: ~16.7 M, already tens of GB of env state


@dataclass
class MatchResult:
    """Outcome of ``play_match``, counted for agent A. ``mean_length`` is in decision steps."""

    a: str
    b: str
    games: int
    wins: int
    draws: int
    losses: int
    mean_length: float
    games_per_second: float
    # Per-game CPU tensors (a_is_p1, outcome for A as +1/0/-1, length, return_a, return_b) for
    # callers that store every game; not part of to_dict().
    details: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @property
    def score(self) -> float:
        """Points per game for A: a win 1, a draw ½."""
        return (self.wins + 0.5 * self.draws) / self.games

    def to_dict(self) -> dict[str, Any]:
        """Exactly the keys ``arena play --json`` prints."""
        return {key: getattr(self, key) for key in RESULT_KEYS}


def play_match(agent_a: "Agent", agent_b: "Agent", games: int, *, env_config: "EnvConfig | None" = None,
               device: "str | torch.device" = "cpu", seed: int = 0, name_a: str | None = None,
               name_b: str | None = None, progress: bool = False,
               observers: "Sequence[Observer]" = (), policies: tuple[str, str] = ("deterministic", "deterministic"),
               ) -> MatchResult:
    """Play ``games`` battles of A against B at once and count A's wins, draws and losses.

    A flies p1 in the first half of the envs and p2 in the second (an odd extra game goes to A as
    p1); in team battles (``env_config.team_size`` > 1) each flies every seat of its side. Each env
    counts only its first episode. Each agent plays by its entry of ``policies`` (``arena.agents.POLICIES``:
    eval mode, or train mode drawing from a stream of its own seeded by ``seed``, so the same match
    plays the same games) and is restored to its mode afterwards. A stateful agent needs its own instance per
    side: passing the same object as A and B would mix the two sides' memories. ``observers`` see every
    step (:class:`arena.loop.Turn`).

    Raises ``AgentFailure`` when an agent raises or returns a bad action or NaN (both agents named,
    and no result, when both fail in the same step), and ``ValueError`` for a bad ``games`` count or
    device.
    """
    import torch

    from arena.agents import POLICIES, play_by
    from arena.env import TensorEnv, resolve_device
    from arena.env.teams import side_total
    from arena.loop import Controller, GameLoop, Seating, observation_config
    from arena.progress import Progress

    if not isinstance(games, int) or isinstance(games, bool) or not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be an int from 1 to {MAX_GAMES:,}, got {games!r}")
    if any(p not in POLICIES for p in policies) or len(policies) != 2:
        raise ValueError(f"policies: expected two of {', '.join(POLICIES)}, got {policies!r}")
    device = resolve_device(device)
    name_a = name_a or str(getattr(agent_a, "name", "") or type(agent_a).__name__)
    name_b = name_b or str(getattr(agent_b, "name", "") or type(agent_b).__name__)
    roles = ((agent_a, name_a, "A"), (agent_b, name_b, "B"))

    env_config = observation_config(env_config, (agent_a, agent_b))
    env = TensorEnv(games, device=device, seed=seed, config=env_config)
    dev = env.device
    a_is_p1 = torch.arange(games, device=dev) < (games + 1) // 2
    a_seat = a_is_p1.long().cpu()
    owner = torch.stack((1 - a_seat, a_seat))  # controller 0 (A) flies p1 where a_is_p1, else p2
    seating = Seating([Controller(agent, name, role, rng_seed=text_seed(f"match:{seed}:{role}") if policy == "sampled"
                                  else None) for (agent, name, role), policy in zip(roles, policies)],
                      owner, env.team_size, dev)
    loop = GameLoop(env, seating, list(observers))
    finished = torch.zeros(games, dtype=torch.bool, device=dev)
    winner = torch.full((games,), -1, dtype=torch.int8, device=dev)
    length = torch.zeros(games, device=dev)
    ret_p1, ret_p2 = torch.zeros(games, device=dev), torch.zeros(games, device=dev)

    modes = [getattr(agent, "training", None) for agent, _, _ in roles]
    meter = Progress(games, unit="games", label=f"{name_a} vs {name_b}", enabled=progress)
    start = time.perf_counter()
    try:
        raise_failures([f for (agent, name, role), policy in zip(roles, policies)
                        if (f := checked_call(play_by, name, role, "train" if policy == "sampled" else "eval",
                                              agent, policy))])
        loop.reset_agents()
        obs = env.reset()
        with torch.no_grad():
            for step in range(1, env.config.max_steps + 1):
                turn = loop.step(obs)
                obs, dones, infos = turn.next_obs, turn.dones, turn.infos
                first = dones & ~finished  # only an env's first episode counts
                episode = infos["episode"]
                winner = torch.where(first, infos["winner"], winner)
                length = torch.where(first, episode["length"], length)
                ret_p1 = torch.where(first, side_total(episode["return"]["p1"]), ret_p1)
                ret_p2 = torch.where(first, side_total(episode["return"]["p2"]), ret_p2)
                finished |= dones

                if step % SYNC_EVERY == 0 or step == env.config.max_steps:
                    raise_failures(seating.nan_failures())
                    done_count = int(finished.sum())
                    meter.update(done_count, step=step)
                    if done_count == games:
                        break
    finally:
        for (agent, name, role), mode, policy in zip(roles, modes, policies):
            if mode is not None and bool(mode) != (policy == "sampled"):
                failure = checked_call(agent.train, name, role, "train", bool(mode))
                if failure is not None and sys.exc_info()[0] is None:
                    raise failure
    elapsed = time.perf_counter() - start
    meter.close()

    outcome = torch.where(winner == 0, 0, torch.where((winner == 1) == a_is_p1, 1, -1)).to(torch.int8)
    wins, draws, losses, total_length = torch.stack(
        ((outcome == 1).sum(), (outcome == 0).sum(), (outcome == -1).sum(), length.sum().long())).tolist()
    details = {
        "a_is_p1": a_is_p1.cpu(), "outcome": outcome.cpu(), "length": length.cpu(),
        "return_a": torch.where(a_is_p1, ret_p1, ret_p2).cpu(), "return_b": torch.where(a_is_p1, ret_p2, ret_p1).cpu(),
    }
    return MatchResult(a=name_a, b=name_b, games=games, wins=int(wins), draws=int(draws), losses=int(losses),
                       mean_length=float(total_length) / games, games_per_second=games / max(elapsed, 1e-9),
                       details=details)

