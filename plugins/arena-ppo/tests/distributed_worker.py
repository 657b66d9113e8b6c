"""One process of a small run on several processes, started by test_distributed.py under torchrun.

    python -m torch.distributed.run --standalone --nproc-per-node 2 distributed_worker.py TMP_DIR

Each process joins the group, trains a PPO run (self-play, privileged critic, value and observation
normalization, adaptive learning rate) and a MAPPO run (ValueNorm) through the public Python API,
then saves what must be equal on every process (weights, normalizers, optimizer, learning rate,
PFSP records) and what must not (its envs) to ``TMP_DIR/<run>-rank<R>.pt``. Last it disturbs one
weight on process 1 and saves again, which must fail on every process with a DivergenceError.
What each process printed and raised, and the games it played in each evaluation match (its share,
before the processes' results are summed), go to ``TMP_DIR/rank<R>.json``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import arena_ppo.runners.evaluator as evaluator
from arena.guard import end_process
from arena.training import DivergenceError, EvalResult, Group
from arena_ppo.plan import resolve
from arena_ppo.process_sync import GroupSync, shared_tensors
from arena_ppo.runners import build_run
from arena_ppo.train_config import TrainConfig

STEPS, ENVS = 16, 8


def config(name: str) -> TrainConfig:
    cfg = TrainConfig()
    run, ppo = cfg.run, cfg.ppo
    run.num_envs, run.max_steps, run.save_interval = ENVS, ENVS * STEPS * 3, ENVS * STEPS
    run.eval_games, run.eval_interval = (3 if name == "ppo" else 0), ENVS * STEPS * 3  # 2 games, then 1
    run.device, run.seed, run.threads = "cpu", 7, 1
    ppo.n_steps, ppo.batch_size, ppo.n_epochs = STEPS, 32, 2
    if name == "ppo":
        run.vs, run.self_slots, run.floor = ("crank", "self=0.5"), 2, 0.0
        run.privileged_critic, ppo.value_norm = True, True
        ppo.learning_rate, ppo.desired_kl = 3e-3, 1e-3  # the adaptive rate moves: by the KL of both processes
    else:
        run.vs, run.floor, run.team_size, run.privileged_critic = ("crank",), 0.0, 2, True
        ppo.value_norm = True
    return cfg


def main(tmp: Path) -> None:
    group = Group.join()
    rank = group.rank.rank
    report: dict[str, object] = {}
    played: list[list[int]] = []  # [games, wins, draws, losses] of this process's share of each match
    evaluate = evaluator.evaluate

    def recorded(*args: Any, **kwargs: Any) -> EvalResult:
        result = evaluate(*args, **kwargs)
        played.append([result.games, result.wins, result.draws, result.losses])
        return result

    evaluator.evaluate = recorded
    report["evaluated"] = played
    runner = None
    for name in ("ppo", "mappo"):
        lines: list[str] = []
        runner = build_run(resolve(config(name), name, tmp / name, world=group.rank), GroupSync(group),
                           console=lines.append, progress=False)
        runner.learn()
        learner = runner.learner
        self_play = learner.opponents.pool.self_play
        torch.save({
            "shared": {k: v.clone() for k, v in shared_tensors(learner.agent).items()},
            "optimizer": learner.algorithm.optimizer.state_dict(),
            "learning_rate": learner.algorithm.learning_rate,
            "records": self_play.state_dict() if self_play is not None else None,
            "counters": learner.counters.env_steps,
            "env": learner.env.env.state_dict(),
        }, tmp / f"{name}-rank{rank}.pt")
        report[name] = lines
    assert runner is not None
    with torch.no_grad():
        if rank == 1:
            next(runner.learner.agent.model.parameters()).view(-1)[0] += 1e-3
    try:
        runner.save()
        report["divergence"] = None
    except DivergenceError as exc:
        report["divergence"] = str(exc)
    (tmp / f"rank{rank}.json").write_text(json.dumps(report))
    group.close()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
    # As the command line does after torch.distributed: gloo's threads can abort the interpreter's shutdown
    # ("terminate called without an active exception", status 134) once everything is written.
    end_process(0)
