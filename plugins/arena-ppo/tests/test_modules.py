"""Networks, the squashed-Gaussian distribution and the normalizers."""

from __future__ import annotations

import math

import pytest
import torch

from arena_ppo.modules import ActorCritic, RunningNormalizer, ValueNormalizer, squash_correction, squashed_log_prob
from arena_ppo.train_config import NetworkConfig


@pytest.mark.parametrize("batch", [1, 7, 256])
@pytest.mark.parametrize("layer_norm", [False, True])
def test_network_shapes(batch, layer_norm):
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig(input_layer_norm=layer_norm))
    obs = torch.rand(batch, 10)
    mean, log_std, logit = model.actor(obs)
    assert mean.shape == log_std.shape == logit.shape == (batch,)
    assert model.value(obs).shape == (batch,)
    linears = [m for m in model.actor.trunk if isinstance(m, torch.nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(10, 128), (128, 64)]
    assert model.actor.rudder.out_features == 2 and model.actor.fire.out_features == 1
    critic = [m for m in model.critic.trunk if isinstance(m, torch.nn.Linear)] + [model.critic.head]
    assert [(m.in_features, m.out_features) for m in critic] == [(10, 128), (128, 64), (64, 1)]


@pytest.mark.parametrize("layer_norm", [False, True])
def test_the_plain_actor_gives_the_modules_numbers(layer_norm):
    torch.manual_seed(0)
    actor = ActorCritic(NetworkConfig(input_layer_norm=layer_norm, log_std_max=0.1)).actor
    with torch.no_grad():
        actor.rudder.bias[1] = 1.0  # above log_std_max: the clamp is part of it
        obs = torch.randn(300, 10) * 3
        for a, b in zip(actor(obs), actor.plain()(obs)):
            assert torch.equal(a, b)
        actor.fire.bias += 1.0  # the plain form reads the weights as they are now
        assert torch.equal(actor(obs)[2], actor.plain()(obs)[2])


def test_action_ranges_and_modes():
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig(init_log_std=1.5))
    obs = torch.randn(4096, 10) * 3
    out = model.act(obs, generator=torch.Generator().manual_seed(1))
    assert out.rudder.min() >= -1 and out.rudder.max() <= 1 and out.rudder.abs().max() > 0.9
    assert set(out.fire.unique().tolist()) <= {0.0, 1.0}
    assert torch.isfinite(out.log_prob).all()
    det = model.act(obs, deterministic=True)
    mean, _, logit = model.actor(obs)
    assert torch.equal(det.rudder, torch.tanh(mean)) and torch.equal(det.fire, (torch.sigmoid(logit) > 0.5).float())
    assert torch.equal(model.act(obs, deterministic=True).rudder, det.rudder)


def test_squashed_log_prob_matches_numerical_density():
    """p_A(a) for A = tanh(U), U ~ N(μ, σ): compare with the finite difference of its CDF."""
    mean, log_std = torch.tensor(0.3, dtype=torch.float64), torch.tensor(-0.2, dtype=torch.float64)
    normal = torch.distributions.Normal(mean, log_std.exp())
    for a in (-0.95, -0.5, 0.0, 0.4, 0.9, 0.99):
        h = 1e-6
        cdf = lambda x: normal.cdf(torch.atanh(torch.tensor(x, dtype=torch.float64)))  # noqa: E731
        density = (cdf(a + h) - cdf(a - h)) / (2 * h)
        u = torch.atanh(torch.tensor(a, dtype=torch.float64))
        assert math.isclose(squashed_log_prob(u, mean, log_std).exp().item(), density.item(), rel_tol=1e-5)


def test_squash_correction_is_stable():
    u = torch.tensor([-50.0, -5.0, 0.0, 5.0, 50.0])
    expected = torch.log(1 - torch.tanh(torch.tensor([-5.0, 0.0, 5.0])) ** 2)
    corr = squash_correction(u)
    assert torch.isfinite(corr).all()
    assert torch.allclose(corr[1:4], expected, atol=1e-4)


def test_log_prob_includes_fire():
    torch.manual_seed(0)
    model = ActorCritic(NetworkConfig(init_fire_logit=0.0))
    obs = torch.rand(5, 10)
    out = model.act(obs, generator=torch.Generator().manual_seed(0))
    log_prob, entropy, *_ = model.evaluate(obs, out.u, out.fire)
    assert torch.allclose(log_prob, out.log_prob, atol=1e-6)
    p = torch.sigmoid(out.fire_logit)
    fire_lp = torch.where(out.fire > 0.5, p.log(), (1 - p).log())
    assert torch.allclose(log_prob - squashed_log_prob(out.u, out.mean, out.log_std), fire_lp, atol=1e-6)
    assert entropy.shape == (5,)


def test_running_normalizer_matches_batch_statistics():
    torch.manual_seed(0)
    norm = RunningNormalizer(3)
    data = torch.randn(1000, 3) * torch.tensor([1.0, 5.0, 0.1]) + torch.tensor([2.0, -1.0, 0.0])
    for chunk in data.split(137):
        norm.update(chunk)
    assert torch.allclose(norm.mean, data.mean(0), atol=1e-5)
    assert torch.allclose(norm.var, data.var(0, unbiased=False), rtol=1e-4)
    out = norm(data)
    assert torch.allclose(out.mean(0), torch.zeros(3), atol=1e-4)
    assert torch.allclose(out.std(0), torch.ones(3), atol=1e-2)
    restored = RunningNormalizer(3)
    restored.load_state_dict(norm.state_dict())
    assert torch.equal(restored(data), out)
    v = ValueNormalizer()
    v.update(torch.tensor([[1.0], [3.0]]))
    assert torch.allclose(v.denormalize(v.normalize(torch.tensor([5.0]))), torch.tensor([5.0]))
