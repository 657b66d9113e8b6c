"""``arena play`` and ``arena agents`` as a user runs them: output, JSON schema, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import torch
from click.testing import CliRunner

from arena.cli import PLAY_KEYS, main
from arena.env.compiled import missing_compiler
from arena.match import RESULT_KEYS
from cli_checks import refused

FAST = ["--env", "max_time=30", "-q", "--device", "cpu"]  # short battles on the CPU: the CLI is under test


def run(*args: str):
    return CliRunner().invoke(main, list(args))


def test_play_prints_wins_draws_losses_and_rate():
    result = run("play", "crank", "placeholder", "--games", "8", *FAST)
    assert result.exit_code == 0, result.output
    assert "crank vs placeholder: 8 games on cpu" in result.stdout
    assert "crank: 0 wins (0.0%), 8 draws (100.0%), 0 losses" in result.stdout
    assert "mean length 30.0 steps" in result.stdout and "games/s" in result.stdout


def test_play_json_has_exactly_the_documented_keys():
    result = run("play", "rule_based", "placeholder", "-n", "5", "--seed", "2", "--team-size", "2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert list(data) == list(PLAY_KEYS) and set(RESULT_KEYS) < set(PLAY_KEYS)
    assert data["a"] == "rule_based" and data["games"] == 5
    assert data["wins"] + data["draws"] + data["losses"] == 5
    # enough to play the same battles again
    assert (data["team_size"], data["seed"], data["device"]) == (2, 2, "cpu")


def test_learning_agent_without_checkpoint_gets_a_note():
    result = run("play", "ppo", "crank", "--games", "2", *FAST)
    assert result.exit_code == 0, result.output
    assert "'ppo' names a learning agent without a checkpoint" in result.stderr
    quiet = run("play", "crank", "placeholder", "--games", "2", *FAST)
    assert "learning agent" not in quiet.stderr


@pytest.mark.parametrize("args, message", [
    (["play", "crnak", "placeholder"], "unknown agent 'crnak'; did you mean crank"),
    (["play", "crank", "placeholder", "--games", "0"], "0 is not in the range 1<=x<=16777216"),
    (["play", "crank", "placeholder", "--device", "tpu"], "--device: invalid device 'tpu'"),
    (["play", "crank", "missing/ckpt.pt"], "checkpoint missing/ckpt.pt: no such file"),
    (["play", "crank", "placeholder", "--env", "max_tim=3"],
     "EnvConfig: unknown setting 'max_tim'; did you mean max_time?"),
    (["play", "crank", "placeholder", "--env", "max_time"], "expected KEY=VALUE"),
    (["play", "crank", "placeholder:x.pt"], "does not load checkpoints"),
    (["play", "crank", "placeholder", "--env", "reward.win=big"],
     "EnvConfig.reward.win: expected a finite number in [-1e+06, 1e+06], got 'big'"),
    (["play", "crank", "placeholder", "--env", "reward=3", "--env", "reward.win=2"], "reward was already set to 3"),
    (["play", "crank", "placeholder", "--env", "team_size=9"], "team_size"),
    (["play", "crank", "placeholder", "--team-size", "9"], "9 is not in the range 1<=x<=8"),
])
def test_user_mistakes_give_one_line_and_a_non_zero_exit(args, message, tmp_path):
    if args[-1] == "placeholder:x.pt":
        torch.save({"format_version": 1, "agent": "placeholder"}, tmp_path / "x.pt")
        args = [*args[:-1], f"placeholder:{tmp_path / 'x.pt'}"]
    refused(run(*args), message)


def test_an_env_value_with_a_key_twice_is_one_line():
    result = run("play", "crank", "placeholder", "--env", "reward={win: 1, win: 2}", *FAST)
    assert refused(result) == "Error: --env 'reward={win: 1, win: 2}': key 'win' appears twice\n"


def test_corrupt_checkpoint_is_one_line(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_text("garbage")
    result = run("play", str(bad), "crank")
    assert result.exit_code == 2 and "bad.pt: not a readable torch checkpoint" in result.output
    assert len(result.output.strip().splitlines()) == 1


def test_agents_lists_names_with_their_distribution():
    result = run("agents")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    crank = next(line for line in lines if line.strip().startswith("crank"))
    assert "(rule_based)" in crank and "arena-crank 0.1.0" in crank
    assert any("placeholder" in line and "arena-placeholder" in line for line in lines)


def test_agents_json_schema():
    data = json.loads(run("agents", "--json").stdout)
    assert set(data) == {"agents", "trainers", "rewards", "broken", "problems"}
    crank = next(a for a in data["agents"] if a["name"] == "crank")
    assert crank == {"name": "crank", "aliases": ["rule_based"], "distribution": "arena-crank", "version": "0.1.0",
                     "description": crank["description"]}


def test_agents_shows_broken_plugins(fake_dists):
    fake_dists.add("broken-plugin", "broken_cli_mod", "import not_installed_anywhere\n", version="0.2")
    data = json.loads(run("agents", "--json").stdout)
    [broken] = data["broken"]
    assert broken["distribution"] == "broken-plugin" and "not_installed_anywhere" in broken["error"]
    text = run("agents").stdout
    assert "Broken plugins (skipped):" in text and "broken-plugin 0.2" in text


def test_help_and_agents_do_not_import_torch():
    code = ("import sys; from click.testing import CliRunner; from arena.cli import main; "
            "r1 = CliRunner().invoke(main, ['--help']); r2 = CliRunner().invoke(main, ['agents']); "
            "print(r1.exit_code, r2.exit_code, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["0", "0", "False"], out.stdout + out.stderr


# -- misbehaving agents in `arena play` ---------------------------------------------------------------

MISBEHAVING = '''
import sys
import torch
import arena

MODE = {mode!r}

class Odd(arena.BaseAgent):
    name = "odd"

    def __init__(self, device="cpu", env_config=None):
        if MODE == "init":
            raise RuntimeError("no GPU driver")
        super().__init__(device, env_config)

    @classmethod
    def create(cls, device="cpu", env_config=None, **params):
        if MODE == "create":
            raise ImportError("missing dependency")
        if MODE == "create-none":
            return None
        return cls(device=device, env_config=env_config)

    def eval(self):
        if MODE == "eval":
            raise RuntimeError("eval failed")
        return super().eval()

    def act(self, obs):
        n = obs["x"].shape[0]
        if MODE == "exit":
            sys.exit(0)
        if MODE == "kbint":
            raise KeyboardInterrupt
        if MODE == "raise":
            raise RuntimeError("act failed")
        return {{"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}}

@arena.hookimpl
def arena_agents():
    return [Odd]
'''


@pytest.mark.parametrize("mode, words", [
    ("init", "agent 'odd': create() raised RuntimeError: no GPU driver"),
    ("create", "agent 'odd': create() raised ImportError: missing dependency"),
    ("create-none", "create() returned NoneType"),
    ("eval", "agent 'odd' (A) eval() raised RuntimeError: eval failed"),
    ("exit", "agent 'odd' (A) raised SystemExit (called sys.exit(0))"),
    ("kbint", "agent 'odd' (A) raised KeyboardInterrupt (raised by the agent, not a Ctrl-C)"),
])
def test_a_misbehaving_agent_is_one_line_in_play(fake_dists, mode, words):
    fake_dists.add("odd-agent", f"odd_agent_{mode.replace('-', '_')}", MISBEHAVING.format(mode=mode))
    output = refused(run("play", "odd", "crank", "--games", "2", *FAST), words)
    assert len(output.strip().splitlines()) == 1


def test_both_agents_failing_in_the_same_step_is_no_result(fake_dists):
    fake_dists.add("odd-agent", "odd_agent_both", MISBEHAVING.format(mode="raise"))
    result = run("play", "odd", "odd", "--games", "2", *FAST)
    assert result.exit_code == 2
    assert "no result: 2 agents failed in the same step" in result.output
    assert "'odd' (A) raised RuntimeError: act failed" in result.output
    assert "'odd' (B) raised RuntimeError: act failed" in result.output


@pytest.mark.parametrize("args, message", [
    (["--games", "99999999999999999999"], "--games"),
    (["--seed", "99999999999999999999999"], "--seed"),
    (["--seed", "-1"], "--seed"),
    (["--device", "cpu:5"], "--device: invalid device 'cpu:5': the CPU has no device index"),
])
def test_out_of_range_play_options_are_one_line(args, message):
    refused(run("play", "crank", "placeholder", *FAST, *args), message)


def test_mps_without_mps_is_one_line():
    if torch.backends.mps.is_available():
        pytest.skip("this machine has MPS")
    for command in (["play", "crank", "placeholder", *FAST], ["env-info"]):
        refused(run(*command, "--device", "mps"), "MPS is not available")


def test_env_info_says_how_a_step_runs_and_arena_compile_chooses(monkeypatch):
    result = run("env-info", "--json", "--num-envs", "4096")
    assert result.exit_code == 0, result.output
    step = json.loads(result.stdout)["step"]
    assert step == {"num_envs": 4096, "compiled": False,
                    "path": "eager (auto: eager on the CPU; ARENA_COMPILE=1 compiles)"}
    monkeypatch.setenv("ARENA_COMPILE", "1")  # compiled where this machine has a C++ compiler, else eager saying why
    problem = missing_compiler(torch.device("cpu"))
    assert f"step (16,384 envs): {'compiled' if problem is None else f'eager ({problem})'}" in run("env-info").stdout
    monkeypatch.setenv("ARENA_COMPILE", "sometimes")
    for command in (["env-info"], ["play", "crank", "placeholder", *FAST]):
        refused(run(*command), "ARENA_COMPILE='sometimes': expected auto, 1/on/true/yes or 0/off/false/no")


# -- a checkpoint brings the battles it was trained for ----------------------------------------------


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """Untrained but real checkpoints: MAPPO teams of 2 and 3, a duel policy on the extended observation,
    one on the default observation."""
    pytest.importorskip("arena_ppo")
    from arena.env import EnvConfig
    from arena.training.checkpoint import save_checkpoint
    from arena_ppo.agent import PPOAgent
    from arena_ppo.mappo_agent import MAPPOAgent

    root = tmp_path_factory.mktemp("trained")
    agents = {"team2": MAPPOAgent(env_config=EnvConfig(team_size=2)),
              "team3": MAPPOAgent(env_config=EnvConfig(team_size=3)),
              "extended": PPOAgent(env_config=EnvConfig(obs_mode="extended")), "duel": PPOAgent()}
    return {name: str(save_checkpoint(agent.checkpoint(), root / f"{name}.pt")) for name, agent in agents.items()}


def test_a_team_checkpoint_plays_its_own_team_size(trained):
    result = run("play", trained["team2"], "crank", "-n", "2", "--json", *FAST)
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["team_size"] == 2
    result = run("play", trained["duel"], trained["team2"], "-n", "2", *FAST)  # a duel policy flies any seat
    assert result.exit_code == 0 and "2 2-v-2 games" in result.stdout, result.output


def test_a_checkpoint_reads_the_observation_it_was_trained_on(trained):
    for other in ("crank", trained["duel"], trained["team2"]):  # each agent gets its own keys in one battle
        result = run("play", trained["extended"], other, "-n", "2", "--json", *FAST)
        assert result.exit_code == 0, result.output


def test_checkpoints_that_disagree_on_the_team_size_are_one_line_naming_both(trained):
    result = run("play", trained["team2"], trained["team3"], "-n", "2", *FAST)
    refused(result)
    assert f"{trained['team2']} (trained in 2 v 2) and {trained['team3']} (3 v 3) disagree" in result.output
    assert "--team-size" in result.output and len(result.output.strip().splitlines()) == 1
    result = run("play", trained["team2"], trained["team3"], "-n", "2", "--team-size", "3", *FAST)
    assert result.exit_code == 2 and f"{trained['team2']}: a MAPPO team of 2" in result.output


def test_an_explicit_setting_wins_and_a_contradiction_says_so(trained):
    result = run("play", trained["team2"], "crank", "-n", "2", "--env", "team_size=3", *FAST)
    assert result.exit_code == 2 and "it plays teams of 2, got team_size 3" in result.output
    result = run("play", trained["extended"], "crank", "-n", "2", "--env", "obs_mode=default", *FAST)
    assert result.exit_code == 2 and "trained with obs_mode='extended'" in result.output
    result = run("play", trained["duel"], "crank", "-n", "2", "--team-size", "3", "--json", *FAST)
    assert result.exit_code == 0 and json.loads(result.stdout)["team_size"] == 3


def test_play_says_how_trained_policies_play():
    sampled = json.loads(run("play", "crank", "placeholder", "--games", "4", "--policy", "sampled", "--json",
                             *FAST).stdout)
    assert sampled["policy"] == "sampled"
    plain = run("play", "crank", "placeholder", "--games", "4", *FAST)
    assert plain.exit_code == 0 and "policies sampled" not in plain.output, "deterministic unless asked"
    bad = run("play", "crank", "placeholder", "--policy", "greedy", *FAST)
    assert bad.exit_code == 2 and "'greedy' is not one of 'sampled', 'deterministic'" in bad.output
