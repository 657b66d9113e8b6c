"""Agent speed: CrankAgent's act() against a seed-shaped MLP policy, and battles per second.

The seed claims the rule-based agent runs 10-50x faster than a neural one; this prints the measured
ratio on this machine. Run: python benchmarks/agents.py [--sizes 4096,65536] [--device cuda]
"""

from __future__ import annotations

import argparse
import time

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch
from torch import nn

import script_args as opt
from arena.agents import build_agent
from arena.env import TensorEnv, obs_vector, resolve_device
from arena.match import play_match
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads


class MLPPolicy(nn.Module):
    """The PPO actor: 10 -> 128 -> 64 (ReLU), a tanh-squashed Gaussian rudder head and a Bernoulli
    fire head; throttle fixed at 1."""

    def __init__(self) -> None:
        super().__init__()
        self.body = nn.Sequential(nn.Linear(10, 128), nn.ReLU(), nn.Linear(128, 64), nn.ReLU())
        self.rudder_mean = nn.Linear(64, 1)
        self.rudder_log_std = nn.Parameter(torch.zeros(1))
        self.fire_logit = nn.Linear(64, 1)

    @torch.no_grad()
    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        h = self.body(obs_vector(observation))
        mean = self.rudder_mean(h).squeeze(-1)
        rudder = torch.tanh(mean + self.rudder_log_std.exp() * torch.randn_like(mean))
        fire = torch.bernoulli(torch.sigmoid(self.fire_logit(h).squeeze(-1))).bool()
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}


def time_act(act, observation: dict[str, torch.Tensor], device: torch.device, repeats: int) -> float:
    """Median seconds per call, after warm-up."""
    for _ in range(3):
        act(observation)
    times = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        act(observation)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return sorted(times)[len(times) // 2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=opt.comma_ints(1, opt.MAX_GAMES), default="4096,65536",
                        help="batch sizes (envs) for act() timings")
    parser.add_argument("--repeats", type=opt.integer(1), default=20)
    parser.add_argument("--games", type=opt.games, default=4096, help="games of crank vs placeholder")
    parser.add_argument("--device", type=opt.device, default="auto")
    parser.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    apply_threads(args.threads, batch=max(args.sizes))
    device = resolve_device(args.device)
    print(f"device {device}, torch {torch.__version__}, {torch.get_num_threads()} CPU thread(s)\n")

    print(f"{'envs':>8}  {'crank act ms':>12}  {'MLP act ms':>10}  {'MLP / crank':>11}")
    for n in args.sizes:
        env = TensorEnv(n, device=device, seed=0)
        observation = env.reset()["p1"]
        crank = build_agent("crank", device)
        crank.eval()
        mlp = MLPPolicy().to(device).eval()
        t_crank = time_act(crank.act, observation, device, args.repeats)
        t_mlp = time_act(mlp.act, observation, device, args.repeats)
        print(f"{n:>8,}  {t_crank * 1e3:>12.3f}  {t_mlp * 1e3:>10.3f}  {t_mlp / t_crank:>10.1f}x")
        del env, observation

    result = play_match(build_agent("crank", device), build_agent("placeholder", device), args.games, device=device)
    print(f"\nplay_match(crank, placeholder, {args.games:,} games): {result.games_per_second:,.0f} battles/s, "
          f"mean length {result.mean_length:.1f} steps, crank won {result.wins / result.games:.1%}")


if __name__ == "__main__":
    main()
