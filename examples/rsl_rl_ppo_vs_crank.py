"""rsl_rl's PPO (OnPolicyRunner) against CrankAgent, through the arena's rsl_rl VecEnv (no adapter code).

    pip install -e '.[rsl-rl]'
    python examples/rsl_rl_ppo_vs_crank.py --minutes 5

Thousands of duels step at once in one TensorEnv; the actor reads the learner's observation, the
critic p1's global state (the "critic" group). rsl_rl writes no files (log_dir None). The script
trains for ``--minutes`` or ``--iterations``, then scores the runner's deterministic policy over
``--games`` deterministic games against the opponent with ``arena.match.play_match``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import torch


def train_cfg(num_envs: int, steps_per_env: int) -> dict[str, Any]:
    """rsl_rl 5.x's runner config, after the arena's own PPO defaults (plugins/arena-ppo train_config.py):
    two hidden layers of 128 and 64, Adam at 3e-4 with the KL-adaptive schedule, minibatches of
    about 8,192 steps, 4 epochs, entropy 0.001. Unlike the arena's policy (a squashed rudder and a
    Bernoulli trigger), rsl_rl's is one Gaussian over the three actions, which the env clamps; starting
    it at full throttle with a trigger nearly shut, as the arena's own policy starts, learned less in
    short tries than rsl_rl's plain start (mean 0, std 1)."""
    model = {"class_name": "MLPModel", "hidden_dims": [128, 64], "activation": "elu", "obs_normalization": True}
    return {
        "num_steps_per_env": steps_per_env,
        "save_interval": 50,  # only with a log_dir
        "obs_groups": {"actor": ["policy"], "critic": ["critic"]},
        "actor": {**model, "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": 1.0,
                                                "std_type": "log"}},
        "critic": dict(model),
        "algorithm": {
            "class_name": "PPO", "learning_rate": 3e-4, "schedule": "adaptive", "desired_kl": 0.01,
            "num_learning_epochs": 4, "num_mini_batches": max(1, num_envs * steps_per_env // 8192),
            "clip_param": 0.2, "gamma": 0.99, "lam": 0.95, "value_loss_coef": 0.5, "entropy_coef": 0.001,
            "max_grad_norm": 0.5, "use_clipped_value_loss": False,
        },
    }


def main(argv: list[str] | None = None) -> dict[str, Any]:
    from rsl_rl.runners import OnPolicyRunner
    from tensordict import TensorDict

    from arena.agents import build_agent
    from arena.battles import VectorPolicyAgent
    from arena.match import play_match
    from arena.wrappers import ArenaRslRlEnv

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    budget = parser.add_mutually_exclusive_group()
    budget.add_argument("--minutes", type=float, default=5.0, help="training time (the default budget)")
    budget.add_argument("--iterations", type=int, default=None, help="PPO updates instead of a time budget")
    parser.add_argument("--envs", type=int, default=4096, help="duels stepped at once")
    parser.add_argument("--steps-per-env", type=int, default=32, help="rollout length per update")
    parser.add_argument("--opponent", default="crank")
    parser.add_argument("--reward", default="zero", help="shaping added to the env's reward (arena_rewards), as "
                                                         "arena train's --reward; zero (none) beat pursuit here")
    parser.add_argument("--games", type=int, default=200, help="deterministic games to score at the end")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args(argv)

    torch.manual_seed(args.seed)  # the networks' initial weights and the actions sampled
    env = ArenaRslRlEnv(args.envs, args.opponent, device=args.device, seed=args.seed, reward=args.reward)
    runner = OnPolicyRunner(env, train_cfg(args.envs, args.steps_per_env), log_dir=None, device=str(env.device))
    start, iterations, shown = time.perf_counter(), 0, 0.0
    while (iterations < args.iterations if args.iterations is not None
           else time.perf_counter() - start < args.minutes * 60):
        runner.learn(1)  # one rollout and one update; the env carries its battles over between calls
        iterations += 1
        if time.perf_counter() - shown > 30:  # the env's recent outcomes, read back twice a minute at most
            shown = time.perf_counter()
            shares = ", ".join(f"{k} {float(v):.2f}" for k, v in env.outcome_shares().items())
            print(f"{iterations} updates, {iterations * args.steps_per_env * args.envs:,} steps, "
                  f"{shown - start:.0f} s: {shares}", flush=True)
    wall = time.perf_counter() - start
    steps = iterations * args.steps_per_env * args.envs

    actor = runner.get_inference_policy(str(env.device))

    def policy(obs: torch.Tensor) -> torch.Tensor:  # [n, K] -> [n, 3], the actor's mean action
        return actor(TensorDict({"policy": obs}, batch_size=[obs.shape[0]]))

    match = play_match(VectorPolicyAgent(policy, device=env.device), build_agent(args.opponent, env.device),
                       args.games, device=env.device, seed=args.seed)
    result = {"iterations": iterations, "steps": steps, "wall_s": round(wall, 1),
              "steps_per_s": round(steps / wall) if wall > 0 else 0,
              "games": match.games, "wins": match.wins, "draws": match.draws, "losses": match.losses}
    print(f"rsl_rl PPO, {steps:,} steps in {wall:.0f} s ({result['steps_per_s']:,} env-steps/s) against "
          f"{args.opponent}: {match.wins} wins, {match.draws} draws, {match.losses} losses in {match.games} games")
    return result


if __name__ == "__main__":
    main()
