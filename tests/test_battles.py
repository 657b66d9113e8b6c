"""The learner's side shared by every wrapper: team shapes, opponents in blocks, global states, restarts."""

from __future__ import annotations

import pytest
import torch

from arena.battles import LearnerBattles, opponent_blocks
from arena.env import EnvConfig


def test_opponents_share_the_envs_in_even_blocks_in_order():
    assert opponent_blocks(7, 3).tolist() == [0, 0, 0, 1, 1, 2, 2]
    with pytest.raises(ValueError, match="3 opponents need at least 3 envs"):
        opponent_blocks(2, 3)
    battles = LearnerBattles(6, ["crank", "placeholder"])
    assert battles.loop.seating.layout.owner[1].tolist() == [0, 0, 0, 1, 1, 1]
    assert [c.name for c in battles.controllers] == ["crank", "placeholder"]
    with pytest.raises(ValueError, match=r"^opponent\[1\]: expected an agent spec \(a name or a checkpoint\) or an "
                                         r"agent object with act\(\), got int 3$"):
        LearnerBattles(6, ["crank", 3])
    with pytest.raises(ValueError, match="non-empty sequence"):
        LearnerBattles(6, [])


def test_team_battles_come_per_aircraft_with_the_global_state_before_the_restart():
    config = EnvConfig(team_size=2)
    battles = LearnerBattles(16, "crank", config, global_state=True)
    obs = battles.reset(seed=3)
    assert obs.shape == (16, 2, len(battles.keys))
    ended = torch.zeros(16, dtype=torch.bool)
    for _ in range(400):
        obs, reward, done, out = battles.step(torch.zeros(16, 2, 3))
        assert reward.shape == out["nan_actions"].shape == (16, 2)
        assert out["state"].shape == out["final_state"].shape == (16, battles.env.global_state_size)
        assert torch.equal(done, out["terminated"] | out["truncated"])
        # Where a battle goes on, the state before and after the restart is one and the same.
        assert torch.equal(out["state"][~done], out["final_state"][~done])
        assert torch.equal(obs[~done], out["final_obs"][~done])
        ended |= done
        if ended.any() and not torch.equal(out["state"][done], out["final_state"][done]):
            break
    else:
        pytest.fail("no battle ended with a state different from its restart in 400 steps")


def test_a_restart_mask_restarts_only_its_battles_and_is_seeded():
    def run() -> tuple[torch.Tensor, torch.Tensor]:
        battles = LearnerBattles(8, "crank")
        before = battles.reset(seed=5)
        for _ in range(20):
            moved = battles.step(torch.zeros(8, 3))[0]
        mask = torch.zeros(8, dtype=torch.bool)
        mask[[1, 6]] = True
        after = battles.restart(mask)
        assert torch.equal(after[~mask], moved[~mask])
        assert not torch.equal(after[mask], moved[mask])
        assert not torch.equal(after[mask], before[mask])  # a fresh start, not the first one again
        return after, battles.step(torch.zeros(8, 3))[0]

    first, second = run(), run()
    assert all(torch.equal(a, b) for a, b in zip(first, second))
    with pytest.raises(ValueError, match="restart_mask: expected a bool tensor of shape"):
        LearnerBattles(4, "crank").env.restart_mask(torch.zeros(3, dtype=torch.bool))


def test_a_vector_policy_is_scored_like_any_agent():
    from arena.agents import build_agent
    from arena.battles import TeamVectorPolicyAgent, VectorPolicyAgent
    from arena.match import play_match

    crank = build_agent("crank")
    shapes = []

    def straight(obs: torch.Tensor) -> torch.Tensor:
        shapes.append(tuple(obs.shape))
        return torch.zeros(*obs.shape[:-1], 3)

    idle = play_match(VectorPolicyAgent(straight), crank, 8)
    assert idle.games == 8 and idle.losses >= 6  # flying straight without firing loses to crank
    assert shapes[0] == (8, 10)  # both its sides, one call
    teams = EnvConfig(team_size=2)
    shapes.clear()
    play_match(VectorPolicyAgent(straight, teams), build_agent("crank", env_config=teams), 2, env_config=teams)
    assert len(shapes[0]) == 2 and shapes[0][0] == 4  # seat by seat: [n·T, K]
    shapes.clear()
    play_match(TeamVectorPolicyAgent(straight, teams), build_agent("crank", env_config=teams), 2, env_config=teams)
    assert len(shapes[0]) == 3 and shapes[0][:2] == (2, 2)  # whole sides: [n, T, K]


@pytest.mark.parametrize("team_size", [1, 2])
def test_reward_shaping_is_added_per_aircraft_as_the_trainer_adds_it(team_size):
    config = EnvConfig(team_size=team_size)
    seen = []

    def bonus(obs, next_obs, rewards, dones, infos):
        seen.append((obs["enemy_distance"].shape, next_obs["enemy_distance"].shape, rewards.shape, dones.shape))
        return torch.arange(rewards.numel(), dtype=torch.float32)  # a different bonus for each aircraft

    plain, shaped, zero = (LearnerBattles(6, "crank", config, reward=r) for r in (None, bonus, "zero"))
    for battles in (plain, shaped, zero):
        battles.reset(seed=4)
    action = torch.zeros(6, 3) if team_size == 1 else torch.zeros(6, team_size, 3)
    for _ in range(3):
        (a_obs, a, _, _), (b_obs, b, _, _), (_, c, _, _) = plain.step(action), shaped.step(action), zero.step(action)
        assert torch.allclose(b - a, torch.arange(6 * team_size, dtype=torch.float32).view_as(a))
        assert torch.equal(c, a) and torch.equal(b_obs, a_obs)
    rows = 6 * team_size
    assert seen[0] == ((rows,), (rows,), (rows,), (rows,))
    with pytest.raises(ValueError, match="reward: unknown reward 'nope'"):
        LearnerBattles(2, "crank", reward="nope")
