"""Can the leaderboard be trusted? Interval coverage, rank stability, and rating time and memory.

    python benchmarks/ratings.py                         # every table below
    python benchmarks/ratings.py --only coverage --leagues 100

- **coverage**: leagues simulated from known strengths (Bradley-Terry, up to 10 % draws); the share of
  participants whose true Elo, on the report's own scale, lies inside their 95 % interval. Aim 93–97 %.
  Also with one participant made unbeatable: the others' intervals must still cover.
- **stability**: the same games rated with 5 seeds; how far a participant's rank moves, for the
  Elo order (the leaderboard's) and for TrueSkill μ−3σ (its order before), and how many pairs the
  TrueSkill order ranks against non-overlapping Elo intervals.
- **time**: rating (TrueSkill, Bradley-Terry with intervals and rank bounds) of synthetic games for
  16/64/256/512 participants and 10k/1M games, each in a fresh process so its peak memory is its own.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import numpy as np

import script_args as opt
from arena.tournament import GameResult, RatingConfig
from arena.tournament.ratings import ELO_BASE, ELO_SCALE, bradley_terry, trueskill_ratings


def simulate(strengths: np.ndarray, games: int, rng: np.random.Generator, draw: float = 0.1) -> list[GameResult]:
    """``games`` games between random distinct pairs whose expected score is the Bradley-Terry model's:
    a draw with probability d (at most ``draw``), a win with p − d/2, a loss with 1 − p − d/2."""
    n = len(strengths)
    p1 = rng.integers(0, n, games)
    p2 = (p1 + rng.integers(1, n, games)) % n
    p = 1.0 / (1.0 + np.exp(-(strengths[p1] - strengths[p2])))
    d = np.minimum(draw, 2.0 * np.minimum(p, 1.0 - p))
    u = rng.random(games)
    winner = np.where(u < p - d / 2.0, 1, np.where(u < p + d / 2.0, 0, 2))
    return [GameResult(int(a), int(b), i, int(w), 100, 0.0, 0.0) for i, (a, b, w) in enumerate(zip(p1, p2, winner))]


def coverage(participants: int, games: int, leagues: int, unbeaten: bool, rounds: int) -> dict[str, float]:
    rng = np.random.default_rng(participants * 1000 + games + unbeaten)
    inside = total = 0
    widths = []
    for _ in range(leagues):
        strengths = rng.normal(0.0, 1.0, participants)
        if unbeaten:
            strengths[0] = 40.0  # wins every game
        fit = bradley_terry(simulate(strengths, games, rng), participants, rounds=rounds,
                            seed=int(rng.integers(1 << 31)))
        reference = np.array([f == "" for f in fit.flags])
        truth = ELO_BASE + ELO_SCALE * (strengths - strengths[reference].mean())
        judged = reference & np.isfinite(fit.low) & np.isfinite(fit.high)
        inside += int(((fit.low <= truth) & (truth <= fit.high))[judged].sum())
        total += int(judged.sum())
        widths.append(float(np.median((fit.high - fit.low)[judged])))
    return {"participants": participants, "games": games, "leagues": leagues, "unbeaten": unbeaten,
            "method": fit.method, "coverage": inside / max(total, 1), "median_width": float(np.median(widths))}


def stability(participants: int, games: int, seeds: int = 5) -> dict[str, float]:
    rng = np.random.default_rng(7)
    data = simulate(rng.normal(0.0, 0.6, participants), games, rng)
    elo_ranks, ts_ranks = [], []
    fit = None
    for seed in range(seeds):
        fit = bradley_terry(data, participants, rounds=200, seed=seed)
        elo_ranks.append(np.argsort(np.argsort(-fit.elo)))
        skills = trueskill_ratings(data, participants, RatingConfig(), None, seed)
        ts_ranks.append(np.argsort(np.argsort(-np.array([s.conservative for s in skills]))))
    assert fit is not None
    against = 0
    order = ts_ranks[0]
    for i in range(participants):
        for j in range(participants):
            if order[i] < order[j] and fit.high[i] < fit.low[j]:
                against += 1
    return {"participants": participants, "games": games, "seeds": seeds,
            "elo_rank_moves": int(np.ptp(np.array(elo_ranks), axis=0).max()),
            "trueskill_rank_moves": int(np.ptp(np.array(ts_ranks), axis=0).max()),
            "trueskill_pairs_against_elo": against}


TIMING_CODE = """
import json, resource, sys, time
import numpy as np
sys.path.insert(0, {here!r})
from ratings import simulate
from arena.tournament import RatingConfig
from arena.tournament.ratings import bradley_terry, trueskill_ratings
n, g = {participants}, {games}
rng = np.random.default_rng(0)
data = simulate(rng.normal(0.0, 1.0, n), g, rng)
t0 = time.perf_counter()
trueskill_ratings(data, n, RatingConfig(), None, 0)
t1 = time.perf_counter()
fit = bradley_terry(data, n, rounds=1000, seed=0)
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"trueskill_s": t1 - t0, "elo_s": t2 - t1, "total_s": t2 - t0, "peak_mb": peak,
                  "method": fit.method}}))
"""


def timing(participants: int, games: int) -> dict[str, float]:
    import os

    code = TIMING_CODE.format(here=os.path.dirname(os.path.abspath(__file__)), participants=participants, games=games)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    return {"participants": participants, "games": games, **json.loads(out.strip().splitlines()[-1])}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=["coverage", "stability", "time"], default=None)
    parser.add_argument("--leagues", type=opt.integer(1), default=40, help="simulated leagues per coverage row")
    parser.add_argument("--json", action="store_true")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    rows: dict[str, list[dict[str, float]]] = {}
    if args.only in (None, "coverage"):
        print(f"{'P':>4} {'games':>8} {'unbeaten':>8} {'method':>10} {'coverage':>9} {'median width':>13}")
        rows["coverage"] = []
        for p, g, unbeaten in ((16, 4000, False), (16, 4000, True), (64, 40000, False), (64, 40000, True),
                               (256, 200000, False)):
            leagues = args.leagues if p < 256 else max(5, args.leagues // 8)
            r = coverage(p, g, leagues, unbeaten, rounds=1000 if p <= 64 else 1000)
            rows["coverage"].append(r)
            print(f"{p:>4} {g:>8,} {str(unbeaten):>8} {r['method']:>10} {r['coverage']:>8.1%} "
                  f"{r['median_width']:>12.0f}", flush=True)
    if args.only in (None, "stability"):
        print(f"\n{'P':>4} {'games':>9} {'Elo rank moves':>15} {'TrueSkill rank moves':>21} "
              f"{'TrueSkill pairs vs Elo':>23}")
        rows["stability"] = []
        for p, g in ((64, 100_000), (128, 100_000)):
            r = stability(p, g)
            rows["stability"].append(r)
            print(f"{p:>4} {g:>9,} {r['elo_rank_moves']:>15} {r['trueskill_rank_moves']:>21} "
                  f"{r['trueskill_pairs_against_elo']:>23}", flush=True)
    if args.only in (None, "time"):
        print(f"\n{'P':>4} {'games':>10} {'TrueSkill s':>12} {'Elo s':>8} {'total s':>8} {'peak MB':>8} {'method':>10}")
        rows["time"] = []
        for p in (16, 64, 256, 512):
            for g in (10_000, 1_000_000):
                start = time.perf_counter()
                r = timing(p, g)
                rows["time"].append(r)
                print(f"{p:>4} {g:>10,} {r['trueskill_s']:>12.2f} {r['elo_s']:>8.2f} {r['total_s']:>8.2f} "
                      f"{r['peak_mb']:>8.0f} {r['method']:>10}   ({time.perf_counter() - start:.0f} s with set-up)",
                      flush=True)
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
