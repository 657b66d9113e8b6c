"""Kickstarting: the teacher's labels, their loss, and the run that uses them."""

from __future__ import annotations

import csv
import math

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.match import AgentFailure
from arena.training import OpponentSpecError
from arena_ppo.algorithms import PPO
from arena_ppo.algorithms.ppo import distillation_loss
from arena_ppo.kickstart import Teacher, check_teacher, teacher_spec
from arena_ppo.modules import ActorCritic
from arena_ppo.storage import RolloutStorage, Transition
from arena_ppo.train_config import NetworkConfig, PPOConfig
from cli_checks import refused


def test_distillation_loss_is_the_rudder_error_plus_the_trigger_cross_entropy():
    mean, logit = torch.tensor([0.0, 10.0]), torch.tensor([0.0, math.log(3.0)])  # p(fire) 0.5 and 0.75
    rudder, fire = torch.tensor([1.0, -1.0]), torch.tensor([1.0, 0.0])
    rudder_error = [1.0, (math.tanh(10.0) + 1.0) ** 2]
    trigger_entropy = [math.log(2.0), -math.log(0.25)]
    assert distillation_loss(mean, logit, rudder, fire).tolist() == pytest.approx(
        [r + t for r, t in zip(rudder_error, trigger_entropy)])


def labelled_storage(model: ActorCritic, steps: int = 8, envs: int = 64) -> RolloutStorage:
    """A rollout with no reward (so no advantage) whose teacher steers by the sign of the first feature and
    fires where the second is above 0.8."""
    gen = torch.Generator().manual_seed(0)
    storage = RolloutStorage(steps, envs, 10, None, "cpu", teacher=True)
    with torch.no_grad():
        for _ in range(steps):
            obs = torch.rand(envs, 10, generator=gen) * 2 - 1
            out = model.act(obs, generator=gen)
            storage.add(Transition(obs=obs, critic_obs=None, u=out.u, fire=out.fire, log_prob=out.log_prob,
                                   value=torch.zeros(envs), reward=torch.zeros(envs),
                                   done=torch.zeros(envs, dtype=torch.bool), bootstrap=torch.zeros(envs),
                                   mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit,
                                   teacher_rudder=torch.sign(obs[:, 0]),
                                   teacher_fire=(obs[:, 1] > 0.8).float()))
        storage.compute_returns(torch.zeros(envs), 0.99, 0.95)
    return storage


def agreements(model: ActorCritic, storage: RolloutStorage) -> tuple[float, float]:
    """Share of the rollout's rows where the policy's rudder sign, and its likelier trigger, are the teacher's."""
    with torch.no_grad():
        mean, _, logit = model.actor(storage.obs)
        rudder = (torch.sign(torch.tanh(mean)) == storage.teacher_rudder).float().mean()
        fire = ((logit > 0).float() == storage.teacher_fire).float().mean()
    return float(rudder), float(fire)


def agreement(model: ActorCritic, storage: RolloutStorage) -> float:
    return sum(agreements(model, storage)) / 2


def test_the_update_moves_the_policy_toward_the_teacher_only_while_it_weighs():
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig())
    algo = PPO(model, PPOConfig(batch_size=128, n_epochs=8, learning_rate=3e-3, lr_schedule="constant"))
    storage = labelled_storage(model)
    before = agreement(model, storage)
    algo.kickstart_coef = 0.0
    out = algo.update(storage)
    assert "kickstart_loss" not in out and agreement(model, storage) == pytest.approx(before, abs=0.02)
    algo.kickstart_coef = 1.0
    first = algo.update(storage)["kickstart_loss"]
    for _ in range(5):
        last = algo.update(storage)["kickstart_loss"]
    assert last < 0.6 * first
    assert agreement(model, storage) > 0.9 > before + 0.2


def test_a_rollout_is_labelled_at_every_step_or_at_none():
    model = ActorCritic(NetworkConfig())
    storage = RolloutStorage(2, 4, 10, None, "cpu", teacher=True)
    obs = torch.zeros(4, 10)
    out = model.act(obs)
    common = dict(obs=obs, critic_obs=None, u=out.u, fire=out.fire, log_prob=out.log_prob, value=torch.zeros(4),
                  reward=torch.zeros(4), done=torch.zeros(4, dtype=torch.bool), bootstrap=torch.zeros(4),
                  mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit)
    storage.add(Transition(**common))  # the teacher has faded: no labels
    with pytest.raises(ValueError, match="every step or at none"):
        storage.add(Transition(**common, teacher_rudder=torch.zeros(4), teacher_fire=torch.zeros(4)))
    storage.clear()
    for _ in range(2):
        storage.add(Transition(**common, teacher_rudder=torch.ones(4), teacher_fire=torch.zeros(4)))
    storage.compute_returns(torch.zeros(4), 0.99, 0.95)
    batch = next(storage.mini_batches(8, 1))
    assert batch["teacher_rudder"].tolist() == [1.0] * 8


@pytest.mark.parametrize("text, team_size, message", [
    ("league", 1, "not a pool"), ("self", 1, "not a pool"), ("crank", 2, "duels only"),
])
def test_a_teacher_is_one_fixed_agent_in_a_duel(text, team_size, message):
    with pytest.raises(OpponentSpecError, match=message):
        check_teacher(text, team_size)
    assert check_teacher("ace", 1).target == "ace"


class NaNTeacher:
    def act(self, obs):
        n = obs["x"].shape[0]
        return {"rudder": torch.full((n,), float("nan")), "throttle": torch.ones(n), "fire": torch.zeros(n)}


def test_a_teacher_that_returns_nan_is_named():
    """Noted on the device at each label, refused once a rollout, before the labels are used."""
    teacher = Teacher(teacher_spec("crank"), lambda spec: NaNTeacher(), torch.device("cpu"))
    teacher.label({"x": torch.zeros(3)})
    with pytest.raises(AgentFailure, match="crank.*kickstart teacher.*NaN in 3 env"):
        teacher.check_nans()
    teacher.check_nans()  # counted afresh after each check


def rows(path):
    return list(csv.DictReader(path.open()))


def test_a_kickstarted_run_logs_the_teachers_loss_at_every_update(tmp_path):
    out = tmp_path / "run"
    result = CliRunner().invoke(main, [
        "train", "ppo", "--vs", "crank", "--kickstart", "crank", "--set", "ppo.kickstart_coef=0.5",
        "--num-envs", "16", "--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=1",
        "--max-steps", str(16 * 16 * 3), "--eval-games", "0", "--no-progress", "--threads", "1", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "taught by crank (weight 0.5)" in result.output
    metrics = rows(out / "metrics.csv")
    assert len(metrics) == 3 and all(math.isfinite(float(r["kickstart_loss"])) for r in metrics)
    saved = torch.load(out / "ckpt_000000768.pt", weights_only=True)
    assert saved["config"]["run"]["kickstart"] == "crank" and "teacher" in saved
    assert saved["config"]["ppo"]["kickstart_coef"] == 0.5


def test_a_league_duel_has_no_teacher_unless_given_one():
    from arena_ppo.prepare import build_config

    league = build_config("ppo", {"run.vs": ("league",)}).run
    assert (league.teacher(), league.obs_mode) == ("", "extended")
    assert build_config("ppo", {"run.vs": ("league",), "run.kickstart": "ace"}).run.teacher() == "ace"
    assert build_config("ppo", {"run.vs": ("crank",)}).run.teacher() == ""
    assert build_config("ppo", {"run.vs": ("league",), "run.kickstart": "none"}).run.teacher() == ""
    assert build_config("ppo", {"run.vs": ("crank",), "run.kickstart": "sniper"}).run.teacher() == "sniper"
    assert build_config("ppo", {"run.vs": ("league",), "run.team_size": 2}).run.teacher() == ""  # duels only


def test_a_taught_trigger_is_unmasked_unless_the_user_masks_it():
    from arena_ppo.prepare import build_config

    assert build_config("ppo", {"run.vs": ("league",)}).network.fire_mask
    assert build_config("ppo", {"run.vs": ("crank",), "run.kickstart": "none"}).network.fire_mask
    assert not build_config("ppo", {"run.vs": ("league",), "run.kickstart": "ace"}).network.fire_mask
    assert build_config("ppo", {"run.kickstart": "ace", "network.fire_mask": True}).network.fire_mask


@pytest.mark.parametrize("args, message", [
    (["--kickstart", "cranky"], "--kickstart cranky: unknown agent 'cranky'; did you mean crank"),
    (["--kickstart", "league"], "--kickstart league: expected an agent name or ckpt:PATH"),
    (["--kickstart", "ckpt:nowhere.pt"], "--kickstart ckpt:nowhere.pt: checkpoint nowhere.pt: no such file"),
    (["--kickstart", "crank", "--team-size", "2"], "--kickstart labels duels only"),
])
def test_a_bad_teacher_is_one_clear_line(tmp_path, args, message):
    result = CliRunner().invoke(main, ["train", "ppo", *args, "--max-steps", "1", "--out", str(tmp_path / "bad")])
    refused(result, message)


def test_the_teachers_memory_comes_back_only_to_the_same_teacher():
    from arena.agents import build_agent
    from arena.env import TensorEnv

    def make(spec):
        return build_agent(spec.target, "cpu")

    obs = TensorEnv(4, "cpu", seed=1).reset()["p1"]
    crank = Teacher(teacher_spec("crank"), make, torch.device("cpu"))
    for _ in range(3):
        crank.label(obs)
    saved = crank.state_dict()
    assert saved["name"] == "crank" and saved["memory"]
    again = Teacher(teacher_spec("crank"), make, torch.device("cpu"))
    again.load_state_dict(saved)
    assert all(torch.equal(getattr(again.agent, k.split(":")[1]), v) for k, v in saved["memory"].items())
    other = Teacher(teacher_spec("placeholder"), make, torch.device("cpu"))
    other.load_state_dict(saved)  # --kickstart changed on resume: the new teacher starts fresh
    assert not any(hasattr(other.agent, k.split(":")[1]) for k in saved["memory"] if k.startswith("tensor:"))
