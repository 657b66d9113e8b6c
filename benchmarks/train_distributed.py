"""PPO training on one process and on two: env steps per second, and what a wall-clock budget buys.

    python benchmarks/train_distributed.py                                  # the table docs/scaling.md reports
    python benchmarks/train_distributed.py --rounds 1 --updates 6 --budget-minutes 0   # a quick look
    python benchmarks/train_distributed.py --envs 4096 --device cuda        # on a machine with two GPUs

Runs ``arena train ppo`` as a shell would (the trainer's defaults: --vs crank with the 25 % placeholder
floor, 32 steps per env per update, 4 epochs of 8,192-sample minibatches), each process with
``--threads`` torch threads, in these configurations:

- ``1 process``: --num-envs E;
- ``2 processes, same per process``: --nproc 2 --num-envs 2E (E envs each, twice the samples per update);
- ``2 processes, same total``: --nproc 2 --num-envs E (E/2 envs each: the same update, computed by two);
- ``1 process, 2 threads``: --num-envs E --threads 2, for reference (what the second core gives without
  a second process);
- ``2 independent 1-process runs``: two ``1 process`` runs at the same time, their rates added: what the
  machine gives two processes that never wait for each other (the ceiling of the 2-process rows).

Throughput is the env steps per second of all processes together, per update as metrics.csv logs it
(collection and update, timed by process 0; "collection alone" leaves the update out); a run's figure
is the median over its updates after the first ``--warmup``, and the table gives the median (and
range) over ``--rounds`` runs. The rounds run
the configurations interleaved, so a neighbour's load falls on all of them alike; the 1-minute load
average before each run is printed. With ``--budget-minutes M`` the first three configurations also
train for M minutes each (``--max-time``), and their last checkpoint plays ``--games`` deterministic games
against CrankAgent (half from each side). Wall-clock figures depend on what else the machine runs.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import script_args as opt

CONFIGS: dict[str, dict[str, Any]] = {
    "1 process": {"nproc": 1, "envs": 1, "threads": 1},
    "2 processes, same per process": {"nproc": 2, "envs": 2, "threads": 1},
    "2 processes, same total": {"nproc": 2, "envs": 1, "threads": 1},
    "1 process, 2 threads": {"nproc": 1, "envs": 1, "threads": 2},
    "2 independent 1-process runs": {"nproc": 1, "envs": 1, "threads": 1, "copies": 2},
}
BUDGETED = list(CONFIGS)[:3]


def command(name: str, envs: int, threads: int, device: str, seed: int, out: Path, extra: list[str]) -> list[str]:
    spec = CONFIGS[name]
    args = [sys.executable, "-m", "arena", "train", "ppo", "--vs", "crank", "--num-envs", str(envs * spec["envs"]),
            "--threads", str(threads * spec["threads"]), "--device", device, "--seed", str(seed), "--eval-games", "0",
            "--no-progress", "--out", str(out), *extra]
    return args + (["--nproc", str(spec["nproc"])] if spec["nproc"] > 1 else [])


def run(*commands: list[str]) -> None:
    """Run the commands at the same time and wait for all of them."""
    procs = [subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for args in commands]
    for args, proc in zip(commands, procs):
        _, stderr = proc.communicate()
        if proc.returncode != 0:
            last = [line for line in stderr.splitlines() if line.strip()][-1:] or ["no message"]
            opt.fail(f"arena train failed (exit {proc.returncode}): {last[0]}; the command: {' '.join(args)}", status=1)


def throughput(out: Path, warmup: int) -> tuple[float, float]:
    """Median env steps/s over a run's updates after the warm-up: training, and collection alone."""
    with (out / "metrics.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    rows = rows[warmup:] or rows
    return (statistics.median(float(row["sps"]) for row in rows),
            statistics.median(float(row["collect_sps"]) for row in rows))


def score(out: Path, games: int, seed: int) -> dict[str, Any]:
    """The last checkpoint's deterministic record against CrankAgent."""
    import torch

    from arena.agents import build_agent
    from arena.match import play_match
    from arena.training import list_checkpoints
    from arena_ppo.agent import PPOAgent

    last = list_checkpoints(out)[-1]
    agent = PPOAgent.load(last, device="cpu")
    with torch.random.fork_rng(devices=[]):
        r = play_match(agent, build_agent("crank", device="cpu"), games, env_config=agent.env_config, seed=seed + 777)
    data = torch.load(last, weights_only=True)
    return {"steps": data["counters"]["env_steps"], "updates": data["counters"]["updates"], "wins": r.wins,
            "draws": r.draws, "losses": r.losses, "win_rate": r.wins / r.games}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--envs", type=opt.integer(2, opt.MAX_GAMES), default=1024,
                        help="E: envs of the 1-process run, even (2 processes share E) (default: the trainer's)")
    parser.add_argument("--updates", type=opt.integer(1), default=8, help="updates per throughput run")
    parser.add_argument("--warmup", type=opt.integer(0), default=2,
                        help="first updates of a run left out of its median")
    parser.add_argument("--rounds", type=opt.integer(1), default=3, help="runs of each configuration, interleaved")
    parser.add_argument("--threads", type=opt.integer(1, 512), default=1, help="torch threads per process")
    parser.add_argument("--device", type=opt.device, default="cpu", help="cpu, or cuda (one GPU per process)")
    parser.add_argument("--seed", type=opt.seed, default=0)
    parser.add_argument("--budget-minutes", type=opt.number(0, unit="minutes"), default=2.0,
                        help="training budget per configuration for the win rate (0: throughput only)")
    parser.add_argument("--games", type=opt.games, default=400, help="deterministic games against crank per scored run")
    parser.add_argument("--keep", type=opt.output_dir, default=None, help="keep the runs in this directory")
    parser.add_argument("--json", action="store_true", help="print one JSON object at the end")
    args = parser.parse_args(argv)
    if args.envs % 2:
        parser.error(f"--envs: expected an even count (two processes share E envs); got {args.envs}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    root = args.keep or Path(tempfile.mkdtemp(prefix="arena-bench-distributed-"))
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        opt.fail(f"--keep {root}: cannot write there ({exc.strerror or exc})")
    steps_per_update = 32  # the trainer's ppo.n_steps
    rates: dict[str, list[float]] = {name: [] for name in CONFIGS}
    collect: dict[str, list[float]] = {name: [] for name in CONFIGS}
    print(f"throughput: {args.rounds} round(s) of {args.updates} updates per configuration, median after "
          f"{args.warmup} warm-up update(s); E = {args.envs} envs, {args.threads} torch thread(s) per process, "
          f"{args.device}, {os.cpu_count()} cores", flush=True)
    try:
        for round_ in range(args.rounds):
            for name, spec in CONFIGS.items():
                outs = [root / f"sps-{round_}-{name.replace(' ', '-').replace(',', '')}-{copy}"
                        for copy in range(spec.get("copies", 1))]
                max_steps = args.updates * steps_per_update * args.envs * spec["envs"]
                load = os.getloadavg()[0]
                start = time.perf_counter()
                run(*(command(name, args.envs, args.threads, args.device, args.seed + copy, out,
                              ["--max-steps", str(max_steps), "--save-interval", str(max_steps)])
                      for copy, out in enumerate(outs)))
                figures = [throughput(out, args.warmup) for out in outs]
                rate = sum(f[0] for f in figures)
                rates[name].append(rate)
                collect[name].append(sum(f[1] for f in figures))
                print(f"  round {round_ + 1}  {name:<31} {rate:>9,.0f} env steps/s   (load {load:.2f} before; "
                      f"{time.perf_counter() - start:.0f} s with start-up)", flush=True)
        budget: dict[str, dict[str, Any]] = {}
        if args.budget_minutes > 0:
            print(f"win rate: {args.budget_minutes:g} min of training each, then {args.games} deterministic games "
                  f"against crank", flush=True)
            for name in BUDGETED:
                out = root / f"budget-{name.replace(' ', '-').replace(',', '')}"
                load = os.getloadavg()[0]
                run(command(name, args.envs, args.threads, args.device, args.seed, out,
                            ["--max-steps", str(10**12), "--max-time", str(args.budget_minutes * 60),
                             "--save-interval", str(10**12)]))
                budget[name] = score(out, args.games, args.seed)
                b = budget[name]
                print(f"  {name:<31} {b['steps']:>11,} steps in {b['updates']} updates: {b['wins']}W {b['draws']}D "
                      f"{b['losses']}L  (load {load:.2f} before)", flush=True)
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)

    base = statistics.median(rates["1 process"])
    print()
    print("| configuration | processes × envs | torch threads each | env steps/s (median) | range | vs 1 process | "
          "collection alone |" + (" steps in budget | win rate vs crank |" if budget else ""))
    print("|---|---|---|---|---|---|---|" + ("---|---|" if budget else ""))
    for name, spec in CONFIGS.items():
        med = statistics.median(rates[name])
        per = args.envs * spec["envs"] // spec["nproc"]
        processes = spec["nproc"] * spec.get("copies", 1)
        row = (f"| {name} | {processes} × {per:,} | {args.threads * spec['threads']} | {med:,.0f} | "
               f"{min(rates[name]):,.0f}–{max(rates[name]):,.0f} | {med / base:.2f}× | "
               f"{statistics.median(collect[name]):,.0f} |")
        if budget:
            b = budget.get(name)
            row += (f" {b['steps']:,} | {b['win_rate']:.1%} ({b['wins']}W {b['draws']}D {b['losses']}L) |" if b
                    else " — | — |")
        print(row)
    if args.json:
        print(json.dumps({"envs": args.envs, "threads": args.threads, "device": args.device, "rates": rates,
                          "collect_rates": collect,
                          "budget_minutes": args.budget_minutes, "budget": budget}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
