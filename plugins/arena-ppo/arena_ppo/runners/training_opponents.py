"""Who a run trains against: its ``vs`` entries, the floor, and a league's two stages.

A ``league`` run first plays the ladder's top rung alone for ``run.warm_up_steps``, then opens the
league (the ladder, its training partners and the run's own checkpoints drawn by PFSP) from those
weights; its pool draws only checkpoints saved from then on. This is the recipe that measured best
against the whole ladder (docs/experiments/). :class:`TrainingOpponents` is handed what it needs to
build agents (the run's plan and the build's opponent maker) and keeps the current
:class:`~arena.training.OpponentPool` and the stage.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.training import OpponentPool, OpponentSpec, SelfPlayPool, league_agents, league_partners
from arena_ppo.plan import RunPlan, opponent_specs


class TrainingOpponents:
    """The opponent pool of a run, rebuilt once when a league's warm-up ends."""

    def __init__(self, plan: RunPlan, make_opponent: Callable[[OpponentSpec], Any],
                 load_snapshot: Callable[[Path], Any], snapshot: Callable[[], Any]) -> None:
        self.plan, self.run, self.make_opponent = plan, plan.cfg.run, make_opponent
        self.load_snapshot, self.snapshot = load_snapshot, snapshot
        self.warm_up_steps = plan.warm_up_steps  # 0 without a league
        self.warm_up_opponent = league_agents()[-1] if self.warm_up_steps else ""
        self.ladder = ({name: make_opponent(OpponentSpec("agent", name))
                        for name in [*league_agents(), *league_partners()]} if plan.league else {})
        self.league_open = not self.warm_up_steps
        self.held_out: set[str] = set()  # checkpoints saved off the schedule, which no pool of the run draws
        self.pool = self.build()

    def build(self) -> OpponentPool:
        plan = self.plan
        specs = opponent_specs(self.run, plan.local_envs, warm_up=not self.league_open)
        self_play = None
        if any(s.kind in ("self", "league") for s in specs):
            self_play = SelfPlayPool(plan.out, self.load_snapshot, fixed=self.ladder,
                                     fixed_share=self.run.ladder_share if self.ladder else None,
                                     power=self.run.pfsp_power, since=self.warm_up_steps, held_out=self.held_out)
            if not plan.rank.main:  # one warning per run, not per process
                self_play.warn = lambda text: None
        return OpponentPool(specs, plan.local_envs, self.make_opponent, self_play=self_play, snapshot=self.snapshot,
                            self_slots=self.run.self_slots, team_size=plan.seats, tenure=plan.tenure,
                            handover=self.run.handover)

    def opens_league(self, env_steps: int) -> bool:
        """Whether the warm-up ends now; if so the league's pool replaces the warm-up's."""
        if self.league_open or env_steps < self.warm_up_steps:
            return False
        self.league_open = True
        self.pool = self.build()
        return True

    def hold_out(self, name: str) -> None:
        """The checkpoint file ``name`` was written where the run stopped, off its schedule: never draw it."""
        self.held_out.add(name)

    def agents(self) -> list[Any]:
        """Every agent that may play, for the env's observation keys."""
        return [slot.agent for slot in self.pool.slots] + list(self.ladder.values())

    def state_dict(self) -> dict[str, Any]:
        return {**self.pool.state_dict(), **({"league_open": self.league_open} if self.warm_up_steps else {}),
                **({"held_out": sorted(self.held_out)} if self.held_out else {})}

    def load_state_dict(self, state: Any) -> None:
        """The pool's state; a league saved past its warm-up gets the league's pool first, so this alone,
        not the step, says which pool a checkpoint holds."""
        if not isinstance(state, dict):
            raise ValueError(f"opponents: expected a dict, got {type(state).__name__}")
        held_out = state.get("held_out", [])
        if not isinstance(held_out, list) or not all(isinstance(name, str) for name in held_out):
            raise ValueError(f"opponents.held_out: expected a list of checkpoint file names, got {held_out!r}"[:300])
        self.held_out.clear()
        self.held_out.update(held_out)
        if self.warm_up_steps and state.get("league_open") is True and not self.league_open:
            self.league_open = True
            self.pool = self.build()
        self.pool.load_state_dict({k: v for k, v in state.items() if k not in ("league_open", "held_out")})
