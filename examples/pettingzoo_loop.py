"""A plain PettingZoo loop over one 2-v-2 battle: every aircraft an agent, here flying at random.

    pip install -e '.[wrappers]'
    python examples/pettingzoo_loop.py --team-size 2
"""

from __future__ import annotations

import argparse

from arena.wrappers import ArenaParallelEnv


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--team-size", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    env = ArenaParallelEnv(team_size=args.team_size)
    observations, infos = env.reset(seed=args.seed)
    for name in env.agents:
        env.action_space(name).seed(args.seed)
    returns = {name: 0.0 for name in env.possible_agents}
    steps = 0
    while env.agents:
        actions = {name: env.action_space(name).sample() for name in env.agents}
        observations, rewards, terminations, truncations, infos = env.step(actions)
        for name, r in rewards.items():
            returns[name] += r
        steps += 1
    print(f"battle over after {steps} steps; returns: " + ", ".join(f"{k} {v:+.3f}" for k, v in returns.items()))
    return returns


if __name__ == "__main__":
    main()
