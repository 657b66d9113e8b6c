"""Stable-Baselines3 PPO against CrankAgent, through the Gymnasium wrapper (no adapter code).

    pip install -e '.[wrappers]' stable-baselines3
    python examples/sb3_ppo_vs_crank.py --timesteps 200000

SB3 runs its own vector of single-battle envs (``gymnasium.make("Arena/Duel-v0")``); the arena's
own PPO (`arena train ppo`) steps thousands of battles per call and is far faster on the same CPU.
The script trains, then scores the policy over deterministic games against CrankAgent.
"""

from __future__ import annotations

import argparse

import gymnasium
import numpy as np

import arena.wrappers  # noqa: F401  - registers Arena/Duel-v0


def main(argv: list[str] | None = None) -> dict[str, float]:
    from stable_baselines3 import PPO
    from stable_baselines3.common.env_util import make_vec_env
    from stable_baselines3.common.logger import Logger

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timesteps", type=int, default=200_000)
    parser.add_argument("--envs", type=int, default=8, help="SB3's own vector of single-battle envs")
    parser.add_argument("--opponent", default="crank")
    parser.add_argument("--games", type=int, default=20, help="deterministic games to score at the end")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    vec = make_vec_env("Arena/Duel-v0", n_envs=args.envs, seed=args.seed, env_kwargs={"opponent": args.opponent})
    model = PPO("MlpPolicy", vec, n_steps=256, batch_size=256, seed=args.seed, verbose=0, device="cpu")
    model.set_logger(Logger(folder=None, output_formats=[]))  # SB3's default makes an empty /tmp/SB3-* per run
    model.learn(total_timesteps=args.timesteps)

    env = gymnasium.make("Arena/Duel-v0", opponent=args.opponent)
    wins = draws = losses = 0
    for game in range(args.games):
        obs, _ = env.reset(seed=args.seed + 1000 + game)
        done, reward = False, 0.0
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, reward, terminated, truncated, _ = env.step(np.asarray(action))
            done = terminated or truncated
        # the last step's reward carries the result (+1 win, -1 loss, about 0 for a draw)
        wins += reward > 0.5
        losses += reward < -0.5
        draws += -0.5 <= reward <= 0.5
    result = {"games": args.games, "wins": int(wins), "draws": int(draws), "losses": int(losses)}
    print(f"SB3 PPO after {args.timesteps:,} steps against {args.opponent}: {result}")
    return result


if __name__ == "__main__":
    main()
