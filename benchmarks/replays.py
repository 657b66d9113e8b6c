"""What recording costs: battles per second with no recorder, with a recorder on a few battles and on
every battle, alternating the settings round by round so a busy machine slows all of them alike.

Run: python benchmarks/replays.py [--games 4096] [--team-sizes 1,4] [--watch 0,16,all] [--rounds 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import arena  # noqa: F401  - before torch: arena chooses the OpenMP wait policy  # isort: skip
import torch

import script_args as opt
from arena.agents import build_agent
from arena.env import EnvConfig, resolve_device
from arena.match import play_match
from arena.replay import BattleRecorder
from arena.threads import HELP as THREADS_HELP
from arena.threads import apply_threads


def one_match(games: int, team_size: int, watch: str, device: torch.device) -> tuple[float, int]:
    """(games per second, wins of A) of crank against placeholder with ``watch`` battles recorded."""
    cfg = EnvConfig(team_size=team_size)
    a, b = build_agent("crank", device, cfg), build_agent("placeholder", device, cfg)
    observers = []
    if watch != "0":
        count = games if watch == "all" else min(int(watch), games)
        observers.append(BattleRecorder(range(0, games, max(1, games // count))[:count], first_only=True))
    start = time.perf_counter()
    result = play_match(a, b, games, env_config=cfg, device=device, seed=0, observers=observers)
    return games / (time.perf_counter() - start), result.wins


def watch_list(text: str) -> list[str]:
    """``--watch``: comma-separated counts of battles recorded (0: none), or ``all``."""
    words = [w.strip() for w in text.split(",")]
    if not all(w == "all" or (w.isdigit() and int(w) <= opt.MAX_GAMES) for w in words):
        raise argparse.ArgumentTypeError(f"expected comma-separated counts of battles (0 for none) or 'all'; "
                                         f"got {text!r}")
    return [w if w == "all" else str(int(w)) for w in words]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=opt.games, default=4096)
    parser.add_argument("--team-sizes", type=opt.comma_ints(1, opt.MAX_TEAM), default="1,4")
    parser.add_argument("--watch", type=watch_list, default="0,16,all", help="battles recorded: counts, or 'all'")
    parser.add_argument("--rounds", type=opt.integer(1), default=5)
    parser.add_argument("--device", type=opt.device, default="cpu")
    parser.add_argument("--threads", type=opt.threads, default=None, help=THREADS_HELP)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    apply_threads(args.threads, args.games)
    device = resolve_device(args.device)
    settings = [(t, w) for t in args.team_sizes for w in args.watch]
    rates: dict[tuple[int, str], list[float]] = {s: [] for s in settings}
    wins: dict[tuple[int, str], set[int]] = {s: set() for s in settings}
    for _ in range(args.rounds):
        for t, w in settings:
            rate, won = one_match(args.games, t, w, device)
            rates[t, w].append(rate)
            wins[t, w].add(won)
    print(f"crank v placeholder, {args.games:,} battles on {device}, torch threads {torch.get_num_threads()}, "
          f"median of {args.rounds} rounds")
    print(f"{'team':>5} {'recorded':>9} {'games/s':>10} {'vs none':>8} {'A wins':>7}")
    for t, w in settings:
        base = statistics.median(rates[t, "0"]) if (t, "0") in rates else float("nan")
        med = statistics.median(rates[t, w])
        print(f"{t:>5} {w:>9} {med:>10,.0f} {med / base:>8.2f} {'/'.join(str(x) for x in sorted(wins[t, w])):>7}")


if __name__ == "__main__":
    main()
