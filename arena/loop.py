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

import logging
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

log = logging.getLogger(__name__)

SIDES: tuple[str, str] = ("p1", "p2")
ACTION_KEYS: tuple[str, ...] = ("rudder", "throttle", "fire")

def needs_extended(agent: Any) -> bool:
    """Whether ``agent`` reads the extended observation: its class says so (``obs_mode = "extended"``),
    or it was built for an extended env (a checkpoint trained on one)."""
    config = getattr(agent, "env_config", None)
    return getattr(agent, "obs_mode", "default") == "extended" or getattr(config, "obs_mode", None) == "extended"


def observation_config(env_config: "EnvConfig | None", agents: Sequence[Any]) -> "EnvConfig":
    """``env_config`` (the defaults when None) with the extended observation when one of ``agents`` reads
    it. The others still get the standard keys: the seating hands each agent only what it asked for."""
    from dataclasses import replace

    from arena.env import EnvConfig

    env_config = env_config if env_config is not None else EnvConfig()
    if env_config.obs_mode == "extended" or not any(needs_extended(a) for a in agents):
        return env_config
    return replace(env_config, obs_mode="extended")


def plays_team(agent: Any) -> bool:
    """Whether ``agent`` takes a side's [n, T] observation (else it is flown seat by seat)."""
    return getattr(agent, "plays_team", False) is True


@dataclass
class Controller:
    """An agent in a seating, with the name and role a fault is blamed on."""

    agent: Any
    name: str
    role: str
    active: bool = True  # False once disabled: its rows idle (zero actions), it is not called again
    # With a seed, whatever the agent draws from torch's global generator comes from a stream of its
    # own, seeded so: its moves do not depend on which other agents drew before it.
    rng_seed: int | None = None
    rng_state: Any = None


@dataclass
class Rows:
    """One controller's rows of each side: a slice (one block) or an index tensor; None for none."""

    sides: tuple[Any, Any]
    counts: tuple[int, int]
    flat: bool  # flown seat by seat: n sides become n·T rows
    standard: bool = False  # the agent did not ask for the extended observation: its extra keys are left out

    @property
    def count(self) -> int:
        return self.counts[0] + self.counts[1]


@dataclass
class Party:
    """Controllers acting as one call: a family of agents (:mod:`arena.families`), or an agent alone, a
    family of one.

    The party's rows are its members' rows in member order, each member's p1 rows before its p2 rows.
    ``sides[s]`` holds the envs of side s in that order (a slice when they form one block), and
    ``order`` puts the two gathered sides back into member order (None when that is already so)."""

    members: list[int]  # controller positions
    actor: Any  # what acts: the family, or the lone member's agent
    sides: tuple[Any, Any]  # slices or env index tensors of each side, or None
    counts: tuple[int, int]
    order: Any  # permutation of cat(side rows) into member order, or None
    back: Any  # its inverse
    row_controller: Any  # [rows] controller position of each of the party's agent rows
    flat: bool
    standard: bool
    lone: "Controller | None" = None  # the one member of a party of one: its own random stream, its clock
    inactive_rows: Any = None  # [rows] bool where a disabled member's rows idle; None while all play

    @property
    def count(self) -> int:
        """Its sides' rows (battles, not seats)."""
        return self.counts[0] + self.counts[1]


def block_or_index(envs: "torch.Tensor", device: "torch.device") -> Any:
    """A slice when ``envs`` (sorted env indices) is one contiguous block, else an index tensor."""
    import torch

    if envs.numel() == 0:
        return None
    first, last = int(envs[0]), int(envs[-1])
    if last - first + 1 == envs.numel():
        return slice(first, last + 1)
    return envs.to(device=device, dtype=torch.long)


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

        from arena.env.observations import EXTENDED_ONLY_KEYS

        if owner.dim() != 2 or owner.shape[0] != 2:
            raise ValueError(f"owner: expected a [2, num_envs] tensor, got shape {list(owner.shape)}")
        self.controllers = list(controllers)
        self.num_envs = int(owner.shape[1])
        self.team_size = team_size
        self.device = device
        self.move_limit = move_limit  # seconds per act() call after the first (timed_move); None: unlimited
        self.owner = owner.to("cpu", torch.long)
        self.rows = self._rows()
        self.extended_only = EXTENDED_ONLY_KEYS  # left out for agents that did not ask for them
        self.covered = bool((self.owner >= 0).all())
        # A move limit is one agent's budget: timed agents act alone.
        self.parties = self._parties(families and move_limit is None)
        self.nans = torch.zeros(len(self.controllers), dtype=torch.int64, device=device)
        self.moves = 0  # act() rounds so far: the first may pay one-time costs and is only bounded (hang_bound)
        self.watchdog: Watchdog | None = None  # started with the first timed move

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
            mask = None if dones is None else self._rows_of(party, dones)
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

        kept = torch.zeros(self.num_envs, dtype=torch.bool)
        kept[envs.cpu()] = True
        failures: list[AgentFailure] = []
        for party in self._callable("keep_rows"):
            mask = torch.cat([kept[self.owner[s] == k] for k in party.members for s in range(2)])
            if party.flat:
                mask = mask.repeat_interleave(self.team_size)
            rows = torch.nonzero(mask).flatten().to(self.device)
            failures += self._blame(party, checked_call(party.actor.keep_rows, *self._who(party), "keep_rows", rows))
        self.owner = self.owner[:, envs.cpu()]
        self.num_envs = int(envs.numel())
        self.rows = self._rows()
        self.covered = bool((self.owner >= 0).all())
        parties = [self._party(p.members, p.actor) for p in self.parties]
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
                party.inactive_rows = self._inactive(party)

    def close(self) -> None:
        """Stop the idle watchdog thread now rather than when the seating is collected (an abandoned
        move keeps the seating alive for as long as it runs)."""
        if self.watchdog is not None:
            self.watchdog.close()

    # -- pieces -------------------------------------------------------------------------------------

    def _rows(self) -> list[Rows]:
        import torch

        out = []
        for k, c in enumerate(self.controllers):
            envs = [torch.nonzero(self.owner[s] == k).flatten() for s in range(2)]
            out.append(Rows((block_or_index(envs[0], self.device), block_or_index(envs[1], self.device)),
                            (envs[0].numel(), envs[1].numel()), self.team_size > 1 and not plays_team(c.agent),
                            not needs_extended(c.agent)))
        return out

    def _parties(self, families: bool) -> list[Party]:
        """Every controller with rows in a party, in the order of their first members: agents that can act
        as one (:func:`arena.families.family_key`) grouped when ``families``, the others alone."""
        groups = self._families() if families else []
        grouped = {k for members, _ in groups for k in members}
        lone = [([k], c.agent) for k, (c, rows) in enumerate(zip(self.controllers, self.rows))
                if rows.count and k not in grouped]
        return [self._party(members, actor) for members, actor in sorted(groups + lone, key=lambda g: g[0][0])]

    def _families(self) -> list[tuple[list[int], Any]]:
        """(members, family) of the controllers with rows whose agents can act as one."""
        from arena.families import Family, act_together, family_key
        from arena.guard import AgentCodeError, call_agent

        groups: dict[Any, list[int]] = {}
        for k, (c, rows) in enumerate(zip(self.controllers, self.rows)):
            if not rows.count:
                continue
            try:
                key = call_agent(c.name, "family_key", family_key, c.agent)
            except AgentCodeError as exc:
                self._alone([k], exc.reason)
                continue
            try:  # the key's own hash and equality are the agent's code too
                if key is not None:
                    call_agent(c.name, "family_key", groups.setdefault, (key, rows.flat, rows.standard), []).append(k)
            except AgentCodeError as exc:
                self._alone([k], f"family_key() returned a key that cannot group agents ({exc.cause})")
        found = []
        for members in groups.values():
            if len(members) < 2:
                continue
            streams = [lambda call, c=self.controllers[k]: on_own_stream(c, self.device, call) for k in members]
            try:
                family = call_agent(self.controllers[members[0]].name, "act_together", act_together,
                                    [self.controllers[k].agent for k in members], self._member_rows(members),
                                    streams)
            except AgentCodeError as exc:
                self._alone(members, exc.reason)
                continue
            if not isinstance(family, Family):
                self._alone(members, f"act_together() returned {type(family).__name__}, not an object with act(), "
                                     "reset() and keep_rows()")
                continue
            found.append((members, family))
        return found

    def _member_rows(self, members: list[int]) -> list[int]:
        """The rows each member of a family acts on (a row per seat if flown seat by seat)."""
        seats = self.team_size if self.rows[members[0]].flat else 1
        return [self.rows[k].count * seats for k in members]

    def _alone(self, members: list[int], why: str) -> None:
        """A family that cannot form: its members act one by one, said once."""
        names = ", ".join(repr(self.controllers[k].name) for k in members)
        log.warning("arena: agent%s %s: %s; %s one by one", "s" * (len(members) > 1), names, why,
                    "they act" if len(members) > 1 else "it acts")

    def _party(self, members: list[int], actor: Any) -> Party:
        """Where the rows of ``actor``, acting for ``members``, sit."""
        import torch

        if len(members) == 1:  # its sides as the controller's own: a view when they form one block
            own = self.rows[members[0]]
            count = own.count * (self.team_size if own.flat else 1)
            return Party(members, actor, own.sides, own.counts, None, None,
                         torch.full((count,), members[0], device=self.device), own.flat, own.standard,
                         lone=self.controllers[members[0]])
        sides: list[Any] = []
        place: list[list[int]] = [[], []]  # where each side's rows go in member order
        at = 0
        envs: list[list[torch.Tensor]] = [[], []]
        for k in members:
            for s in range(2):
                found = torch.nonzero(self.owner[s] == k).flatten()
                envs[s].append(found)
                place[s] += range(at, at + found.numel())
                at += found.numel()
        for s in range(2):
            joined = torch.cat(envs[s])
            sides.append(joined.to(self.device) if joined.numel() else None)
        counts = (len(place[0]), len(place[1]))
        order = back = None
        if counts[0] and counts[1]:
            back = torch.tensor(place[0] + place[1], dtype=torch.long)  # gathered position -> member order
            order = torch.empty_like(back)
            order[back] = torch.arange(back.numel())
            order, back = order.to(self.device), back.to(self.device)
        rows = self._member_rows(members)
        row_controller = torch.repeat_interleave(torch.tensor(members), torch.tensor(rows)).to(self.device)
        party = Party(members, actor, (sides[0], sides[1]), counts, order, back, row_controller,
                      self.rows[members[0]].flat, self.rows[members[0]].standard)
        party.inactive_rows = self._inactive(party)
        return party

    def _rows_of(self, party: Party, per_env: "torch.Tensor") -> "torch.Tensor":
        """A per-env [N] tensor (the battles that ended) on the rows of a party, in the order they act: each
        side's rows, p1's first, then in member order, a row per seat if flown seat by seat."""
        import torch

        parts = [self._select(per_env, sel) for sel in party.sides if sel is not None]
        local = parts[0] if len(parts) == 1 else torch.cat(parts)
        if party.order is not None:
            local = local.index_select(0, party.order)
        return local.repeat_interleave(self.team_size) if party.flat else local

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

    def _inactive(self, party: Party) -> Any:
        import torch

        if all(self.controllers[k].active for k in party.members):
            return None
        idle = torch.tensor([k for k in party.members if not self.controllers[k].active], device=self.device)
        return torch.isin(party.row_controller, idle)

    def _act_party(self, party: Party, obs: dict[str, dict[str, "torch.Tensor"]],
                   stacks: dict[str, "torch.Tensor"], out: dict[str, dict[str, "torch.Tensor"]]) -> list[AgentFailure]:
        """One call for a party: gather its rows once, check the action once, scatter it once; its failures.
        A party of one acts on its own random stream, and on the clock under a move limit."""
        stuck = [k for k in party.members if self.controllers[k].active and abandoned(self.controllers[k].agent)]
        if stuck:
            return [AgentFailure(self.controllers[k].name, self.controllers[k].role, "is not called again: an "
                                 "earlier move of it never returned", index=k) for k in stuck]
        observation = self._gather(obs, party, stacks)
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
        self._scatter(out, party, result)
        return []

    def _blank(self) -> dict[str, "torch.Tensor"]:
        import torch

        shape = (self.num_envs,) if self.team_size == 1 else (self.num_envs, self.team_size)
        return {"rudder": torch.zeros(shape, device=self.device), "throttle": torch.zeros(shape, device=self.device),
                "fire": torch.zeros(shape, dtype=torch.bool, device=self.device)}

    @staticmethod
    def _select(t: "torch.Tensor", sel: Any) -> "torch.Tensor":
        return t[sel] if isinstance(sel, slice) else t.index_select(0, sel)

    def _gather(self, obs: dict[str, dict[str, "torch.Tensor"]], party: Party,
                stacks: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        """The observation of a party: its rows of each side, p1's first, then put in member order,
        flattened seat by seat if need be."""
        import torch

        parts = []
        names: list[str] = []
        for s, sel in enumerate(party.sides):
            if sel is None:
                continue
            side = SIDES[s]
            if side not in obs:
                raise ValueError(f"the seating needs {side}'s observation, which was not given")
            if side not in stacks:  # one stacked tensor per side and step: one gather per party
                stacks[side] = torch.stack([obs[side][key] for key in obs[side]])
            names = list(obs[side])
            parts.append(stacks[side][:, sel] if isinstance(sel, slice) else stacks[side].index_select(1, sel))
        local = parts[0] if len(parts) == 1 else torch.cat(parts, 1)
        if party.order is not None:
            local = local.index_select(1, party.order)
        if party.flat:
            local = local.reshape(local.shape[0], -1)
        out = dict(zip(names, local.unbind(0)))
        if party.standard and self.extended_only[0] in out:
            for key in self.extended_only:
                out.pop(key, None)
        return out

    def _scatter(self, out: dict[str, dict[str, "torch.Tensor"]], party: Party, action: "CleanAction") -> None:
        """A party's action into each side's rows (a disabled member's rows stay zero)."""
        first = party.counts[0]
        for key in ACTION_KEYS:
            value = getattr(action, key)
            if party.inactive_rows is not None:
                value = value.masked_fill(party.inactive_rows.view(-1, *([1] * (value.dim() - 1))), 0)
            if party.flat:
                value = value.view(-1, self.team_size)
            if party.back is not None:
                value = value.index_select(0, party.back)
            for s, sel in enumerate(party.sides):
                if sel is None:
                    continue
                part = value[:first] if s == 0 else value[first:]
                target = out[SIDES[s]][key]
                if isinstance(sel, slice):
                    target[sel] = part
                else:
                    target.index_copy_(0, sel, part)

Observer = Callable[[Turn], None]


@dataclass
class GameLoop:
    """A seating playing in one env: act, step, tell the observers, reset the agents of finished battles.

    ``given`` sides are acted for by the caller (a learner's actions); every other side comes from the
    seating, and the failures of a step are raised together before the env moves on. The observers see
    every step (replay recorders, statistics); one with a ``before_step(env)`` method is also called
    before the env steps, while it still shows the state the agents acted on (a recorder takes a new
    battle's first frame there). A caller that judges failures itself (the tournament executor, which
    forfeits the games of an agent that failed) acts through the seating and calls :meth:`advance`.
    """

    env: "TensorEnv"
    seating: Seating
    observers: list[Observer] = field(default_factory=list)
    steps: int = 0

    def reset_agents(self, envs: "torch.Tensor | None" = None) -> None:
        """Every agent forgets the battles of the [N] bool mask ``envs`` (None: everything), which start anew."""
        raise_failures(self.seating.reset(envs))

    def step(self, obs: dict[str, dict[str, "torch.Tensor"]],
             given: dict[str, dict[str, "torch.Tensor"]] | None = None) -> Turn:
        given = given or {}
        actions, failures = self.seating.act({side: obs[side] for side in SIDES if side not in given})
        raise_failures(failures)
        actions.update(given)
        turn = self.advance(obs, actions)
        raise_failures(self.seating.reset(turn.dones))  # auto-reset battles start afresh: clear their memory
        return turn

    def advance(self, obs: dict[str, dict[str, "torch.Tensor"]], actions: dict[str, dict[str, "torch.Tensor"]]
                ) -> Turn:
        """The env steps both sides' ``actions`` (taken on ``obs``); the observers see the turn."""
        for observer in self.observers:
            before = getattr(observer, "before_step", None)
            if before is not None:
                before(self.env)
        next_obs, rewards, dones, infos = self.env.step(actions["p1"], actions["p2"])
        self.steps += 1
        turn = Turn(self.steps, obs, actions, next_obs, rewards, dones, infos)
        for observer in self.observers:
            observer(turn)
        return turn
