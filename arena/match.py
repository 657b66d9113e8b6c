"""Batched play of two agents: one TensorEnv, sides swapped for half of the games.

Each agent acts once per step on the whole batch, so a match costs two ``act`` calls per step however
many games it holds. Where an agent plays p1 it sees p1's observation, elsewhere p2's; both views are
drawn from the player's own side, so no agent needs to know which side it flies.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.env.actions import CleanAction

RESULT_KEYS: tuple[str, ...] = ("a", "b", "games", "wins", "draws", "losses", "mean_length", "games_per_second")
SYNC_EVERY = 16  # steps between "all finished?" checks: the only host syncs of the loop


class AgentFailure(RuntimeError):
    """An agent raised, or returned a malformed action or NaNs. Names the agent and its role, so a
    tournament can score the forfeit and a user knows whose fault it was."""

    def __init__(self, agent: str, role: str, reason: str) -> None:
        self.agent, self.role, self.reason = agent, role, reason
        super().__init__(f"agent {agent!r} ({role}) {reason}")


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
               name_b: str | None = None, progress: bool = False) -> MatchResult:
    """Play ``games`` battles of A against B at once and count A's wins, draws and losses.

    A flies p1 in the first half of the envs and p2 in the second (an odd extra game goes to A as
    p1). Each env counts only its first episode. Agents are switched to eval mode for the match and
    restored afterwards. A stateful agent needs its own instance per side: passing the same object
    as A and B would mix the two sides' memories.

    Raises ``AgentFailure`` when an agent raises or returns a bad action or NaN, and ``ValueError``
    for a bad ``games`` count or device.
    """
    import torch

    from arena.env import TensorEnv
    from arena.progress import Progress

    if not isinstance(games, int) or isinstance(games, bool) or games < 1:
        raise ValueError(f"games must be a positive int, got {games!r}")
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
        for agent, name, role in roles:
            agent.eval()
            checked_reset(agent, None, name, role)
        obs = env.reset()
        with torch.no_grad():
            for step in range(1, env.config.max_steps + 1):
                obs_a = {k: torch.where(a_is_p1, obs["p1"][k], obs["p2"][k]) for k in obs["p1"]}
                obs_b = {k: torch.where(a_is_p1, obs["p2"][k], obs["p1"][k]) for k in obs["p1"]}
                act_a = checked_act(agent_a, obs_a, name_a, "A", games, dev)
                act_b = checked_act(agent_b, obs_b, name_b, "B", games, dev)
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
                for agent, name, role in roles:  # auto-reset envs start a new battle: clear their memory
                    checked_reset(agent, dones, name, role)

                if step % SYNC_EVERY == 0 or step == env.config.max_steps:
                    done_count, nan_a, nan_b = torch.cat((finished.sum().view(1), nans)).tolist()
                    for count, (_, name, role) in zip((nan_a, nan_b), roles):
                        if count:
                            raise AgentFailure(name, role, f"returned NaN in {count} action value(s)")
                    meter.update(done_count, step=step)
                    if done_count == games:
                        break
    finally:
        for (agent, _, _), mode in zip(roles, modes):
            if mode:
                agent.train(True)
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
                device: "torch.device") -> "CleanAction":
    """Call ``agent.act`` and validate what comes back, blaming the agent by name for any fault."""
    from arena.agents import first_line
    from arena.env import check_action

    try:
        action = agent.act(obs)
    except Exception as exc:  # noqa: BLE001 - any failure inside an agent is that agent's fault
        raise AgentFailure(name, role, f"raised {first_line(exc)}") from exc
    try:
        return check_action(action, num_envs, device, who="action")
    except ValueError as exc:
        raise AgentFailure(name, role, f"returned a bad action: {exc}") from None


def checked_reset(agent: "Agent", mask: "torch.Tensor | None", name: str, role: str) -> None:
    from arena.agents import first_line

    try:
        agent.reset(mask)
    except Exception as exc:  # noqa: BLE001
        raise AgentFailure(name, role, f"reset() raised {first_line(exc)}") from exc


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
