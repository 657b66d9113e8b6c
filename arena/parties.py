"""Who acts as one call, on which rows: the parties of a seating (:class:`arena.loop.Seating`).

A seating's ``owner`` table says which controller flies side ``s`` of env ``e``. A :class:`Layout` reads
it once into each controller's rows (a slice when they form one block, so that the agent sees a view),
and forms the *parties*: agents of one family (:mod:`arena.families`) acting as one call, every other
agent alone, a family of one. A :class:`Party` knows where its rows sit, so it gathers its observation
from the two sides and scatters its action back without asking who its members are.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.env.actions import CleanAction

from arena.agent_calls import on_own_stream

log = logging.getLogger(__name__)

SIDES: tuple[str, str] = ("p1", "p2")


def needs_extended(agent: Any) -> bool:
    """Whether ``agent`` reads the extended observation: its class says so (``obs_mode = "extended"``),
    or it was built for an extended env (a checkpoint trained on one)."""
    config = getattr(agent, "env_config", None)
    return getattr(agent, "obs_mode", "default") == "extended" or getattr(config, "obs_mode", None) == "extended"


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


def block_or_index(envs: "torch.Tensor", device: "torch.device") -> Any:
    """A slice when ``envs`` (sorted env indices) is one contiguous block, else an index tensor."""
    import torch

    if envs.numel() == 0:
        return None
    first, last = int(envs[0]), int(envs[-1])
    if last - first + 1 == envs.numel():
        return slice(first, last + 1)
    return envs.to(device=device, dtype=torch.long)


def _select(t: "torch.Tensor", sel: Any) -> "torch.Tensor":
    return t[sel] if isinstance(sel, slice) else t.index_select(0, sel)


@dataclass
class Party:
    """Controllers acting as one call: a family of agents, or an agent alone, a family of one.

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
    team_size: int
    lone: "Controller | None" = None  # the one member of a party of one: its own random stream, its clock
    inactive_rows: Any = None  # [rows] bool where a disabled member's rows idle; None while all play

    @property
    def count(self) -> int:
        """Its sides' rows (battles, not seats)."""
        return self.counts[0] + self.counts[1]

    def rows_of(self, per_env: "torch.Tensor") -> "torch.Tensor":
        """A per-env [N] tensor (the battles that ended) on the party's rows, in the order it acts: each
        side's rows, p1's first, then in member order, a row per seat if flown seat by seat."""
        import torch

        parts = [_select(per_env, sel) for sel in self.sides if sel is not None]
        local = parts[0] if len(parts) == 1 else torch.cat(parts)
        if self.order is not None:
            local = local.index_select(0, self.order)
        return local.repeat_interleave(self.team_size) if self.flat else local

    def gather(self, obs: dict[str, dict[str, "torch.Tensor"]], stacks: dict[str, "torch.Tensor"]
               ) -> dict[str, "torch.Tensor"]:
        """The party's observation: its rows of each side, p1's first, then put in member order,
        flattened seat by seat if need be, without the extended keys where its agents did not ask for
        them. ``stacks`` holds one stacked tensor per side and step, shared by the parties, so that each
        party gathers once."""
        import torch

        from arena.env.observations import EXTENDED_ONLY_KEYS

        parts = []
        names: list[str] = []
        for s, sel in enumerate(self.sides):
            if sel is None:
                continue
            side = SIDES[s]
            if side not in obs:
                raise ValueError(f"the seating needs {side}'s observation, which was not given")
            if side not in stacks:
                stacks[side] = torch.stack([obs[side][key] for key in obs[side]])
            names = list(obs[side])
            parts.append(stacks[side][:, sel] if isinstance(sel, slice) else stacks[side].index_select(1, sel))
        local = parts[0] if len(parts) == 1 else torch.cat(parts, 1)
        if self.order is not None:
            local = local.index_select(1, self.order)
        if self.flat:
            local = local.reshape(local.shape[0], -1)
        out = dict(zip(names, local.unbind(0)))
        if self.standard and EXTENDED_ONLY_KEYS[0] in out:
            for key in EXTENDED_ONLY_KEYS:
                out.pop(key, None)
        return out

    def scatter(self, out: dict[str, dict[str, "torch.Tensor"]], action: "CleanAction") -> None:
        """The party's action into each side's rows (a disabled member's rows stay zero)."""
        from arena.env.actions import ACTION_KEYS

        first = self.counts[0]
        for key in ACTION_KEYS:
            value = getattr(action, key)
            if self.inactive_rows is not None:
                value = value.masked_fill(self.inactive_rows.view(-1, *([1] * (value.dim() - 1))), 0)
            if self.flat:
                value = value.view(-1, self.team_size)
            if self.back is not None:
                value = value.index_select(0, self.back)
            for s, sel in enumerate(self.sides):
                if sel is None:
                    continue
                part = value[:first] if s == 0 else value[first:]
                target = out[SIDES[s]][key]
                if isinstance(sel, slice):
                    target[sel] = part
                else:
                    target.index_copy_(0, sel, part)


@dataclass
class Layout:
    """Where each controller's rows sit in an ``owner`` table ([2, N] controller positions, −1 for rows
    nobody here flies), and the parties they form."""

    controllers: list[Controller]
    owner: "torch.Tensor"  # on the CPU
    team_size: int
    device: "torch.device"
    rows: list[Rows] = field(init=False)

    def __post_init__(self) -> None:
        import torch

        self.rows = []
        for k, c in enumerate(self.controllers):
            envs = [torch.nonzero(self.owner[s] == k).flatten() for s in range(2)]
            self.rows.append(Rows((block_or_index(envs[0], self.device), block_or_index(envs[1], self.device)),
                                  (envs[0].numel(), envs[1].numel()), self.team_size > 1 and not plays_team(c.agent),
                                  not needs_extended(c.agent)))

    def parties(self, families: bool) -> list[Party]:
        """Every controller with rows in a party, in the order of their first members: agents that can act
        as one (:func:`arena.families.family_key`) grouped when ``families``, the others alone."""
        groups = self._families() if families else []
        grouped = {k for members, _ in groups for k in members}
        lone = [([k], c.agent) for k, (c, rows) in enumerate(zip(self.controllers, self.rows))
                if rows.count and k not in grouped]
        return [self.party(members, actor) for members, actor in sorted(groups + lone, key=lambda g: g[0][0])]

    def party(self, members: list[int], actor: Any) -> Party:
        """Where the rows of ``actor``, acting for ``members``, sit."""
        import torch

        first, rows = self.rows[members[0]], self.member_rows(members)
        if len(members) == 1:  # its sides as the controller's own: a view when they form one block
            return Party(members, actor, first.sides, first.counts, None, None,
                         torch.full((rows[0],), members[0], device=self.device), first.flat, first.standard,
                         self.team_size, lone=self.controllers[members[0]])
        place: list[list[int]] = [[], []]  # where each side's rows go in member order
        envs: list[list[torch.Tensor]] = [[], []]
        at = 0
        for k in members:
            for s in range(2):
                found = torch.nonzero(self.owner[s] == k).flatten()
                envs[s].append(found)
                place[s] += range(at, at + found.numel())
                at += found.numel()
        joined = [torch.cat(envs[s]) for s in range(2)]
        sides = tuple(j.to(self.device) if j.numel() else None for j in joined)
        counts = (len(place[0]), len(place[1]))
        order = back = None
        if counts[0] and counts[1]:
            back = torch.tensor(place[0] + place[1], dtype=torch.long)  # gathered position -> member order
            order = torch.empty_like(back)
            order[back] = torch.arange(back.numel())
            order, back = order.to(self.device), back.to(self.device)
        row_controller = torch.repeat_interleave(torch.tensor(members), torch.tensor(rows))
        party = Party(members, actor, (sides[0], sides[1]), counts, order, back, row_controller.to(self.device),
                      first.flat, first.standard, self.team_size)
        party.inactive_rows = self.inactive(party)
        return party

    def member_rows(self, members: list[int]) -> list[int]:
        """The rows each member of a family acts on (a row per seat if flown seat by seat)."""
        seats = self.team_size if self.rows[members[0]].flat else 1
        return [self.rows[k].count * seats for k in members]

    def inactive(self, party: Party) -> Any:
        """[rows] bool of the party's rows whose controller no longer plays; None while all play."""
        import torch

        if all(self.controllers[k].active for k in party.members):
            return None
        idle = torch.tensor([k for k in party.members if not self.controllers[k].active], device=self.device)
        return torch.isin(party.row_controller, idle)

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
                                    [self.controllers[k].agent for k in members], self.member_rows(members),
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

    def _alone(self, members: list[int], why: str) -> None:
        """A family that cannot form: its members act one by one, said once."""
        names = ", ".join(repr(self.controllers[k].name) for k in members)
        log.warning("arena: agent%s %s: %s; %s one by one", "s" * (len(members) > 1), names, why,
                    "they act" if len(members) > 1 else "it acts")
