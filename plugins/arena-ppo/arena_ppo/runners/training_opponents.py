"""Who a run trains against: its ``vs`` entries, the floor, and a league's two stages.

A ``league`` run first plays the ladder's top rung alone for ``run.warm_up_steps``, then opens the
league (the ladder, its training partners and the run's own checkpoints drawn by PFSP) from those
weights; its pool draws only checkpoints saved from then on. This is the recipe that measured best
against the whole ladder (docs/experiments/). :class:`TrainingOpponents` is handed what it needs to
build agents (the run context) and keeps the current :class:`~arena.training.OpponentPool` and the stage.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from arena.training import (
    OpponentPool,
    OpponentSpec,
    SelfPlayPool,
    league_agents,
    league_partners,
    parse_opponent_specs,
    with_floor,
)
from arena_ppo.runners.context import RunContext
from arena_ppo.train_config import RunConfig


def opponent_specs(run: RunConfig, num_envs: int | None = None, warm_up: bool = False) -> list[OpponentSpec]:
    """The opponents a run trains against: its ``vs`` entries (``league`` as the ladder's top rung
    during the warm-up) plus the ``floor`` share of ``num_envs`` envs (one process's share)."""
    specs = parse_opponent_specs(run.vs)
    if warm_up:
        specs = [replace(s, kind="agent", target=league_agents()[-1]) if s.kind == "league" else s for s in specs]
    return with_floor(specs, run.floor, run.num_envs if num_envs is None else num_envs)


class TrainingOpponents:
    """The opponent pool of a run, rebuilt once when a league's warm-up ends."""

    def __init__(self, ctx: RunContext, load_snapshot: Callable[[Path], Any], snapshot: Callable[[], Any]) -> None:
        run, self.n_steps, battle_steps = ctx.cfg.run, ctx.cfg.ppo.n_steps, ctx.env_config.max_steps
        self.run, self.num_envs, self.team_size = run, ctx.local_envs, ctx.seats
        self.make_opponent, self.load_snapshot, self.snapshot = ctx.make_opponent, load_snapshot, snapshot
        self.out_dir, self.quiet = ctx.out_dir, not ctx.sync.main
        n_steps, make_opponent, echo = self.n_steps, ctx.make_opponent, ctx.echo
        self.specs = opponent_specs(run, self.num_envs)
        league = any(s.kind == "league" for s in self.specs)
        self.warm_up_steps = run.warm_up_steps if league else 0
        self.warm_up_opponent = league_agents()[-1] if self.warm_up_steps else ""
        self.ladder = ({name: make_opponent(OpponentSpec("agent", name))
                        for name in [*league_agents(), *league_partners()]} if league else {})
        self.tenure = math.ceil((run.tenure or battle_steps) / n_steps)  # in rollouts
        self.league_open = not self.warm_up_steps
        self.pool = self.build()
        if self.warm_up_steps >= run.max_steps:
            echo(f"warning: the league's warm-up (run.warm_up_steps {self.warm_up_steps:,}) takes all of "
                 f"--max-steps {run.max_steps:,}: the league never opens; give more steps, or --set "
                 f"run.warm_up_steps=N")
        if any(s.kind in ("self", "league") for s in self.specs) and not run.handover and \
                self.tenure * n_steps < battle_steps:
            echo(f"warning: run.handover false with run.tenure {run.tenure}: a battle longer than "
                 f"{self.tenure * n_steps} steps restarts before it ends, and its result is never credited "
                 f"(run.tenure 0: the longest battle, {battle_steps} steps)")

    def build(self) -> OpponentPool:
        specs = opponent_specs(self.run, self.num_envs, warm_up=not self.league_open)
        self_play = None
        if any(s.kind in ("self", "league") for s in specs):
            self_play = SelfPlayPool(self.out_dir, self.load_snapshot, fixed=self.ladder,
                                     fixed_share=self.run.ladder_share if self.ladder else None,
                                     power=self.run.pfsp_power, since=self.warm_up_steps)
            if self.quiet:  # one warning per run, not per process
                self_play.warn = lambda text: None
        return OpponentPool(specs, self.num_envs, self.make_opponent, self_play=self_play, snapshot=self.snapshot,
                            self_slots=self.run.self_slots, team_size=self.team_size, tenure=self.tenure,
                            handover=self.run.handover)

    def opens_league(self, env_steps: int) -> bool:
        """Whether the warm-up ends now; if so the league's pool replaces the warm-up's."""
        if self.league_open or env_steps < self.warm_up_steps:
            return False
        self.league_open = True
        self.pool = self.build()
        return True

    def agents(self) -> list[Any]:
        """Every agent that may play, for the env's observation keys."""
        return [slot.agent for slot in self.pool.slots] + list(self.ladder.values())

    def state_dict(self) -> dict[str, Any]:
        return {**self.pool.state_dict(), **({"league_open": self.league_open} if self.warm_up_steps else {})}

    def load_state_dict(self, state: Any) -> None:
        """The pool's state; a league saved past its warm-up gets the league's pool first, so this alone,
        not the step, says which pool a checkpoint holds."""
        if not isinstance(state, dict):
            raise ValueError(f"opponents: expected a dict, got {type(state).__name__}")
        if self.warm_up_steps and state.get("league_open") is True and not self.league_open:
            self.league_open = True
            self.pool = self.build()
        self.pool.load_state_dict({k: v for k, v in state.items() if k != "league_open"})
