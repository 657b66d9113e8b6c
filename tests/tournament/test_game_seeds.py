"""Every game from its own start: replayable alone, the same in any batch, mirrored between sides."""

from __future__ import annotations

import sqlite3

import torch

from arena.env import EnvConfig, TensorEnv
from arena.env.spawn import seeded_spawn, seeded_uniforms
from arena.loop import Controller, GameLoop, Seating
from arena.tournament import load_config, run_tournament
from arena.tournament.runner import GameSeeds
from tourney_helpers import FAST_ENV, LEAGUE, Idle, Pursuer


def test_seeded_uniforms_depend_on_the_seed_alone() -> None:
    seeds = torch.tensor([5, 7, 5, 2**62 + 3], dtype=torch.int64)
    u = seeded_uniforms(seeds, 8)
    assert u.shape == (4, 8) and bool(((u >= 0) & (u < 1)).all())
    assert torch.equal(u[0], u[2]) and not torch.equal(u[0], u[1])
    assert torch.equal(seeded_uniforms(seeds[1:2], 8)[0], u[1])  # its position in the batch changes nothing
    many = seeded_uniforms(torch.arange(20000, dtype=torch.int64), 8)
    assert abs(float(many.mean()) - 0.5) < 0.01 and abs(float(many.std()) - 0.2887) < 0.01


def test_a_seeded_start_is_the_same_in_any_batch_and_for_teams() -> None:
    cfg = EnvConfig(team_size=3)
    alone = seeded_spawn(cfg, torch.tensor([99]), torch.device("cpu"))
    among = seeded_spawn(cfg, torch.tensor([1, 2, 99]), torch.device("cpu"))
    assert torch.equal(alone.x[0], among.x[2]) and torch.equal(alone.speed[0], among.speed[2])


def test_both_orders_of_a_pairing_share_game_g_and_differ_between_games() -> None:
    seeds = GameSeeds(3, ["key-a", "key-b", "key-c"])
    assert seeds(0, 1, 4) == seeds(1, 0, 4)
    assert seeds(0, 1, 4) != seeds(0, 1, 5) and seeds(0, 1, 4) != seeds(0, 2, 4)
    assert GameSeeds(4, ["key-a", "key-b", "key-c"])(0, 1, 4) != seeds(0, 1, 4)


def test_a_stored_game_replays_alone(write_league, registry) -> None:
    """Same start bit for bit; the same outcome unless the CPU's vectorised and scalar arithmetic part
    in the last bit somewhere along the way (a batch of 12 and a batch of one take different paths)."""
    config = load_config(write_league(LEAGUE, max_envs=12, games_per_pairing=16))  # slots share a pairing
    run_tournament(config, registry=registry, progress=False)
    with sqlite3.connect(config.output / "results.sqlite") as conn:
        keys = {pid: key for pid, key in conn.execute("SELECT id, key FROM participants")}
        names = {pid: name for pid, name in conn.execute("SELECT id, name FROM participants")}
        stored = conn.execute("SELECT p1, p2, game_index, winner, length, seed FROM games ORDER BY id").fetchall()
    agents = {"near": lambda: Pursuer(fire_km=8.0), "far": lambda: Pursuer(fire_km=25.0), "idle": Idle}
    env_config = EnvConfig.from_dict(FAST_ENV)
    same = 0
    for p1, p2, game, winner, length, stored_seed in stored:  # games ending together included
        seed = GameSeeds(config.seed, [keys[p1], keys[p2]])(0, 1, game)
        assert stored_seed == seed  # the record alone is enough to replay it
        a, b = agents[names[p1]](), agents[names[p2]]()
        for agent in (a, b):
            agent.env_config = env_config
        env = TensorEnv(1, config=env_config)
        loop = GameLoop(env, Seating([Controller(a, "a", "p1"), Controller(b, "b", "p2")],
                                     torch.tensor([[0], [1]]), 1, env.device))
        obs = env.reset(game_seeds=torch.tensor([seed]))
        with torch.no_grad():
            for _ in range(env_config.max_steps):
                turn = loop.step(obs)
                obs = turn.next_obs
                if bool(turn.dones[0]):
                    break
        same += (int(turn.infos["winner"][0]), int(turn.infos["episode"]["length"][0])) == (winner, length)
    assert same >= 0.9 * len(stored), (same, len(stored))
