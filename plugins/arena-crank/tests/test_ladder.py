"""The ladder's doctrines: the agent contract, the extended observation they ask for, each rung beating
the one below, every team size, and the wall guard that keeps a dragging aircraft in the arena."""

from __future__ import annotations

import math

import pytest
import torch

from arena.agents import build_agent
from arena.env import EnvConfig
from arena.loop import needs_extended
from arena.match import play_match
from arena.testing import check_agent
from arena.training import league_agents
from arena_crank.ladder import Ace, Defender, Sniper

LADDER = ("placeholder", "crank", "sniper", "defender", "ace")


@pytest.mark.parametrize("cls", [Sniper, Defender, Ace])
def test_contract(cls):
    check_agent(cls, steps=30)


def test_who_asks_for_the_extended_observation():
    assert not needs_extended(Sniper()) and needs_extended(Defender()) and needs_extended(Ace())
    with pytest.raises(ValueError, match="extended observation"):
        Defender().act({k: torch.zeros(2) for k in ("x", "y", "angle", "speed", "missiles", "alive",
                                                      "enemy_distance", "enemy_relative_angle", "enemy_speed",
                                                      "enemy_alive")})


def test_the_league_is_the_ladder_weakest_first():
    assert tuple(league_agents()) == LADDER


@pytest.mark.parametrize("lower,upper", list(zip(LADDER, LADDER[1:])))
def test_each_rung_beats_the_one_below(lower, upper):
    cfg = EnvConfig()
    result = play_match(build_agent(upper, env_config=cfg), build_agent(lower, env_config=cfg), 100, env_config=cfg,
                        seed=3)
    assert result.wins >= 70, result


@pytest.mark.parametrize("name", ["sniper", "defender", "ace"])
def test_every_team_size(name):
    cfg = EnvConfig(team_size=3, max_time=120.0)
    result = play_match(build_agent(name, env_config=cfg), build_agent("crank", env_config=cfg), 8, env_config=cfg,
                        seed=1)
    assert result.games == 8


def test_a_drag_that_would_leave_the_arena_turns_to_a_beam():
    agent = Defender()
    size = agent.env_config.arena_size
    # 5 km from the west wall heading east, the enemy dead ahead: dragging (enemy astern) means flying west
    obs = {"x": torch.tensor([5_000.0 / size, 0.5]), "y": torch.tensor([0.5, 0.5]), "angle": torch.zeros(2)}
    bearing = torch.zeros(2)
    target = agent.clear_of_walls(obs, bearing, agent.tail(bearing))
    assert abs(float(target[0])) == pytest.approx(math.pi / 2), "beam instead of flying out"
    assert abs(float(target[1])) == pytest.approx(math.pi), "mid-arena: drag as asked"


def test_params_are_checked():
    with pytest.raises(ValueError, match="non-negative numbers"):
        Ace(fire_range_m=-1.0)
    with pytest.raises(ValueError, match="non-negative numbers"):
        Sniper(extend_s=float("nan"))
