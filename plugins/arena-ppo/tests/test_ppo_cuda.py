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
