"""The ladder's doctrines: the agent contract, the extended observation they ask for, each rung beating
the one below, team battles, the wall guard that keeps a dragging aircraft in the arena, and the
salvo training partner."""

from __future__ import annotations

import math

import pytest
import torch

from arena.agents import build_agent
from arena.env import EnvConfig, TensorEnv
from arena.match import play_match
from arena.parties import needs_extended
from arena.testing import check_agent
from arena.training import league_agents, league_partners
from arena_crank.ladder import Ace, Defender, Salvo, Sniper

LADDER = ("placeholder", "crank", "sniper", "defender", "ace")


@pytest.mark.parametrize("cls", [Sniper, Salvo, Defender, Ace])
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


def test_salvo_is_a_training_partner_not_a_rung():
    assert league_partners() == ["salvo"]
    assert "salvo" not in league_agents()


def test_salvo_empties_its_rails_at_once_then_comes_on_and_turns_away_inside_15_km():
    cfg = EnvConfig()
    env = TensorEnv(64, seed=4, config=cfg)
    obs = env.reset()
    salvo = Salvo(env_config=cfg)
    straight = {"rudder": torch.zeros(64), "throttle": torch.ones(64), "fire": torch.zeros(64, dtype=torch.bool)}
    launches: list[int] = []
    for t in range(80):  # the enemy flies straight on: inside 40 km within a minute
        action = salvo.act(obs["p1"])
        fired = action["fire"].bool() & (obs["p1"]["missiles"] > 0)
        launches += [t] * int(fired[0])
        obs, _, dones, _ = env.step(action, straight)
        assert not dones[0]
    assert len(launches) == cfg.missiles and launches[-1] - launches[0] == cfg.missiles - 1, launches  # one salvo
    # Unarmed: nose on the enemy outside 15 km, tail to it inside.
    o = {k: v[:2].clone() for k, v in obs["p1"].items()}
    o["missiles"] = torch.zeros(2)
    o["enemy_relative_angle"] = torch.tensor([0.3, 0.3])  # the enemy 54° to the left
    o["enemy_distance"] = torch.tensor([30_000.0, 10_000.0]) / cfg.diagonal
    o["x"], o["y"] = torch.full((2,), 0.5), torch.full((2,), 0.5)  # mid-arena: no wall in the way
    rudder = salvo.act(o)["rudder"]
    assert rudder[0] > 0 and rudder[1] < 0, "turns toward the enemy when far, away from it when near"


@pytest.mark.parametrize("lower,upper", list(zip(LADDER, LADDER[1:])))
def test_each_rung_beats_the_one_below(lower, upper):
    cfg = EnvConfig()
    result = play_match(build_agent(upper, env_config=cfg), build_agent(lower, env_config=cfg), 100, env_config=cfg,
                        seed=3)
    assert result.wins >= 70, result


@pytest.mark.parametrize("team_size", [2, 8])
@pytest.mark.parametrize("name", ["sniper", "defender", "ace"])
def test_in_team_battles_every_seat_flies_and_crank_wins_no_game(name, team_size):
    """The smallest and the largest team: each seat of the rung's side is flown on its own (the seats'
    rudders differ), and CrankAgent's team wins none of the 8 games (the 1-v-1 ladder, in teams)."""
    cfg = EnvConfig(team_size=team_size, max_time=120.0)
    games = 8
    rung_is_p1 = torch.arange(games) < (games + 1) // 2  # play_match: A flies p1 in the first half
    own_rudders = []

    def watch(turn):
        for side, mine in (("p1", rung_is_p1), ("p2", ~rung_is_p1)):
            rudder = turn.actions[side]["rudder"].reshape(games, team_size)[mine]
            own_rudders.append(bool((rudder[:, 1:] != rudder[:, :1]).any()))

    result = play_match(build_agent(name, env_config=cfg), build_agent("crank", env_config=cfg), games,
                        env_config=cfg, seed=1, observers=[watch])
    assert any(own_rudders), "every seat flew the same rudder: the team was flown as one aircraft"
    assert result.losses == 0, result


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


def test_a_doctrines_variants_act_as_one_call_exactly_as_alone() -> None:
    from arena.testing import check_family

    extended = EnvConfig(obs_mode="extended")
    check_family([Sniper(), Sniper(fire_range_frac=0.8, extend_s=10.0), Sniper(cooldown_s=3.0)])
    check_family([Defender(env_config=extended), Defender(env_config=extended, react_range_m=30_000.0, safe_s=10.0)])
    check_family([Ace(env_config=extended), Ace(env_config=extended, hot_aspect_deg=40.0, cooldown_s=5.0)], steps=60)
