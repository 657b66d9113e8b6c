"""Batched play of two agents: one TensorEnv, sides swapped for half of the games.

Each agent acts once per step on the whole batch, so a match costs two ``act`` calls per step however
many games it holds. Where an agent plays p1 it sees p1's observation, elsewhere p2's; both views are
drawn from the player's own side, so no agent needs to know which side it flies.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.env.actions import CleanAction

RESULT_KEYS: tuple[str, ...] = ("a", "b", "games", "wins", "draws", "losses", "mean_length", "games_per_second")
SYNC_EVERY = 16  # steps between "all finished?" checks: the only host syncs of the loop


class AgentFailure(RuntimeError):
    """An agent raised (anything, ``sys.exit`` included), or returned a malformed action or NaNs. Names
    the agent and its role, so a tournament can score the forfeit and a user knows whose fault it was.

    When several agents fail in the same step, ``failures`` holds each (agent, role, reason) and the
    game has no result for anyone: the one checked first is not the only one to blame. ``agent``,
    ``role`` and ``reason`` are the first failure's.
    """

    def __init__(self, agent: str, role: str, reason: str,
                 others: "Sequence[tuple[str, str, str]]" = ()) -> None:
        self.agent, self.role, self.reason = agent, role, reason
        self.failures: tuple[tuple[str, str, str], ...] = ((agent, role, reason), *others)
        if others:
            parts = "; ".join(f"agent {a!r} ({r}) {why}" for a, r, why in self.failures)
            super().__init__(f"no result: {len(self.failures)} agents failed in the same step: {parts}")
        else:
            super().__init__(f"agent {agent!r} ({role}) {reason}")

    @property
    def no_result(self) -> bool:
        """Several agents failed at once: a draw/no-result for all of them, not a win for anyone."""
        return len(self.failures) > 1

    @classmethod
    def combine(cls, failures: "Sequence[AgentFailure]") -> "AgentFailure":
        """One failure standing for all those of one step."""
        flat = [f for failure in failures for f in failure.failures]
        return cls(*flat[0], others=flat[1:])


def raise_failures(failures: "Sequence[AgentFailure]") -> None:
    """Raise the failures of one step together (nothing when there are none)."""
    if failures:
        raise AgentFailure.combine(failures)


MAX_GAMES = 1 << 24  # battles in one batch: ~16.7 M, already tens of GB of env state


def check_device(device: "str | torch.device | None") -> "torch.device":
    """The one place that turns a ``--device`` value into a usable device, or a one-line ``ValueError``.

    On top of the env's parsing (cpu, cuda, cuda:N, auto) it refuses an MPS device on a machine
    without one and a CPU index (``cpu:5``): torch accepts both as names, and the failure would
    otherwise surface later as an agent returning actions on "the wrong device".
    """
    import torch

    from arena.env import resolve_device

    text = device if isinstance(device, str) else None
    if text is not None and not text.strip():
        raise ValueError("invalid device '': expected cpu, cuda, cuda:N or auto")
    try:
        dev = resolve_device(device)
    except (RuntimeError, TypeError) as exc:  # torch's own wording for odd strings
        raise ValueError(f"invalid device {device!r}: expected cpu, cuda, cuda:N or auto") from exc
    if dev.type == "cpu":
        if dev.index not in (None, 0):
            raise ValueError(f"invalid device {str(device)!r}: the CPU has no device index; use cpu")
        return torch.device("cpu")
    if dev.type == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device {str(device)!r} requested but MPS is not available on this machine; "
                             f"use cpu, cuda or auto")
        if dev.index not in (None, 0):
            raise ValueError(f"invalid device {str(device)!r}: use mps")
        return torch.device("mps")
    return dev


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


def check_duel(env_config: "EnvConfig | None") -> None:
    """Refuse team battles where agents are still routed one aircraft a side.

    TensorEnv steps teams (``team_size`` > 1); matches, tournaments and training opponent pools hand
    each agent one side's [N] observation, so they take duels only.
    """
    if env_config is not None and env_config.team_size != 1:
        raise ValueError(f"team_size must be 1 here: matches and tournaments play duels; got {env_config.team_size} "
                         "(TensorEnv itself steps team battles)")


def play_match(agent_a: "Agent", agent_b: "Agent", games: int, *, env_config: "EnvConfig | None" = None,
               device: "str | torch.device" = "cpu", seed: int = 0, name_a: str | None = None,
               name_b: str | None = None, progress: bool = False) -> MatchResult:
    """Play ``games`` battles of A against B at once and count A's wins, draws and losses.

    A flies p1 in the first half of the envs and p2 in the second (an odd extra game goes to A as
    p1). Each env counts only its first episode. Agents are switched to eval mode for the match and
    restored afterwards. A stateful agent needs its own instance per side: passing the same object
    as A and B would mix the two sides' memories.

    Raises ``AgentFailure`` when an agent raises or returns a bad action or NaN (both agents named,
    and no result, when both fail in the same step), and ``ValueError`` for a bad ``games`` count or
    device.
    """
    import torch

    from arena.env import TensorEnv
    from arena.progress import Progress

    if not isinstance(games, int) or isinstance(games, bool) or not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be an int from 1 to {MAX_GAMES:,}, got {games!r}")
    device = check_device(device)
    check_duel(env_config)
    name_a = name_a or str(getattr(agent_a, "name", "") or type(agent_a).__name__)
    name_b = name_b or str(getattr(agent_b, "name", "") or type(agent_b).__name__)
    roles = ((agent_a, name_a, "A"), (agent_b, name_b, "B"))

    env = TensorEnv(games, device=device, seed=seed, config=env_config)
    dev = env.device
    a_is_p1 = torch.arange(games, device=dev) < (games + 1) // 2
    finished = torch.zeros(games, dtype=torch.bool, device=dev)
    winner = torch.full((games,), -1, dtype=torch.int8, device=dev)
    length = torch.zeros(games, device=dev)
    ret_p1, ret_p2 = torch.zeros(games, device=dev), torch.zeros(games, device=dev)
    nans = torch.zeros(2, dtype=torch.int64, device=dev)  # NaN entries returned by A and B

    modes = [getattr(agent, "training", None) for agent, _, _ in roles]
    meter = Progress(games, unit="games", label=f"{name_a} vs {name_b}", enabled=progress)
    start = time.perf_counter()
    try:
        raise_failures([f for agent, name, role in roles if (f := checked_call(agent.eval, name, role, "eval"))])
        reset_all(roles, None)
        obs = env.reset()
        with torch.no_grad():
            for step in range(1, env.config.max_steps + 1):
                obs_a = {k: torch.where(a_is_p1, obs["p1"][k], obs["p2"][k]) for k in obs["p1"]}
                obs_b = {k: torch.where(a_is_p1, obs["p2"][k], obs["p1"][k]) for k in obs["p1"]}
                act_a = checked_act(agent_a, obs_a, name_a, "A", games, dev, raise_now=False)
                act_b = checked_act(agent_b, obs_b, name_b, "B", games, dev, raise_now=False)
                raise_failures([a for a in (act_a, act_b) if isinstance(a, AgentFailure)])
                assert not isinstance(act_a, AgentFailure) and not isinstance(act_b, AgentFailure)
                nans += torch.stack((act_a.nan_count.sum(), act_b.nan_count.sum()))
                action_p1, action_p2 = merge_actions(a_is_p1, act_a, act_b)
                obs, _, dones, infos = env.step(action_p1, action_p2)

                first = dones & ~finished  # only an env's first episode counts
                episode = infos["episode"]
                winner = torch.where(first, infos["winner"], winner)
                length = torch.where(first, episode["length"], length)
                ret_p1 = torch.where(first, episode["return"]["p1"], ret_p1)
                ret_p2 = torch.where(first, episode["return"]["p2"], ret_p2)
                finished |= dones
                reset_all(roles, dones)  # auto-reset envs start a new battle: clear their memory

                if step % SYNC_EVERY == 0 or step == env.config.max_steps:
                    done_count, nan_a, nan_b = torch.cat((finished.sum().view(1), nans)).tolist()
                    raise_failures([AgentFailure(name, role, f"returned NaN in {count} action value(s)")
                                    for count, (_, name, role) in zip((nan_a, nan_b), roles) if count])
                    meter.update(done_count, step=step)
                    if done_count == games:
                        break
    finally:
        for (agent, name, role), mode in zip(roles, modes):
            if mode:
                failure = checked_call(agent.train, name, role, "train", True)
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


def checked_act(agent: "Agent", obs: dict[str, "torch.Tensor"], name: str, role: str, num_envs: int,
                device: "torch.device", raise_now: bool = True) -> "CleanAction | AgentFailure":
    """Call ``agent.act`` and validate what comes back, blaming the agent by name for any fault.

    With ``raise_now=False`` the failure is returned instead of raised, so that the caller can see
    whether the other agent failed in the same step before deciding who is to blame.
    """
    from arena.env import check_action
    from arena.guard import AgentCodeError, call_agent

    try:
        action = call_agent(name, "act", agent.act, obs)
        return check_action(action, num_envs, device, who="action")
    except AgentCodeError as exc:
        failure = AgentFailure(name, role, f"raised {exc.cause}")
    except ValueError as exc:
        failure = AgentFailure(name, role, f"returned a bad action: {exc}")
    if raise_now:
        raise failure
    return failure


def checked_call(fn: Any, name: str, role: str, what: str, *args: Any) -> AgentFailure | None:
    """Run one of the agent's methods (``eval``, ``reset``, ``train``); its failure, or None."""
    from arena.guard import AgentCodeError, call_agent

    try:
        call_agent(name, what, fn, *args)
    except AgentCodeError as exc:
        return AgentFailure(name, role, exc.reason)
    return None


def checked_reset(agent: "Agent", mask: "torch.Tensor | None", name: str, role: str) -> None:
    failure = checked_call(agent.reset, name, role, "reset", mask)
    if failure is not None:
        raise failure


def reset_all(roles: "Sequence[tuple[Agent, str, str]]", mask: "torch.Tensor | None") -> None:
    """Reset every agent; those that fail are blamed together."""
    raise_failures([f for agent, name, role in roles if (f := checked_call(agent.reset, name, role, "reset", mask))])


def merge_actions(a_is_p1: "torch.Tensor", act_a: "CleanAction", act_b: "CleanAction"
                  ) -> tuple[dict[str, "torch.Tensor"], dict[str, "torch.Tensor"]]:
    """Reassemble the two agents' batch actions into p1's and p2's."""
    import torch

    p1, p2 = {}, {}
    for key in ("rudder", "throttle", "fire"):
        a, b = getattr(act_a, key), getattr(act_b, key)
        p1[key] = torch.where(a_is_p1, a, b)
        p2[key] = torch.where(a_is_p1, b, a)
    return p1, p2
