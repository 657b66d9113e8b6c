"""PPO on a CUDA device: a resumed run continues exactly there too, and what it saves plays on a CPU.
Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from arena.agents import build_agent
from arena.match import play_match
from test_trainer import TINY, rows, straight_and_resumed

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")


@pytest.mark.parametrize("options", [[], ["--team-size", "2", "--set", "run.privileged_critic=true"]])
def test_resume_on_the_gpu_continues_exactly(tmp_path, options):
    common = ["--vs", "crank", "--vs", "placeholder=0.5", "--vs", "self=0.5", "--num-envs", "12", "--seed", "5",
              "--save-interval", "192", "--reward", "pursuit", "--device", "cuda", *TINY, *options]
    a, b = straight_and_resumed(common, tmp_path)
    for key, value in a["model"].items():
        assert value.device.type == "cpu", f"{key}: checkpoints hold CPU tensors, to load anywhere"
        assert torch.equal(value, b["model"][key]), key
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"])
    assert [r["policy_loss"] for r in rows(tmp_path / "straight" / "metrics.csv")] == \
           [r["policy_loss"] for r in rows(tmp_path / "split" / "metrics.csv")]


def test_a_gpu_checkpoint_plays_on_the_cpu_and_a_cpu_one_on_the_gpu(tmp_path):
    from test_trainer import run

    for device in ("cuda", "cpu"):
        out = tmp_path / device
        result = run(["--vs", "crank", "--num-envs", "64", "--max-steps", "2048", "--device", device, *TINY], out)
        assert result.exit_code == 0, result.output
        ckpt = sorted(out.glob("ckpt_*.pt"))[-1]
        other = "cpu" if device == "cuda" else "cuda"
        agent = build_agent(f"ppo:{ckpt}", device=other)
        result = play_match(agent, build_agent("crank", device=other), 64, device=other, seed=1)
        assert result.wins + result.draws + result.losses == 64


def test_rollout_steps_and_an_update_never_wait_for_the_host(tmp_path):
    """Under torch's sync debug mode, the rollout's steps (learner, crank, env, shaping, storage) and the
    update's minibatch steps (compiled) run without one host synchronization, and the compiled update
    follows the eager one within float tolerance. Its CPU twin, watched by the detector of host reads, is
    test_step_path.py (a compiled step is not watched by it: the compiler would trace the detector too)."""
    import copy

    from arena_ppo.algorithms import PPO
    from test_step_path import learner_on, rollout_steps

    learner = learner_on("cuda", tmp_path, num_envs=1024)
    eager = PPO(copy.deepcopy(learner.agent.model), learner.algorithm.cfg)
    compiled = PPO(copy.deepcopy(learner.agent.model), learner.algorithm.cfg, compiled=True)
    compiled.update(learner.storage, torch.Generator().manual_seed(0))  # compiles
    compiled.model.load_state_dict(eager.model.state_dict())
    compiled.optimizer.load_state_dict(eager.optimizer.state_dict())
    compiled.set_learning_rate(eager.learning_rate)

    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        got = compiled.update(learner.storage, torch.Generator().manual_seed(1))
    finally:
        torch.cuda.set_sync_debug_mode(0)
    want = eager.update(learner.storage, torch.Generator().manual_seed(1))

    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        rollout_steps(learner)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert compiled.compiled
    for key in want:
        assert torch.allclose(got[key].cpu(), want[key].cpu(), rtol=1e-3, atol=1e-5), key

