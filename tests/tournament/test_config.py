from __future__ import annotations

from pathlib import Path

import pytest

from arena.tournament import ConfigError, load_config, run_tournament
from cli_checks import refused
from tourney_helpers import LEAGUE


def test_full_config(tmp_path: Path, write_league) -> None:
    (tmp_path / "ckpts" / "a").mkdir(parents=True)
    (tmp_path / "ckpts" / "b").mkdir(parents=True)
    for p in ("ckpts/a/ckpt_1.pt", "ckpts/a/ckpt_2.pt", "ckpts/b/ckpt_1.pt", "single.pt"):
        (tmp_path / p).write_text("10")
    path = write_league([
        "pursuer",
        "fromfile:single.pt",
        {"name": "far", "agent": "pursuer", "params": {"fire_km": 25}},
        {"agent": "fromfile", "checkpoints": "ckpts/*/ckpt_*.pt"},
        {"agent": "fromfile", "name": "solo", "checkpoint": "single.pt"},
    ], format="gauntlet", candidates=["fromfile:*"], rating={"mu": 30, "draw_probability": 0.2})
    cfg = load_config(path)
    names = [p.name for p in cfg.participants]
    assert names == ["pursuer", "fromfile:single", "far", "fromfile:a/ckpt_1", "fromfile:a/ckpt_2",
                     "fromfile:b/ckpt_1", "solo"]
    assert cfg.participants[1].checkpoint == (tmp_path / "single.pt").resolve()
    assert cfg.participants[2].params == {"fire_km": 25}
    assert cfg.output == (tmp_path / "out").resolve()  # relative to the YAML's folder
    assert cfg.candidates == ("fromfile:single", "fromfile:a/ckpt_1", "fromfile:a/ckpt_2", "fromfile:b/ckpt_1")
    assert cfg.rating.mu == 30.0 and cfg.rating.draw_probability == 0.2
    assert cfg.games_per_pairing == 4 and cfg.max_envs == 64 and cfg.seed == 3
    assert cfg.warnings == ()


def test_empty_glob_is_a_warning(write_league) -> None:
    cfg = load_config(write_league(LEAGUE + [{"agent": "fromfile", "checkpoints": "runs/*/ckpt_*.pt"}]))
    assert len(cfg.participants) == 3
    assert "matches no file" in cfg.warnings[0] and "participants[3]" in cfg.warnings[0]


BAD = [
    ({"colour": "red"}, "colour", "expected one of"),
    ({"seed": "zero"}, "seed", "expected an integer"),
    ({"seed": True}, "seed", "expected an integer"),
    ({"games_per_pairing": 5}, "games_per_pairing", "expected an even integer"),
    ({"max_envs": 0}, "max_envs", "expected a positive integer"),
    ({"format": "swiss"}, "format", "expected one of round-robin, gauntlet"),
    ({"format": "gauntlet"}, "candidates", "expected a list of participant names"),
    ({"format": "gauntlet", "candidates": ["nobody"]}, "candidates[0]", "expected one of"),
    ({"candidates": ["far"]}, "candidates", "only used with format: gauntlet"),
    ({"env": {"gravity": 1}}, "env", "unknown setting 'gravity'"),
    ({"env": {"max_time": "long"}}, "env.max_time", "expected a number in (0, 86400] s, got 'long'"),
    ({"rating": {"mu": "high"}}, "rating.mu", "expected a number"),
    ({"rating": {"sigma": -1}}, "rating.sigma", "expected a positive number"),
    ({"rating": {"draw_probabilty": 0.1}}, "rating.draw_probabilty", "did you mean 'draw_probability'"),
    ({"participants": []}, "participants", "expected a non-empty list"),
    ({"participants": ["pursuer"]}, "participants", "expected at least 2"),
    ({"participants": ["pursuer", "pursuer"]}, "participants[1]", "expected unique names"),
    ({"participants": ["pursuer", 7]}, "participants[1]", "expected an agent name"),
    ({"participants": ["pursuer", {"name": "x"}]}, "participants[1].agent", "expected the agent's name"),
    ({"participants": ["pursuer", {"agent": "idle", "parms": {}}]}, "participants[1].parms", "did you mean 'params'"),
    ({"participants": ["pursuer", {"agent": "idle", "params": [1]}]}, "participants[1].params", "expected a mapping"),
    ({"participants": ["pursuer", {"agent": "fromfile", "checkpoint": "missing.pt"}]},
     "participants[1].checkpoint", "expected an existing checkpoint file"),
    ({"participants": ["pursuer", "fromfile:missing.pt"]}, "participants[1].checkpoint", "no such file"),
    ({"participants": ["pursuer", {"agent": "fromfile", "checkpoint": "."}]}, "participants[1].checkpoint",
     "not a file"),
    ({"participants": ["pursuer", "runs/a.pt"]}, "participants[1]", "expected AGENT:CHECKPOINT"),
    ({"participants": ["pursuer", "fromfile:"]}, "participants[1]", "expected a checkpoint path"),
    ({"participants": ["pursuer", {"agent": None}]}, "participants[1].agent", "missing; expected the agent's name"),
    ({"participants": ["pursuer", {"agent": " "}]}, "participants[1].agent", "expected a non-empty agent name"),
    ({"participants": ["pursuer", {"agent": "idle", "name": 5}]}, "participants[1].name",
     "expected a non-empty display name of at most 200 characters, got 5"),
    ({"participants": ["pursuer", {"agent": "idle", "params": {1: 2}}]}, "participants[1].params",
     "expected parameter names as strings"),
    ({"participants": ["pursuer", {"agent": "fromfile", "checkpoint": "a.pt", "policy": "greedy"}]},
     "participants[1].policy", "expected one of sampled, deterministic, or null, got 'greedy'"),
    ({"participants": ["pursuer", {"agent": "idle", "policy": "sampled"}]}, "participants[1].policy",
     "only a checkpoint plays by a policy"),
    ({"env": {"reward": {"win": "big"}}}, "env.reward.win",
     "expected a finite number in [-1e+06, 1e+06], got 'big'"),
    ({"env": {"reward": {"win": float("inf")}}}, "env.reward.win",
     "expected a finite number in [-1e+06, 1e+06], got inf"),
    ({"env": {"reward": 3}}, "env.reward", "expected a mapping"),
    ({"env": {"team_size": 9}}, "env.team_size", "8"),
]


@pytest.mark.parametrize("settings,key,expected", BAD, ids=[b[1] + ":" + b[2][:20] for b in BAD])
def test_config_errors_name_file_key_and_expectation(write_league, settings, key, expected) -> None:
    settings = dict(settings)
    participants = settings.pop("participants", LEAGUE)
    path = write_league(participants, **settings)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: "), message
    assert expected in message
    assert "\n" not in message


def test_malformed_yaml_and_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text("participants: [crank, placeholder\nseed: 1\n")
    with pytest.raises(ConfigError, match=r"broken.yaml: not valid YAML \(line \d+, column \d+"):
        load_config(path)
    path.write_text("- just\n- a list\n")
    with pytest.raises(ConfigError, match="expected a mapping of settings"):
        load_config(path)
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "nope.yaml")


@pytest.mark.parametrize("text, line, key, first", [
    ("name: a\nseed: 1\nparticipants: [pursuer, idle]\nseed: 2\n", 4, "seed", 2),
    ("participants:\n  - pursuer\n  - agent: pursuer\n    name: far\n    params:\n      fire_km: 8\n"
     "      fire_km: 25\n", 7, "fire_km", 6),
])
def test_a_key_given_twice_is_refused_naming_the_file_line_and_key(tmp_path: Path, text, line, key, first) -> None:
    path = tmp_path / "league.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: line {line}: key {key!r} appears twice (first on line {first})"


def test_the_tournament_command_refuses_a_key_given_twice(tmp_path: Path, write_league) -> None:
    from click.testing import CliRunner

    from arena.cli import main

    path = write_league(LEAGUE)
    path.write_text(path.read_text() + "max_envs: 32\n")  # write_league wrote max_envs: 64 on line 5
    result = CliRunner().invoke(main, ["tournament", str(path), "-q"])
    refused(result)
    assert result.output == f"Error: {path}: line {len(path.read_text().splitlines())}: key 'max_envs' appears " \
                            f"twice (first on line 5)\n"
    assert not (tmp_path / "out").exists()


def test_unknown_agent_and_bad_checkpoint_stop_before_play(tmp_path: Path, write_league, registry) -> None:
    path = write_league(LEAGUE + ["crankk"])
    with pytest.raises(ConfigError, match=r"participants\[3\]\.agent: unknown agent 'crankk'"):
        run_tournament(load_config(path), registry=registry, progress=False)
    (tmp_path / "bad.pt").write_text("not a number")
    path = write_league(LEAGUE + ["fromfile:bad.pt"])
    with pytest.raises(ConfigError, match=r"participants\[3\]\.checkpoint: .*not a fromfile checkpoint"):
        run_tournament(load_config(path), registry=registry, progress=False)
    path = write_league(LEAGUE + [{"agent": "pursuer", "name": "odd", "params": {"fire_miles": 3}}])
    with pytest.raises(ConfigError, match=r"participants\[3\]\.params: .*fire_miles"):
        run_tournament(load_config(path), registry=registry, progress=False)
    path = write_league(LEAGUE, device="cuda:7")
    with pytest.raises(ConfigError, match=r"device: "):
        run_tournament(load_config(path), registry=registry, progress=False)
    assert not (tmp_path / "out" / "results.sqlite").exists()  # nothing was played, nothing stored


# -- what the checkpoints settle when the league's env does not ----------------------------------------


def trained_checkpoint(path: Path, **env) -> str:
    """A checkpoint file that records the env it was trained in (all load_config reads of it)."""
    import torch

    from arena.env import EnvConfig

    torch.save({"format_version": 1, "agent": "fromfile", "env_config": EnvConfig(**env).to_dict()}, path)
    return path.name


def test_team_checkpoints_set_the_team_size_the_env_leaves_out(tmp_path: Path, write_league) -> None:
    duel, team = trained_checkpoint(tmp_path / "duel.pt"), trained_checkpoint(tmp_path / "team.pt", team_size=2)
    extended = trained_checkpoint(tmp_path / "ext.pt", team_size=2, obs_mode="extended")
    cfg = load_config(write_league(LEAGUE + [f"fromfile:{team}", f"fromfile:{extended}"]))
    assert cfg.env["team_size"] == 2 and cfg.env["max_time"] == 60.0  # the rest of env as written
    assert [p.obs_mode for p in cfg.participants] == [None, None, None, "default", "extended"]
    cfg = load_config(write_league(LEAGUE + [f"fromfile:{duel}"]))
    assert "team_size" not in cfg.env  # duels only: the env's own size


def test_checkpoints_trained_for_different_team_sizes_are_refused_naming_them(tmp_path: Path, write_league) -> None:
    """A duel checkpoint beside a team one: no size is picked for the whole league without a word."""
    duel, team = trained_checkpoint(tmp_path / "duel.pt"), trained_checkpoint(tmp_path / "team.pt", team_size=2)
    path = write_league(LEAGUE + [f"fromfile:{team}", f"fromfile:{duel}"])
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (f"{path}: env.team_size: the checkpoints were trained for different team sizes: "
                               f"fromfile:duel (1 v 1); fromfile:team (2 v 2); choose the size of every game with "
                               f"env: {{team_size: T}} (a 1-v-1 checkpoint flies any seat of a team, a MAPPO team "
                               f"plays only its own size)")
    for size in (1, 2):  # the file chooses: then it is played at that size
        cfg = load_config(write_league(LEAGUE + [f"fromfile:{team}", f"fromfile:{duel}"],
                                       env={"max_time": 60.0, "team_size": size}))
        assert cfg.env["team_size"] == size


def test_the_league_env_wins_over_the_checkpoints(tmp_path: Path, write_league) -> None:
    team = trained_checkpoint(tmp_path / "team.pt", team_size=2, obs_mode="extended")
    cfg = load_config(write_league(LEAGUE + [f"fromfile:{team}"], env={"team_size": 3, "obs_mode": "default"}))
    assert cfg.env == {"team_size": 3, "obs_mode": "default"} and cfg.participants[-1].obs_mode is None


def test_team_checkpoints_that_disagree_name_both_files(tmp_path: Path, write_league) -> None:
    pair = trained_checkpoint(tmp_path / "pair.pt", team_size=2)
    trio = trained_checkpoint(tmp_path / "trio.pt", team_size=3)
    path = write_league(LEAGUE + [f"fromfile:{pair}", f"fromfile:{trio}"])
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: env.team_size: the checkpoints were trained for different team sizes: "
                              f"fromfile:pair (2 v 2); fromfile:trio (3 v 3); "), message
    assert "env: {team_size: T}" in message and "\n" not in message


def test_a_league_of_team_and_extended_checkpoints_plays_without_env_settings(tmp_path: Path, write_league) -> None:
    pytest.importorskip("arena_ppo")
    from arena.env import EnvConfig
    from arena.training.checkpoint import save_checkpoint
    from arena_ppo.agent import PPOAgent
    from arena_ppo.mappo_agent import MAPPOAgent

    save_checkpoint(MAPPOAgent(env_config=EnvConfig(team_size=2)).checkpoint(), tmp_path / "team.pt")
    save_checkpoint(PPOAgent(env_config=EnvConfig(team_size=2, obs_mode="extended")).checkpoint(),
                    tmp_path / "ext.pt")
    config = load_config(write_league(["placeholder", "mappo:team.pt", "ppo:ext.pt"], games_per_pairing=2,
                                      env={"max_time": 10.0}))
    assert config.env["team_size"] == 2
    report = run_tournament(config, progress=False)  # a MAPPO team of 2 cannot even be built for 1 v 1
    assert report.complete and report.forfeits.empty


def test_a_league_whose_env_sets_a_size_a_participant_cannot_play_is_refused_before_any_game(
        tmp_path: Path, write_league) -> None:
    pytest.importorskip("arena_ppo")
    from arena.env import EnvConfig
    from arena.training.checkpoint import save_checkpoint
    from arena_ppo.agent import PPOAgent
    from arena_ppo.mappo_agent import MAPPOAgent

    save_checkpoint(MAPPOAgent(env_config=EnvConfig(team_size=2)).checkpoint(), tmp_path / "team.pt")
    save_checkpoint(PPOAgent().checkpoint(), tmp_path / "duel.pt")
    config = load_config(write_league(["placeholder", "mappo:team.pt", "ppo:duel.pt"], games_per_pairing=2,
                                      env={"max_time": 10.0, "team_size": 1}))
    with pytest.raises(ConfigError, match=r"participants\[1\]\.checkpoint: .*team\.pt: a MAPPO team of 2 .*it plays "
                                          r"teams of 2, got team_size 1"):
        run_tournament(config, progress=False)
    assert not (tmp_path / "out" / "results.sqlite").exists()  # refused before a game was stored
