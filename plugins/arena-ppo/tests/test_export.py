"""`arena export`: a PPO checkpoint as ONNX and TorchScript, checked against the agent with onnxruntime
and torch.jit on 10,000 random observations; policies that cannot be exported are refused in one line."""

from __future__ import annotations

import json
import re

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.env import EnvConfig
from arena.export import ExportError, check, export_policy, exportable, write
from arena.training import CheckpointError, save_checkpoint
from arena_ppo.agent import PPOAgent
from cli_checks import refused


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
    refused(CliRunner().invoke(main, ["export", "crank", "--out", str(tmp_path / "c.onnx")]), "no export_module")
    recurrent = PPOAgent(network={"recurrent": True})
    save_checkpoint(recurrent.checkpoint(), tmp_path / "rec.pt")
    refused(CliRunner().invoke(main, ["export", str(tmp_path / "rec.pt"), "--out", str(tmp_path / "r.onnx")]),
            "recurrent")
    missing = CliRunner().invoke(main, ["export", str(tmp_path / "nope.pt"), "--out", str(tmp_path / "n.onnx")])
    refused(missing, "nope.pt")


def export_cli(*args: str):
    return CliRunner().invoke(main, ["export", *map(str, args)])


def test_export_never_overwrites_a_checkpoint(tmp_path):
    ckpt, other = tmp_path / "ckpt_000000100.pt", tmp_path / "ckpt_000000200.pt"
    for path in (ckpt, other):
        save_checkpoint(trained_looking().checkpoint(), path)
    best = tmp_path / "best.pt"
    best.write_bytes(other.read_bytes())
    before = {p: p.read_bytes() for p in (ckpt, other, best)}
    refusals = {
        (ckpt, ckpt): "is the checkpoint being exported",
        (f"ppo:{ckpt}", tmp_path / "." / ckpt.name): "is the checkpoint being exported",
        (ckpt, other): "is a torch checkpoint",
        (ckpt, best): "is a torch checkpoint",  # by its content, whatever its name
        (ckpt, tmp_path / "ckpt_000000300.pt"): "named like a run's checkpoint",
    }
    for (source, out), reason in refusals.items():
        for extra in ([], ["--no-check"], ["--format", "torchscript"]):
            result = export_cli(source, "--out", out, *extra)
            refused(result, reason, "choose another file name")
    assert {p: p.read_bytes() for p in (ckpt, other, best)} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.pt", ckpt.name, other.name]


def test_an_exported_file_may_be_replaced(tmp_path):
    ckpt = tmp_path / "ckpt_000000100.pt"
    save_checkpoint(trained_looking().checkpoint(), ckpt)
    out = tmp_path / "policy.pt"
    for _ in range(2):  # a TorchScript .pt is an export, not a checkpoint: exporting again replaces it
        result = export_cli(ckpt, "--format", "torchscript", "--out", out)
        assert result.exit_code == 0, result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [ckpt.name, "policy.pt"]


def test_a_failed_check_writes_nothing(tmp_path, monkeypatch):
    agent = trained_looking()
    act = agent.act

    def drifted(observation):  # the agent steers differently from the module it exported
        out = dict(act(observation))
        out["rudder"] = out["rudder"] + 0.25
        return out

    monkeypatch.setattr(agent, "act", drifted)
    with pytest.raises(ExportError, match=r"does not act like the agent on 1,000 random observations .*max rudder "
                                          r"difference 2\.50e-01.*nothing was written to .*new\.pt$"):
        export_policy(agent, "torchscript", tmp_path / "new.pt", samples=1000)
    assert list(tmp_path.iterdir()) == []  # no file, no temp file
    old = tmp_path / "old.pt"
    old.write_bytes(b"an earlier export")
    with pytest.raises(ExportError):
        export_policy(agent, "torchscript", old, samples=1000)
    assert old.read_bytes() == b"an earlier export" and list(tmp_path.iterdir()) == [old]


def test_a_write_that_fails_midway_leaves_the_target(tmp_path, monkeypatch):
    import arena.export

    def broken(module, obs_size, fmt, path):
        path.write_bytes(b"half a file")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(arena.export, "write_file", broken)
    old = tmp_path / "policy.onnx"
    old.write_bytes(b"an earlier export")
    with pytest.raises(OSError):
        export_policy(trained_looking(), "onnx", old, verify=False)
    assert old.read_bytes() == b"an earlier export" and list(tmp_path.iterdir()) == [old]


@pytest.mark.parametrize("key, value, message", [
    ("var", -1.0, "obs_normalizer.var: holds negative values (-1); a variance is never below 0"),
    ("count", -5.0, "obs_normalizer.count: holds negative values (-5); a count is never below 0"),
])
def test_negative_normalizer_statistics_are_refused_at_load(tmp_path, key, value, message):
    data = trained_looking().checkpoint()
    data["obs_normalizer"][key] = torch.full_like(data["obs_normalizer"][key], value)
    path = save_checkpoint(data, tmp_path / "bad.pt")
    with pytest.raises(CheckpointError, match=f"bad.pt: .*{re.escape(message)}"):
        PPOAgent.load(path)
    result = export_cli(path, "--out", tmp_path / "p.onnx", "--no-check")
    assert result.exit_code == 2 and message in result.output and "bad.pt" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.pt"]


def test_value_norm_refuses_negative_statistics():
    from arena_ppo.modules import ValueNorm

    state = ValueNorm().state_dict()
    ValueNorm.check_state(state, "value_normalizer")  # a fresh one is fine
    state["running_mean_sq"] = torch.tensor(-0.5, dtype=torch.float64)
    with pytest.raises(ValueError, match="value_normalizer.running_mean_sq: holds negative values"):
        ValueNorm.check_state(state, "value_normalizer")


def test_nan_actions_are_never_written(tmp_path):
    agent = trained_looking()
    with torch.no_grad():
        agent.obs_normalizer.var[0] = -1.0  # past the load check: the export still refuses it
    for verify in (True, False):
        with pytest.raises(ExportError, match="NaN or infinite .* nothing was written"):
            export_policy(agent, "torchscript", tmp_path / "p.pt", verify=verify)
    assert list(tmp_path.iterdir()) == []


def test_corrupt_checkpoint_is_one_clean_line(tmp_path):
    good = save_checkpoint(trained_looking().checkpoint(), tmp_path / "ckpt_000000100.pt")
    bad = tmp_path / "bad.pt"
    bad.write_bytes(good.read_bytes()[:200])
    for spec in (bad, f"ppo:{bad}"):
        result = export_cli(spec, "--out", tmp_path / "p.onnx")
        lines = result.output.strip().splitlines()
        assert result.exit_code == 2 and len(lines) == 1, result.output
        assert lines[0] == (f"Error: checkpoint {bad}: not a readable torch checkpoint (truncated, corrupt, or not "
                            f"a file written by torch.save); copy it again or use another checkpoint of the run")


@pytest.mark.parametrize("no_check", [False, True])
def test_json_reports_the_export(tmp_path, no_check):
    ckpt = save_checkpoint(trained_looking().checkpoint(), tmp_path / "ckpt_000000100.pt")
    out = tmp_path / "policy.pt"
    result = export_cli(ckpt, "--format", "torchscript", "--out", out, "--json", *(["--no-check"] if no_check else []))
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)  # one JSON object and nothing else
    assert data["input"] == str(ckpt) and data["output"] == str(out) and data["format"] == "torchscript"
    assert data["obs_keys"] == list(PPOAgent().obs_keys) and data["checked"] is (not no_check)
    if no_check:
        assert data["check"] is None
    else:
        assert data["check"]["samples"] == 10_000 and data["check"]["ok"] is True
        assert data["check"]["max_rudder_diff"] < 1e-5 and data["check"]["fire_mismatches"] == 0
        assert data["check"]["runtime"].startswith("torch.jit")
