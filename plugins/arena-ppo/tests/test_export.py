"""`arena export`: a PPO checkpoint as ONNX and TorchScript, checked against the agent with onnxruntime
and torch.jit on 10,000 random observations; policies that cannot be exported are refused in one line."""

from __future__ import annotations

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.env import EnvConfig
from arena.export import check, exportable, write
from arena.training import save_checkpoint
from arena_ppo.agent import PPOAgent


def trained_looking(obs_mode: str = "default") -> PPOAgent:
    """A PPO agent whose weights and normalizer statistics are not the initial ones."""
    torch.manual_seed(7)
    agent = PPOAgent(env_config=EnvConfig(obs_mode=obs_mode))  # type: ignore[arg-type]
    with torch.no_grad():
        for p in agent.model.parameters():
            p.add_(torch.randn_like(p) * 0.3)
        agent.obs_normalizer.update(torch.randn(500, len(agent.obs_keys)) * 3.0 + 1.0)
    return agent.eval()


@pytest.mark.parametrize("fmt", ["onnx", "torchscript"])
@pytest.mark.parametrize("obs_mode", ["default", "extended"])
def test_exported_policy_acts_like_the_agent(tmp_path, fmt, obs_mode):
    pytest.importorskip("onnxruntime") if fmt == "onnx" else None
    agent = trained_looking(obs_mode)
    path = write(exportable(agent), len(agent.obs_keys), fmt, tmp_path / f"policy.{fmt}")
    result = check(agent, agent.obs_keys, fmt, path, samples=10_000)
    assert result.samples == 10_000 and result.max_rudder_diff < 1e-5 and result.fire_mismatches == 0, result
    assert agent.fire_rule == "median", "the check puts the agent's own trigger back"


def test_the_check_can_fail(tmp_path):
    agent = trained_looking()
    path = write(exportable(agent), len(agent.obs_keys), "torchscript", tmp_path / "policy.pt")
    with torch.no_grad():
        agent.model.actor.rudder.bias.add_(0.5)  # the agent moved on; the file did not
    assert not check(agent, agent.obs_keys, "torchscript", path, samples=1000).ok


def test_cli_exports_and_refuses_what_it_cannot(tmp_path):
    pytest.importorskip("onnxruntime")
    ckpt = tmp_path / "ckpt_000000100.pt"
    save_checkpoint(trained_looking().checkpoint(), ckpt)
    out = tmp_path / "policy.onnx"
    result = CliRunner().invoke(main, ["export", str(ckpt), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert out.stat().st_size > 1000 and "fire decisions that differ 0" in result.output
    refused = CliRunner().invoke(main, ["export", "crank", "--out", str(tmp_path / "c.onnx")])
    assert refused.exit_code == 2 and "no export_module" in refused.output
    recurrent = PPOAgent(network={"recurrent": True})
    save_checkpoint(recurrent.checkpoint(), tmp_path / "rec.pt")
    refused = CliRunner().invoke(main, ["export", str(tmp_path / "rec.pt"), "--out", str(tmp_path / "r.onnx")])
    assert refused.exit_code == 2 and "recurrent" in refused.output and "Traceback" not in refused.output
    missing = CliRunner().invoke(main, ["export", str(tmp_path / "nope.pt"), "--out", str(tmp_path / "n.onnx")])
    assert missing.exit_code == 2 and "nope.pt" in missing.output
