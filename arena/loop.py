"""The one game loop: which agent flies which side of which battle, and one env step with all of them.

``arena play``, the tournament executor and training opponent pools all describe their games the same
way, as a *seating*: controller ``k`` flies side ``s`` of env ``e`` where ``owner[s, e] == k`` (−1: no
controller; the side idles, or the caller acts for it itself, as a learner does). Each step the loop
gathers each controller's rows from the two sides' observations (a view when they form one block),
calls its agent's ``act`` once, checks the action, and scatters it back into the two sides' actions.
Every agent therefore acts once per step on one batch, always on the same rows in the same order, so
per-env memory (CrankAgent's state machine, a recurrent policy) stays aligned; ``reset(mask)`` clears
the rows whose battle ended.

Team battles (``team_size`` T > 1): an agent whose class sets ``plays_team = True`` gets a side's
``[n, T]`` observation and returns ``[n, T]`` actions. Any other agent knows single aircraft and is
flown seat by seat: its n sides come as ``n·T`` rows (a side's seats next to each other) and its
``[n·T]`` actions are folded back. That is how CrankAgent, the placeholder and every 1-v-1 checkpoint
fly any team size: each seat's standard observation is computed against that aircraft's own nearest
enemy.

Faults are the caller's to judge: ``arena play`` and training stop with the agents named, a tournament
forfeits the participant's games and plays on, and hands the seating who still plays
(:meth:`Seating.set_active`).

With a move limit, each ``act`` runs on a watchdog thread (:class:`arena.guard.Watchdog`), so that a
move that never returns is a time forfeit too instead of a hung league: the agent is then abandoned
(:func:`arena.agent_calls.abandon`) and never called again in this process. Calling an agent and blaming it
by name is :mod:`arena.agent_calls`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig, TensorEnv
    from arena.env.actions import CleanAction
    from arena.guard import Watchdog

from arena.agent_calls import (
    AgentFailure,
    abandoned,
    checked_act,
    checked_call,
    on_own_stream,
    raise_failures,
    timed_move,
)
from arena.parties import SIDES, Controller, Layout, Party, needs_extended

__all__ = ["Controller", "GameLoop", "Observer", "Seating", "Turn", "needs_extended", "observation_config"]


def observation_config(env_config: "EnvConfig | None", agents: Sequence[Any]) -> "EnvConfig":
    """``env_config`` (the defaults when None) with the extended observation when one of ``agents`` reads
    it. The others still get the standard keys: the seating hands each agent only what it asked for."""
    from dataclasses import replace

    from arena.env import EnvConfig

    env_config = env_config if env_config is not None else EnvConfig()
    if env_config.obs_mode == "extended" or not any(needs_extended(a) for a in agents):
        return env_config
    return replace(env_config, obs_mode="extended")



@dataclass
class Turn:
    """One step of the game loop, as an ``on_step`` observer sees it."""

    step: int  # steps taken by this loop, this one included
    obs: dict[str, dict[str, "torch.Tensor"]]  # what the agents saw
    actions: dict[str, dict[str, "torch.Tensor"]]  # what each side did (clean)
    next_obs: dict[str, dict[str, "torch.Tensor"]]
    rewards: dict[str, "torch.Tensor"]
    dones: "torch.Tensor"
    infos: dict[str, Any]


class Seating:
    """Who flies which (side, env) rows, and acting for all of them at once.

    ``owner`` is [2, N] (side, env) of controller positions, −1 for rows nobody here flies. The same
    agent object listed twice would have its memory split between two batches: give it one controller
    with all its rows instead. Controllers act in parties (:class:`Party`): with ``families``, agents of
    one family (:mod:`arena.families`) act as one call; every other agent is a party of one.
    """

    def __init__(self, controllers: Sequence[Controller], owner: "torch.Tensor", team_size: int,
                 device: "torch.device", move_limit: float | None = None, families: bool = False) -> None:
        import torch

        if owner.dim() != 2 or owner.shape[0] != 2:
            raise ValueError(f"owner: expected a [2, num_envs] tensor, got shape {list(owner.shape)}")
        self.controllers = list(controllers)
        self.team_size = team_size
        self.device = device
        self.move_limit = move_limit  # seconds per act() call after the first (timed_move); None: unlimited
        self.layout = Layout(self.controllers, owner.to("cpu", torch.long), team_size, device)
        # A move limit is one agent's budget: timed agents act alone.
        self.parties = self.layout.parties(families and move_limit is None)
        self.nans = torch.zeros(len(self.controllers), dtype=torch.int64, device=device)
        self.moves = 0  # act() rounds so far: the first may pay one-time costs and is only bounded (hang_bound)
        self.watchdog: Watchdog | None = None  # started with the first timed move

    @property
    def num_envs(self) -> int:
        return int(self.layout.owner.shape[1])

    @property
    def families(self) -> list[Party]:
        """The parties of several agents acting as one."""
        return [p for p in self.parties if p.lone is None]

    # -- acting -------------------------------------------------------------------------------------

    def act(self, obs: dict[str, dict[str, "torch.Tensor"]]
            ) -> tuple[dict[str, dict[str, "torch.Tensor"]], list[AgentFailure]]:
        """Every active controller's action, merged into each side's ``{rudder, throttle, fire}``.

        ``obs`` needs only the sides some controller flies. Rows nobody flies (or whose controller
        failed) get a zero action. Returns the actions and the failures of this step (empty when all
        went well); NaN values are counted per controller for :meth:`nan_failures`.
        """
        stacks: dict[str, "torch.Tensor"] = {}  # one stacked observation per side and step
        out = {side: self._blank() for side in SIDES if side in obs}
        failures: list[AgentFailure] = []
        for party in self.parties:
            if self._plays(party):
                failures += self._act_party(party, obs, stacks, out)
        self.moves += 1
        return out, failures

    def reset(self, dones: "torch.Tensor | None" = None) -> list[AgentFailure]:
        """Reset every active controller where ``dones`` [N] is set (everything when None)."""
        failures = []
        for party in self._callable("reset"):
            mask = None if dones is None else party.rows_of(dones)
            failures += self._blame(party, checked_call(party.actor.reset, *self._who(party), "reset", mask))
        return failures

    def can_keep_envs(self) -> bool:
        """Whether every agent still playing here can drop rows of its memory (``keep_rows``), so that the
        batch can drop its finished battles (:meth:`keep_envs`)."""
        return all(callable(getattr(p.actor, "keep_rows", None)) for p in self.parties if self._plays(p))

    def keep_envs(self, envs: "torch.Tensor") -> list[AgentFailure]:
        """Keep the envs ``envs`` ([K] increasing indices) only, renumbered in that order, as
        :meth:`arena.env.TensorEnv.keep_envs` does: every agent still playing keeps the memory of its rows
        there (``keep_rows``). Returns the failures of agents that raised doing so."""
        import torch

        kept = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        kept[envs.to(self.device)] = True
        failures: list[AgentFailure] = []
        for party in self._callable("keep_rows"):
            rows = torch.nonzero(party.rows_of(kept)).flatten()
            failures += self._blame(party, checked_call(party.actor.keep_rows, *self._who(party), "keep_rows", rows))
        self.layout = Layout(self.controllers, self.layout.owner[:, envs.cpu()], self.team_size, self.device)
        parties = [self.layout.party(p.members, p.actor) for p in self.parties]
        self.parties = [p for p in parties if p.row_controller.numel()]  # those left with battles to fly
        return failures

    def nan_failures(self) -> list[AgentFailure]:
        """Controllers that returned NaN since the last call (one host sync), and restart the count."""
        counts = self.nans.tolist()
        self.nans.zero_()
        return [AgentFailure(c.name, c.role, f"returned NaN in {int(n)} action value(s)", index=k)
                for k, (c, n) in enumerate(zip(self.controllers, counts)) if n and c.active]

    def set_active(self, active: Sequence[bool]) -> None:
        """Which controllers still play, one flag each: the others are not called, and their rows idle (in a
        family, the family still acts for the others and their rows get a zero action)."""
        changed = {k for k, (c, on) in enumerate(zip(self.controllers, active)) if c.active != bool(on)}
        for k in changed:
            self.controllers[k].active = bool(active[k])
        for party in self.parties:
            if changed.intersection(party.members):
                party.inactive_rows = self.layout.inactive(party)

    def close(self) -> None:
        """Stop the idle watchdog thread now rather than when the seating is collected (an abandoned
        move keeps the seating alive for as long as it runs)."""
        if self.watchdog is not None:
            self.watchdog.close()

    # -- pieces -------------------------------------------------------------------------------------

    def _plays(self, party: Party) -> bool:
        """Whether any member of ``party`` still plays."""
        return any(self.controllers[k].active for k in party.members)

    def _callable(self, method: str) -> list[Party]:
        """The parties still playing whose actor has ``method`` and was not abandoned."""
        return [p for p in self.parties if self._plays(p) and not abandoned(p.actor)
                and callable(getattr(p.actor, method, None))]

    def _who(self, party: Party) -> tuple[str, str]:
        """(name, role) a party's fault is told under."""
        if party.lone is not None:
            return party.lone.name, party.lone.role
        first = self.controllers[party.members[0]]
        return f"{first.name} and {len(party.members) - 1} more acting as one", first.role

    def _blame(self, party: Party, failure: AgentFailure | None) -> list[AgentFailure]:
        """A party's fault is every active member's."""
        if failure is None:
            return []
        if party.lone is not None:
            failure.index = party.members[0]
            return [failure]
        return [AgentFailure(self.controllers[k].name, self.controllers[k].role,
                             f"(acting as one with {len(party.members) - 1} agents of its kind) {failure.reason}",
                             index=k)
                for k in party.members if self.controllers[k].active]

    def _act_party(self, party: Party, obs: dict[str, dict[str, "torch.Tensor"]],
                   stacks: dict[str, "torch.Tensor"], out: dict[str, dict[str, "torch.Tensor"]]) -> list[AgentFailure]:
        """One call for a party: gather its rows once, check the action once, scatter it once; its failures.
        A party of one acts on its own random stream, and on the clock under a move limit."""
        stuck = [k for k in party.members if self.controllers[k].active and abandoned(self.controllers[k].agent)]
        if stuck:
            return [AgentFailure(self.controllers[k].name, self.controllers[k].role, "is not called again: an "
                                 "earlier move of it never returned", index=k) for k in stuck]
        observation = party.gather(obs, stacks)
        name, role = self._who(party)

        def move() -> "CleanAction | AgentFailure":
            return checked_act(party.actor, observation, name, role, party.row_controller.numel(), self.device,
                               raise_now=False, team_size=1 if party.flat else self.team_size)

        if party.lone is None:
            result = move()
        elif self.move_limit is None:
            result = on_own_stream(party.lone, self.device, move)
        else:
            if self.watchdog is None:
                from arena.guard import Watchdog

                self.watchdog = Watchdog("arena-move")
            result = timed_move(party.lone, party.count, move, self.move_limit, self.moves == 0, self.device,
                                self.watchdog)
        if isinstance(result, AgentFailure):
            return self._blame(party, result)
        nan_rows = result.nan_count if result.nan_count.dim() == 1 else result.nan_count.sum(-1)
        self.nans.index_add_(0, party.row_controller, nan_rows.to(self.nans.dtype))
        party.scatter(out, result)
        return []

    def _blank(self) -> dict[str, "torch.Tensor"]:
        import torch

        shape = (self.num_envs,) if self.team_size == 1 else (self.num_envs, self.team_size)
        return {"rudder": torch.zeros(shape, device=self.device), "throttle": torch.zeros(shape, device=self.device),
                "fire": torch.zeros(shape, dtype=torch.bool, device=self.device)}


Observer = Callable[[Turn], None]


@dataclass
class GameLoop:
    """A seating playing in one env: act, step, tell the observers, reset the agents of finished battles.

    ``given`` sides are acted for by the caller (a learner's actions); every other side comes from the
    seating, and the failures of a step are raised together before the env moves on. The observers see
    every step (replay recorders, statistics); one with a ``before_step(env)`` method is also called
    before the env steps, while it still shows the state the agents acted on (a recorder takes a new
    battle's first frame there).
    """

    env: "TensorEnv"
    seating: Seating
    observers: list[Observer] = field(default_factory=list)
    steps: int = 0

    def reset_agents(self, envs: "torch.Tensor | None" = None) -> None:
        """Every agent forgets the battles of the [N] bool mask ``envs`` (None: everything), which start anew."""
        raise_failures(self.seating.reset(envs))

    def step(self, obs: dict[str, dict[str, "torch.Tensor"]],
             given: dict[str, dict[str, "torch.Tensor"]] | None = None,
             judge: Callable[[list[AgentFailure]], None] = raise_failures) -> Turn:
        """The seating acts (``given`` sides are the caller's), the env steps, finished battles' agents
        reset. ``judge`` gets the failures of the acting and of the resets: by default they are raised
        together; a tournament forfeits the games of the agents that failed and plays on."""
        given = given or {}
        actions, failures = self.seating.act({side: obs[side] for side in SIDES if side not in given})
        judge(failures)
        actions.update(given)
        for observer in self.observers:
            before = getattr(observer, "before_step", None)
            if before is not None:
                before(self.env)
        next_obs, rewards, dones, infos = self.env.step(actions["p1"], actions["p2"])
        self.steps += 1
        turn = Turn(self.steps, obs, actions, next_obs, rewards, dones, infos)
        for observer in self.observers:
            observer(turn)
        judge(self.seating.reset(turn.dones))  # auto-reset battles start afresh: clear their memory
        return turn
