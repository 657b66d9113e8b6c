"""CrankAgent's state machine on hand-made observations, and its strength against the placeholder."""

from __future__ import annotations

import math
import subprocess
import sys

import pytest
import torch

from arena.env import EnvConfig
from arena_crank.agent import APPROACH, CRANK, DEFEND, CrankAgent

CFG = EnvConfig()


def obs(dist_km, bearing_deg, missiles=1.0, alive=1.0, enemy_alive=1.0) -> dict[str, torch.Tensor]:
    """A batch of observations, one env per entry of ``dist_km``/``bearing_deg`` (positive: enemy left)."""
    dist = torch.as_tensor(dist_km, dtype=torch.float32).reshape(-1) * 1000.0
    bearing = torch.as_tensor(bearing_deg, dtype=torch.float32).reshape(-1).expand_as(dist)
    full = lambda v: torch.full_like(dist, float(v))  # noqa: E731
    return {
        "x": full(0.5), "y": full(0.5), "angle": full(0.0), "speed": full(1.5), "missiles": full(missiles),
        "alive": full(alive), "enemy_distance": dist / CFG.diagonal,
        "enemy_relative_angle": torch.deg2rad(bearing) / math.pi, "enemy_speed": full(1.5),
        "enemy_alive": full(enemy_alive),
    }


def test_fires_only_when_in_range_and_on_the_nose():
    agent = CrankAgent()
    # in range & on the nose | too far | too far off the nose | both wrong | just inside both limits
    out = agent.act(obs([30, 33, 30, 35, 31.9], [10, 10, 40, -45, -29]))
    assert out["fire"].tolist() == [True, False, False, False, True]
    assert agent.mode.tolist() == [CRANK, APPROACH, APPROACH, APPROACH, CRANK]


def test_does_not_fire_without_missiles_or_when_dead():
    agent = CrankAgent()
    assert not agent.act(obs([30], [0], missiles=0.0))["fire"].any()
    assert not agent.act(obs([30], [0], enemy_alive=0.0))["fire"].any()
    assert not agent.act(obs([30], [0], alive=0.0))["fire"].any()


def test_never_fires_twice_within_the_cooldown():
    agent = CrankAgent()
    fired = [bool(agent.act(obs([30], [0]))["fire"]) for _ in range(35)]
    steps = [i for i, f in enumerate(fired) if f]
    assert steps == [0, 10, 20, 30]  # one launch per 10 s of 1 s steps


def test_cooldown_counts_decision_steps_of_dt():
    agent = CrankAgent(env_config=EnvConfig(dt=0.5), cooldown_s=10.0)
    steps = [i for i in range(45) if bool(agent.act(obs([30], [0]))["fire"])]
    assert steps == [0, 20, 40]


def test_cranks_after_firing_then_approaches_again():
    agent = CrankAgent(crank_s=5.0)
    first = agent.act(obs([30], [10]))  # fires with the enemy 10° left
    assert bool(first["fire"]) and agent.mode.item() == CRANK
    assert first["rudder"].item() < 0  # turn right, putting the enemy out toward 50° left
    held = agent.act(obs([29], [50]))
    assert abs(held["rudder"].item()) < 0.05 and agent.mode.item() == CRANK
    beyond = agent.act(obs([29], [-70]))  # enemy on the right, beyond the crank angle
    assert beyond["rudder"].item() < 0 and not bool(beyond["fire"])
    for _ in range(3):
        agent.act(obs([29], [50]))
    after = agent.act(obs([29], [50]))  # 5 s of crank are over
    assert agent.mode.item() == APPROACH and after["rudder"].item() > 0.99  # turn toward the enemy


def test_approach_turns_toward_the_enemy():
    agent = CrankAgent()
    out = agent.act(obs([60, 60, 60], [20, -20, 0]))
    assert out["rudder"][0] > 0 and out["rudder"][1] < 0 and out["rudder"][2] == 0
    assert (out["throttle"] == 1.0).all() and not out["fire"].any()


def test_defends_under_18_km_and_returns_to_approach_past_the_margin():
    agent = CrankAgent()
    out = agent.act(obs([17.9], [10]))  # close, enemy 10° left and on the nose: run, don't shoot
    assert agent.mode.item() == DEFEND and not bool(out["fire"])
    assert out["rudder"].item() < 0 and out["throttle"].item() == 1.0  # turn away from it, full throttle
    out = agent.act(obs([20.0], [170]))  # range opening but inside the hysteresis margin
    assert agent.mode.item() == DEFEND
    assert out["rudder"].item() < 0  # enemy 170° left: turning right puts it dead astern
    out = agent.act(obs([22.5], [170]))
    assert agent.mode.item() == APPROACH and out["rudder"].item() > 0.99  # turn back toward the enemy


def test_reset_clears_only_masked_envs():
    agent = CrankAgent()
    agent.act(obs([30, 30, 10], [0, 0, 0]))
    assert agent.mode.tolist() == [CRANK, CRANK, DEFEND]
    agent.reset(torch.tensor([True, False, True]))
    assert agent.mode.tolist() == [APPROACH, CRANK, APPROACH]
    assert agent.cooldown.tolist() == [0, 10, 0]
    agent.reset()
    assert agent.mode is None


def test_parameters_make_variants_and_bad_ones_are_refused():
    agent = CrankAgent.create(fire_range_frac=0.5, fire_angle_deg=10.0)
    assert agent.act(obs([19], [5]))["fire"].item() is True
    assert not CrankAgent.create(fire_range_frac=0.5).act(obs([21], [0]))["fire"].item()
    assert "fire_range_frac=0.5" in repr(agent)
    with pytest.raises(ValueError, match="fire_angle_deg"):
        CrankAgent.create(fire_angle_deg=-1.0)
    with pytest.raises(ValueError, match="expected numbers, got cooldown_s='10'"):
        CrankAgent.create(cooldown_s="10")


def test_meets_the_agent_contract():
    from arena.testing import check_agent

    check_agent(CrankAgent, num_envs=6, steps=10)


def test_plugin_import_does_not_load_torch():
    code = "import sys, arena_crank; arena_crank.arena_agents(); print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_beats_the_placeholder_in_90_percent_of_512_games():
    from arena.agents import build_agent
    from arena.match import play_match

    result = play_match(build_agent("crank"), build_agent("placeholder"), 512, seed=0)
    assert result.wins >= 0.9 * 512, result


def test_variants_act_as_one_call_exactly_as_alone() -> None:
    from arena.testing import check_family

    check_family([CrankAgent(), CrankAgent(fire_range_frac=0.6, cooldown_s=4.0),
                  CrankAgent(throttle=0.7, turn_gain=2.0, crank_angle_deg=30.0, defend_range_m=25_000.0)])
    check_family([CrankAgent(), CrankAgent(fire_range_frac=0.6)], team_size=2)
