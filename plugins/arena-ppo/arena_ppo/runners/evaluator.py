"""Evaluation during training, and the best evaluated weights kept in ``best.pt``.

An :class:`Evaluator` is built from the run's plan (who it plays, how to build them, the env, the
seed, where to write, how the policy plays) and the processes' sync object, and is then given the
learner at each evaluation. The fixed opponents are the references: once a run they play each other,
which fixes their Elo, and at each evaluation the learner plays every one and is rated from those
games alone, as a league with the same references rates a run's checkpoints. The weights with the
best rating so far are kept (:mod:`arena.training.best`). With several processes each plays its
share of the games with its own seed and the results are summed, so every process holds the same
figures and agrees on what is kept; only the main one writes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import torch

from arena.training import (
    BEST_CHECKPOINT,
    BestRecord,
    EvalResult,
    OpponentSpec,
    ReferenceScale,
    checkpoint_name,
    evaluate,
    keep_best,
    league_agents,
    load_checkpoint,
    rate,
    read_best,
    reference_scale,
)
from arena.training.process_group import split_count
from arena_ppo.plan import RunPlan, opponent_factory
from arena_ppo.process_sync import ProcessSync

EVAL_SEED_OFFSET = 10_000  # evaluation games draw from their own seeds, apart from training's
REFERENCE_SEED_OFFSET = 20_000  # and the references' games among themselves from others again


def evaluation_specs(specs: list[OpponentSpec]) -> list[OpponentSpec]:
    """Who evaluation plays: every fixed opponent of a run, and with ``league`` every rung of the ladder."""
    fixed = [s for s in specs if s.kind in ("agent", "checkpoint")]
    if any(s.kind == "league" for s in specs):
        named = {s.target for s in fixed if s.kind == "agent"}
        fixed += [OpponentSpec("agent", name) for name in league_agents() if name not in named]
    return fixed


def training_mix(specs: list[OpponentSpec]) -> dict[str, float] | None:
    """Each opponent's share of the training envs, for the aim the kept weights are chosen by; None when
    some are drawn (a league, self-play): their shares change as the run goes."""
    if not specs or any(s.kind not in ("agent", "checkpoint") for s in specs):
        return None
    total = sum(s.weight for s in specs)
    return {s.label: s.weight / total for s in specs}


class Evaluator:
    """Games against fixed references, a rating from them, and the best rated weights kept (``keep``)."""

    def __init__(self, plan: RunPlan, sync: ProcessSync, echo: Callable[[str], None] = lambda text: None) -> None:
        run = plan.cfg.run
        self.specs = evaluation_specs(list(plan.specs))
        self.mix = training_mix(list(plan.specs))
        self.policy = run.eval_policy
        self.scale: ReferenceScale | None = None  # the references' Elo, from their games among themselves
        self.make_opponent = opponent_factory(plan.device, plan.env_config)
        self.env_config, self.device = plan.env_config, plan.device
        self.seed = plan.seed + EVAL_SEED_OFFSET
        self.processes = sync
        self.games = split_count(run.eval_games, plan.rank)  # this process's share
        self.out_dir, self.main = plan.out, plan.rank.main
        self.keep, self.echo = run.keep_best, echo
        self.best: BestRecord | None = None
        self._opponents: dict[str, Any] = {}

    def play(self, agent: Any, step: int) -> tuple[dict[str, float], BestRecord | None]:
        """Eval.csv's columns for this evaluation (win/draw/loss fractions per reference, the rating) and
        its record."""
        results = self._summed([(agent, self._opponent(spec), self.seed) for spec in self.specs])
        agent.train(True)
        row: dict[str, float] = {}
        for spec, result in zip(self.specs, results):
            row.update(result.as_row(spec.label))
            self.echo(f"eval vs {spec.label} after {step:,} steps: "
                      f"{result.wins}W {result.draws}D {result.losses}L of {result.games} ({self.policy})")
        by_label = {s.label: r for s, r in zip(self.specs, results)}
        rating = rate(by_label, self.reference_scale().elo) if results else None
        if rating is not None:
            row.update({"eval_elo": rating.elo, "eval_elo_low": rating.low, "eval_elo_high": rating.high})
            self.echo(f"eval after {step:,} steps: {rating.describe()} against the references")
        return row, BestRecord.of(step, by_label, rating, self.policy, self.mix)

    def reference_scale(self) -> ReferenceScale:
        """The references' Elo from their games among themselves: played at the first evaluation of a run
        (the same seeds give the same figures after a resume)."""
        if self.scale is None:
            pairs = [(a, b) for i, a in enumerate(self.specs) for b in self.specs[i + 1:]]
            seed = self.seed + REFERENCE_SEED_OFFSET
            results = self._summed([(self._opponent(a), self._opponent(b), seed) for a, b in pairs])
            self.scale = reference_scale([s.label for s in self.specs],
                                         {(a.label, b.label): r for (a, b), r in zip(pairs, results)})
            if self.scale.perfect:
                self.echo(f"note: {', '.join(self.scale.perfect)} won or lost every game among the evaluation's "
                          f"references, so the rating scale's spread there is the fit's cap, not a measurement")
        return self.scale

    def _opponent(self, spec: OpponentSpec) -> Any:
        """The reference of ``spec``, built once a run (each match resets it)."""
        if spec.label not in self._opponents:
            self._opponents[spec.label] = self.make_opponent(spec)
        return self._opponents[spec.label]

    def _summed(self, matches: list[tuple[Any, Any, int]]) -> list[EvalResult]:
        """This process's share of each match's games, summed over the processes."""
        with torch.random.fork_rng(devices=[]):
            results = [evaluate(a, b, self.games, env_config=self.env_config, device=self.device, seed=seed,
                                policy=self.policy) if self.games else EvalResult(0, 0, 0, 0)
                       for a, b, seed in matches]
        if results:
            counts = torch.tensor([[r.games, r.wins, r.draws, r.losses] for r in results], dtype=torch.float64)
            results = [EvalResult(*map(int, c)) for c in self.processes.sum_(counts).tolist()]
        return results

    def offer(self, record: BestRecord | None, payload: Callable[[], Mapping[str, Any]]) -> bool:
        """Keep the evaluated weights (``payload()``, a loadable checkpoint) when ``record`` beats the kept
        ones; returns whether it did."""
        if not self.keep or record is None or not record.beats(self.best):
            return False
        self.best = record
        if self.main:
            keep_best(self.out_dir, payload(), record)
        return True

    def sync(self, weight_keys: set[str]) -> None:
        """Make best.pt hold the kept weights of a resumed run: a branch folder, or a run whose best.pt is
        missing or from a line abandoned by resuming an older checkpoint, gets them from the checkpoint of
        that step (its ``weight_keys`` only). Without one (evaluations between checkpoints) the record
        starts again."""
        if self.best is None or (read_best_quietly(self.out_dir) == self.best and
                                 (self.out_dir / BEST_CHECKPOINT).is_file()):
            return
        source = self.out_dir / checkpoint_name(self.best.step)
        if not source.is_file():
            self.echo(f"note: no checkpoint of step {self.best.step:,} holds the best weights so far; "
                      f"{BEST_CHECKPOINT} starts again from the next evaluation")
            self.best = None
            return
        if self.main:
            data = load_checkpoint(source)
            keep_best(self.out_dir, {k: v for k, v in data.items() if k in weight_keys}, self.best)


def read_best_quietly(out_dir: Path) -> BestRecord | None:
    """The record in ``out_dir``'s best.json; None when it is missing or unreadable (it is then rewritten)."""
    try:
        return read_best(out_dir)
    except ValueError:
        return None
