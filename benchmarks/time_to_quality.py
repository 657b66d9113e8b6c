"""Wall time to the demo's quality: training arms side by side, each checkpoint scored afterwards.

    python benchmarks/time_to_quality.py --minutes 8                         # eager against ARENA_COMPILE=1
    python benchmarks/time_to_quality.py --arm eager= --arm "two-epochs=--set ppo.n_epochs=2" --seeds 0,1
    python benchmarks/time_to_quality.py --arm "gpu=--device cuda" --one-at-a-time --games 1000 --device cuda

An arm is ``NAME=ARGS``: extra ``arena train ppo`` arguments, and ``ENV=VALUE`` words in front of them
set environment variables (``compiled=ARENA_COMPILE=1``). Every arm of a seed trains at the same time,
one process a core with one torch thread each, so a busy machine slows them alike; the arms of the next
seed start when those end. Each run trains against CrankAgent for ``--minutes`` with a checkpoint every
``--save-updates`` updates and no evaluation inside the timed training. Afterwards the checkpoints are
scored in order, sampled as the trainer evaluates (``--games`` against CrankAgent, then against the
placeholder; a tenth of the CrankAgent games first, to pass over the checkpoints that lose one), until
the first that wins every CrankAgent game and at least ``--placeholder`` of the placeholder's. The arm's
time to quality is the wall time from the command to that checkpoint's file, start-up and compilation
included; the training clock's (metrics.csv) is shown beside it. On a GPU, ``--one-at-a-time`` trains
the arms one after another, so that none shares the GPU with another.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import script_args as opt

ROLLOUT = 1024 * 32  # env steps an update at the defaults


@dataclass
class Arm:
    name: str
    env: dict[str, str]
    args: list[str]

    @classmethod
    def parse(cls, text: str) -> "Arm":
        """``NAME=[ENV=VALUE ...] [ARGS]``; raises ``ValueError`` for what cannot be one."""
        name, _, rest = text.partition("=")
        name = name.strip() or "arm"
        if not ARM_NAME.fullmatch(name):
            raise ValueError(f"{name!r} is not a name for a folder (letters, digits, '.', '_' and '-')")
        words = shlex.split(rest)  # ValueError for an unclosed quote
        env = {}
        while words and "=" in words[0] and not words[0].startswith("-"):
            key, _, value = words.pop(0).partition("=")
            env[key] = value
        return cls(name, env, words)


ARM_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._-]*")


def arm(text: str) -> Arm:
    """``--arm``'s converter: an :class:`Arm`, or argparse's one-line error."""
    try:
        return Arm.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"expected NAME=[ENV=VALUE ...] [ARGS]; got {text!r} ({exc})") from None


def train(arm: Arm, seed: int, minutes: float, save_updates: int, out: Path) -> subprocess.Popen[bytes]:
    """Start one training run in its own process (one torch thread), logging to ``out/train.log``."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "launched").write_text(repr(time.time()))  # the wall clock at the command: time to quality counts from it
    command = [sys.executable, "-c", "from arena.cli import main; main()", "train", "ppo", "--vs", "crank",
               "--seed", str(seed), "--threads", "1", "--eval-games", "0", "--max-time", str(minutes * 60),
               "--max-steps", str(10**12),
               "--save-interval", str(save_updates * ROLLOUT), "--out", str(out), *arm.args]
    log = open(out / "train.log", "wb")  # noqa: SIM115  - closed with the process
    return subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **arm.env})


def clock_at(out: Path) -> dict[int, tuple[float, int]]:
    """Training seconds and update count at each step of metrics.csv."""
    with open(out / "metrics.csv", newline="") as f:
        return {int(r["step"]): (float(r["time"]), int(r["update"])) for r in csv.DictReader(f)}


def first_good(out: Path, games: int, placeholder_floor: float, seed: int, device: str = "cpu"
               ) -> dict[str, Any] | None:
    """The first checkpoint (in training order) at the demo's quality, sampled on ``device``; None if none is."""
    import torch

    from arena.agents import build_agent
    from arena.match import play_match
    from arena.training import checkpoint_step, list_checkpoints
    from arena_ppo.agent import PPOAgent

    rivals = {name: build_agent(name, device) for name in ("crank", "placeholder")}
    launched = float((out / "launched").read_text())
    screen = max(games // 10, min(games, 50))  # a checkpoint that loses one of these games is not scored in full

    def won(agent: Any, rival: str, count: int, offset: int) -> float:
        with torch.random.fork_rng(devices=[]):
            r = play_match(agent, rivals[rival], count, env_config=agent.env_config, device=device,
                           seed=seed + offset, policies=("sampled", "deterministic"))
        return r.wins / r.games

    for path in list_checkpoints(out):
        agent = PPOAgent.load(path, device)
        if won(agent, "crank", screen, 555) < 1 or won(agent, "crank", games, 777) < 1:
            continue
        placeholder = won(agent, "placeholder", games, 777)
        if placeholder >= placeholder_floor:
            return {"step": checkpoint_step(path), "crank": 1.0, "placeholder": placeholder,
                    "wall_s": path.stat().st_mtime - launched}
    return None


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arm", type=arm, action="append", default=None, metavar="NAME=[ENV=VALUE ...] [ARGS]",
                        help="a training arm (default: eager=ARENA_COMPILE=0 and compiled=ARENA_COMPILE=1)")
    parser.add_argument("--minutes", type=opt.number(0, above=True, unit="minutes"), default=8.0,
                        help="training budget of each run")
    parser.add_argument("--seeds", type=opt.seeds, default="0", help="comma-separated seeds; each seed's arms train "
                                                                 "side by side")
    parser.add_argument("--save-updates", type=opt.integer(1), default=8, help="updates between checkpoints")
    parser.add_argument("--games", type=opt.games, default=200, help="sampled games per opponent and checkpoint")
    parser.add_argument("--placeholder", type=opt.number(0, 1, what="a share from 0 to 1"), default=0.85,
                        help="share of the placeholder's games to win")
    parser.add_argument("--one-at-a-time", action="store_true", help="train the arms of a seed one after another")
    parser.add_argument("--device", type=opt.device, default="cpu", help="where the checkpoints are scored")
    parser.add_argument("--out", type=opt.output_dir,
                        default=str(Path("runs") / f"quality-{time.strftime('%Y%m%d-%H%M%S')}"))
    args = parser.parse_args(argv)
    args.arm = args.arm or [Arm.parse(a) for a in ("eager=ARENA_COMPILE=0", "compiled=ARENA_COMPILE=1")]
    named = [a.name for a in args.arm]
    twice = sorted({n for n in named if named.count(n) > 1})
    if twice:
        parser.error(f"--arm: two arms named {', '.join(map(repr, twice))}; each arm's runs need a folder of their "
                     "own")
    return args


def last_line(log: Path) -> str:
    """The last line a run wrote (its error, for one that failed)."""
    try:
        with log.open("rb") as handle:
            handle.seek(max(0, log.stat().st_size - 4096))
            lines = [line.strip() for line in handle.read().decode(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def measured(arm: Arm, seed: int, out: Path, code: int) -> dict[str, Any]:
    """A run's row: its speed, or why it has none (``failed``)."""
    row: dict[str, Any] = {"arm": arm.name, "seed": seed}
    clock = clock_at(out) if code == 0 and (out / "metrics.csv").exists() else {}
    if code != 0:
        row["failed"] = f"arena train exit {code}: {last_line(out / 'train.log') or 'no message'}"
    elif not clock:
        row["failed"] = "no update logged"
    else:
        last = max(clock)
        row.update(steps=last, updates=clock[last][1], sps=last / clock[last][0])
    return row


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    from arena.threads import apply_threads

    apply_threads(1, batch=args.games)
    arms = args.arm
    try:
        args.out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        opt.fail(f"--out {args.out}: cannot write there ({exc.strerror or exc})")
    print(f"{len(arms)} arms x {len(args.seeds)} seeds, {args.minutes:g} min each, "
          f"{'one at a time' if args.one_at_a_time else 'side by side'}; output {args.out}", flush=True)
    results: list[dict[str, Any]] = []
    for seed in args.seeds:
        runs = {arm.name: args.out / f"{arm.name}-seed{seed}" for arm in arms}
        procs = []
        for arm in arms:
            procs.append(train(arm, seed, args.minutes, args.save_updates, runs[arm.name]))
            if args.one_at_a_time:
                procs[-1].wait()
        codes = [proc.wait() for proc in procs]
        for arm, code in zip(arms, codes, strict=True):
            out = runs[arm.name]
            row = measured(arm, seed, out, code)
            results.append(row)
            if "failed" in row:
                print(f"{arm.name:>12} seed {seed}: failed ({row['failed']}); see {out / 'train.log'}", flush=True)
                continue
            good = first_good(out, args.games, args.placeholder, seed, args.device)
            if good:
                clock = clock_at(out)
                row.update(quality_s=good["wall_s"], training_s=clock[good["step"]][0], quality_step=good["step"],
                           placeholder=good["placeholder"])
            reached = (f"{row['quality_s']:7.1f} s from the command ({row['training_s']:.1f} s of training) at "
                       f"{row['quality_step']:>11,} steps (placeholder {row['placeholder']:.1%})" if good
                       else "not reached")
            print(f"{arm.name:>12} seed {seed}: {row['steps']:>11,} steps, {row['updates']:>4} updates, "
                  f"{row['sps']:>8,.0f} env-steps/s; quality {reached}", flush=True)
    try:
        (args.out / "results.json").write_text(json.dumps(results, indent=1))
    except OSError as exc:
        opt.fail(f"{args.out / 'results.json'}: cannot write ({exc.strerror or exc})", status=1)
    print("\n| arm | env-steps/s, median | time to quality from the command, median | reached |\n"
          "|---|---:|---:|---:|")
    for arm in arms:
        rows = [r for r in results if r["arm"] == arm.name and "failed" not in r]
        failed = sum(r["arm"] == arm.name and "failed" in r for r in results)
        times = [r["quality_s"] for r in rows if "quality_s" in r]
        median = f"{statistics.median(times):.1f} s" if times else "-"
        speed = f"{statistics.median(r['sps'] for r in rows):,.0f}" if rows else "failed"
        note = f" ({failed} failed)" if failed else ""
        print(f"| {arm.name} | {speed} | {median} | {len(times)} of {len(rows) + failed}{note} |")
    failures = [f"{r['arm']} seed {r['seed']}" for r in results if "failed" in r]
    if failures:
        opt.fail(f"{len(failures)} of {len(results)} runs failed ({', '.join(failures)}): see their train.log under "
             f"{args.out}", status=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
