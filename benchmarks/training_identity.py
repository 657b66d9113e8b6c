"""Does training still run bit for bit as it did? Fixed-seed runs here and at another commit, compared.

    python benchmarks/training_identity.py --against 10f3992            # the five runs, about 10 updates each
    python benchmarks/training_identity.py --against HEAD~3 --updates 80 # about a minute of training each
    python benchmarks/training_identity.py --runs duel,mappo --save here.json

A refactor of the training floor must leave every update as it was. Each run trains for a fixed
number of env steps (never ``--max-time``: the count of updates must not depend on the clock) with
``--threads 1``, and is fingerprinted: every value of metrics.csv but the clock's (losses, learning
rate, KL, entropy, episode statistics, per-opponent win rates) and eval.csv, and a digest of each
tensor of the final checkpoint (weights, normalizers, optimizer moments, random streams, env state).
``--against REV`` runs the same commands in a git worktree of REV, with this interpreter (its
editable installs resolve to the worktree through ``PYTHONPATH``), and prints one row a run: updates
compared, whether every logged value and every tensor is identical, the first difference, and the
median wall time of an update here and there (the runs take turns, so a busy machine slows both).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import script_args as opt

ROOT = Path(__file__).resolve().parent.parent
CLOCK = {"time", "sps", "collect_sps"}  # metrics.csv columns that read the clock

# name -> (trainer, options, env steps an update): each run crosses what it is named for.
RUNS: dict[str, tuple[str, list[str], int]] = {
    "duel": ("ppo", ["--vs", "crank", "--num-envs", "1024"], 1024 * 32),
    # the warm-up ends after 3 updates; checkpoints every 2 feed the league's self-play draws
    "league": ("ppo", ["--vs", "league", "--num-envs", "512", "--set", "run.warm_up_steps=49152",
                       "--save-interval", "32768", "--set", "run.tenure=1"], 512 * 32),
    # the league kickstarted by the ace: the teacher's labels, and its memory over restarted battles
    "taught": ("ppo", ["--vs", "league", "--kickstart", "ace", "--num-envs", "512", "--set",
                       "run.warm_up_steps=49152", "--save-interval", "32768", "--set", "run.tenure=1"], 512 * 32),
    "mappo": ("mappo", ["--vs", "crank", "--num-envs", "512"], 512 * 32),
    # drawn opponents change every rollout: their battles restart, and the recurrent state there with them
    "mappo-self": ("mappo", ["--vs", "crank", "--vs", "self", "--num-envs", "512", "--recurrent",
                             "--save-interval", "32768", "--set", "run.tenure=1"], 512 * 32),
    "mappo-recurrent": ("mappo", ["--vs", "crank", "--num-envs", "512", "--recurrent"], 512 * 32),
    "nproc2": ("ppo", ["--vs", "crank", "--num-envs", "1024", "--nproc", "2"], 1024 * 32),
}


def pythonpath(tree: Path) -> str:
    """The project's packages in ``tree`` first on the path: the core and every plugin distribution."""
    paths = [str(tree)] + sorted(str(p) for p in (tree / "plugins").glob("*/") if (p / "pyproject.toml").exists())
    return os.pathsep.join(paths)


def train(tree: Path, name: str, updates: int, eval_games: int, out: Path) -> float:
    """Run ``name`` from the sources in ``tree``; returns its wall time."""
    trainer, options, per_update = RUNS[name]
    args = [sys.executable, "-m", "arena", "train", trainer, *options, "--threads", "1", "--seed", "0",
            "--max-steps", str(per_update * updates), "--eval-games", str(eval_games), "--no-progress",
            "--device", "cpu", "--out", str(out)]
    if "--save-interval" not in options:
        args += ["--save-interval", str(per_update * max(1, updates // 2))]
    env = {**os.environ, "PYTHONPATH": pythonpath(tree)}
    start = time.perf_counter()
    done = subprocess.run(args, cwd=tree, env=env, capture_output=True, text=True)
    if done.returncode:
        last = [line for line in done.stderr.splitlines() if line.strip()][-1:] or ["no message"]
        opt.fail(f"{name} at {tree} failed (arena train exit {done.returncode}): {last[0]}", status=1)
    return time.perf_counter() - start


def rows_of(path: Path) -> list[dict[str, str]]:
    if not path.exists():
        return []
    with path.open() as f:
        return list(csv.DictReader(f))


def update_seconds(rows: list[dict[str, str]]) -> float:
    """The median wall time of an update (rollout and update), the first one left out (it warms up)."""
    times = [float(row["time"]) for row in rows if row.get("time")]
    gaps = sorted(b - a for a, b in zip(times, times[1:]))
    return gaps[len(gaps) // 2] if gaps else float("nan")


def tensor_digests(value: Any, prefix: str = "") -> dict[str, str]:
    """sha256 of every tensor (and the repr of every other leaf) in a checkpoint, by its key path."""
    import torch

    out: dict[str, str] = {}
    if isinstance(value, dict):
        for key, item in value.items():
            if key in ("metrics", "config") or (prefix == "" and key == "counters"):
                continue  # the clock's time, and the settings: compared through metrics.csv and the run
            out.update(tensor_digests(item, f"{prefix}{key}."))
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            out.update(tensor_digests(item, f"{prefix}{i}."))
    elif isinstance(value, torch.Tensor):
        data = value.detach().cpu().contiguous().reshape(-1)
        out[prefix[:-1]] = hashlib.sha256(data.view(torch.uint8).numpy().tobytes() if data.numel() else b"").hexdigest()
    else:
        out[prefix[:-1]] = repr(value)
    return out


def fingerprint(out: Path) -> dict[str, Any]:
    import torch

    checkpoints = sorted(out.glob("ckpt_*.pt"))
    final = torch.load(checkpoints[-1], map_location="cpu", weights_only=True) if checkpoints else {}
    metrics = rows_of(out / "metrics.csv")
    return {"metrics": [{k: v for k, v in row.items() if k not in CLOCK} for row in metrics],
            "eval": rows_of(out / "eval.csv"), "update_s": update_seconds(metrics),
            "checkpoint": checkpoints[-1].name if checkpoints else None, "tensors": tensor_digests(final)}


def run_one(tree: Path, name: str, updates: int, eval_games: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix=f"identity-{name}-") as tmp:
        seconds = train(tree, name, updates, eval_games, Path(tmp) / "run")
        result = {**fingerprint(Path(tmp) / "run"), "seconds": seconds}
    print(f"  {name}: {len(result['metrics'])} updates in {seconds:.1f} s ({tree.name})", flush=True)
    return result


def first_difference(a: dict[str, Any], b: dict[str, Any]) -> str:
    for kind in ("metrics", "eval"):
        if len(a[kind]) != len(b[kind]):
            return f"{kind}.csv: {len(a[kind])} rows against {len(b[kind])}"
        for i, (x, y) in enumerate(zip(a[kind], b[kind])):
            for key in sorted(set(x) | set(y)):
                if x.get(key) != y.get(key):
                    return f"{kind}.csv row {i + 1} {key}: {x.get(key)} against {y.get(key)}"
    if a["checkpoint"] != b["checkpoint"]:
        return f"final checkpoint {a['checkpoint']} against {b['checkpoint']}"
    ta, tb = a["tensors"], b["tensors"]
    keys = [key for key in sorted(set(ta) | set(tb)) if ta.get(key) != tb.get(key)]
    if not keys:
        return ""
    # every differing entry is named, so a new field of a record is not mistaken for a change of the weights
    parts = [f"{key} differs" if key in ta and key in tb else f"{key} only on one side" for key in keys[:4]]
    return "checkpoint " + ", ".join(parts) + (f" and {len(keys) - 4} more" if len(keys) > 4 else "")


def revision(text: str) -> str:
    """``--against``: a commit of this repository, as git names it."""
    done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", f"{text}^{{commit}}"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode or not text.strip() or text.startswith("-"):
        raise argparse.ArgumentTypeError(f"expected a git revision of {ROOT}; got {text!r}")
    return text


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--against", type=revision, metavar="REV",
                        help="a git revision to compare with (run in a worktree)")
    parser.add_argument("--runs", type=opt.names(RUNS), default=",".join(RUNS),
                        help=f"comma-separated, of {', '.join(RUNS)}")
    parser.add_argument("--updates", type=opt.integer(1), default=10, help="updates a run (default 10)")
    parser.add_argument("--eval-games", type=opt.integer(0, opt.MAX_GAMES), default=16,
                        help="games a reference in each evaluation")
    parser.add_argument("--save", type=opt.output_file, help="write this tree's fingerprints to a JSON file")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    names = args.runs
    tree = None
    if args.against:
        base = Path(tempfile.mkdtemp(prefix="identity-tree-"))
        tree = base / "tree"
        added = subprocess.run(["git", "worktree", "add", "--detach", str(tree), args.against], cwd=ROOT,
                               capture_output=True, text=True)
        if added.returncode:
            shutil.rmtree(base, ignore_errors=True)
            last = [line for line in added.stderr.splitlines() if line.strip()][-1:] or ["no message"]
            opt.fail(f"--against {args.against}: git worktree add failed: {last[0]}", status=1)
    here: dict[str, Any] = {}
    there: dict[str, Any] = {}
    try:
        for name in names:  # each run here, then there: a machine that gets busier slows both alike
            here[name] = run_one(ROOT, name, args.updates, args.eval_games)
            if tree is not None:
                there[name] = run_one(tree, name, args.updates, args.eval_games)
    finally:
        if tree is not None:
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, capture_output=True)
            shutil.rmtree(tree.parent, ignore_errors=True)
    if args.save:
        try:
            args.save.write_text(json.dumps(here, indent=1))
        except OSError as exc:
            opt.fail(f"--save {args.save}: cannot write ({exc.strerror or exc})", status=1)
    if tree is None:
        return
    print(f"\n{'run':<16} {'updates':>7} {'evals':>5} {'tensors':>7} {'identical':>9}  {'s/update here':>13} "
          f"{'there':>6} {'ratio':>6}  first difference")
    failed = False
    for name in names:
        a, b = here[name], there[name]
        diff = first_difference(a, b)
        failed |= bool(diff)
        print(f"{name:<16} {len(a['metrics']):>7} {len(a['eval']):>5} {len(a['tensors']):>7} "
              f"{'yes' if not diff else 'NO':>9}  {a['update_s']:>13.3f} {b['update_s']:>6.3f} "
              f"{a['update_s'] / b['update_s']:>6.2f}  {diff or '-'}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
