"""Thread settings against a busy CPU: each command's defaults beside explicit thread settings.

    python benchmarks/threads.py                        # quiet, then with one core kept busy
    python benchmarks/threads.py --busy 1 --repeats 5   # only with one busy core
    python benchmarks/threads.py --workloads env:16384,play

Every measurement runs in a fresh process, because OpenMP reads its wait policy once, when torch
loads. The settings compared, in the table's columns:

- ``default``: the command as a user types it: no flag, no environment variable;
- ``1 thread`` / ``N threads``: ``--threads 1`` / ``--threads N`` (N = the usable cores);
- ``auto``: ``ARENA_THREADS=auto``, one thread per core found idle over 50 ms at start;
- ``torch default``: torch's own thread count and OpenMP's own wait policy (torch imported before
  arena, ``--threads 0``): what every command did before arena chose its defaults;
- ``library`` (``env:N`` only): a script that imports torch before arena and builds a ``TensorEnv``
  without choosing threads, as a notebook or a Gymnasium script does: the env settles the count.

Workloads: ``env:N`` steps N battles with random actions (env-steps/s); ``play`` is ``arena play crank
placeholder --games 4096`` (games/s, as the command reports it); ``league`` is ``arena tournament`` of
a four-agent league with 256 games a pairing (games/s over the whole command, start-up included).

``--busy K`` starts K processes that spin on the CPU for the whole measurement, like a second job on a
shared laptop or CI runner. Figures are medians of ``--repeats`` runs; ``def/1thr`` is the default's
rate over the one-thread rate under the same load, ``def/best`` over the best setting (and the same
for ``auto``).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import script_args as opt

ENV_CODE = """
import json, sys, time
import torch
from arena.env import TensorEnv
from arena.threads import apply_threads
n = int(sys.argv[1])
if sys.argv[2] != "library":  # a library user chooses nothing: the env settles the count
    apply_threads(None if sys.argv[2] == "default" else int(sys.argv[2]), batch=n)
env = TensorEnv(n, device="cpu", seed=0)
env.reset()
g = torch.Generator().manual_seed(0)
acts = [{"rudder": torch.rand(n, generator=g) * 2 - 1, "throttle": torch.rand(n, generator=g),
         "fire": torch.rand(n, generator=g) < 0.05} for _ in range(4)]
for i in range(5):
    env.step(acts[i % 4], acts[(i + 1) % 4])
steps = max(20, min(1000, 2_000_000 // n))
start = time.perf_counter()
for i in range(steps):
    env.step(acts[i % 4], acts[(i + 1) % 4])
print(json.dumps({"rate": n * steps / (time.perf_counter() - start)}))
"""

CLI_CODE = "import sys\nfrom arena.cli import main\nsys.argv = ['arena', *sys.argv[1:]]\nmain()\n"

LEAGUE = """name: bench-threads
output: {out}
seed: 0
device: cpu
max_envs: 16384
games_per_pairing: 256
participants:
  - crank
  - {{name: crank-long-shot, agent: crank, params: {{fire_range_frac: 1.0}}}}
  - {{name: crank-patient, agent: crank, params: {{fire_range_frac: 0.5, cooldown_s: 20.0}}}}
  - placeholder
"""
LEAGUE_GAMES = 6 * 256

SETTINGS = ("default", "auto", "1 thread", "N threads", "torch default", "library")


def spin() -> None:
    while True:
        pass


def child(code: str, setting: str, args: list[str]) -> str:
    """Run ``code`` in a fresh interpreter under ``setting``; returns its stdout."""
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_NUM_THREADS", "OMP_WAIT_POLICY", "ARENA_THREADS")}
    if setting == "auto":
        env["ARENA_THREADS"] = "auto"
    if setting in ("torch default", "library"):
        code = "import torch\n" + code  # torch (and OpenMP) load before arena can choose a policy
    return subprocess.run([sys.executable, "-c", code, *args], env=env, check=True, capture_output=True,
                          text=True).stdout


def thread_arg(setting: str, cores: int) -> str | None:
    return {"default": None, "auto": None, "1 thread": "1", "N threads": str(cores), "torch default": "0",
            "library": "library"}[setting]


def run_once(workload: str, setting: str, cores: int) -> float:
    threads = thread_arg(setting, cores)
    flag = [] if threads is None else ["--threads", threads]
    if setting == "library" and not workload.startswith("env:"):
        return float("nan")  # the commands choose threads themselves
    if workload.startswith("env:"):
        out = child(ENV_CODE, setting, [workload[4:], threads or "default"])
        return float(json.loads(out.strip().splitlines()[-1])["rate"])
    if workload == "play":
        out = child(CLI_CODE, setting, ["play", "crank", "placeholder", "--games", "4096", "--json", "--quiet",
                                        "--device", "cpu", *flag])
        return float(json.loads(out)["games_per_second"])
    if workload == "league":
        with tempfile.TemporaryDirectory() as tmp:
            league = Path(tmp) / "league.yaml"
            league.write_text(LEAGUE.format(out=str(Path(tmp) / "out")))
            start = time.perf_counter()
            child(CLI_CODE, setting, ["tournament", str(league), "--quiet", "--json", *flag])
            return LEAGUE_GAMES / (time.perf_counter() - start)
    opt.fail(f"unknown workload {workload!r}: expected env:N, play or league")


def measure(workloads: list[str], busy: int, repeats: int, cores: int,
            settings: tuple[str, ...] = SETTINGS) -> list[dict[str, object]]:
    spinners = [multiprocessing.Process(target=spin, daemon=True) for _ in range(busy)]
    for p in spinners:
        p.start()
    rows: list[dict[str, object]] = []
    try:
        for workload in workloads:
            rates = {s: statistics.median(run_once(workload, s, cores) for _ in range(repeats)) for s in settings}
            rates = {s: rate for s, rate in rates.items() if rate == rate}  # NaN: not measured for this workload
            best = max(rates.values())
            rows.append({"workload": workload, "busy": busy, **rates,
                         **{f"{short}/1thr": rates[s] / rates["1 thread"] for s, short in RATED if s in rates},
                         **{f"{short}/best": rates[s] / best for s, short in RATED if s in rates}})
            print(format_row(rows[-1]), file=sys.stderr, flush=True)
    finally:
        for p in spinners:
            p.terminate()
    return rows


RATED = (("default", "def"), ("auto", "auto"))
RATIOS = ("def/1thr", "def/best", "auto/1thr", "auto/best")


def format_row(r: dict[str, object]) -> str:
    cells = " ".join(f"{float(r[s]):>13,.0f}" if s in r else f"{'-':>13}" for s in SETTINGS)  # type: ignore[arg-type]
    ratios = " ".join(f"{float(r[k]):>9.2f}" if k in r else f"{'-':>9}" for k in RATIOS)  # type: ignore[arg-type]
    return f"{r['workload']:<12} {r['busy']:>4} {cells} {ratios}"


def workload_list(text: str) -> list[str]:
    """``--workloads``: comma-separated ``env:N`` (N battles), ``play``, ``league``."""
    words = [w.strip() for w in text.split(",")]
    for w in words:
        n = w[4:] if w.startswith("env:") else ""
        if w not in ("play", "league") and not (n.isdigit() and 1 <= int(n) <= opt.MAX_GAMES):
            raise argparse.ArgumentTypeError(f"expected comma-separated env:N (N battles, at least 1), play or "
                                             f"league; got {text!r}")
    return words


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    ap = opt.ScriptParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workloads", type=workload_list, default="env:1024,env:16384,env:65536,play,league",
                    help="comma-separated: env:N, play, league")
    ap.add_argument("--busy", type=opt.integer(0, 1024), action="append",
                    help="spinning processes (repeatable; default 0 and 1)")
    ap.add_argument("--repeats", type=opt.integer(1), default=3)
    ap.add_argument("--settings", type=opt.names(SETTINGS), default=",".join(SETTINGS),
                    help="comma-separated settings to time (1 thread is always timed: the ratios need it)")
    ap.add_argument("--json", action="store_true", help="print the rows as one JSON list")
    return ap.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cores = len(os.sched_getaffinity(0))
    wanted = set(args.settings) | {"1 thread"}
    settings = tuple(s for s in SETTINGS if s in wanted)
    rows = []
    for busy in args.busy or [0, 1]:
        rows += measure(args.workloads, busy, args.repeats, cores, settings)
    if args.json:
        print(json.dumps(rows))
        return
    print(f"{cores} usable cores (N threads = {cores}); medians of {args.repeats} runs; "
          "env: env-steps/s, play and league: games/s")
    print(f"{'workload':<12} {'busy':>4} " + " ".join(f"{s:>13}" for s in SETTINGS) + " "
          + " ".join(f"{k:>9}" for k in RATIOS))
    for r in rows:
        print(format_row(r))


if __name__ == "__main__":
    main()
