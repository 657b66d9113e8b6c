"""Do the eager and the compiled step fly the same battles? Outcome statistics of many battles on each.

    python benchmarks/step_paths_agree.py                       # 10,000 duels a path
    python benchmarks/step_paths_agree.py --battles 4000 --team-size 2

Both paths play the same seeded starts with the same noisy pursuit (fire when the enemy is ahead and
close). Past the first steps a rounding difference may send a battle another way, so the figures are
compared as distributions: each row gives both means and their difference in standard errors (|z| < 3
is sampling noise). Battles are counted as they finish, until each path has ``--battles``.
"""

from __future__ import annotations

import argparse
import math
import time

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import script_args as opt
from arena.env import EnvConfig, TensorEnv
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads


def pursue(obs: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    noise = torch.rand(obs["x"].shape, generator=gen) * 0.8 - 0.4
    ahead = obs["enemy_relative_angle"].abs() < 0.1
    fire = ahead & (obs["enemy_distance"] < 0.3) & (torch.rand(obs["x"].shape, generator=gen) < 0.2)
    return {"rudder": obs["enemy_relative_angle"] * 4.0 + noise, "throttle": 0.7 + 0.3 * torch.rand_like(noise),
            "fire": fire}


def play(compiled: bool, battles: int, num_envs: int, config: EnvConfig, seed: int) -> dict[str, torch.Tensor]:
    """Per finished battle: winner code, length, missiles fired and kills (both sides)."""
    env = TensorEnv(num_envs, seed=seed, config=config, compile=compiled)
    gen = torch.Generator().manual_seed(seed + 1)
    obs = env.reset()
    rows: dict[str, list[torch.Tensor]] = {"p1 wins": [], "p2 wins": [], "draws": [], "length": [],
                                           "missiles": [], "kills": []}
    done_count = 0
    while done_count < battles:
        obs, _, dones, infos = env.step(pursue(obs["p1"], gen), pursue(obs["p2"], gen))
        if not bool(dones.any()):
            continue
        winner, ep = infos["winner"][dones], infos["episode"]
        rows["p1 wins"].append((winner == 1).float())
        rows["p2 wins"].append((winner == 2).float())
        rows["draws"].append((winner == 0).float())
        rows["length"].append(ep["length"][dones])
        for key, name in (("missiles_fired", "missiles"), ("kills", "kills")):
            value = (ep[key]["p1"] + ep[key]["p2"])[dones]
            rows[name].append(value if value.dim() == 1 else value.sum(-1))
        done_count += int(dones.sum())
    return {k: torch.cat(v)[:battles].double() for k, v in rows.items()}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--battles", type=opt.integer(1), default=10_000,
                        help="finished battles a path (default 10,000)")
    parser.add_argument("--num-envs", type=opt.games, default=4096, help="battles in flight (default 4096)")
    parser.add_argument("--team-size", type=opt.integer(1, opt.MAX_TEAM), default=1)
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    apply_threads(args.threads, batch=args.num_envs)
    config = EnvConfig(team_size=args.team_size, max_time=150.0)
    results = {}
    for path in ("eager", "compiled"):
        start = time.perf_counter()
        results[path] = play(path == "compiled", args.battles, args.num_envs, config, args.seed)
        print(f"{path}: {args.battles:,} battles in {time.perf_counter() - start:.1f} s", flush=True)
    print(f"\n{args.team_size} v {args.team_size}, {args.battles:,} battles a path, {args.num_envs:,} in flight")
    print(f"{'':<10} {'eager':>10} {'compiled':>10} {'z':>7}")
    worst = 0.0
    for name in results["eager"]:
        a, b = results["eager"][name], results["compiled"][name]
        se = math.sqrt(float(a.var()) / a.numel() + float(b.var()) / b.numel())
        z = (float(b.mean()) - float(a.mean())) / se if se > 0 else 0.0
        worst = max(worst, abs(z))
        print(f"{name:<10} {float(a.mean()):>10.4f} {float(b.mean()):>10.4f} {z:>7.2f}")
    print(f"\nlargest |z| {worst:.2f}: {'within sampling noise' if worst < 3 else 'OUTSIDE sampling noise'}")


if __name__ == "__main__":
    main()
