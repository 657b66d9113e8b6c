"""GAE against a hand computation (with a truncation), and the rollout buffer."""

from __future__ import annotations

import pytest
import torch

from arena_ppo.storage import RolloutStorage, Transition, compute_gae


def test_gae_hand_computed_with_termination_and_truncation():
    g, lam = 0.9, 0.5
    # One env, four steps: the episode terminates after step 1 (done, no bootstrap) and a new one is
    # truncated by the time limit after step 3 (done, bootstrapped with V(final_obs) = 2.0).
    rewards = torch.tensor([[1.0], [0.0], [0.5], [1.0]])
    values = torch.tensor([[0.5], [1.0], [0.2], [0.4]])
    dones = torch.tensor([[False], [True], [False], [True]])
    bootstrap = torch.tensor([[0.0], [0.0], [0.0], [2.0]])
    last = torch.tensor([9.0])  # belongs to the episode after the truncation: must not leak back
    adv, ret = compute_gae(rewards, values, dones, last, g, lam, bootstrap)

    d3 = 1.0 + g * 2.0 - 0.4  # truncated: bootstrapped from V(final) = 2.0, not from `last`
    d2 = 0.5 + g * 0.4 - 0.2
    d1 = 0.0 - 1.0  # terminated: nothing after it
    d0 = 1.0 + g * 1.0 - 0.5
    a3 = d3
    a2 = d2 + g * lam * a3
    a1 = d1
    a0 = d0 + g * lam * a1
    assert torch.allclose(adv.squeeze(1), torch.tensor([a0, a1, a2, a3]))
    assert torch.allclose(ret, adv + values)


def test_gae_without_dones_bootstraps_from_last_value():
    rewards = torch.zeros(3, 2)
    values = torch.zeros(3, 2)
    adv, _ = compute_gae(rewards, values, torch.zeros(3, 2, dtype=torch.bool), torch.tensor([1.0, 0.0]), 0.5, 1.0)
    assert torch.allclose(adv[:, 0], torch.tensor([0.125, 0.25, 0.5])) and torch.all(adv[:, 1] == 0)


def transition(n: int, value: float) -> Transition:
    full = torch.full((n,), value)
    return Transition(obs=torch.full((n, 10), value), critic_obs=None, u=full, fire=full, log_prob=full, value=full,
                      reward=full, done=torch.zeros(n, dtype=torch.bool), bootstrap=full * 0, mean=full, log_std=full,
                      fire_logit=full)


def test_buffer_add_sample_clear():
    buf = RolloutStorage(4, 3, 10, None, "cpu")
    for t in range(4):
        buf.add(transition(3, float(t)))
    assert buf.full
    with pytest.raises(RuntimeError, match="full"):
        buf.add(transition(3, 9.0))
    buf.compute_returns(torch.zeros(3), 0.99, 0.95)
    batches = list(buf.mini_batches(5, 2, torch.Generator().manual_seed(0)))
    assert [len(b["u"]) for b in batches] == [5, 5, 2] * 2
    seen = torch.cat([b["u"] for b in batches[:3]]).sort().values
    assert torch.equal(seen, torch.arange(4.0).repeat_interleave(3))  # every sample once per epoch
    assert batches[0]["obs"].shape == (5, 10) and torch.equal(batches[0]["critic_obs"], batches[0]["obs"])
    assert torch.equal(batches[0]["obs"][:, 0], batches[0]["u"])  # rows stay aligned across fields
    buf.clear()
    assert buf.step == 0 and not buf.full
    with pytest.raises(RuntimeError, match="incomplete"):
        buf.compute_returns(torch.zeros(3), 0.99, 0.95)
