"""The opponent pool of a training run: who flies p2 in which envs, one agent per slice of the batch.

Fixed opponents (agent names, frozen checkpoints) keep their slice for the whole run; the ``self``
and ``league`` entries share theirs among opponents drawn by PFSP (:mod:`arena.training.pfsp`) each
rollout. What a ``--vs`` entry is comes from :mod:`arena.training.opponent_specs`; an opponent's
per-env memory is saved by :mod:`arena.training.agent_memory`.

The learner is always p1 here: each player sees the world from its own side, so a policy trained as
p1 plays p2 just as well.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from arena.agent_calls import checked_call, raise_failures
from arena.loop import Controller, Seating
from arena.training.agent_memory import capture_agent_memory, restore_agent_memory
from arena.training.opponent_specs import DRAWN, OpponentSpec, split_envs
from arena.training.pfsp import GatherObjects, SelfPlayPool, SnapshotError, Tally

if TYPE_CHECKING:
    import torch


@dataclass
class Slot:
    """A contiguous slice of envs played by one opponent agent."""

    group: int
    start: int
    stop: int
    agent: Any = None
    checkpoint: str | None = None  # self-play: file name of the snapshot playing here
    left: int = 0  # drawn slots: rollouts before the next draw (0: drawn at the next rollout)

    @property
    def size(self) -> int:
        return self.stop - self.start


class OpponentPool:
    """Who flies p2 in every env: each slot's agent on its slice of envs, as one :class:`Seating`.

    ``make_agent(spec)`` builds fixed opponents (agent names, frozen checkpoints); ``self_play`` serves
    the ``self`` and ``league`` entries, whose envs are shared among up to ``self_slots`` opponents
    drawn by :meth:`begin_rollout`. Until this run has written a checkpoint, ``self`` plays
    ``snapshot()``, a frozen copy of the learner as it is now.

    A drawn opponent keeps its slot for ``tenure`` rollouts, the slots' turns staggered so that a few
    change at each rollout. A trainer gives a changed slot's envs new battles (``begin_rollout``
    returns them), so every game is played against one opponent from start to end, and its result
    is credited to the opponent that played all of it. ``tenure`` should span a whole battle; with
    1 every slot is drawn again at every rollout. With ``handover`` the caller is told of no change:
    a new opponent takes over the battles in flight, and a game's result goes to whoever ends it.
    """

    def __init__(self, specs: Sequence[OpponentSpec], num_envs: int, make_agent: Callable[[OpponentSpec], Any],
                 self_play: SelfPlayPool | None = None, snapshot: Callable[[], Any] | None = None,
                 self_slots: int = 4, team_size: int = 1, tenure: int = 1, handover: bool = False) -> None:
        if tenure < 1:
            raise ValueError(f"tenure: expected at least 1 rollout, got {tenure}")
        if any(s.kind in DRAWN for s in specs) and (self_play is None or snapshot is None):
            raise ValueError("a 'self' or 'league' opponent needs a SelfPlayPool and a snapshot function")
        self.specs = list(specs)
        self.num_envs = num_envs
        self.tenure = tenure
        self.handover = handover
        self.self_play = self_play
        self.snapshot = snapshot
        self.counts = split_envs([s.weight for s in self.specs], num_envs)
        self.slots: list[Slot] = []
        start = 0
        for g, (spec, count) in enumerate(zip(self.specs, self.counts)):
            if spec.kind in DRAWN:
                pieces = split_envs([1.0] * min(self_slots, count), count)
                for piece in pieces:
                    self.slots.append(Slot(g, start, start + piece))
                    start += piece
            else:
                self.slots.append(Slot(g, start, start + count, agent=make_agent(spec)))
                start += count
        self._fallback: Any = None
        self.team_size = team_size
        self._seating: Seating | None = None  # built by seating(), rebuilt when the slots change
        self.tallies = [Tally() for _ in self.specs]

    def group_slices(self) -> list[tuple[OpponentSpec, int, int]]:
        """(spec, first env, end env) of each ``--vs`` entry."""
        out, start = [], 0
        for spec, count in zip(self.specs, self.counts):
            out.append((spec, start, start + count))
            start += count
        return out

    def begin_rollout(self, generator: "torch.Generator") -> list[Slot]:
        """Pick up new checkpoints and draw (PFSP) an opponent for each drawn slot whose turn it is.

        Returns the slots drawn now (none with ``handover``): a caller whose envs are already playing
        starts those slots' battles over, so that no game changes opponent midway.
        """
        drawn = [s for s in self.slots if self.specs[s.group].kind in DRAWN]
        if not drawn:
            return []
        assert self.self_play is not None and self.snapshot is not None
        self.self_play.refresh()
        stopgap = bool(self.self_play.records)  # a copy of the learner plays only until there is a draw
        due = [s for s in drawn if s.left <= 0 or s.agent is None or (stopgap and s.checkpoint is None)]
        first = all(s.agent is None for s in drawn)
        for slot in drawn:
            slot.left -= 1
        if not due:
            return []
        names = self.self_play.sample(len(due), generator)
        for slot, name in zip(due, names):
            while True:  # an unreadable snapshot is skipped (with a warning) and another one drawn
                try:
                    self.assign(slot, name)
                    break
                except SnapshotError:
                    redraw = self.self_play.sample(1, generator)
                    if not redraw:
                        self.use_fallback([slot])
                        break
                    name = redraw[0]
        if not names:
            self.use_fallback(due)
        elif all(slot.checkpoint is not None for slot in drawn):
            self._fallback = None
        for i, slot in enumerate(due):  # the first turns staggered, so later draws spread over rollouts
            slot.left = self.tenure - 1 + (i * self.tenure // len(due) if first else 0)
        return [] if self.handover else due

    def start_rollout(self, generator: "torch.Generator", device: "torch.device") -> tuple[list[Slot], Seating]:
        """The first of a trainer's two calls a rollout: the draw (:meth:`begin_rollout`: the slots whose
        battles restart) and the seating that flies p2 for the whole rollout."""
        slots = self.begin_rollout(generator)
        return slots, self.seating(device)

    def end_rollout(self, wins: "torch.Tensor", draws: "torch.Tensor", losses: "torch.Tensor",
                    gather: GatherObjects | None = None) -> None:
        """The second: refuse opponents that returned NaN (before the rollout is used, as in play), then
        credit the finished games ([N] counts per env, learner's side). ``gather`` (the processes of a run
        on several) pools every process's PFSP records, so all draw alike."""
        self.check_nans()
        before = self.self_play.snapshot_records() if gather is not None and self.self_play is not None else None
        self.record(wins, draws, losses)
        if before is not None and self.self_play is not None and gather is not None:
            self.self_play.merge_records(before, gather)

    def use_fallback(self, slots: Sequence[Slot]) -> None:
        """Play a frozen copy of the learner where no past checkpoint is available."""
        assert self.snapshot is not None
        if self._fallback is None:
            self._fallback = self.snapshot()
        for slot in slots:
            slot.agent, slot.checkpoint = self.own_copy(self._fallback, slot), None
            failure = checked_call(slot.agent.reset, *self.who(slot), "reset", None)
            if failure is not None:
                raise failure
        self._seating = None

    def replace_agent(self, group: int, agent: Any) -> None:
        """A fixed ``--vs`` entry (``group``) played by ``agent`` from now on, reset (a league's exploiter
        plays the learner as it is at each rollout)."""
        for slot in self.slots:
            if slot.group == group:
                slot.agent = agent
                failure = checked_call(agent.reset, *self.who(slot), "reset", None)
                if failure is not None:
                    raise failure
        self._seating = None

    def assign(self, slot: Slot, name: str) -> None:
        assert self.self_play is not None
        slot.agent, slot.checkpoint = self.own_copy(self.self_play.agent(name), slot), name
        self._seating = None
        failure = checked_call(slot.agent.reset, *self.who(slot), "reset", None)
        if failure is not None:
            raise failure

    def own_copy(self, agent: Any, slot: Slot) -> Any:
        """``agent``, or a copy of it when another slot plays it: an agent's per-env memory then
        belongs to one slot's envs, and survives other slots' changes of opponent. With a tenure of
        one rollout every slot is drawn afresh each time, so slots that drew the same agent share it:
        one batch, one call a step."""
        if self.tenure == 1 or not any(other.agent is agent for other in self.slots if other is not slot):
            return agent
        try:
            return copy.deepcopy(agent)
        except Exception:  # noqa: BLE001 - an agent that cannot be copied plays both slots as one batch
            return agent

    def who(self, slot: Slot) -> tuple[str, str]:
        """(agent name, role) to blame for a slot's failure: ``crank`` / ``--vs crank=3``, or the snapshot file."""
        spec = self.specs[slot.group]
        if spec.kind in DRAWN:
            return (slot.checkpoint or "self (snapshot of the learner)"), f"--vs {spec.kind}"
        return spec.label, f"--vs {spec}"

    def seating(self, device: "torch.device") -> Seating:
        """The pool as a seating of p2: one controller per distinct agent, on all the envs it plays.

        A snapshot drawn for two slots is one agent, so it gets one controller over both slices and
        its per-env memory stays one batch. Rebuilt after the slots change (a new rollout's draw).
        """
        import torch

        if self._seating is not None and self._seating.device == device:
            return self._seating
        agents: list[Any] = []
        controllers: list[Controller] = []
        owner = torch.full((2, self.num_envs), -1, dtype=torch.long)
        for slot in self.slots:
            k = next((i for i, agent in enumerate(agents) if agent is slot.agent), None)
            if k is None:
                k = len(agents)
                agents.append(slot.agent)
                controllers.append(Controller(slot.agent, *self.who(slot)))
            owner[1, slot.start:slot.stop] = k
        # Drawn opponents of one kind (past checkpoints) act as one call. Every slot is drawn afresh each
        # rollout only with a tenure of one, so no family outlives the memory of its members.
        self._seating = Seating(controllers, owner, self.team_size, device, families=self.tenure == 1)
        return self._seating

    def check_nans(self) -> None:
        """Refuse opponents that returned NaN since the last call (one host sync; once per rollout).

        ``arena play`` refuses NaN actions; training does the same rather than silently playing them
        as zeros, so a broken opponent is found instead of trained against.
        """
        if self._seating is not None:
            raise_failures(self._seating.nan_failures())

    def record(self, wins: "torch.Tensor", draws: "torch.Tensor", losses: "torch.Tensor") -> None:
        """Credit finished games ([N] counts per env, learner's side) to opponents and snapshots."""
        import torch

        stacked = torch.stack([wins, draws, losses]).float()
        sums = torch.stack([stacked[:, s.start:s.stop].sum(-1) for s in self.slots]).cpu().tolist()
        for slot, (w, d, lost) in zip(self.slots, sums):
            tally = self.tallies[slot.group]
            tally.wins += w
            tally.draws += d
            tally.losses += lost
            if slot.checkpoint is not None and self.self_play is not None:
                self.self_play.record(slot.checkpoint, w, d, lost)

    def take_tallies(self) -> list[Tally]:
        """Per-opponent results since the last call."""
        out, self.tallies = self.tallies, [Tally() for _ in self.specs]
        return out

    # -- resume -----------------------------------------------------------------------------------

    def state_dict(self) -> dict[str, Any]:
        return {
            "specs": [str(s) for s in self.specs],
            "slots": [{"checkpoint": s.checkpoint, "left": s.left,
                       "memory": capture_agent_memory(s.agent) if s.agent is not None else {}}
                      for s in self.slots],
            "self_play": self.self_play.state_dict() if self.self_play is not None else None,
            # the frozen copy of the learner that plays before the first checkpoint: its weights are of an
            # earlier step than the learner's, and a resumed run must play the same ones
            **({"fallback": self._fallback.weights()} if callable(getattr(self._fallback, "weights", None)) else {}),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore snapshots, PFSP records and opponents' per-env memory; the specs must match.

        The structure is checked before anything is applied: a damaged entry raises ``ValueError``
        naming its key (``opponents.slots[1].memory``), never a crash later in the run.
        """
        if not isinstance(state, dict):
            raise ValueError(f"opponents: expected a dict, got {type(state).__name__}")
        specs = [str(s) for s in self.specs]
        saved_specs = state.get("specs")
        if saved_specs != specs:
            shown = " ".join(map(str, saved_specs)) if isinstance(saved_specs, list) else repr(saved_specs)
            raise ValueError(f"the run was trained --vs {shown}; now --vs {' '.join(specs)}")
        slots = state.get("slots")
        if not isinstance(slots, list) or len(slots) != len(self.slots):
            raise ValueError(f"opponents.slots: expected a list of {len(self.slots)} slot(s), got "
                             f"{type(slots).__name__ if not isinstance(slots, list) else len(slots)}")
        for i, (slot, saved) in enumerate(zip(self.slots, slots)):
            check_slot_state(saved, slot, f"opponents.slots[{i}]")
        self_play = state.get("self_play")
        if self_play is not None and not isinstance(self_play, dict):
            raise ValueError(f"opponents.self_play: expected a dict, got {type(self_play).__name__}")
        if self.self_play is not None and self_play:
            self.self_play.load_state_dict(self_play)
        self._seating = None
        self._fallback = None
        if state.get("fallback") is not None and self.snapshot is not None:
            self._fallback = self.snapshot()
            try:
                self._fallback.load_weights(state["fallback"])
            except (AttributeError, ValueError, RuntimeError, TypeError) as exc:
                raise ValueError(f"opponents.fallback: the frozen copy of the learner cannot be restored ({exc})"[:300]
                                 ) from None
        for slot, saved in zip(self.slots, slots):
            slot.left = saved.get("left", 0)  # absent from runs saved before tenures: drawn at the next rollout
            if saved.get("checkpoint"):
                known = self.self_play is not None and (saved["checkpoint"] in self.self_play.fixed or (
                    self.self_play.directory / saved["checkpoint"]).exists())
                if not known:
                    continue  # the snapshot file is gone: the slot gets a fresh draw at the next rollout
                try:
                    self.assign(slot, saved["checkpoint"])
                except SnapshotError:
                    continue  # unreadable now: reported; the slot gets a fresh draw at the next rollout
            elif self.specs[slot.group].kind in DRAWN:
                if self._fallback is None and self.snapshot is not None:
                    self._fallback = self.snapshot()
                slot.agent = self.own_copy(self._fallback, slot)
            if slot.agent is not None and saved.get("memory"):
                try:
                    restore_agent_memory(slot.agent, saved["memory"])
                except Exception as exc:  # noqa: BLE001 - a custom set_state() of a plugin agent
                    raise ValueError(f"opponents slot memory of {self.who(slot)[0]!r}: cannot be restored "
                                     f"({type(exc).__name__}: {exc})") from None


def check_slot_state(saved: Any, slot: Slot, key: str) -> None:
    """One saved slot: ``{"checkpoint": file name or None, "left": rollouts, "memory": {...}}`` shaped like
    the live agent's."""
    import torch

    if not isinstance(saved, dict):
        raise ValueError(f"{key}: expected a dict, got {type(saved).__name__}")
    ckpt = saved.get("checkpoint")
    if ckpt is not None and (not isinstance(ckpt, str) or "/" in ckpt or "\\" in ckpt or ckpt.startswith(".")):
        raise ValueError(f"{key}.checkpoint: expected a checkpoint file name or None, got {ckpt!r}"[:300])
    left = saved.get("left", 0)
    if not isinstance(left, int) or isinstance(left, bool):
        raise ValueError(f"{key}.left: expected a whole number of rollouts, got {left!r}"[:300])
    memory = saved.get("memory", {})
    if not isinstance(memory, dict):
        raise ValueError(f"{key}.memory: expected a dict, got {type(memory).__name__}")
    if "custom" in memory:
        return  # the agent's own get_state()/set_state() format
    current = capture_agent_memory(slot.agent) if slot.agent is not None and not ckpt else {}
    for name, value in memory.items():
        kind, _, attr = str(name).partition(":")
        if kind not in ("tensor", "generator") or not attr.isidentifier():
            raise ValueError(f"{key}.memory: unexpected entry {name!r}; expected tensor:NAME or generator:NAME")
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{key}.memory[{name!r}]: expected a tensor, got {type(value).__name__}")
        live = current.get(name)
        if isinstance(live, torch.Tensor) and (live.shape != value.shape or live.dtype != value.dtype):
            raise ValueError(f"{key}.memory[{name!r}]: expected {live.dtype} of shape {list(live.shape)}, got "
                             f"{value.dtype} of shape {list(value.shape)}")


def describe_split(pool: OpponentPool) -> str:
    """``crank 768 envs, self 256 envs`` for the start-up banner."""
    return ", ".join(f"{spec.label} {stop - start} envs" for spec, start, stop in pool.group_slices())
