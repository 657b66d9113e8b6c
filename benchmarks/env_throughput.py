"""Environment throughput: env-steps per second (both sides, one step of one env = 1).

    python benchmarks/env_throughput.py                      # CPU, and CUDA when present
    python benchmarks/env_throughput.py --sizes 1024,16384 --steps 50 --device cpu
    python benchmarks/env_throughput.py --team-sizes 1,2,4,8 --sizes 4096,16384   # team battles

With ``--team-sizes`` the table adds aircraft-steps/s (env-steps/s x 2T) and its ratio to the duel's at
the same size: how much of the batch's speed a team battle keeps per aircraft.

``--paths eager,compiled`` times both step paths (``TensorEnv(compile=...)``) side by side; the
compiled row's "first step" is the compilation (cold or warm, as the compiler's cache stands).
``--count-ops`` prints the top-level aten operations a step calls on each path (views left out).

Actions are random (5 % fire probability) and generated before timing, so the figures measure the
simulation, not an agent. Each size is timed ``--repeats`` times; the table gives the median and the
best run, because a shared or virtual machine can vary by ±20 % from one run to the next. Memory per
env is the size of the world state tensors.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import fields

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import script_args as opt
from arena.env import EnvConfig, TensorEnv
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads

DEFAULT_SIZES = "1,64,1024,4096,16384,65536"


def state_bytes(env: TensorEnv) -> int:
    tensors = [getattr(env.state, f.name) for f in fields(env.state)]
    return sum(t.element_size() * t.nelement() for t in tensors)


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


VIEW_OPS = frozenset({"aten::view", "aten::select", "aten::slice", "aten::as_strided", "aten::unsqueeze",
                      "aten::squeeze", "aten::expand", "aten::permute", "aten::t", "aten::transpose",
                      "aten::_reshape_alias", "aten::reshape", "aten::detach", "aten::alias", "aten::lift_fresh",
                      "aten::unbind", "aten::split", "aten::chunk", "aten::expand_as", "aten::view_as",
                      "aten::flatten", "aten::unflatten", "aten::contiguous", "aten::result_type"})


def make_env(num_envs: int, device: str, obs_mode: str, team_size: int, compiled: bool
             ) -> tuple[TensorEnv, list[dict[str, torch.Tensor]], float]:
    """An env after its first step, its action pool, and how long that first step took (compilation)."""
    config = EnvConfig(obs_mode=obs_mode, team_size=team_size)  # type: ignore[arg-type]
    threads = torch.get_num_threads()
    env = TensorEnv(num_envs, device=device, seed=0, config=config, compile=compiled)
    torch.set_num_threads(threads)  # the benchmark's count, not the env's default
    env.reset()
    gen = torch.Generator(device=env.device).manual_seed(0)
    shape = (num_envs,) if team_size == 1 else (num_envs, team_size)
    pool = [
        {
            "rudder": torch.rand(shape, device=env.device, generator=gen) * 2 - 1,
            "throttle": torch.rand(shape, device=env.device, generator=gen),
            "fire": torch.rand(shape, device=env.device, generator=gen) < 0.05,
        }
        for _ in range(8)
    ]
    sync(env.device)
    start = time.perf_counter()
    env.step(pool[0], pool[1])
    sync(env.device)
    return env, pool, time.perf_counter() - start


def measure(num_envs: int, device: str, steps: int, obs_mode: str, repeats: int,
            team_size: int = 1, compiled: bool = False) -> tuple[list[float], float, float]:
    env, pool, first = make_env(num_envs, device, obs_mode, team_size, compiled)
    for i in range(5):  # warm-up
        env.step(pool[i % 8], pool[(i + 1) % 8])
    rates = []
    for _ in range(repeats):
        sync(env.device)
        start = time.perf_counter()
        for i in range(steps):
            env.step(pool[i % 8], pool[(i + 3) % 8])
        sync(env.device)
        rates.append(num_envs * steps / (time.perf_counter() - start))
    return rates, state_bytes(env) / num_envs, first


def count_ops(num_envs: int, device: str, obs_mode: str, team_size: int, compiled: bool) -> tuple[int, int]:
    """(top-level aten operations that compute, compiled graph calls) in one step, from the profiler."""
    from torch.profiler import profile

    env, pool, _ = make_env(num_envs, device, obs_mode, team_size, compiled)
    for i in range(3):
        env.step(pool[i], pool[i + 1])
    with profile() as prof:
        env.step(pool[4], pool[5])
        sync(env.device)
    ops = graphs = 0
    for event in prof.events():
        parent = event.cpu_parent
        while parent is not None and not parent.name.startswith("aten::"):
            parent = parent.cpu_parent
        if event.name.startswith("aten::") and parent is None and event.name not in VIEW_OPS:
            ops += 1
        graphs += event.name.startswith("Torch-Compiled Region")
    return ops, graphs


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=opt.comma_ints(1, opt.MAX_GAMES), default=DEFAULT_SIZES,
                        help=f"comma-separated num_envs (default {DEFAULT_SIZES})")
    parser.add_argument("--steps", type=opt.integer(0), default=0,
                        help="timed steps per size (default: about 1 s of work)")
    parser.add_argument("--device", type=opt.device, action="append",
                        help="cpu, cuda, ... (repeatable; default cpu and cuda if present)")
    parser.add_argument("--obs-mode", default="default", choices=["default", "extended"])
    parser.add_argument("--repeats", type=opt.integer(1), default=3, help="timed runs per size (default 3)")
    parser.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    parser.add_argument("--team-sizes", type=opt.comma_ints(1, opt.MAX_TEAM), default="1",
                        help="comma-separated aircraft per side (default 1, the duel)")
    parser.add_argument("--paths", type=opt.names(("eager", "compiled")), default="eager",
                        help="comma-separated step paths: eager, compiled (default eager)")
    parser.add_argument("--count-ops", action="store_true", help="print the aten operations of a step on each path")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    devices = args.device or (["cpu", "cuda"] if torch.cuda.is_available() else ["cpu"])
    sizes, teams, paths = args.sizes, args.team_sizes, args.paths
    apply_threads(args.threads, batch=max(sizes))
    print(f"torch {torch.__version__}, {torch.get_num_threads()} CPU threads, obs_mode={args.obs_mode}")
    for device in devices:
        name = torch.cuda.get_device_name(0) if device.startswith("cuda") else "cpu"
        print(f"\n{device} ({name})")
        if args.count_ops:
            for t in teams:
                for path in paths:
                    ops, graphs = count_ops(sizes[0], device, args.obs_mode, t, path == "compiled")
                    print(f"{t} v {t}, {path}: {ops} top-level aten operations a step, {graphs} compiled graph call(s)")
            continue
        print(f"{'T v T':>6} {'num_envs':>10} {'path':>9} {'env-steps/s':>14} {'best':>14} {'vs eager':>9} "
              f"{'first step':>11} {'bytes/env':>10} {'aircraft-steps/s':>17} {'vs 1v1':>7}")
        duel: dict[tuple[int, str], float] = {}
        for t in teams:
            for n in sizes:
                eager = None
                steps = args.steps or max(20, min(2000, int(1_000_000 / max(n * t, 1)) if device == "cpu" else 500))
                for path in paths:
                    rates, per_env, first = measure(n, device, steps, args.obs_mode, args.repeats, t,
                                                    path == "compiled")
                    median = statistics.median(rates)
                    eager = median if path == "eager" else eager
                    aircraft = median * 2 * t
                    if t == 1:
                        duel[(n, path)] = aircraft
                    ratio = f"{aircraft / duel[(n, path)]:>7.2f}" if (n, path) in duel else f"{'':>7}"
                    speedup = f"{median / eager:>9.2f}" if eager else f"{'':>9}"
                    print(f"{t:>6} {n:>10,} {path:>9} {median:>14,.0f} {max(rates):>14,.0f} {speedup} "
                          f"{first:>10.1f}s {per_env:>10,.0f} {aircraft:>17,.0f} {ratio}", flush=True)


if __name__ == "__main__":
    main()
