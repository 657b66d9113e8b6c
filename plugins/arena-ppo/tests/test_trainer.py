"""`arena train ppo` end to end: the smoke test, several env counts, exact resume, bad input."""

from __future__ import annotations

import csv
import functools
import io
import json
import math

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.training import list_checkpoints
from arena_ppo.agent import PPOAgent
from cli_checks import refused

TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=2", "--eval-games", "0",
        "--no-progress", "--threads", "1"]


def run(args, out=None):
    result = CliRunner().invoke(main, ["train", "ppo", *args] + (["--out", str(out)] if out else []))
    return result


def rows(path):
    return list(csv.DictReader(path.open()))


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
def test_seed_smoke_test_finishes_exactly_one_update(tmp_path, short_battles):
    """--max-steps 1000 with updates of 8 x 128 steps: one whole update (1,024 steps), never a partial one."""
    out = tmp_path / "run"
    result = run(["--vs", "rule_based", "--reward", "zero", "--num-envs", "8", "--set", "ppo.n_steps=128",
                  "--max-steps", "1000", "--eval-games", "16", "--no-progress", "--threads", "1"], out)
    assert result.exit_code == 0, result.output
    metrics = rows(out / "metrics.csv")
    assert len(metrics) == 1 and int(metrics[0]["step"]) == 1024
    for key in ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "learning_rate"):
        value = float(metrics[0][key])
        assert math.isfinite(value) and -100 <= value <= 100, (key, value)
    for key in ("episode_return", "episode_length", "win_rate"):
        assert key in metrics[0]
    ckpts = list_checkpoints(out)
    assert [p.name for p in ckpts] == ["ckpt_000001024.pt"]
    data = torch.load(ckpts[0], weights_only=True)
    assert data["agent"] == "ppo" and data["counters"]["updates"] == 1
    assert {"algorithm", "rng", "env", "opponents", "obs_normalizer"} <= set(data)
    assert (out / "config.yaml").exists()
    assert rows(out / "eval.csv")[0]["eval_rule_based_win"] != ""


@pytest.mark.parametrize("num_envs, vs", [(1, ["crank"]), (3, ["crank", "placeholder=0.5"]), (33, ["self", "crank"])])
def test_several_env_counts_and_pools(tmp_path, num_envs, vs):
    args = ["--num-envs", str(num_envs), "--max-steps", str(num_envs * 16 * 2), *TINY]
    for v in vs:
        args += ["--vs", v]
    result = run(args + ["--save-interval", str(num_envs * 16)], tmp_path)
    assert result.exit_code == 0, result.output
    assert len(rows(tmp_path / "metrics.csv")) == 2
    assert len(list_checkpoints(tmp_path)) == 2


def straight_and_resumed(common, tmp_path):
    """The last checkpoint of a run of three updates of 12 x 16 steps, and of the same run stopped after two
    and resumed."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert run(common + ["--max-steps", "576"], straight).exit_code == 0
    assert run(common + ["--max-steps", "384"], split).exit_code == 0
    resumed = run(["--resume", str(split / "ckpt_000000384.pt"), "--max-steps", "576", "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    return (torch.load(straight / "ckpt_000000576.pt", weights_only=True),
            torch.load(split / "ckpt_000000576.pt", weights_only=True))


def settings(**values):
    """--set arguments for SECTION__NAME=VALUE keywords."""
    return [arg for key, value in values.items() for arg in ("--set", f"{key.replace('__', '.')}={value}")]


@pytest.mark.parametrize("options", [[], ["--obs-mode", "extended", *settings(
                                         run__privileged_critic="true", ppo__value_norm="true",
                                         network__input_layer_norm="true", ppo__lr_schedule="adaptive",
                                         ppo__clip_value_loss="true", run__obs_norm="false")],
                                     ["--team-size", "2", *settings(run__privileged_critic="true")],
                                     # a teacher with a random stream, which the checkpoint must keep
                                     ["--kickstart", "placeholder"],
                                     # opponents held over the checkpoint by a long tenure
                                     ["--obs-mode", "extended", *settings(run__tenure=576)]])
def test_resume_continues_exactly(tmp_path, options):
    common = ["--vs", "crank", "--vs", "placeholder=0.5", "--vs", "self=0.5", "--num-envs", "12", "--seed", "5",
              "--save-interval", "192", "--reward", "pursuit", *TINY, *options]
    a, b = straight_and_resumed(common, tmp_path)
    straight, split = tmp_path / "straight", tmp_path / "split"
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    assert a["algorithm"]["learning_rate"] == b["algorithm"]["learning_rate"]
    for group_a, group_b in zip(a["algorithm"]["optimizer"]["state"].values(),
                                b["algorithm"]["optimizer"]["state"].values()):
        assert all(torch.equal(group_a[k], group_b[k]) for k in group_a)
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"])
    ra, rb = rows(straight / "metrics.csv"), rows(split / "metrics.csv")
    assert len(rb) == 3
    assert [r["policy_loss"] for r in ra] == [r["policy_loss"] for r in rb]


def test_linear_schedule_falls_to_zero_at_max_steps(tmp_path):
    args = ["--vs", "crank", "--num-envs", "12", "--max-steps", "768", "--set", "ppo.lr_schedule=linear", *TINY]
    assert run(args, tmp_path).exit_code == 0
    rates = [float(r["learning_rate"]) for r in rows(tmp_path / "metrics.csv")]
    assert rates == pytest.approx([3e-4, 2.25e-4, 1.5e-4, 7.5e-5])


def test_team_training_flies_every_seat_and_its_checkpoints_play_teams_only(tmp_path):
    from arena.agents import AgentSpecError, build_agent
    from arena.env import EnvConfig
    from arena.match import play_match

    out = tmp_path / "team"
    result = run(["--vs", "crank", "--team-size", "2", "--num-envs", "8", "--max-steps", "256", *TINY], out)
    assert result.exit_code == 0, result.output
    ckpt = list_checkpoints(out)[-1]
    data = torch.load(ckpt, weights_only=True)
    assert data["env_config"]["team_size"] == 2 and data["network"]["obs_dim"] > 10  # own and neighbour slots
    for size in (2, 4):  # a team policy reads its nearest neighbours, which any larger team has too
        cfg = EnvConfig(team_size=size, max_time=60.0, obs_mode="extended")  # short battles: who plays, not how well
        match = play_match(build_agent(str(ckpt), env_config=cfg), build_agent("crank", env_config=cfg), 4,
                           env_config=cfg)
        assert match.games == 4
    with pytest.raises(AgentSpecError, match="trained in team battles of 2"):
        build_agent(str(ckpt), env_config=EnvConfig(obs_mode="extended"))
    short = ["-n", "4", "-q", "--env", "max_time=60"]
    played = CliRunner().invoke(main, ["play", str(ckpt), "crank", *short])
    assert played.exit_code == 0 and "4 2-v-2 games" in played.output  # its own team size by default
    refused = CliRunner().invoke(main, ["play", str(ckpt), "crank", *short, "--team-size", "1"])
    assert refused.exit_code != 0 and "lacks the observation keys ally1_" in refused.output


def test_a_duel_checkpoint_flies_any_seat_of_a_team(tmp_path):
    out = tmp_path / "duel"
    assert run(["--vs", "crank", "--num-envs", "8", "--max-steps", "128", *TINY], out).exit_code == 0
    played = CliRunner().invoke(main, ["play", str(list_checkpoints(out)[-1]), "crank", "-n", "4", "-q",
                                       "--team-size", "3", "--env", "max_time=60"])
    assert played.exit_code == 0, played.output
    assert "4 3-v-3 games" in played.output


@pytest.mark.parametrize("args, message", [
    (["--resume", "missing.pt"], "missing.pt: no such file"),
    (["--vs", "crank=x"], "not a number"),
    (["--vs", "cranky"], "unknown agent 'cranky'; did you mean crank"),
    (["--vs", "ckpt:nowhere.pt"], "nowhere.pt: no such file"),
    (["--reward", "pursuitt"], "unknown reward 'pursuitt'; did you mean pursuit"),
    (["--device", "cuda:7"], "cuda"),
])
def test_bad_input_is_one_clear_line(tmp_path, args, message):
    refused(run(args + ["--max-steps", "1"], tmp_path / "bad"), message)


def test_resume_rejects_foreign_file_and_structural_changes(tmp_path):
    foreign = tmp_path / "f.pt"
    torch.save({"weights": torch.zeros(1)}, foreign)
    result = run(["--resume", str(foreign)])
    assert result.exit_code != 0 and "not an arena checkpoint" in result.output
    assert run(["--num-envs", "4", "--max-steps", "64", "--vs", "crank", *TINY], tmp_path / "r").exit_code == 0
    result = run(["--resume", str(tmp_path / "r" / "ckpt_000000064.pt"), "--num-envs", "8"])
    assert result.exit_code != 0 and "cannot change run.num_envs (--num-envs)" in result.output


def test_unknown_trainer_suggests():
    result = CliRunner().invoke(main, ["train", "ppp"])
    assert result.exit_code != 0 and "did you mean ppo" in result.output


def test_new_run_refuses_an_out_that_holds_a_run(tmp_path):
    args = ["--num-envs", "4", "--max-steps", "64", "--vs", "crank", *TINY]
    assert run(args, tmp_path / "r").exit_code == 0
    before = (tmp_path / "r" / "metrics.csv").read_text()
    result = run(args, tmp_path / "r")
    assert result.exit_code != 0 and "already holds a training run" in result.output
    assert (tmp_path / "r" / "metrics.csv").read_text() == before


def test_a_saved_config_reads_back_and_damage_is_named():
    from dataclasses import asdict

    from arena_ppo.prepare import saved_config
    from arena_ppo.train_config import TrainConfig

    saved = asdict(TrainConfig())
    assert saved_config(saved, "ppo") == (TrainConfig(), [])
    del saved["ppo"]["gamma"]
    assert saved_config(saved, "ppo") == (TrainConfig(), ["ppo.gamma"])  # missing: this version's default
    saved = asdict(TrainConfig())
    with pytest.raises(ValueError, match=r"run.floor: expected a number in \[0, 0.9\], got 2"):
        saved_config({**saved, "run": {**saved["run"], "floor": 2}}, "ppo")
    with pytest.raises(ValueError, match="unknown setting 'ppo.lr_schedul'; did you mean ppo.lr_schedule?"):
        saved_config({**saved, "ppo": {**saved["ppo"], "lr_schedul": "linear"}}, "ppo")


def tiny_run(out, steps=128):
    result = run(["--num-envs", "8", "--max-steps", str(steps), "--vs", "crank", *TINY], out)
    assert result.exit_code == 0, result.output
    return out / f"ckpt_{steps:09d}.pt"


def test_a_resume_takes_the_checkpoints_settings_and_the_command_line_not_an_edited_config_yaml(tmp_path):
    """config.yaml is the run's record, rewritten when it starts again: a hand edit, even a broken file, is
    not read; --set is how a resumed run changes a setting."""
    ckpt = tiny_run(tmp_path / "r")
    config = tmp_path / "r" / "config.yaml"
    text = config.read_text()
    config.write_text(text.replace("entropy_coef: 0.001", "entropy_coef: 0.05").replace("floor: 0.25", "floor: 0.5"))
    result = run(["--resume", str(ckpt), "--max-steps", "256"])
    assert result.exit_code == 0 and "note:" not in result.output, result.output
    saved = torch.load(tmp_path / "r" / "ckpt_000000256.pt", weights_only=True)["config"]
    assert (saved["ppo"]["entropy_coef"], saved["run"]["floor"]) == (0.001, 0.25)
    assert config.read_text() == text.replace("max_steps: 128", "max_steps: 256")
    config.write_text(text.replace("  n_epochs: 2\n", "  n_epochs: 2\n  n_epochs: 3\n"))  # not YAML arena reads
    result = run(["--resume", str(tmp_path / "r" / "ckpt_000000256.pt"), "--max-steps", "384",
                  "--set", "ppo.entropy_coef=0.01"])
    assert result.exit_code == 0, result.output
    assert torch.load(tmp_path / "r" / "ckpt_000000384.pt", weights_only=True)["config"]["ppo"]["entropy_coef"] == 0.01
    assert "entropy_coef: 0.01" in config.read_text() and "n_epochs: 3" not in config.read_text()


def test_resuming_at_or_past_max_steps_is_refused_and_config_yaml_stays_true(tmp_path):
    ckpt = tiny_run(tmp_path / "r")
    config = tmp_path / "r" / "config.yaml"
    before = config.read_bytes()
    for args, limit in ((["--max-steps", "100"], "100"), ([], "128")):  # below it, and a finished run resumed as is
        result = run(["--resume", str(ckpt), *args])
        assert result.exit_code == 2, result.output
        assert result.output == (f"Error: run.max_steps {limit} (--max-steps): the checkpoint ckpt_000000128.pt is "
                                 f"already at 128 steps, so resuming would train nothing; give a larger --max-steps to "
                                 f"go on (it counts all of the run's steps, not this session's)\n")
        assert config.read_bytes() == before and len(list_checkpoints(tmp_path / "r")) == 1


def with_config(src, dst, **changes):
    """A copy of checkpoint ``src`` whose saved config has ``changes`` (SECTION__NAME=VALUE) applied."""
    data = torch.load(src, weights_only=True)
    for key, value in changes.items():
        section, name = key.split("__")
        data["config"][section][name] = value
    torch.save(data, dst)
    return dst


def test_a_checkpoint_holding_a_setting_this_version_lacks_is_refused_saying_how_to_go_on(tmp_path):
    ckpt = tiny_run(tmp_path / "r")
    (tmp_path / "old").mkdir()
    old = with_config(ckpt, tmp_path / "old" / "ckpt_000000128.pt", ppo__lr_anneal=0.0)
    result = run(["--resume", str(old), "--max-steps", "256"])
    assert result.exit_code == 2, result.output
    assert result.output == (f"Error: checkpoint {old}: holds a setting this version does not have (config: unknown "
                             f"setting 'ppo.lr_anneal'; did you mean ppo.lr_schedule?; saved by another version of "
                             f"the trainer?), so this version cannot continue the run as it trained; its weights still "
                             f"play (arena play {old} crank), and a new run can learn from them (--kickstart "
                             f"ckpt:{old})\n")

def test_a_checkpoint_without_a_setting_resumes_at_the_default_and_says_so(tmp_path):
    ckpt = tiny_run(tmp_path / "r")
    (tmp_path / "old").mkdir()
    old = tmp_path / "old" / "ckpt_000000128.pt"
    data = torch.load(ckpt, weights_only=True)
    del data["config"]["ppo"]["gamma"], data["config"]["run"]["pfsp_power"]
    torch.save(data, old)
    result = run(["--resume", str(old), "--max-steps", "256"])
    assert result.exit_code == 0, result.output
    assert (f"note: checkpoint {old}: holds no run.pfsp_power, ppo.gamma (saved by another version?): resuming with "
            f"this version's defaults: run.pfsp_power 2.0, ppo.gamma 0.99") in result.output
    result = run(["--resume", str(tmp_path / "old" / "ckpt_000000256.pt"), "--max-steps", "384"])
    assert result.exit_code == 0 and "holds no" not in result.output, result.output  # the checkpoint it saved


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
def test_league_training_plays_the_ladder_and_evaluates_against_every_rung(tmp_path, short_battles):
    """--vs league: the ladder and the training partners drawn by PFSP with the run's own checkpoints; some
    rungs read the extended observation, and a learner told to keep the standard one keeps it; eval.csv has
    every rung and no partner. One evaluation (the final one) shows who is evaluated: the references'
    games among themselves and each evaluation play every rung."""
    from arena.training import league_agents, league_partners

    out = tmp_path / "league"
    steps = 16 * 16 * 3
    result = run(["--vs", "league", "--num-envs", "16", "--max-steps", str(steps), "--save-interval",
                  str(16 * 16), "--eval-games", "4", "--no-progress", "--threads", "1", "--obs-mode", "default",
                  *settings(run__self_slots=8, ppo__n_steps=16, ppo__batch_size=64, ppo__n_epochs=1,
                            run__warm_up_steps=0, run__eval_interval=steps)], out)
    assert result.exit_code == 0, result.output
    header = rows(out / "eval.csv")[0]
    for name in league_agents():
        assert f"eval_{name}_win" in header, name
    assert league_partners() and not any(f"eval_{name}_win" in header for name in league_partners())
    data = torch.load(list_checkpoints(out)[-1], weights_only=True)
    drawn = data["opponents"]["self_play"]["records"]
    assert set(league_agents()) | set(league_partners()) <= set(drawn), "every rung and partner is in the PFSP pool"
    assert any(name.startswith("ckpt_") for name in drawn), "and so are the run's own checkpoints"
    assert data["config"]["run"]["obs_mode"] == "default"


def test_league_training_resumes_exactly(tmp_path):
    # a tenure of two rollouts: the third, after the resume, draws half the slots and restarts their battles
    common = ["--vs", "league", "--num-envs", "12", "--seed", "3", "--save-interval", "192", *TINY,
              *settings(run__self_slots=6, run__tenure=32, run__handover="false", run__warm_up_steps=0)]
    a, b = straight_and_resumed(common, tmp_path)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    assert a["opponents"]["self_play"] == b["opponents"]["self_play"]
    slots = [(slot["checkpoint"], slot["left"]) for slot in a["opponents"]["slots"]]
    assert slots == [(slot["checkpoint"], slot["left"]) for slot in b["opponents"]["slots"]]
    assert [left for _, left in slots[:6]] == [1, 1, 1, 0, 0, 0]
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"])


def tensors(data, prefix=""):
    """Every tensor of a checkpoint by its dotted path."""
    if isinstance(data, torch.Tensor):
        return {prefix: data}
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, (list, tuple)) else ()
    return {k: v for key, value in items for k, v in tensors(value, f"{prefix}.{key}" if prefix else str(key)).items()}


def test_a_league_with_an_exploiter_resumes_exactly_after_its_pool_loaded_past_checkpoints(tmp_path):
    """Loading a past checkpoint into the pool draws no number from the run's random streams, so a resumed
    league, which loads them again at other times, continues bit for bit: learner and exploiter alike."""
    common = ["--vs", "league", "--num-envs", "8", "--seed", "0", "--save-interval", "256", "--threads", "1",
              "--eval-games", "0", "--no-progress", *settings(ppo__n_steps=32, ppo__batch_size=64,
                                                             run__warm_up_steps=256, run__exploiter_share=0.5)]
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert run(common + ["--max-steps", "1024"], straight).exit_code == 0
    assert run(common + ["--max-steps", "768"], split).exit_code == 0
    resumed = run(["--resume", str(split / "ckpt_000000768.pt"), "--max-steps", "1024", "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    a, b = (tensors(torch.load(out / "ckpt_000001024.pt", weights_only=True)) for out in (straight, split))
    assert a.keys() == b.keys() and any(key.startswith("exploiter.checkpoint.env") for key in a)
    assert [key for key in a if not torch.equal(a[key], b[key])] == []


def test_a_ctrl_c_in_the_exploiters_turn_keeps_the_row_of_the_update_it_saves(tmp_path, monkeypatch):
    """The learner's update is done when the exploiter takes its turn: a Ctrl-C there saves the checkpoint
    of that step, and metrics.csv gets that update's row, so a resume loses no row."""
    from arena_ppo.runners import exploiter as exploiter_module

    turn, turns = exploiter_module.MainExploiter.turn, []

    def interrupted(self, learner_steps):
        turns.append(learner_steps)
        if len(turns) == 3:
            raise KeyboardInterrupt
        return turn(self, learner_steps)

    monkeypatch.setattr(exploiter_module.MainExploiter, "turn", interrupted)
    out = tmp_path / "league"
    common = ["--vs", "league", "--num-envs", "8", "--save-interval", "256", "--threads", "1", "--eval-games", "0",
              "--no-progress", *settings(ppo__n_steps=32, ppo__batch_size=64, run__warm_up_steps=256,
                                         run__exploiter_share=0.5)]
    result = run(common + ["--max-steps", "1536"], out)
    assert result.exit_code == 130, result.output
    assert turns == [256, 512, 768]
    saved = torch.load(out / "ckpt_000000768.pt", weights_only=True)  # the update of the interrupted turn
    assert [int(row["update"]) for row in rows(out / "metrics.csv")] == list(range(1, saved["counters"]["updates"] + 1))
    monkeypatch.setattr(exploiter_module.MainExploiter, "turn", turn)
    resumed = run(["--resume", str(out / "ckpt_000000768.pt"), "--max-steps", "1536", "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    assert [int(row["update"]) for row in rows(out / "metrics.csv")] == [1, 2, 3, 4, 5, 6]


def worst_and_mean(row):
    labels = [key[len("eval_"):-len("_win")] for key in row if key.endswith("_win")]
    scores = [float(row[f"eval_{label}_win"]) + 0.5 * float(row[f"eval_{label}_draw"]) for label in labels]
    return min(scores), sum(scores) / len(scores)


def rating_key(row):
    """The order best.pt keeps by: the rating against the references (above every one by its lower bound),
    then the worst score and the mean."""
    from arena.training import Rating

    elo, low, high = (float(row[f"eval_elo{part}"]) for part in ("", "_low", "_high"))
    note = "above every reference" if elo == math.inf else "below every reference" if elo == -math.inf else ""
    return Rating(elo, low, high, note).key(), *worst_and_mean(row)


def aim(row):
    """The score against the training mix of ``--vs crank`` with the floor: crank 0.75, the placeholder 0.25."""
    def score(label):
        return float(row[f"eval_{label}_win"]) + 0.5 * float(row[f"eval_{label}_draw"])
    return 0.75 * score("crank") + 0.25 * score("placeholder")


def test_the_evaluated_weights_that_score_best_against_the_training_mix_are_kept(tmp_path, short_battles):
    out = tmp_path / "run"
    args = ["--vs", "crank", "--num-envs", "16", "--seed", "2", "--save-interval", str(16 * 16), *TINY,
            "--eval-games", "8"]
    result = run(args + ["--max-steps", str(16 * 16 * 4)], out)
    assert result.exit_code == 0, result.output
    evals = rows(out / "eval.csv")
    assert len(evals) == 4 and len({(aim(row), rating_key(row)) for row in evals}) > 1
    expected = max(evals, key=lambda row: (aim(row), rating_key(row)))  # of equals, the earlier weights
    kept = json.loads((out / "best.json").read_text())
    assert kept["step"] == int(expected["step"]) and kept["policy"] == "deterministic"
    assert kept["aim"] == pytest.approx(aim(expected))
    assert kept["rating"]["low"] == pytest.approx(float(expected["eval_elo_low"]))
    assert (kept["worst"], kept["mean"]) == pytest.approx(worst_and_mean(expected))
    assert set(kept["scores"]) == {"crank", "placeholder"}  # the floor is evaluated too
    best = torch.load(out / "best.pt", weights_only=True)
    same_step = torch.load(out / f"ckpt_{kept['step']:09d}.pt", weights_only=True)
    assert all(torch.equal(value, same_step["model"][key]) for key, value in best["model"].items())
    assert f"best: {out / 'best.pt'}, the weights of step {kept['step']:,}" in result.output
    assert PPOAgent.load(out / "best.pt").training is False  # plays like any checkpoint
    resumed = run(["--resume", str(out / "best.pt")])
    assert resumed.exit_code != 0 and "holds weights only" in resumed.output

    assert run(args + ["--max-steps", "256", "--set", "run.keep_best=false"], tmp_path / "none").exit_code == 0
    assert not (tmp_path / "none" / "best.pt").exists() and not (tmp_path / "none" / "best.json").exists()


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
def test_a_resumed_run_keeps_the_same_best_weights(tmp_path, short_battles):
    common = ["--vs", "crank", "--num-envs", "12", "--seed", "4", "--save-interval", "192", *TINY, "--eval-games", "6"]
    a, b = straight_and_resumed(common, tmp_path)
    assert a["best"] == b["best"]
    assert (tmp_path / "straight" / "best.json").read_text() == (tmp_path / "split" / "best.json").read_text()
    # Resuming an older checkpoint branches into a new folder: its best.pt is the best up to that step.
    older = torch.load(tmp_path / "straight" / "ckpt_000000192.pt", weights_only=True)["best"]
    branched = run(["--resume", str(tmp_path / "straight" / "ckpt_000000192.pt"), "--max-steps", "384",
                    "--eval-games", "0", "--no-progress"])  # no evaluation after the branch point: its record stays
    assert branched.exit_code == 0, branched.output
    branch = tmp_path / "straight-branch-192"
    assert json.loads((branch / "best.json").read_text())["step"] == older["step"] == 192
    assert torch.load(branch / "best.pt", weights_only=True)["best"] == older


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
def test_best_weights_in_no_checkpoint_of_the_folder_start_again(tmp_path, short_battles):
    """Evaluated between checkpoints, the kept weights may be in no file a resumed run can reach: it says so
    and keeps the best of its own evaluations instead of naming a best.pt it cannot write."""
    common = ["--vs", "crank", "--num-envs", "12", "--seed", "4", "--save-interval", "192", *TINY, "--eval-games", "4"]
    assert run(common + ["--max-steps", "192"], tmp_path / "run").exit_code == 0
    data = torch.load(tmp_path / "run" / "ckpt_000000192.pt", weights_only=True)
    data["best"] = {"step": 96, "worst": 1.0, "mean": 1.0, "scores": {"crank": 1.0}}  # unbeatable, at no checkpoint
    (tmp_path / "alone").mkdir()
    torch.save(data, tmp_path / "alone" / "ckpt_000000192.pt")
    result = run(["--resume", str(tmp_path / "alone" / "ckpt_000000192.pt"), "--max-steps", "384", "--no-progress"])
    assert result.exit_code == 0, result.output
    assert "no checkpoint of step 96 holds the best weights so far; best.pt starts again" in result.output
    assert json.loads((tmp_path / "alone" / "best.json").read_text())["step"] == 384


def test_a_tenure_shorter_than_a_battle_without_handover_is_warned_of(tmp_path):
    result = run(["--vs", "self", "--num-envs", "4", "--max-steps", "64", "--device", "cpu", *TINY,
                  *settings(run__handover="false", run__tenure=100)], tmp_path)
    assert result.exit_code == 0, result.output
    assert "warning: run.handover false with run.tenure 100: a battle longer than 112 steps restarts" in result.output
    quiet = run(["--vs", "self", "--num-envs", "4", "--max-steps", "64", "--device", "cpu", *TINY,
                 *settings(run__handover="false", run__tenure=0)], tmp_path / "whole")
    assert quiet.exit_code == 0 and "warning" not in quiet.output


def test_a_slot_drawn_again_restarts_its_battles_and_credits_only_whole_games(tmp_path):
    """--vs league --no-handover with a tenure of one rollout: every slot is drawn again at each
    rollout and its battles start over, so no game changes opponent midway; only the games that began
    and ended within a rollout are credited (with --tenure 0 a whole battle fits in one)."""
    from arena_ppo.plan import resolve
    from arena_ppo.prepare import build_config
    from arena_ppo.runners import build_run

    cfg = build_config("ppo", {"run.vs": ("league",), "run.floor": 0.0, "run.num_envs": 8, "run.self_slots": 4,
                               "ppo.n_steps": 16, "run.tenure": 16, "run.handover": False, "run.device": "cpu",
                               "run.threads": 1, "run.warm_up_steps": 0})
    learner = build_run(resolve(cfg, out=tmp_path), console=None, progress=False).learner
    pool = learner.opponents.pool
    learner.collect()
    assert learner.env.env.state.time.eq(16).all()  # no battle of 16 s ends: none was credited
    assert sum(t.games for t in pool.self_play.records.values()) == 0
    learner.counters.env_steps = 128
    pool.begin_rollout = lambda generator: pool.slots[1:3]  # as if two slots were drawn
    learner.collect()
    time = learner.env.env.state.time
    assert time[2:6].eq(16).all() and time[:2].eq(32).all() and time[6:].eq(32).all()


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
@pytest.mark.parametrize("trainer", ["ppo", "mappo"])
def test_every_trainer_logs_to_tensorboard_when_it_is_installed(tmp_path, trainer, short_battles):
    pytest.importorskip("tensorboard", reason="the optional tensorboard extra")
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    out = tmp_path / trainer
    args = ["--vs", "crank", "--num-envs", "8", "--max-steps", "256", "--eval-games", "4", "--no-progress",
            "--threads", "1", *settings(ppo__n_epochs=1, ppo__n_steps=16, ppo__batch_size=64)]
    result = CliRunner().invoke(main, ["train", trainer, *args, "--out", str(out)]
                                + (["--team-size", "2"] if trainer == "mappo" else []))
    assert result.exit_code == 0, result.output
    events = EventAccumulator(str(out / "tensorboard"))
    events.Reload()
    tags = events.Tags()["scalars"]
    assert {"policy_loss", "value_loss", "episode_return"} <= set(tags), tags
    assert any(t.startswith("eval/") for t in tags), tags


@pytest.mark.parametrize("trainer", ["ppo", "mappo"])
def test_piped_training_prints_one_progress_line_a_moment(tmp_path, trainer):
    """Piped output (not a terminal), progress on: the update lines are the only progress lines (no meter
    line beside them, none at the close), and each says how far the run is. 16 steps end no battle, so
    win and return are not known yet and read "-", never nan."""
    args = ["--vs", "crank", "--num-envs", "8", "--max-steps", "256", "--eval-games", "0", "--threads", "1",
            "--progress", "--out", str(tmp_path / "run"), *settings(ppo__n_steps=16, ppo__batch_size=64,
                                                                     ppo__n_epochs=1, run__log_interval=1)]
    result = CliRunner().invoke(main, ["train", trainer, *args] + (["--team-size", "2"] if trainer == "mappo" else []))
    assert result.exit_code == 0, result.output
    assert "nan" not in result.output
    lines = result.output.splitlines()
    assert not [line for line in lines if line.startswith(f"{trainer} ") or "steps/s" in line], result.output
    updates = [line for line in lines if line.startswith("update ")]
    assert [line.split()[1] for line in updates] == ["1", "2"], result.output
    assert "steps         128/256 ( 50.0%)  eta " in updates[0], updates[0]
    assert "steps         256/256 (100.0%)  eta 00:00" in updates[1], updates[1]
    assert "win -  draw -  return -  length -" in updates[0]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_the_update_lines_go_above_the_live_line(tmp_path, monkeypatch):
    """The live meter (labelled with the trainer) and the update lines share the screen: every update
    line starts a line of its own instead of being glued to the end of the live one."""
    import arena_ppo.runners.on_policy_runner as on_policy_runner
    from arena.progress import Progress
    from arena_ppo.plan import resolve
    from arena_ppo.runners import build_run
    from arena_ppo.train_config import TrainConfig

    screen = Terminal()
    monkeypatch.setattr(on_policy_runner, "Progress", functools.partial(Progress, stream=screen))
    cfg = TrainConfig()
    cfg.run.num_envs, cfg.run.eval_games, cfg.run.device, cfg.run.threads = 8, 0, "cpu", 1
    cfg.run.max_steps, cfg.run.log_interval, cfg.ppo.n_steps, cfg.ppo.batch_size = 192, 1, 8, 32
    runner = build_run(resolve(cfg, out=tmp_path), console=lambda text: screen.write(text + "\n"))
    runner.learn()
    rows = screen.getvalue().split("\n")
    shown = [row.split("\r\033[K")[-1] for row in rows]  # what each screen row shows once redrawn
    assert [row.split()[1] for row in shown if row.startswith("update ")] == ["1", "2", "3"], rows
    assert not [row for row in rows if "update " in row and not row.split("\r\033[K")[-1].startswith("update ")]
    assert shown[-2].startswith("ppo 192/192 steps (100.0%)") and shown[-1] == "", rows
