"""Tests of the placeholder plugin — the checks every agent plugin should copy."""

from __future__ import annotations

import pytest
import torch

from arena.agents import agent_registry
from arena.testing import check_agent
from arena_placeholder.agent import PlaceholderAgent


def test_is_discovered_through_its_entry_point():
    """Installed (`pip install -e .`), the plugin is found by name, from its own distribution."""
    entry = agent_registry().entry("placeholder")
    assert entry.obj is PlaceholderAgent and entry.source.distribution == "arena-placeholder"


def test_meets_the_agent_contract():
    """Flies both sides of a real env: action keys, shapes, device, ranges, no NaN, reset, eval."""
    check_agent(PlaceholderAgent, num_envs=8, steps=10)
    check_agent(PlaceholderAgent, fire_prob=1.0)  # create() parameters pass through


def test_same_seed_same_actions():
    obs = {"enemy_distance": torch.zeros(5)}
    a, b = PlaceholderAgent(seed=3), PlaceholderAgent(seed=3)
    first, second = a.act(obs), b.act(obs)
    assert all(torch.equal(first[k], second[k]) for k in first)
    a.reset()  # a full reset replays the stream
    assert torch.equal(a.act(obs)["rudder"], first["rudder"])
    assert not torch.equal(PlaceholderAgent(seed=4).act(obs)["rudder"], first["rudder"])


def test_bad_parameters_are_refused_when_built():
    """A tournament builds every agent before its first game: a typo in `params` stops it there."""
    for params in ({"seed": "7"}, {"seed": 1.5}, {"fire_prob": 2.0}, {"fire_prob": "often"}):
        with pytest.raises(ValueError):
            PlaceholderAgent(**params)


def test_seeded_placeholders_act_as_one_call_each_from_its_own_stream() -> None:
    from arena.testing import check_family

    check_family([PlaceholderAgent(seed=1), PlaceholderAgent(seed=2, fire_prob=0.2), PlaceholderAgent(seed=3)])
