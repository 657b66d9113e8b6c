"""A league in one process against the same league on Ray: wall time, games/s, and whether they agree.

    python benchmarks/ray_tournament.py                          # 16 participants, local Ray on 2 CPUs
    python benchmarks/ray_tournament.py --participants 24 --max-envs 1024 --rounds 3 --ray-cpus 4
    python benchmarks/ray_tournament.py --address auto           # a running cluster instead

The league is benchmarks/tournament.py's (CrankAgent variants, seeded placeholders, and the newest
PPO checkpoints under ``--checkpoints`` when there are any). Each round plays it from a fresh
database once in this process (one torch thread) and once as Ray tasks (one CPU each), alternating
which goes first; the table gives the median of the rounds. Both play the same batches (``max_envs``
sets how many: a league spreads over at most that many workers), so the leaderboards must be
identical, and the script says whether they were. The Ray time includes starting the workers' Python
and loading the agents there, once per worker; Ray itself is started once, before the first round.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

from arena.tournament import parse_config, run_tournament
from arena.tournament.ray_backend import RaySettings

sys.path.insert(0, str(Path(__file__).parent))
import script_args as opt  # noqa: E402  - beside this file
from tournament import league  # noqa: E402  - the throughput benchmark's league


def play(participants: list[dict], args: argparse.Namespace, ray: RaySettings | None) -> tuple[float, float, object]:
    with tempfile.TemporaryDirectory() as tmp:
        data = {"name": "bench", "output": tmp, "seed": 0, "device": "cpu", "max_envs": args.max_envs,
                "games_per_pairing": args.games_per_pairing, "participants": participants}
        config = parse_config(data, Path(tmp) / "bench.yaml")
        t0 = time.perf_counter()
        report = run_tournament(config, fresh=True, progress=False, notify=False, ray=ray)
        total = time.perf_counter() - t0
    columns = ["name", "elo", "wins", "draws", "losses"]
    return report.run["wall_s"], total, (report.run, report.leaderboard[columns])


def store_rate(games: int = 200_000, per_batch: int = 65_536) -> float:
    """Games/s the driver writes to SQLite: batches of synthetic games through ``ResultStore``, as a
    Ray driver stores arriving batches (one transaction each). Bounds how many workers one driver feeds."""
    from arena.tournament import GameResult, ResultStore

    with tempfile.TemporaryDirectory() as tmp:
        store = ResultStore(Path(tmp) / "results.sqlite")
        ids = [store.participant_id(f"k{i}", f"p{i}", "crank", {}, None, None) for i in range(64)]
        run = store.start_run({}, ids, "cpu", {})
        t0 = time.perf_counter()
        for first in range(0, games, per_batch):
            batch = store.start_batch(run, 0, 16384, per_batch, "cpu")
            store.add_games(GameResult(ids[(g // 128) % 64], ids[(g // 8192) % 64 - 1], g, 1, 150, 1.0, -1.0, 2, 1,
                                       batch, g % 16384, g) for g in range(first, min(games, first + per_batch)))
            store.finish_batch(batch)
        rate = games / (time.perf_counter() - t0)
        store.close()
    return rate


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--participants", type=opt.integer(2), default=16)
    ap.add_argument("--games-per-pairing", type=opt.integer(1), default=64)
    ap.add_argument("--max-envs", type=opt.games, default=512, help="battles per batch, so per Ray task")
    ap.add_argument("--rounds", type=opt.integer(1), default=3)
    ap.add_argument("--ray-cpus", type=opt.integer(1), default=2, help="CPUs of the local Ray (ignored with --address)")
    ap.add_argument("--address", default=None, help="a running Ray cluster (auto, HOST:PORT) instead of a local one")
    ap.add_argument("--checkpoints", default="runs/*/ckpt_*.pt", help="glob of PPO checkpoints to include")
    ap.add_argument("--max-checkpoints", type=opt.integer(0), default=4)
    ap.add_argument("--ppo", type=opt.integer(0), default=None,
                    help="PPO participants, cycling through the checkpoints [default: one per checkpoint]")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    torch.set_num_threads(1)

    import ray

    participants, note = league(args.participants, args.checkpoints, args.max_checkpoints, args.ppo)
    if args.address:
        ray.init(address=args.address, logging_level=logging.WARNING)
    else:  # workers find the benchmark's league on the same path as this process
        ray.init(num_cpus=args.ray_cpus, include_dashboard=False, logging_level=logging.WARNING,
                 runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}})
    cpus = ray.cluster_resources().get("CPU", 0)
    rows: dict[str, list[tuple[float, float]]] = {"one process": [], f"Ray, {cpus:g} CPUs": []}
    boards = {}
    for r in range(args.rounds):
        order = [None, RaySettings()] if r % 2 == 0 else [RaySettings(), None]
        for settings in order:
            key = "one process" if settings is None else f"Ray, {cpus:g} CPUs"
            wall, total, (run, board) = play(participants, args, settings)
            rows[key].append((wall, total))
            boards[key] = board
            print(f"round {r + 1} {key}: play {wall:.1f} s, whole run {total:.1f} s, {run['batches']} batches",
                  file=sys.stderr)
    ray.shutdown()
    games = args.participants * (args.participants - 1) // 2 * args.games_per_pairing
    print()
    print(f"league: {args.participants} participants ({note}), {args.games_per_pairing} games a pairing, "
          f"{games:,} games; max_envs {args.max_envs}; {run['batches']} batches; median of {args.rounds} rounds")
    print()
    print("| where | play (s) | games/s | whole run (s) | vs one process |")
    print("|---|---:|---:|---:|---:|")
    base = statistics.median(w for w, _ in rows["one process"])
    for key, values in rows.items():
        wall = statistics.median(w for w, _ in values)
        total = statistics.median(t for _, t in values)
        print(f"| {key} | {wall:.1f} | {games / wall:,.0f} | {total:.1f} | {base / wall:.2f}× |")
    a, b = boards.values()
    print()
    print("leaderboards identical:", "yes" if a.equals(b) else "NO")
    print(f"the driver stores {store_rate():,.0f} games/s (SQLite, batches of 65,536 synthetic games)")


if __name__ == "__main__":
    main()
