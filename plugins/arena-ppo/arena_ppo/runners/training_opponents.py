"""Who a run trains against: its ``vs`` entries, the floor, and a league's two stages.

A ``league`` run first warms up for ``run.warm_up_steps``, then opens the league (the ladder, its
training partners and the run's own checkpoints drawn by PFSP) from those weights; its pool draws only
checkpoints saved from then on. A run taught by a teacher warms up against the ladder's top rung
alone (docs/experiments/). Without a teacher the warm-up climbs the ladder: it plays the rung in
front of the learner (the floor gives the placeholder its share throughout) and moves on when the
learner scores ``CLIMB_AIM`` against it over ``CLIMB_GAMES`` games; the rungs beaten keep
``KEEP_BEATEN`` of the games, so that they are not forgotten. :class:`TrainingOpponents` is handed
what it needs to build agents (the run context) and keeps the current
:class:`~arena.training.OpponentPool` and the stage.
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
from arena.training.opponent_specs import FLOOR_AGENT
from arena_ppo.runners.context import RunContext
from arena_ppo.train_config import RunConfig

CLIMB_AIM = 0.7  # score (wins and half the draws) that beats a rung: AlphaStar's bar for an opponent beaten
CLIMB_GAMES = 400  # games a verdict is read from: 0.7 then has a standard error of about 0.02
KEEP_BEATEN = 0.2  # share of a climbing league's games left to the rungs already beaten


def climbing_rungs(run: RunConfig) -> list[str]:
    """The rungs a league warm-up climbs, in order; none for a run taught by a teacher (it warms up
    against the top rung) or without a warm-up. The floor's agent is left out where the floor plays it."""
    if not run.warm_up_steps or run.teacher() or not any(s.kind == "league" for s in parse_opponent_specs(run.vs)):
        return []
    return [r for r in league_agents() if not (run.floor and r == FLOOR_AGENT)]


def opponent_specs(run: RunConfig, num_envs: int | None = None, warm_up: bool = False,
                   rung: int = -1) -> list[OpponentSpec]:
    """The opponents a run trains against: its ``vs`` entries plus the ``floor`` share of ``num_envs`` envs
    (one process's share). During the warm-up, ``league`` is the ladder's top rung or, climbing, rung
    ``rung`` of :func:`climbing_rungs` and the rungs below it."""
    specs = parse_opponent_specs(run.vs)
    if warm_up:
        specs = [w for s in specs for w in (warm_up_specs(s, climbing_rungs(run), rung) if s.kind == "league" else [s])]
    return with_floor(specs, run.floor, run.num_envs if num_envs is None else num_envs)


def warm_up_specs(league: OpponentSpec, rungs: list[str], rung: int) -> list[OpponentSpec]:
    """What the ``league`` entry plays in the warm-up: the top rung, or the rung climbed and those beaten."""
    if not rungs:
        return [replace(league, kind="agent", target=league_agents()[-1])]
    front = replace(league, kind="agent", target=rungs[rung])
    if rung == 0:
        return [front]
    beaten = [replace(league, kind="agent", target=r, weight=league.weight * KEEP_BEATEN / rung) for r in rungs[:rung]]
    return [*beaten, replace(front, weight=league.weight * (1.0 - KEEP_BEATEN))]


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
        self.rungs = climbing_rungs(run)  # the warm-up's climb: the rung in front is rungs[rung]
        self.rung, self.verdict = 0, [0.0, 0.0]  # score and games against it since the last verdict
        self.echo = echo
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
        specs = opponent_specs(self.run, self.num_envs, warm_up=not self.league_open, rung=self.rung)
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

    @property
    def climbing(self) -> bool:
        """Whether the warm-up is climbing the ladder now."""
        return bool(self.rungs) and not self.league_open

    def climb(self, tallies: list[tuple[float, float, float]], env_steps: int) -> bool:
        """Read the last rollout's (wins, draws, games) against each spec of the pool; returns whether the
        learner beat the rung in front and the pool now plays the next (its battles start over)."""
        if not self.climbing or self.rung == len(self.rungs) - 1:
            return False
        front = next(i for i, s in enumerate(self.pool.specs) if s.target == self.rungs[self.rung])
        wins, draws, games = tallies[front]
        self.verdict = [self.verdict[0] + wins + 0.5 * draws, self.verdict[1] + games]
        score, games = self.verdict
        if games < CLIMB_GAMES:
            return False
        self.verdict = [0.0, 0.0]
        if score < CLIMB_AIM * games:
            return False
        self.echo(f"climb: scored {score / games:.0%} in {games:.0f} games against {self.rungs[self.rung]} by step "
                  f"{env_steps:,}; next, {self.rungs[self.rung + 1]}")
        self.rung += 1
        self.pool = self.build()
        return True

    def agents(self) -> list[Any]:
        """Every agent that may play, for the env's observation keys."""
        return [slot.agent for slot in self.pool.slots] + list(self.ladder.values())

    def state_dict(self) -> dict[str, Any]:
        climb = {"rung": self.rung, "verdict": list(self.verdict)} if self.rungs else {}
        return {**self.pool.state_dict(), **({"league_open": self.league_open} if self.warm_up_steps else {}), **climb}

    def load_state_dict(self, state: Any) -> None:
        """The pool's state; a league saved past its warm-up gets the league's pool first, so this alone,
        not the step, says which pool a checkpoint holds."""
        if not isinstance(state, dict):
            raise ValueError(f"opponents: expected a dict, got {type(state).__name__}")
        if self.rungs and not state.get("league_open"):
            rung, verdict = state.get("rung", 0), state.get("verdict", [0.0, 0.0])
            if isinstance(rung, bool) or not isinstance(rung, int) or not 0 <= rung < len(self.rungs):
                raise ValueError(f"opponents.rung: expected a rung of 0..{len(self.rungs) - 1}, got {rung!r}"[:200])
            if not (isinstance(verdict, list) and len(verdict) == 2 and all(
                    isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0 for v in verdict)):
                raise ValueError(f"opponents.verdict: expected [score, games], got {verdict!r}"[:200])
            self.rung, self.verdict = rung, [float(v) for v in verdict]
            self.pool = self.build()
        if self.warm_up_steps and state.get("league_open") is True and not self.league_open:
            self.league_open = True
            self.pool = self.build()
        self.pool.load_state_dict({k: v for k, v in state.items() if k not in ("league_open", "rung", "verdict")})
