"""Checkpoints of one architecture acting as one call, and play that computes only the action."""

from __future__ import annotations

import pytest
import torch

from arena.env import TensorEnv
from arena.families import family_key, own_stream
from arena.testing import check_family
from arena_ppo.agent import PPOAgent
from arena_ppo.policy_family import PolicyFamily


def policy(seed: int, training: bool, **network) -> PPOAgent:
    """A policy with weights and normalizer statistics of its own."""
    torch.manual_seed(seed)
    agent = PPOAgent(network=network or None)
    assert agent.obs_normalizer is not None
    agent.obs_normalizer.mean += 0.1 * seed
    agent.obs_normalizer.var *= 1.0 + seed
    return agent.train(training)


@pytest.mark.parametrize("training", [True, False], ids=["sampled", "deterministic"])
def test_checkpoints_act_as_one_exactly_as_alone(training: bool) -> None:
    check_family([policy(1, training), policy(2, training), policy(3, training)])


def test_a_team_of_duel_policies_acts_as_one_seat_by_seat() -> None:
    check_family([policy(1, True), policy(2, True)], team_size=2)


def test_the_stacked_actors_of_a_gpu_give_the_actions_of_one_call_each() -> None:
    members = [policy(s, False) for s in (1, 2, 3)]
    obs = TensorEnv(30, seed=0).reset()["p1"]
    apart = PolicyFamily(members, [5, 15, 10], [own_stream] * 3, stacked=False)
    stacked = PolicyFamily(members, [5, 15, 10], [own_stream] * 3, stacked=True)
    for family in (apart, stacked):
        family.keep_rows(torch.tensor([0, 1, 7, 8, 20, 29]))
    kept = {k: v[[0, 1, 7, 8, 20, 29]] for k, v in obs.items()}
    a, b = apart.act(kept), stacked.act(kept)
    assert stacked.rows.counts == [2, 2, 2]
    torch.testing.assert_close(a["rudder"], b["rudder"], atol=1e-5, rtol=0)
    assert torch.equal(a["fire"], b["fire"])


def test_only_policies_of_one_shape_and_mode_share_a_family() -> None:
    assert family_key(policy(1, True)) == family_key(policy(2, True))
    assert family_key(policy(1, True)) != family_key(policy(1, False))
    assert family_key(policy(1, True)) != family_key(policy(1, True, actor_hidden=(32,)))
    assert family_key(policy(1, True, recurrent=True)) is None


def test_play_draws_the_action_that_training_samples() -> None:
    agent = policy(1, True)
    obs = TensorEnv(16, seed=0).reset()["p1"]
    torch.manual_seed(7)
    played = agent.act(obs)
    torch.manual_seed(7)
    sampled = agent.policy(agent.features(obs))
    assert torch.equal(played["rudder"], sampled.rudder)
    assert torch.equal(played["fire"], sampled.fire > 0.5)
