"""A seed's score: its best.pt played in fresh games, scored as a run's evaluations score its weights.

The run's own settings (its config.yaml) give who it is scored against, as its evaluations chose:
every fixed opponent it trained against, the floor's placeholder among them, and for a league the
ladder's rungs (:func:`arena_ppo.runners.evaluator.evaluation_specs`). Each game counts a win 1 and a
draw 1/2 (:class:`arena.training.EvalResult`); the seed's score is the *aim*, each opponent's score
weighted by its share of the training envs (:class:`arena.training.BestRecord`, the figure best.pt is
kept by), or, where the opponents are drawn (self-play, a league), the mean over the references.
The games are played in the default play mode (deterministic, as ``arena play`` and tournaments play
checkpoints) on seeds apart from training's and evaluation's: the evaluation games that chose best.pt
would flatter it. With ``games`` 0 the score is read from the evaluation that chose best.pt
(best.json) instead, which costs nothing and flatters it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCORE_SEED_OFFSET = 30_000  # training draws from run.seed, evaluation from +10,000 and +20,000


def score_run(run_dir: Path, algorithm: str, games: int) -> dict[str, Any]:
    """The score of the run in ``run_dir`` (a finished ``arena train``): ``score``, ``scores`` by opponent,
    the ``step`` and ``checkpoint`` scored, ``games`` and ``policy``; ``ValueError`` where there is
    nothing to score."""
    from arena.agents import DEFAULT_POLICY
    from arena.training import BEST_CHECKPOINT, BestRecord, checkpoint_step, list_checkpoints, read_best
    from arena_ppo.runners.evaluator import training_mix

    if games == 0:
        record = read_best(run_dir)
        if record is None:
            raise ValueError(f"{run_dir}: no best.json to read the score from (the run made no evaluation); "
                             f"give --score-games N, or evaluation games (--eval-games)")
        return {"score": record.aim if record.aim is not None else record.mean, "scores": dict(record.scores),
                "step": record.step, "checkpoint": BEST_CHECKPOINT, "games": 0, "policy": record.policy}
    plan = run_plan(run_dir, algorithm)
    path = run_dir / BEST_CHECKPOINT
    if path.is_file():
        best = read_best(run_dir)
        step = best.step if best is not None else 0
    else:  # no evaluation kept weights (eval games 0): the final ones
        saved = list_checkpoints(run_dir)
        if not saved:
            raise ValueError(f"{run_dir}: neither best.pt nor a checkpoint to score")
        path, step = saved[-1], checkpoint_step(saved[-1]) or 0
    results = play(path, plan, games, DEFAULT_POLICY)
    record = BestRecord.of(step, results, None, DEFAULT_POLICY, training_mix(list(plan.specs)))
    assert record is not None
    return {"score": record.aim if record.aim is not None else record.mean, "scores": dict(record.scores),
            "step": step, "checkpoint": path.name, "games": games, "policy": DEFAULT_POLICY}


def run_plan(run_dir: Path, algorithm: str) -> Any:
    """The plan of the run as its config.yaml records it (opponents, env, device, seed)."""
    from arena_ppo.plan import resolve
    from arena_ppo.prepare import RUN_FILE, build_config, given_settings

    given = given_settings({"config_file": run_dir / RUN_FILE}, algorithm)
    return resolve(build_config(algorithm, given), algorithm, run_dir)


def play(path: Path, plan: Any, games: int, policy: str) -> dict[str, Any]:
    """``games`` games of the checkpoint at ``path`` against each of the run's references, by label."""
    import torch

    from arena.agents import build_agent
    from arena.training import evaluate
    from arena_ppo.plan import opponent_factory
    from arena_ppo.runners.evaluator import evaluation_specs

    agent = build_agent(f"ckpt:{path}", plan.device, plan.env_config)
    agent.eval()
    seed = plan.cfg.run.seed + SCORE_SEED_OFFSET
    results = {}
    make_opponent = opponent_factory(plan.device, plan.env_config)
    with torch.no_grad():
        for spec in evaluation_specs(list(plan.specs)):
            results[spec.label] = evaluate(agent, make_opponent(spec), games, env_config=plan.env_config,
                                           device=plan.device, seed=seed, policy=policy)
    return results
