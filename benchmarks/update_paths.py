"""Time per rollout step and per PPO update, eager and compiled, at the default settings.

    python benchmarks/update_paths.py                         # 1,024 and 16,384 envs, one thread
    python benchmarks/update_paths.py --envs 1024 --repeats 9 --threads 2
    python benchmarks/update_paths.py --device cuda --envs 16384,65536

A real rollout against crank fills the storage once per size; then the same rollout is learned from
by an eager and a compiled update, taking turns (``--repeats`` each, medians reported), each on its
own copy of the weights, so a machine that gets busier slows both alike. The compiled update's first
call (the compilation, or a read of the compiler's cache) is reported on its own. The rollout
columns time whole rollouts of the learner's own loop, divided by their steps, with the env step eager and
compiled (``ARENA_COMPILE=1``; taking turns, after a first rollout each); ``--count-launches``
(CUDA) counts the kernel launches of one eager rollout with torch's profiler, per step.
"""

from __future__ import annotations

import argparse
import copy
import os
import statistics
import tempfile
import time
from pathlib import Path

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import script_args as opt
from arena.threads import HELP as THREADS_HELP
from arena_ppo.algorithms import PPO
from arena_ppo.plan import resolve
from arena_ppo.runners import Learner, build_run
from arena_ppo.train_config import TrainConfig


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def measure(envs: int, args: argparse.Namespace, out: Path) -> dict[str, float]:
    cfg = TrainConfig()
    cfg.run.num_envs, cfg.run.eval_games, cfg.run.threads, cfg.run.device = envs, 0, args.threads, args.device
    cfg.run.vs, cfg.run.floor = ("crank",), 0.0
    rollouts: dict[str, list[float]] = {"eager": [], "compiled": []}
    learners = {name: build_learner_with(cfg, out / name, args.device, compiled_env=name == "compiled")
               for name in rollouts}
    learner, device = learners["eager"], learners["eager"].device
    for each in learners.values():  # the first rollout compiles the env step, or reads the cache
        each.collect()
    for _ in range(args.repeats):
        for name, each in learners.items():
            sync(device)
            t0 = time.perf_counter()
            each.collect()
            sync(device)
            rollouts[name].append((time.perf_counter() - t0) / each.storage.n_steps)
    launches = count_launches(learner) if args.count_launches else float("nan")
    updates: dict[str, list[float]] = {"eager": [], "compiled": []}
    algorithms = {}
    for name in updates:
        model = copy.deepcopy(learner.agent.model)
        algorithms[name] = PPO(model, learner.algorithm.cfg, copy.deepcopy(learner.agent.value_normalizer),
                               compiled=name == "compiled")
    generator = torch.Generator().manual_seed(0)
    sync(device)
    t0 = time.perf_counter()
    float(algorithms["compiled"].update(learner.storage, generator)["policy_loss"])
    first = time.perf_counter() - t0
    for _ in range(args.repeats):
        for name, algorithm in algorithms.items():
            sync(device)
            t0 = time.perf_counter()
            float(algorithm.update(learner.storage, generator)["policy_loss"])
            updates[name].append(time.perf_counter() - t0)
    return {"rollout_step_ms": 1e3 * statistics.median(rollouts["eager"]),
            "compiled_step_ms": 1e3 * statistics.median(rollouts["compiled"]),
            "env_compiled": float(learners["compiled"].env.env.compiled),
            "eager_s": statistics.median(updates["eager"]),
            "compiled_s": statistics.median(updates["compiled"]), "first_s": first,
            "compiled_ran": float(algorithms["compiled"].compiled), "launches": launches,
            "minibatches": float(learner.algorithm.cfg.n_epochs * -(-learner.storage.n_steps * envs //
                                                                  learner.algorithm.cfg.batch_size))}


def build_learner_with(cfg: TrainConfig, out: Path, device: str, compiled_env: bool) -> Learner:
    """A learner against crank whose env steps eagerly or compiled (``ARENA_COMPILE`` while it is built)."""
    saved = os.environ.get("ARENA_COMPILE")
    os.environ["ARENA_COMPILE"] = "1" if compiled_env else "0"
    try:
        return build_run(resolve(cfg, out=out), console=None, progress=False).learner
    finally:
        if saved is None:
            del os.environ["ARENA_COMPILE"]
        else:
            os.environ["ARENA_COMPILE"] = saved


def count_launches(learner: Learner) -> float:
    """CUDA kernel launches of one rollout (the profiler's runtime calls), per rollout step."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        learner.collect()
        sync(learner.device)
    names = ("cudaLaunchKernel", "cudaLaunchKernelExC", "cuLaunchKernel", "cuLaunchKernelEx", "cudaGraphLaunch")
    calls = sum(e.count for e in prof.key_averages() if e.key in names)
    return calls / learner.storage.n_steps


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--envs", type=opt.comma_ints(1, opt.MAX_GAMES), default="1024,16384",
                        help="comma-separated env counts (default 1024,16384)")
    parser.add_argument("--repeats", type=opt.integer(1), default=5, help="updates timed per path (default 5)")
    parser.add_argument("--threads", type=opt.threads, default=1, help=THREADS_HELP)
    parser.add_argument("--device", type=opt.device, default="cpu")
    parser.add_argument("--count-launches", action="store_true", help="CUDA: kernel launches per rollout step")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    print(f"{args.device}, {torch.get_num_threads()} thread(s), torch {torch.__version__}; "
          f"medians of {args.repeats} updates a path\n")
    print(f"{'envs':>7} {'rollout step':>13} {'env compiled':>12} {'minibatches':>11} {'update eager':>12} "
          f"{'compiled':>9} {'speed-up':>8} {'first compiled':>14}"
          + (f" {'launches/step':>13}" if args.count_launches else ""), flush=True)
    with tempfile.TemporaryDirectory(prefix="arena-update-paths-") as tmp:
        for envs in args.envs:
            r = measure(envs, args, Path(tmp) / str(envs))
            compiled = f"{r['compiled_s']:.3f} s" if r["compiled_ran"] else "eager"
            stepped = f"{r['compiled_step_ms']:.1f} ms" if r["env_compiled"] else "eager"
            print(f"{envs:>7,} {r['rollout_step_ms']:>10.1f} ms {stepped:>12} {r['minibatches']:>11.0f} "
                  f"{r['eager_s']:>10.3f} s "
                  f"{compiled:>9} {r['eager_s'] / r['compiled_s']:>7.2f}x {r['first_s']:>12.1f} s"
                  + (f" {r['launches']:>13.0f}" if args.count_launches else ""), flush=True)

if __name__ == "__main__":
    main()
