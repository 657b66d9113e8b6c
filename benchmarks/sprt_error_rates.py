"""Does the gauntlet SPRT keep its error rates? Simulated gauntlets whose truth is H0 or H1.

    python benchmarks/sprt_error_rates.py                # 1,000 gauntlets a row
    python benchmarks/sprt_error_rates.py --runs 200 --bias 0.2

A gauntlet is one candidate against opponents of equal strength, played in the order and batches the
executor plays them (``schedule.units`` cut by ``plan_batches`` at ``max_envs`` 16, so 64 games a
batch), with the runner's check between batches: the league stops once the test is decided, and a test
still undecided when the schedule ends stays undecided. Two layouts of 2,048 games:

- ``32 x 64``: 32 opponents, 64 games per pairing; a batch is one pairing from both sides, so the twin
  games of a pair are checked together;
- ``4 x 512``: 4 opponents, 512 games per pairing; a batch holds one side of one pairing, so a game's
  twin comes four batches later and most decisions fall on games still waiting for theirs.

The candidate's true Elo advantage is ``elo0`` (H0 holds) or ``elo1`` (H1 holds); a game is a draw with
probability 0.2 and the candidate's mean score is the one its Elo predicts. How the two games of a
side-swapped pair relate:

- ``independent``: not at all;
- ``side``: the start favours one side, by ``bias`` on the candidate's mean score in the game where it
  flies that side and −``bias`` in the other (the twins' scores are negatively correlated);
- ``start``: the start favours the candidate, or its opponent, in both games by ``bias`` (positively
  correlated: counting the twins as two independent games overstates the evidence).

Two tests on the same games: ``pentanomial`` (the arena's: completed pairs as one observation, the
halves waiting for their twin as single games) and ``trinomial`` (every game as independent). Printed
per row: the wrong decisions (H1 accepted when H0 holds: aim at most α; H0 accepted when H1 holds: at
most β) among all gauntlets and among the decided ones, the undecided share, and the games played.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache

import numpy as np

import script_args as opt
from arena.tournament.batching import plan_batches
from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult
from arena.tournament.schedule import pairings, units
from arena.tournament.sprt import SPRTConfig, SPRTState, Verdict, expected_score

RELATIONS = ("independent", "side", "start")
MODELS = ("pentanomial", "trinomial")
DRAW_RATE = 0.2


@dataclass(frozen=True)
class Setup:
    """One gauntlet's shape and the test it runs."""

    cfg: SPRTConfig = SPRTConfig(elo0=0.0, elo1=50.0, alpha=0.05, beta=0.05)
    opponents: int = 32
    games_per_pairing: int = 64
    max_envs: int = 16
    bias: float = 0.3


@lru_cache(maxsize=8)
def schedule(opponents: int, games_per_pairing: int, max_envs: int) -> tuple[tuple[tuple[int, int, int], ...], ...]:
    """The games of a gauntlet (candidate 0) as the executor batches them: ``(p1, p2, game)`` per game."""
    plan = plan_batches(units(pairings(opponents + 1, "gauntlet", [0]), games_per_pairing), max_envs)
    return tuple(tuple((u.p1, u.p2, g) for u in batch.units for g in u.games) for batch in plan)


def outcomes(setup: Setup, elo: float, relation: str, rng: np.random.Generator) -> dict[tuple[int, int, int], int]:
    """The winner code of every scheduled game, drawn once so that both tests see the same games."""
    s, d, b = expected_score(elo), DRAW_RATE, setup.bias
    if not (0.0 <= s - d / 2 - b and s - d / 2 + b <= 1.0 and 0.0 <= 1 - s - d / 2 - b):
        raise ValueError(f"bias {b} and draws {d} leave no valid game at score {s:.3f}")
    games = [g for batch in schedule(setup.opponents, setup.games_per_pairing, setup.max_envs) for g in batch]
    pair_sign = {}  # a start's lean: +1 towards the candidate (start) or towards side 1 (side)
    out = {}
    for p1, p2, game in games:
        key = (min(p1, p2), max(p1, p2), game)
        sign = pair_sign.setdefault(key, 1 if rng.random() < 0.5 else -1)
        cand_side = 1 if p1 == 0 else 2
        shift = 0.0 if relation == "independent" else b * sign if relation == "start" else \
            b * sign * (1 if cand_side == 1 else -1)
        u = rng.random()
        win = s - d / 2 + shift
        result = "W" if u < win else "D" if u < win + d else "L"
        out[(p1, p2, game)] = DRAW if result == "D" else (P1_WINS if (result == "W") == (cand_side == 1) else P2_WINS)
    return out


def gauntlet(setup: Setup, games: dict[tuple[int, int, int], int], model: str) -> tuple[Verdict, int]:
    """Play the schedule batch by batch until the test decides: the verdict ("" undecided), games played.
    The trinomial test sees every game under its own number, so no game ever finds a twin."""
    state = SPRTState.start(setup.cfg, (0,))
    played = 0
    template = GameResult(0, 0, 0, DRAW, 1, 0.0, 0.0)
    for batch in schedule(setup.opponents, setup.games_per_pairing, setup.max_envs):
        if state.decided():
            break
        for p1, p2, game in batch:
            number = game if model == "pentanomial" else played
            state.add(replace(template, p1=p1, p2=p2, game_index=number, winner=games[(p1, p2, game)]))
            played += 1
    return state.summary(["candidate"])[0]["verdict"], played  # type: ignore[return-value]


def error_rates(setup: Setup, relation: str, truth: str, runs: int, seed: int = 0,
                models: Sequence[str] = MODELS) -> dict[str, dict[str, float]]:
    """Per model: ``wrong`` (share of all runs), ``wrong_decided``, ``undecided``, ``games`` (mean)."""
    elo = setup.cfg.elo0 if truth == "H0" else setup.cfg.elo1
    wrong_verdict = "H1" if truth == "H0" else "H0"
    tally = {m: {"wrong": 0, "decided": 0, "games": 0} for m in models}
    for run in range(runs):
        rng = np.random.default_rng([seed, RELATIONS.index(relation), truth == "H1", run])
        games = outcomes(setup, elo, relation, rng)
        for m in models:
            said, played = gauntlet(setup, games, m)
            tally[m]["wrong"] += said == wrong_verdict
            tally[m]["decided"] += said != ""
            tally[m]["games"] += played
    return {m: {"wrong": t["wrong"] / runs, "wrong_decided": t["wrong"] / t["decided"] if t["decided"] else 0.0,
                "undecided": 1.0 - t["decided"] / runs, "games": t["games"] / runs} for m, t in tally.items()}


def max_bias(cfg: SPRTConfig) -> float:
    """The largest lean that leaves every game a valid probability at both hypotheses' scores."""
    return min(min(s - DRAW_RATE / 2, 1 - s - DRAW_RATE / 2) for s in (expected_score(cfg.elo0),
                                                                       expected_score(cfg.elo1)))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = opt.ScriptParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=opt.integer(1), default=1000, help="gauntlets per row (default 1000)")
    most = math.floor(max_bias(Setup().cfg) * 1000) / 1000
    parser.add_argument("--bias", type=opt.number(0, most, what=f"a lean from 0 to {most:.3f}"), default=Setup.bias,
                        help=f"a start's lean on the mean score (at most {most:.3f})")
    parser.add_argument("--seed", type=opt.seed, default=0)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    cfg = Setup().cfg
    print(f"SPRT elo0 {cfg.elo0:g}, elo1 {cfg.elo1:g}, alpha {cfg.alpha:g}, beta {cfg.beta:g}; max_envs "
          f"{Setup.max_envs}, draws {DRAW_RATE:.0%}, lean {args.bias:g}; {args.runs} gauntlets a row\n")
    print("| layout | pairs' games | truth | model | wrong (aim) | wrong among decided | undecided | mean games |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    start = time.perf_counter()
    for opponents, per_pairing in ((32, 64), (4, 512)):
        setup = Setup(opponents=opponents, games_per_pairing=per_pairing, bias=args.bias)
        for relation in RELATIONS:
            for truth in ("H0", "H1"):
                aim = cfg.alpha if truth == "H0" else cfg.beta
                for model, r in error_rates(setup, relation, truth, args.runs, args.seed).items():
                    print(f"| {opponents} x {per_pairing} | {relation} | {truth} | {model} | {r['wrong']:.1%} "
                          f"(≤ {aim:.0%}) | {r['wrong_decided']:.1%} | {r['undecided']:.1%} | {r['games']:.0f} |",
                          flush=True)
    print(f"\n{time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
