"""The guard for learning, as ``training_identity.py`` is for numerics: fixed budgets, three seeds, scores
beside the last accepted commit's.

    python benchmarks/learning_guard.py                   # every run, seeds 0-2, two at a time (~30 min, 2 cores)
    python benchmarks/learning_guard.py --runs ppo-crank  # one kind of run
    python benchmarks/learning_guard.py --save            # after an accepted change: store its figures

Each run trains a fixed number of env steps (never a clock: the same budget on any machine) with one
torch thread, then its ``best.pt`` plays ``--games`` games (half from each side) against each of the
run's opponents, sampled and deterministically. The table shows each seed, and beside the median of
the three the stored figures (``benchmarks/learning_guard.json``: their commit, median and the seeds'
spread). A median below the stored one by more than the stored seeds' spread is flagged ``LOWER``: a
regression to fix, not a finding to note. Every change that moves training numerics (training_identity.py
finds a difference) runs this and reports the table.

- ``ppo-crank``: ``arena train ppo --vs crank``, the demo's recipe, at about the steps the demo reaches
  in its two minutes;
- ``league-taught``: ``--vs league --kickstart ace`` without an exploiter, with a shortened warm-up;
- ``mappo-2v2``: ``arena train mappo --vs crank`` at 2 v 2, against the CrankAgent team.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt

ROOT = Path(__file__).resolve().parent.parent
STORED = Path(__file__).with_suffix(".json")
POLICIES = ("sampled", "deterministic")

# name -> (trainer, options, env steps, opponents its best.pt is scored against)
RUNS: dict[str, tuple[str, list[str], int, tuple[str, ...]]] = {
    "ppo-crank": ("ppo", ["--vs", "crank"], 4_194_304, ("crank", "placeholder")),
    "league-taught": ("ppo", ["--vs", "league", "--kickstart", "ace", "--set", "run.exploiter_share=0",
                              "--set", "run.warm_up_steps=4000000"], 10_485_760,
                      ("placeholder", "crank", "sniper", "defender", "ace")),
    "mappo-2v2": ("mappo", ["--vs", "crank"], 4_194_304, ("crank",)),
}


def commit() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return done.stdout.strip() + ("+changes" if dirty else "")


def train_and_score(name: str, seed: int, games: int, root: Path) -> dict[str, Any]:
    """One run of ``name`` at ``seed``; its best.pt's score (wins and half the draws) per opponent and policy."""
    import torch

    from arena.agents import build_agent, trained_for
    from arena.env import EnvConfig
    from arena.match import play_match

    trainer, options, steps, rivals = RUNS[name]
    out = root / f"{name}-{seed}"
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "arena", "train", trainer, *options, "--max-steps", str(steps),
                           "--seed", str(seed), "--threads", "1", "--device", "cpu", "--no-progress", "--out",
                           str(out)], capture_output=True, text=True)
    minutes = (time.perf_counter() - start) / 60
    if done.returncode != 0:
        return {"run": name, "seed": seed, "error": (done.stderr or done.stdout).strip().splitlines()[-1:]}
    torch.set_num_threads(1)
    best = out / "best.pt"
    trained = trained_for(best)
    assert trained is not None, best
    cfg = EnvConfig(team_size=trained.team_size, obs_mode=trained.obs_mode)  # type: ignore[arg-type]
    scores: dict[str, dict[str, float]] = {}
    for policy in POLICIES:
        for rival in rivals:
            with torch.random.fork_rng(devices=[]):
                result = play_match(build_agent(str(best), "cpu", cfg), build_agent(rival, "cpu", cfg), games,
                                    env_config=cfg, seed=seed + 1_000, policies=(policy, "deterministic"))
            scores.setdefault(policy, {})[rival] = result.score
    best_step = json.loads((out / "best.json").read_text())["step"]
    return {"run": name, "seed": seed, "steps": steps, "minutes": round(minutes, 2), "best_step": best_step,
            "scores": scores}


def summary(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Per run, policy and opponent: the seeds' median score and spread (max - min)."""
    out: dict[str, Any] = {}
    for name in RUNS:
        mine = [r for r in results if r["run"] == name and "scores" in r]
        for policy in POLICIES:
            for rival in RUNS[name][3]:
                values = [r["scores"][policy][rival] for r in mine]
                if values:
                    out.setdefault(name, {}).setdefault(policy, {})[rival] = {
                        "median": statistics.median(values), "spread": max(values) - min(values)}
    return out


def pct(value: float) -> str:
    return f"{100 * value:.1f} %"


def table(results: list[dict[str, Any]], stored: dict[str, Any] | None) -> str:
    now, then = summary(results), (stored or {}).get("summary", {})
    seeds = sorted({r["seed"] for r in results})
    lines = [f"stored figures: {stored['commit']} ({stored['date']})" if stored else "no stored figures yet (--save)",
             "", "| run | policy | opponent | " + " | ".join(f"seed {s}" for s in seeds)
             + " | median | stored median (spread) | |", "|---|---|---|" + "---:|" * (len(seeds) + 2) + "---|"]
    for name, (_, _, _, rivals) in RUNS.items():
        mine = sorted((r for r in results if r["run"] == name), key=lambda r: r["seed"])
        for policy in POLICIES if mine else ():
            for rival in rivals:
                cells = [pct(r["scores"][policy][rival]) if "scores" in r else "failed" for r in mine]
                cur = now.get(name, {}).get(policy, {}).get(rival)
                old = then.get(name, {}).get(policy, {}).get(rival)
                lower = bool(cur and old and cur["median"] < old["median"] - max(old["spread"], 0.02))
                median = pct(cur["median"]) if cur else "-"
                before = f"{pct(old['median'])} ({pct(old['spread'])})" if old else "-"
                lines.append(f"| {name} | {policy} | {rival} | {' | '.join(cells)} | {median} | {before} | "
                             f"{'LOWER' if lower else ''} |")
    lines.append("")
    for r in sorted(results, key=lambda r: (r["run"], r["seed"])):
        if "error" in r:
            lines.append(f"{r['run']} seed {r['seed']}: failed: {' '.join(r['error']) or 'no message'}")
        else:
            lines.append(f"{r['run']} seed {r['seed']}: {r['steps']:,} steps in {r['minutes']:.1f} min, best.pt "
                         f"the weights of step {r['best_step']:,}")
    return "\n".join(lines)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=opt.names(RUNS), default=",".join(RUNS),
                        help=f"comma-separated, of {', '.join(RUNS)}")
    parser.add_argument("--seeds", type=opt.seeds, default="0,1,2", help="comma-separated seeds")
    parser.add_argument("--games", type=opt.games, default=400, help="games per opponent and policy")
    parser.add_argument("--parallel", type=opt.integer(1), default=2, help="runs at once, one torch thread each")
    parser.add_argument("--out", type=opt.output_dir, help="keep the runs here (default: a temporary folder)")
    parser.add_argument("--stored", type=Path, default=STORED,
                        help=f"the stored figures, compared with and written by --save (default {STORED.name})")
    parser.add_argument("--save", action="store_true", help="store these figures in --stored, once every run "
                                                            "finished")
    args = parser.parse_args(argv)
    if args.save:  # what --save writes replaces every stored figure: only a whole guard may
        try:
            opt.output_file(str(args.stored))
        except argparse.ArgumentTypeError as exc:
            parser.error(f"--stored: {exc}")
        left_out = [n for n in RUNS if n not in args.runs]
        if left_out:
            parser.error(f"--save: stores the figures of every run; --runs leaves out {', '.join(left_out)}")
        if len(args.seeds) < 2:
            parser.error(f"--save: needs at least two seeds (a stored figure is their median and spread); got "
                         f"--seeds {','.join(map(str, args.seeds))}")
    return args


def read_stored(path: Path) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        stored = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        opt.fail(f"--stored {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})")
    if not isinstance(stored, dict) or not {"commit", "date", "summary"} <= set(stored):
        opt.fail(f"--stored {path}: not the guard's stored figures (commit, date, summary)")
    return stored


def unfinished(results: list[dict[str, Any]], jobs: list[tuple[str, int]]) -> list[str]:
    """The jobs without a score: failed, or missing from ``results``."""
    scored = {(r["run"], r["seed"]) for r in results if "scores" in r}
    return [f"{n} seed {s}" for n, s in jobs if (n, s) not in scored]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    stored = read_stored(args.stored)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.out or Path(tmp)
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            opt.fail(f"--out {root}: cannot write there ({exc.strerror or exc})")
        jobs = [(n, s) for n in args.runs for s in args.seeds]
        start = time.perf_counter()
        with ProcessPoolExecutor(args.parallel) as pool:
            results = list(pool.map(train_and_score, *zip(*jobs), [args.games] * len(jobs), [root] * len(jobs)))
    print(table(results, stored))
    print(f"\n{len(jobs)} runs, {args.parallel} at a time: {(time.perf_counter() - start) / 60:.1f} min; commit "
          f"{commit()}; {args.games} games per opponent and policy")
    missing = unfinished(results, jobs)
    if args.save and missing:  # a partial save would replace the stored figures with fewer, or none
        kept = f"the figures of {stored['commit']}" if stored else "no figures"
        opt.fail(f"--save refused: {len(missing)} of {len(jobs)} runs did not finish ({', '.join(missing)}); "
             f"{args.stored} keeps {kept}", status=1)
    if args.save:
        try:
            opt.write_text(args.stored, json.dumps({"commit": commit(), "date": time.strftime("%Y-%m-%d"),
                                                "games": args.games, "summary": summary(results), "results": results},
                                               indent=1) + "\n")
        except OSError as exc:
            opt.fail(f"--stored {args.stored}: cannot write ({exc.strerror or exc})", status=1)
        print(f"stored in {args.stored}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
