"""``--json``: on every command that has it, stdout holds the JSON object and nothing else, whatever the
agents and plugins it runs print meanwhile (that goes to stderr)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.cli import main

PRINTING_PLUGIN = '''
import os
import torch
import arena

print("printer: imported")

class Printer(arena.BaseAgent):
    name = "printer"

    def __init__(self, device="cpu", env_config=None):
        print("printer: constructed")
        super().__init__(device, env_config)

    def eval(self):
        print("printer: eval")
        return super().eval()

    def reset(self, env_mask=None):
        print("printer: reset")

    def act(self, obs):
        print("printer: act")
        os.write(1, b"printer: act, on file descriptor 1\\n")
        n = obs["x"].shape[0]
        return {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}

@arena.hookimpl
def arena_agents():
    print("printer: arena_agents")
    return [Printer]
'''

FAST = ["--env", "max_time=20", "-q", "--device", "cpu"]


@pytest.fixture
def printer(fake_dists):
    fake_dists.add("printer", "printer_agent", PRINTING_PLUGIN)


def only_json(result, printed: bool = True) -> dict:
    """The command succeeded, its stdout is one JSON object, and what the plugin printed went to stderr."""
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert "printer:" not in result.stdout
    if printed:
        assert "printer: arena_agents" in result.stderr
    return data


def test_play_and_replay(printer, tmp_path):
    play = only_json(CliRunner().invoke(main, ["play", "printer", "crank", "-n", "2", "--json", *FAST]))
    assert play["games"] == 2
    replay = CliRunner().invoke(main, ["replay", "printer", "crank", "-n", "1", "--out", str(tmp_path / "r"),
                                       "--json", *FAST])
    assert only_json(replay)["battles"][0]["battle"] == 1
    assert "printer: act" in replay.stderr


def test_tournament_and_leaderboard(printer, tmp_path):
    file = tmp_path / "league.yaml"
    file.write_text(yaml.safe_dump({"name": "printing", "output": str(tmp_path / "out"), "seed": 1, "device": "cpu",
                                    "max_envs": 16, "games_per_pairing": 2, "env": {"max_time": 20.0},
                                    "rating": {"bootstrap_rounds": 10}, "participants": ["printer", "crank"]}))
    report = only_json(CliRunner().invoke(main, ["tournament", str(file), "-q", "--json"]))
    assert report["played"] == 2
    for args in (["--json"], ["--format", "json"]):
        board = only_json(CliRunner().invoke(main, ["leaderboard", str(tmp_path / "out"), *args]), printed=False)
        assert [row["name"] for row in board["leaderboard"]] == [row["name"] for row in report["leaderboard"]]


def test_agents_env_info_and_export(printer, tmp_path):
    listed = only_json(CliRunner().invoke(main, ["agents", "--json"]))
    assert "printer" in [a["name"] for a in listed["agents"]]
    assert only_json(CliRunner().invoke(main, ["env-info", "--device", "cpu", "--json"]), printed=False)["obs_keys"]
    pytest.importorskip("arena_ppo")
    from arena.training import save_checkpoint
    from arena_ppo.agent import PPOAgent

    ckpt = save_checkpoint(PPOAgent().checkpoint(), tmp_path / "ckpt_000000100.pt")
    exported = CliRunner().invoke(main, ["export", str(ckpt), "--format", "torchscript", "--no-check",
                                         "--out", str(tmp_path / "policy.pt"), "--json"])
    assert only_json(exported)["format"] == "torchscript"


def test_what_agents_write_to_the_file_descriptor_goes_to_stderr_too(tmp_path):
    """In a process of its own, where stdout is file descriptor 1: a library or a child process writing
    there directly does not reach the JSON either."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "printer_agent.py").write_text(PRINTING_PLUGIN)
    info = plugins / "printer-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: printer\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[arena]\nprinter_agent = printer_agent\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, "-m", "arena", "play", "printer", "crank", "-n", "2", "--json", *FAST],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent, env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["games"] == 2
    assert "printer: act, on file descriptor 1" in done.stderr and "printer: act\n" in done.stderr
