"""The league env a trainer consumes: rows per aircraft, the pool's draw and credit once a rollout, a teacher."""

from __future__ import annotations

import torch

from arena.agents import build_agent
from arena.battles import LearnerBattles
from arena.env import EnvConfig, TensorEnv
from arena.env.observations import obs_keys
from arena.training import OpponentPool, SelfPlayPool, parse_opponent_specs, save_checkpoint
from arena.training.league_env import LeagueEnv


def crank_league(num_envs: int, config: EnvConfig, seed: int, **kwargs) -> LeagueEnv:
    pool = OpponentPool(parse_opponent_specs(["crank"]), num_envs, lambda spec: build_agent(spec.target),
                        team_size=config.team_size)
    return LeagueEnv(TensorEnv(num_envs, seed=seed, config=config), pool, obs_keys(config), **kwargs)


def test_it_plays_as_learner_battles_do_one_row_per_aircraft():
    """Against one opponent, with the trainer's reward, the league env and the wrappers' LearnerBattles
    are the same battles: equal observations, rewards and dones, step after step, in rows per aircraft."""
    from arena.battles import shaping

    config, n, seats = EnvConfig(team_size=2), 6, 2
    league = crank_league(n, config, seed=4, reward_fn=shaping("pursuit"), global_state=True)
    twin = LearnerBattles(n, "crank", config, seed=4, reward="pursuit", global_state=True)
    twin.reset()
    league.begin_rollout(torch.Generator().manual_seed(0))
    obs = league.observations()
    assert obs["policy"].shape == (n * seats, len(twin.keys)) and obs["critic"].shape[0] == n * seats
    gen = torch.Generator().manual_seed(1)
    ended = 0
    for _ in range(300):
        actions = torch.rand(n * seats, 3, generator=gen) * 2 - 1
        obs, rewards, dones, extras = league.step(actions)
        want_obs, want_reward, want_dones, want = twin.step(actions.view(n, seats, 3))
        assert torch.equal(obs["policy"], want_obs.reshape(n * seats, -1))
        assert torch.equal(extras["final_obs"]["policy"], want["final_obs"].reshape(n * seats, -1))
        assert torch.equal(rewards, want_reward.reshape(-1))
        assert torch.equal(dones, want_dones.repeat_interleave(seats))
        assert torch.equal(extras["truncated"], want["truncated"].repeat_interleave(seats))
        ended += int(want_dones.sum())
    assert ended > 0, "no battle ended: the restarts were not compared"


class Labels:
    """A teacher that steers 0.5 and fires, counting the battles it forgets."""

    def __init__(self) -> None:
        self.forgotten = 0
        self.checked = 0

    def label(self, obs):
        n = obs["alive"].shape[0]
        return torch.full((n,), 0.5), torch.ones(n)

    def reset(self, dones):
        self.forgotten += int(dones.sum())

    def check_nans(self):
        self.checked += 1


def test_a_rollout_draws_restarts_changed_opponents_and_credits_the_games(tmp_path):
    config = EnvConfig(max_time=10.0)
    specs = parse_opponent_specs(["crank", "self"])
    pool = OpponentPool(specs, 8, lambda spec: build_agent(spec.target), self_play=SelfPlayPool(
        tmp_path, lambda path: build_agent("placeholder")), snapshot=lambda: build_agent("placeholder"),
        self_slots=2)
    teacher = Labels()
    league = LeagueEnv(TensorEnv(8, seed=0, config=config), pool, obs_keys(config), teacher=teacher)
    gen = torch.Generator().manual_seed(0)
    assert league.begin_rollout(gen, played=False) is None  # a fresh run's battles have not been played
    for _ in range(60):
        _, _, _, extras = league.step(torch.zeros(8, 3))
        assert torch.equal(extras["teacher"][0], torch.full((8,), 0.5))
    league.end_rollout()
    assert teacher.checked == 1
    games = sum(t.games for t in pool.take_tallies())
    assert games == int(league.tally.sums["done"].sum()) > 0  # every battle of 10 s ended: each credited
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000010.pt")
    before = league.env.state.time.clone()
    restarted = league.begin_rollout(gen)  # a checkpoint to draw: the self slots change opponent
    assert restarted is not None and restarted.tolist() == [False] * 4 + [True] * 4
    time = league.env.state.time
    assert torch.equal(time[:4], before[:4]) and bool((time[4:] == 0).all())
    assert teacher.forgotten >= 4
