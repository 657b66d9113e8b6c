"""PPOAgent: acting in train and eval mode, checkpoints, and loading through the registry."""

from __future__ import annotations

import pytest
import torch

from arena.agents import build_agent
from arena.env import EnvConfig, TensorEnv
from arena.training import CheckpointError, save_checkpoint
from arena_ppo.agent import PPOAgent


def observation(n: int = 6, mode: str = "default"):
    return TensorEnv(n, "cpu", seed=3, config=EnvConfig(obs_mode=mode)).reset()["p1"]


def test_act_ranges_and_modes():
    torch.manual_seed(0)
    agent = PPOAgent()
    obs = observation()
    action = agent.act(obs)  # eval mode by default: deterministic
    assert set(action) == {"rudder", "throttle", "fire"}
    assert action["fire"].dtype == torch.bool and torch.all(action["throttle"] == 1.0)
    assert torch.equal(agent.act(obs)["rudder"], action["rudder"])
    agent.train()
    samples = torch.stack([agent.act(obs)["rudder"] for _ in range(20)])
    assert samples.abs().max() <= 1.0 and samples.std(0).min() > 0  # stochastic in train mode


def test_checkpoint_round_trip_weights_only(tmp_path):
    torch.manual_seed(0)
    agent = PPOAgent(env_config=EnvConfig(obs_mode="extended"), obs_norm=True, value_norm=True)
    agent.obs_normalizer.update(torch.randn(100, 16) * 3 + 1)
    path = save_checkpoint(agent.checkpoint(), tmp_path / "ckpt_000000001.pt")
    data = torch.load(path, weights_only=True)
    assert data["agent"] == "ppo" and data["format_version"] == 1 and data["network"]["obs_dim"] == 16
    loaded = PPOAgent.load(path)
    assert loaded.env_config.obs_mode == "extended" and not loaded.training
    obs = observation(mode="extended")
    assert torch.equal(loaded.act(obs)["rudder"], agent.act(obs)["rudder"])
    assert torch.equal(loaded.obs_normalizer.mean, agent.obs_normalizer.mean)
    via_registry = build_agent(str(path))  # `arena play PATH.pt`: the file names its agent
    assert isinstance(via_registry, PPOAgent)
    with pytest.raises(CheckpointError, match=r"obs_mode='extended'.*arena play --env obs_mode=extended"):
        PPOAgent.load(path, env_config=EnvConfig())


def test_corrupt_and_foreign_checkpoints_are_rejected(tmp_path):
    bad = tmp_path / "bad.pt"
    bad.write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match=r"bad\.pt"):
        PPOAgent.load(bad)
    foreign = save_checkpoint({"agent": "crank", "format_version": 1}, tmp_path / "crank.pt")
    with pytest.raises(CheckpointError, match="written by agent 'crank', not 'ppo'"):
        PPOAgent.load(foreign)
    broken = PPOAgent().checkpoint()
    del broken["model"]
    path = save_checkpoint(broken, tmp_path / "broken.pt")
    with pytest.raises(CheckpointError, match=r"broken\.pt: damaged or incompatible"):
        PPOAgent.load(path)


def test_eval_fires_at_the_median_launch_step_of_the_sampling_policy():
    # p = 0.2 a step: the hazard -log(1 - p) = 0.2231 accumulates to ln 2 = 0.6931 on the 4th step
    # (0.669 after 3); p = 0.6 is above one half and fires at once; p = 0.01 needs 69 steps.
    agent = PPOAgent()
    p = torch.tensor([0.2, 0.6, 0.01])
    logit = torch.log(p / (1 - p))
    fired = torch.stack([agent.fire_decision(logit) for _ in range(8)])
    assert fired[:, 0].tolist() == [False, False, False, True, False, False, False, True]
    assert fired[:, 1].all()
    assert not fired[:, 2].any()


def test_eval_fire_memory_resets_per_env_and_threshold_rule_is_memoryless():
    agent = PPOAgent()
    logit = torch.full((2,), -1.386)  # p = 0.2
    for _ in range(3):
        agent.fire_decision(logit)
    agent.reset(torch.tensor([True, False]))  # env 0 starts a new battle
    assert agent.fire_decision(logit).tolist() == [False, True]
    agent.reset()
    assert agent.fire_hazard is None
    agent.fire_rule = "threshold"
    assert agent.fire_decision(torch.tensor([0.1, -0.1])).tolist() == [True, False]
    assert agent.fire_hazard is None


def test_train_mode_samples_the_trigger():
    torch.manual_seed(0)
    agent = PPOAgent(network={"fire_mask": False})  # as policies trained before the mask
    agent.train()
    obs = observation(n=512)
    rates = torch.stack([agent.act(obs)["fire"].float() for _ in range(4)]).mean()
    assert 0.0 < rates < 0.02  # the initial fire logit of -6: p ≈ 0.0025


def ready_and_not(n: int = 512) -> dict[str, torch.Tensor]:
    """Battles where p1 has p2 head on at 10-70 km: ready within 40 km, not beyond."""
    env = TensorEnv(n, "cpu", seed=3)
    env.reset()
    s = env.state
    s.x[:, 0], s.y[:, 0], s.heading[:, 0] = 20_000.0, 50_000.0, 0.0
    s.x[:, 1], s.y[:, 1], s.heading[:, 1] = 20_000.0 + torch.linspace(10_000.0, 70_000.0, n), 50_000.0, torch.pi
    return env.observe()["p1"]


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_a_masked_trigger_fires_only_where_a_launch_would_lock(mode):
    """With the fire logit forced high (p = 1 in float32), the trigger fires exactly where launch_ready is 1, sampled
    or deterministic; the unmasked policy fires everywhere."""
    from arena.env.observations import LAUNCH_KEY

    obs = ready_and_not()
    ready = obs[LAUNCH_KEY] > 0.5
    assert ready.any() and (~ready).any()
    for masked in (True, False):
        torch.manual_seed(0)
        agent = PPOAgent(network={"fire_mask": masked, "init_fire_logit": 30.0}).train(mode == "train")
        fired = agent.act(obs)["fire"]
        assert torch.equal(fired, ready if masked else torch.ones_like(ready)), (masked, mode)


def test_a_masked_trigger_adds_no_log_prob_entropy_or_gradient():
    from arena_ppo.modules.actor_critic import MASKED_LOGIT, ActorCritic

    agent = PPOAgent(network={"fire_mask": True, "init_fire_logit": 0.0})
    obs = ready_and_not(64)
    x = agent.features(obs)
    out = agent.model.act(x)
    ready = obs["launch_ready"] > 0.5
    assert torch.equal(out.fire_logit[~ready], torch.full_like(out.fire_logit[~ready], MASKED_LOGIT))
    assert not out.fire[~ready].any()
    log_prob, entropy, *_ = agent.model.evaluate(x, out.u, out.fire)
    rudder_log_prob, rudder_entropy, *_ = ActorCritic.score(out.u, out.fire, out.mean, out.log_std,
                                                            torch.full_like(out.fire_logit, -1e30))
    assert torch.allclose(log_prob[~ready], rudder_log_prob[~ready])  # the trigger's part is 0
    assert torch.allclose(entropy[~ready], rudder_entropy[~ready])
    agent.model.zero_grad()
    (log_prob[~ready].sum() + entropy[~ready].sum()).backward()
    assert not agent.model.actor.fire.weight.grad.any() and not agent.model.actor.fire.bias.grad.any()


def test_a_checkpoint_from_before_the_mask_plays_on_its_own_inputs(tmp_path):
    """Saved without network.fire_mask: its inputs are the features alone and its trigger is unmasked."""
    from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY, obs_keys

    old = PPOAgent(network={"fire_mask": False, "init_fire_logit": 30.0})
    data = old.checkpoint()
    del data["network"]["fire_mask"]
    loaded = PPOAgent.load(save_checkpoint(data, tmp_path / "old.pt"))
    assert loaded.obs_keys == obs_keys(EnvConfig()) and LAUNCH_KEY not in loaded.obs_keys
    assert loaded.act(ready_and_not())["fire"].all()
    # Only a checkpoint's missing key means "before the mask": a network given as a dict is masked by default.
    assert PPOAgent(network={"init_fire_logit": 30.0}).obs_keys == (LAUNCH_CLEAR_KEY, *obs_keys(EnvConfig()))


def test_a_checkpoint_masked_before_the_mask_held_fire_while_guiding_keeps_launch_ready(tmp_path):
    """Saved with network.fire_mask but without hold_fire_while_guiding: its first input stays launch_ready."""
    from arena.env.observations import LAUNCH_KEY, obs_keys

    data = PPOAgent(network={"hold_fire_while_guiding": False}).checkpoint()
    del data["network"]["hold_fire_while_guiding"]
    loaded = PPOAgent.load(save_checkpoint(data, tmp_path / "old.pt"))
    assert loaded.obs_keys == (LAUNCH_KEY, *obs_keys(EnvConfig()))


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_a_trigger_holds_fire_while_its_missile_flies(mode):
    """Ready to lock, but a missile of its own still in flight: the default mask holds the trigger, the mask
    of launch_ready alone does not."""
    from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY

    obs = ready_and_not()
    obs[LAUNCH_CLEAR_KEY] = torch.zeros_like(obs[LAUNCH_CLEAR_KEY])  # as if each had a missile in flight
    ready = obs[LAUNCH_KEY] > 0.5
    for hold in (True, False):
        agent = PPOAgent(network={"hold_fire_while_guiding": hold, "init_fire_logit": 30.0}).train(mode == "train")
        fired = agent.act(obs)["fire"]
        assert torch.equal(fired, torch.zeros_like(ready) if hold else ready), (hold, mode)
