"""What the Gymnasium vector wrapper costs: env-steps/s through it (numpy and torch) beside the native
TensorEnv driven the same way (CrankAgent flying p2 through the game loop, random actions for p1).

Run: python benchmarks/wrappers.py [--sizes 1024,16384] [--steps 200] [--rounds 3]
"""

from __future__ import annotations

import argparse
import statistics
import time

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import numpy as np
import torch

from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads
from arena.wrappers import ArenaVectorEnv
from arena.wrappers.battles import LearnerBattles


def native(n: int, steps: int) -> float:
    """The game loop itself: dict actions in, dict observations out, nothing stacked or converted."""
    battles = LearnerBattles(n, "crank")
    battles.reset(0)
    actions = torch.rand(steps, n, 3) * 2 - 1
    obs = battles.obs
    start = time.perf_counter()
    with torch.no_grad():
        for t in range(steps):
            a = actions[t]
            obs = battles.loop.step(obs, given={"p1": {"rudder": a[:, 0], "throttle": a[:, 1],
                                                       "fire": a[:, 2] > 0}}).next_obs
    return n * steps / (time.perf_counter() - start)


def wrapped(n: int, steps: int, as_torch: bool) -> float:
    env = ArenaVectorEnv(n, "crank", as_torch=as_torch)
    env.reset(seed=0)
    actions = torch.rand(steps, n, 3) * 2 - 1
    feed = actions if as_torch else actions.numpy().astype(np.float32)
    start = time.perf_counter()
    for t in range(steps):
        env.step(feed[t])
    return n * steps / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1024,16384")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--threads", type=int, default=None, help=THREADS_HELP)
    args = parser.parse_args()
    print(f"env-steps/s, crank flying p2, median of {args.rounds} rounds of {args.steps} steps (settings alternate)")
    print(f"{'envs':>7} {'native':>10} {'gym numpy':>10} {'ratio':>6} {'gym torch':>10} {'ratio':>6}")
    for n in (int(s) for s in args.sizes.split(",")):
        apply_threads(args.threads, n)
        runs: dict[str, list[float]] = {"native": [], "numpy": [], "torch": []}
        for _ in range(args.rounds):
            runs["native"].append(native(n, args.steps))
            runs["numpy"].append(wrapped(n, args.steps, False))
            runs["torch"].append(wrapped(n, args.steps, True))
        med = {k: statistics.median(v) for k, v in runs.items()}
        print(f"{n:>7,} {med['native']:>10,.0f} {med['numpy']:>10,.0f} {med['numpy'] / med['native']:>6.2f} "
              f"{med['torch']:>10,.0f} {med['torch'] / med['native']:>6.2f}")


if __name__ == "__main__":
    main()
