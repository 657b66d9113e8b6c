"""Tournament throughput: a 16-participant round-robin played, stored and rated end to end.

    python benchmarks/tournament.py                                   # 256 games per pairing, CPU
    python benchmarks/tournament.py --games-per-pairing 32 --device cuda --max-envs 65536

The league is CrankAgent variants and seeded placeholders, plus PPO checkpoints found by
``--checkpoints`` (default ``runs/*/ckpt_*.pt``, the newest few) when there are any; the script says
which it used. It runs ``arena.tournament.run_tournament`` on a fresh database in a temporary folder,
so the wall time includes building agents, writing every game to SQLite, rating and writing reports.
Printed: play wall time, games/s, env-steps/s, the battles stepped per game played (the games' mean
length when no battle steps after its game ended), agent calls per batch step, what follows play
(rating: reading the games back, TrueSkill, Bradley-Terry and the tables; then writing the CSVs,
report.md and the pictures), TrueSkill and the Bradley-Terry fit with its bootstrap timed again
separately, and the whole run's games/s.

It runs torch on one CPU thread by default: on a small machine shared with other processes, torch's
default thread pool spins against them and made the env an order of magnitude slower in our
measurements (``--threads 0`` restores torch's default).
"""

from __future__ import annotations

import argparse
import glob
import os
import tempfile
import time
from pathlib import Path

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import script_args as opt
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads
from arena.tournament import RatingConfig, ResultStore, bradley_terry, parse_config, run_tournament, trueskill_ratings

CRANK_VARIANTS = [
    {},
    {"fire_range_frac": 1.0},
    {"fire_range_frac": 0.6},
    {"fire_range_frac": 0.4},
    {"cooldown_s": 4.0},
    {"cooldown_s": 20.0},
    {"crank_angle_deg": 30.0},
    {"defend_range_m": 10000.0},
    {"defend_range_m": 25000.0},
    {"crank_s": 5.0},
    {"fire_angle_deg": 15.0},
]


def league(size: int, checkpoints: str, max_ckpts: int, ppo: int | None = None) -> tuple[list[dict], str]:
    """``size`` participants: PPO checkpoints first (``ppo`` of them, cycling through the newest
    ``max_ckpts`` files; default one per file), then CrankAgent variants, then seeded placeholders."""
    files = sorted(glob.glob(checkpoints), key=os.path.getmtime)[-max_ckpts:] if max_ckpts else []
    count = min(size, len(files) if ppo is None else ppo) if files else 0
    participants: list[dict] = [
        {"name": f"ppo-{i}", "agent": "ppo", "checkpoint": os.path.abspath(files[i % len(files)])}
        for i in range(count)]
    note = (f"{count} PPO participant(s) from {len(files)} checkpoint(s) of {checkpoints}" if files
            else f"no PPO checkpoint matches {checkpoints}: league is CrankAgent variants and placeholders only")
    n_placeholder = 3
    for i, params in enumerate(CRANK_VARIANTS):
        if len(participants) >= size - n_placeholder:
            break
        participants.append({"name": f"crank-{i}", "agent": "crank", "params": params})
    i = 0
    while len(participants) < size:
        participants.append({"name": f"placeholder-{i}", "agent": "placeholder", "params": {"seed": i}})
        i += 1
    return participants, note


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--participants", type=opt.integer(2), default=16)
    ap.add_argument("--games-per-pairing", type=opt.integer(1), default=256)
    ap.add_argument("--max-envs", type=opt.games, default=16384)
    ap.add_argument("--device", type=opt.device, default="cpu")
    ap.add_argument("--checkpoints", default="runs/*/ckpt_*.pt", help="glob of PPO checkpoints to include")
    ap.add_argument("--max-checkpoints", type=opt.integer(0), default=4)
    ap.add_argument("--ppo", type=opt.integer(0), default=None,
                    help="PPO participants, cycling through the checkpoints [default: one per checkpoint]")
    ap.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    apply_threads(args.threads, batch=args.max_envs)

    participants, note = league(args.participants, args.checkpoints, args.max_checkpoints, args.ppo)
    work = count_work()
    with tempfile.TemporaryDirectory() as tmp:
        data = {"name": "bench", "output": tmp, "seed": 0, "device": args.device, "max_envs": args.max_envs,
                "games_per_pairing": args.games_per_pairing, "participants": participants}
        config = parse_config(data, Path(tmp) / "bench.yaml")
        t0 = time.perf_counter()
        report = run_tournament(config, fresh=True, progress=True, notify=False)
        total = time.perf_counter() - t0
        store = ResultStore(Path(tmp) / "results.sqlite", create=False)
        run = store.latest_run()
        games = store.games(run.participant_ids)
        env_steps = sum(g.length for g in games)
        outcomes = store.outcomes(run.participant_ids)  # what the report rates: league positions as players
        t = time.perf_counter()
        trueskill_ratings(outcomes, len(participants), RatingConfig())
        ts_s = time.perf_counter() - t
        t = time.perf_counter()
        bradley_terry(outcomes, len(participants), rounds=1000)
        bt_s = time.perf_counter() - t
        db_mb = os.path.getsize(Path(tmp) / "results.sqlite") / 1e6
        store.close()

    r = report.run
    lengths = [g.length for g in games]
    print()
    print(f"league: {len(participants)} participants, {note}")
    print(f"device {r['device']}, torch threads {torch.get_num_threads()}, max_envs {args.max_envs}, "
          f"{r['batches']} batch(es)")
    print()
    rows = [
        ("games", f"{report.games:,}"),
        ("mean game length (steps)", f"{sum(lengths) / len(lengths):.0f}"),
        ("play wall time (s)", f"{r['wall_s']:.1f}"),
        ("games / s", f"{r['games_per_second']:,.0f}"),
        ("env steps stepped per game", f"{work['env_steps'] / report.games:,.0f}"),
        ("agent calls per batch step", f"{work['calls'] / max(work['steps'], 1):,.1f}"),
        ("game-steps / s", f"{env_steps / r['wall_s']:,.0f}"),
        ("rating + reports (s)", f"{r['rating_s'] + r.get('reports_s', 0.0):.2f}"),
        ("  rating: games read back, TrueSkill, Bradley-Terry, tables (s)", f"{r['rating_s']:.2f}"),
        # a tree older than the reports' own clock counts them in neither
        ("  reports written: CSVs, report.md, pictures (s)", f"{r['reports_s']:.2f}" if "reports_s" in r else "-"),
        ("  TrueSkill alone (s)", f"{ts_s:.2f}"),
        ("  Bradley-Terry + 1000 bootstrap (s)", f"{bt_s:.2f}"),
        ("whole run incl. agent loading (s)", f"{total:.1f}"),
        ("whole run games / s", f"{report.games / total:,.0f}"),
        ("results.sqlite (MB)", f"{db_mb:.1f}"),
    ]
    width = max(len(k) for k, _ in rows)
    print(f"| {'figure':<{width}} | value |")
    print(f"|{'-' * (width + 2)}|------:|")
    for k, v in rows:
        print(f"| {k:<{width}} | {v} |")
    print()
    print(report.leaderboard[["rank", "name", "mu", "sigma", "mu_minus_3sigma", "score", "elo"]].to_string(index=False))


def count_work() -> dict[str, int]:
    """Counters of the work done in play: env steps (battles stepped), batch steps and agent calls.

    Counted by wrapping the env's step and the game loop's checked call, so that the same script
    measures trees where the executor keeps no such counts."""
    import arena.loop
    from arena.env import TensorEnv

    work = {"env_steps": 0, "steps": 0, "calls": 0}
    step, act = TensorEnv.step, arena.loop.checked_act

    def counted_step(self: TensorEnv, *a: object, **k: object) -> object:
        work["env_steps"] += self.num_envs
        work["steps"] += 1
        return step(self, *a, **k)  # type: ignore[arg-type]

    def counted_act(*a: object, **k: object) -> object:
        work["calls"] += 1
        return act(*a, **k)  # type: ignore[arg-type]

    TensorEnv.step = counted_step  # type: ignore[method-assign,assignment]
    arena.loop.checked_act = counted_act  # type: ignore[assignment]
    return work


if __name__ == "__main__":
    main()
