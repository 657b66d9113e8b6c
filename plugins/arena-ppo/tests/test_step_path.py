"""The rollout's steps and the update's minibatches never make a GPU wait for the host.

On the CPU, the detector of ``tests/host_reads.py`` watches them: values read back, tensors made from
Python lists, tensors made on the CPU and then moved. ``test_ppo_cuda.py`` runs the same path on a GPU
under torch's sync debug mode, with the detector too.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from host_reads import HostReads

# MAPPO's critic reads the global state, and its recurrent minibatches are whole sequences.
CASES = {"duel": ("ppo", {}), "recurrent team": ("mappo", {"team_size": 2, "recurrent": True})}


def learner_on(device: str, out: Path, algorithm: str = "ppo", team_size: int = 1, recurrent: bool = False,
               num_envs: int = 256):
    """A learner against crank on ``device`` whose storage holds one rollout. The env keeps the dense
    missile layout a GPU uses (the CPU's default lists the missiles in flight, a ``nonzero``)."""
    from arena_ppo.plan import resolve
    from arena_ppo.runners import build_run
    from arena_ppo.train_config import TrainConfig

    cfg = TrainConfig()
    run = cfg.run
    run.num_envs, run.eval_games, run.device, run.vs, run.floor = num_envs, 0, device, ("crank",), 0.0
    run.team_size, run.privileged_critic, cfg.network.recurrent = team_size, algorithm == "mappo", recurrent
    cfg.ppo.n_steps, cfg.ppo.batch_size, cfg.ppo.n_epochs, cfg.ppo.data_chunk_length = 8, num_envs * 4, 2, 4
    learner = build_run(resolve(cfg, algorithm, out=out), console=None, progress=False).learner
    learner.env.env.packed_missiles = False
    learner.env.side.check_every_step = False  # the reward's values are read once a rollout, as on a GPU
    learner.collect()  # first calls: allocations, a compiled env step where there is one
    return learner


def minibatches(learner) -> int:
    """Every minibatch of an update's epochs drawn from the stored rollout; how many."""
    cfg = learner.algorithm.cfg
    batches = learner.storage.mini_batches(cfg.batch_size, cfg.n_epochs, torch.Generator().manual_seed(1),
                                           chunk=getattr(cfg, "data_chunk_length", 1))
    return sum(1 for _ in batches)


def rollout_steps(learner, steps: int = 4) -> None:
    """``steps`` steps of a new rollout: the learner acts, the league env steps, PPO stores the transition."""
    env, algorithm = learner.env, learner.algorithm
    env.begin_rollout(learner.generators["shuffle"])
    learner.storage.clear()
    obs = env.observations()
    with torch.no_grad():
        for _ in range(steps):
            obs, rewards, dones, extras = env.step(algorithm.act(obs))
            algorithm.process_env_step(rewards, dones, extras)


@pytest.mark.parametrize("case", CASES)
def test_rollout_steps_and_minibatches_never_make_the_gpu_wait(tmp_path, case):
    algorithm, options = CASES[case]
    learner = learner_on("cpu", tmp_path, algorithm, **options)
    with HostReads() as reads:
        drawn = minibatches(learner)
        rollout_steps(learner)
    assert drawn >= 2 and reads.seen == []


def test_the_detector_sees_an_order_drawn_on_the_cpu_and_moved(tmp_path):
    """The draw the GPU once waited for (a quarter of an update at 65,536 envs), put back: seen."""
    learner = learner_on("cpu", tmp_path)
    storage = learner.storage

    def on_the_cpu(total, generator):
        return torch.randperm(total, generator=generator, device="cpu").to(storage.device, non_blocking=True)

    storage._order = on_the_cpu
    with HostReads() as reads:
        minibatches(learner)
    assert reads.seen and all(r.startswith("made on the CPU: to at test_step_path.py") for r in reads.seen)
