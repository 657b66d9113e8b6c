"""MAPPO: ValueNorm, active masks, per-seat networks, seats in the inputs, and `arena train mappo` end to end."""

from __future__ import annotations

import csv

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.training import list_checkpoints
from arena_ppo.algorithms import PPO
from arena_ppo.modules import ActorCritic, SeparatedActorCritic, ValueNorm
from arena_ppo.train_config import NetworkConfig, PPOConfig
from cli_checks import refused

TINY = ["--set", "ppo.n_steps=16", "--set", "ppo.batch_size=64", "--set", "ppo.n_epochs=2", "--eval-games", "0",
        "--no-progress", "--threads", "1"]


def train(args, out):
    return CliRunner().invoke(main, ["train", "mappo", *args, "--out", str(out)])


def test_value_norm_matches_a_hand_computation():
    norm = ValueNorm(beta=0.9)
    a, b = torch.tensor([1.0, 3.0]), torch.tensor([-2.0, 0.0, 2.0, 4.0])
    norm.update(a)
    norm.update(b)
    # Moving averages of the batch mean and mean square, and the sum of their weights (the debiasing term).
    mean_ema = (2.0 * 0.1) * 0.9 + 1.0 * 0.1  # batch means 2 then 1
    sq_ema = (5.0 * 0.1) * 0.9 + 6.0 * 0.1  # batch mean squares 5 then 6
    weight = 0.1 * 0.9 + 0.1
    mean, var = mean_ema / weight, sq_ema / weight - (mean_ema / weight) ** 2
    got_mean, got_var = norm.mean_var()
    assert float(got_mean) == pytest.approx(mean, rel=1e-12) and float(got_var) == pytest.approx(var, rel=1e-12)
    x = torch.tensor([0.5, -1.5], dtype=torch.float64)
    assert torch.allclose(norm.normalize(x), (x - mean) / var ** 0.5)
    assert torch.allclose(norm.denormalize(norm.normalize(x)), x)
    fresh = ValueNorm()
    fresh.update(torch.full((8,), 7.0))  # debiased at once: no pull toward the zero start; variance floored
    assert float(fresh.mean_var()[0]) == pytest.approx(7.0) and float(fresh.mean_var()[1]) == pytest.approx(1e-2)


def batch_with(active: torch.Tensor, net: ActorCritic, gen: torch.Generator) -> dict[str, torch.Tensor]:
    n = active.shape[0]
    obs = torch.rand(n, net.cfg.obs_dim, generator=gen)
    with torch.no_grad():
        out = net.act(obs, generator=gen)
    return {"obs": obs, "critic_obs": obs, "u": out.u, "fire": out.fire, "log_prob": out.log_prob - 0.3,
            "value": torch.zeros(n), "returns": torch.randn(n, generator=gen), "mean": out.mean,
            "log_std": out.log_std, "fire_logit": out.fire_logit, "active": active.float()}


def test_active_masks_zero_the_loss_of_dead_seats():
    torch.manual_seed(0)
    net = ActorCritic(NetworkConfig())
    algo = PPO(net, PPOConfig())
    gen = torch.Generator().manual_seed(1)
    active = torch.tensor([True, False] * 8)
    batch = batch_with(active, net, gen)
    advantages = torch.randn(16, generator=gen)
    loss, parts = algo.loss(batch, advantages)
    # The same loss from the live rows alone...
    live = {k: v[active] for k, v in batch.items()}
    live_loss, _ = algo.loss({k: v for k, v in live.items() if k != "active"}, advantages[active])
    assert torch.allclose(loss, live_loss)
    # ...and nothing flows back from the dead rows.
    obs = batch["obs"].clone().requires_grad_(True)
    loss, _ = algo.loss({**batch, "obs": obs, "critic_obs": obs}, advantages)
    loss.backward()
    assert bool((obs.grad[~active] == 0).all()) and bool((obs.grad[active] != 0).any())


def test_separated_networks_route_each_row_to_its_seat():
    torch.manual_seed(0)
    cfg = NetworkConfig(obs_dim=10 + 3, critic_obs_dim=20 + 3)
    model = SeparatedActorCritic(cfg, 3)
    rows = torch.rand(9, 10)
    seats = torch.tensor([2, 0, 1, 1, 0, 2, 2, 0, 1])
    x = torch.cat((rows, torch.nn.functional.one_hot(seats, 3).float()), -1)
    mean, log_std, logit = model.actor(x)
    for k in range(3):
        m, s, l_ = model.actor.nets[k](rows[seats == k])
        assert torch.equal(mean[seats == k], m) and torch.equal(logit[seats == k], l_)
    assert model.value(torch.cat((torch.rand(9, 20), x[:, -3:]), -1)).shape == (9,)


def test_seat_ids_and_central_critic_inputs():
    from arena.env import EnvConfig, TensorEnv
    from arena_ppo.mappo_agent import MAPPOAgent

    cfg = EnvConfig(team_size=3)
    agent = MAPPOAgent(env_config=cfg)
    env = TensorEnv(4, config=cfg)
    obs = env.reset()
    features = agent.features(obs["p1"])
    assert features.shape == (12, 1 + len(env.obs_keys) + 3)  # the mask's key first, for the trigger
    assert features[:, -3:].argmax(-1).tolist() == [0, 1, 2] * 4
    critic = agent.critic_features(features, env.global_state("p1").repeat_interleave(3, 0))
    assert critic.shape == (12, env.global_state_size + 3)
    action = agent.act(obs["p1"])
    assert action["rudder"].shape == (4, 3)
    with pytest.raises(ValueError, match="policy"):
        MAPPOAgent(env_config=cfg, policy="mixed")


@pytest.mark.parametrize("short_battles", [60.0], indirect=True)
def test_smoke_one_update_then_play_at_its_team_size(tmp_path, short_battles):
    out = tmp_path / "run"
    result = train(["--vs", "rule_based", "--reward", "zero", "--num-envs", "8", "--set", "ppo.n_steps=128",
                    "--max-steps", "1000", "--eval-games", "8", "--no-progress", "--threads", "1", "--device", "cpu"],
                   out)
    assert result.exit_code == 0, result.output
    assert "training mappo on cpu, 2-v-2, shared policy, central critic" in result.output
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert len(rows) == 1 and int(rows[0]["step"]) == 1024
    ckpt = list_checkpoints(out)[-1]
    data = torch.load(ckpt, weights_only=True)
    assert data["agent"] == "mappo" and data["options"]["policy"] == "shared" and "value_normalizer" in data
    short = ["--env", f"max_time={short_battles}", "-n", "4", "-q"]
    played = CliRunner().invoke(main, ["play", str(ckpt), "crank", "--team-size", "2", *short])
    assert played.exit_code == 0, played.output
    refused = CliRunner().invoke(main, ["play", str(ckpt), "crank", "--team-size", "4", *short])
    assert refused.exit_code != 0 and "plays teams of 2" in refused.output


def straight_and_resumed(tmp_path, common, split_at: int, end: int):
    """The final checkpoints of a run straight to ``end`` and of one stopped at ``split_at`` and resumed."""
    straight, split = tmp_path / "straight", tmp_path / "split"
    assert train(common + ["--max-steps", str(end)], straight).exit_code == 0
    assert train(common + ["--max-steps", str(split_at)], split).exit_code == 0
    resumed = CliRunner().invoke(main, ["train", "mappo", "--resume", str(split / f"ckpt_{split_at:09d}.pt"),
                                        "--max-steps", str(end), "--no-progress"])
    assert resumed.exit_code == 0, resumed.output
    name = f"ckpt_{end:09d}.pt"
    return torch.load(straight / name, weights_only=True), torch.load(split / name, weights_only=True)


@pytest.mark.parametrize("policy", ["shared", "separated"])
def test_resume_continues_exactly(tmp_path, policy):
    common = ["--vs", "crank", "--vs", "self=0.5", "--num-envs", "6", "--seed", "3", "--save-interval", "96",
              "--policy", policy, *TINY]
    a, b = straight_and_resumed(tmp_path, common, 192, 288)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    for key in ("running_mean", "running_mean_sq", "debiasing_term"):
        assert torch.equal(a["value_normalizer"][key], b["value_normalizer"][key])
    assert torch.equal(a["env"]["world"]["x"], b["env"]["world"]["x"])


@pytest.mark.parametrize("policy", ["shared", "separated"])
def test_recurrent_chunks_replay_the_hidden_states_of_the_rollout_across_dones(tmp_path, policy):
    """Re-running the stored rollout chunk by chunk gives back the collection's log-probabilities and
    values exactly: the stored start states and the resets where episodes began are right."""
    from arena.env import EnvConfig
    from arena_ppo.plan import resolve
    from arena_ppo.runners import build_run
    from arena_ppo.train_config import TrainConfig

    cfg = TrainConfig()
    cfg.run.team_size, cfg.run.num_envs, cfg.run.policy, cfg.run.privileged_critic = 2, 6, policy, True
    cfg.run.vs, cfg.run.floor, cfg.run.device = ("crank",), 0.0, "cpu"
    cfg.network.recurrent = True
    cfg.ppo.n_steps, cfg.ppo.data_chunk_length = 24, 6
    env = EnvConfig(team_size=2, max_time=20.0)  # short battles: several episodes end inside the rollout
    cfg.run.env_config = lambda: env  # type: ignore[method-assign]
    learner = build_run(resolve(cfg, "mappo", tmp_path), console=None, progress=False).learner
    learner.collect()
    learner.collect()  # the second rollout starts from carried-over, non-zero states
    storage = learner.storage
    assert bool(storage.done.any()) and float(storage.actor_hidden[0].abs().sum()) > 0
    model = learner.agent.model
    seen = 0
    with torch.no_grad():
        for batch in storage.mini_batches(48, 1, torch.Generator().manual_seed(0), chunk=6):
            log_prob = model.evaluate_batch(batch)[0]
            value = learner.agent.denormalized(model.value_batch(batch))
            assert torch.allclose(log_prob, batch["log_prob"], atol=1e-5)
            assert torch.allclose(value, batch["value"], atol=1e-5)
            assert batch["obs_seq"].shape[0] == 6 and batch["actor_h0"].shape[0] == batch["obs_seq"].shape[1]
            seen += log_prob.numel()
    assert seen == 24 * 12  # every step of every aircraft row, once


def test_recurrent_runs_resume_exactly(tmp_path):
    common = ["--vs", "crank", "--num-envs", "4", "--seed", "2", "--save-interval", "80", "--recurrent",
              "--set", "ppo.n_steps=20", "--set", "ppo.data_chunk_length=5", "--set", "ppo.batch_size=40",
              "--set", "ppo.n_epochs=2", "--eval-games", "0", "--no-progress", "--threads", "1"]
    a, b = straight_and_resumed(tmp_path, common, 160, 240)
    for key, value in a["model"].items():
        assert torch.equal(value, b["model"][key]), key
    assert torch.equal(a["hidden"]["actor"], b["hidden"]["actor"])


def test_a_chunk_length_that_does_not_divide_the_rollout_is_refused(tmp_path):
    result = train(["--recurrent", "--set", "ppo.n_steps=32", "--set", "ppo.data_chunk_length=10", "--max-steps", "1"],
                   tmp_path)
    refused(result, "ppo.data_chunk_length 10 must divide ppo.n_steps 32")
    assert not list_checkpoints(tmp_path)


@pytest.mark.parametrize("algorithm, team_size", [("ppo", 1), ("mappo", 2), ("mappo", 4)])
def test_a_rollout_makes_as_many_minibatches_at_every_team_size(tmp_path, algorithm, team_size):
    """ppo.batch_size counts env steps: a team's rows per step do not multiply the optimizer's steps."""
    from arena_ppo.plan import resolve
    from arena_ppo.runners import build_run
    from arena_ppo.train_config import default_config

    cfg = default_config(algorithm)
    cfg.run.team_size, cfg.run.num_envs, cfg.run.eval_games, cfg.run.threads = team_size, 8, 0, 1
    cfg.ppo.n_steps, cfg.ppo.batch_size, cfg.ppo.n_epochs = 16, 32, 2
    learner = build_run(resolve(cfg, algorithm, tmp_path), console=None, progress=False).learner
    learner.step(0.0)
    steps = {int(state["step"]) for state in learner.algorithm.optimizer.state.values()}
    assert steps == {2 * (16 * 8 // 32)}  # epochs x (env steps of the rollout / batch_size)
