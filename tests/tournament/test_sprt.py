"""SPRT for gauntlets: the ratios against hand computations, pairing of side-swapped games, error rates
over simulated gauntlets, early stop, bad settings."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest

from arena.tournament import ConfigError, load_config, run_tournament
from arena.tournament.report import render
from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult
from arena.tournament.sprt import PAIR_SCORES, SPRTConfig, SPRTState, expected_score, llr, pentanomial_llr, verdict
from tourney_helpers import LEAGUE


def by_hand(counts: list[float], scores: tuple[float, ...], s0: float, s1: float) -> float:
    """The generalized ratio written out: p̂ the frequencies; for each hypothesis score s, the likeliest
    distribution with mean s is p_i = p̂_i / (1 + θ(a_i − s)) with Σ p̂_i (a_i − s) / (1 + θ(a_i − s)) = 0
    (θ by plain bisection: the sum decreases in θ); LLR = N Σ p̂_i log(p1_i / p0_i)."""
    n = sum(counts)
    freq = [c / n for c in counts]

    def fitted(s: float) -> list[float]:
        lo, hi = -1 / (max(scores) - s), -1 / (min(scores) - s)
        for _ in range(200):
            mid = (lo + hi) / 2
            if sum(f * (a - s) / (1 + mid * (a - s)) for f, a in zip(freq, scores)) > 0:
                lo = mid
            else:
                hi = mid
        return [f / (1 + lo * (a - s)) for f, a in zip(freq, scores)]

    p0, p1 = fitted(s0), fitted(s1)
    assert sum(p1) == pytest.approx(1) and sum(a * p for a, p in zip(scores, p1)) == pytest.approx(s1)
    return n * sum(f * math.log(b / a) for f, a, b in zip(freq, p0, p1))


def test_pentanomial_ratio_by_hand() -> None:
    pairs = [3, 8, 14, 9, 4]  # pairs scoring 0, ½, 1, 1½, 2
    s0, s1 = expected_score(0.0), expected_score(20.0)
    assert pentanomial_llr(pairs, 0.0, 20.0) == pytest.approx(by_hand(pairs, PAIR_SCORES, s0, s1), rel=1e-9)
    # symmetric counts score exactly ½ on average: evidence for H0 (Elo 0), against H1
    assert by_hand([2, 4, 8, 4, 2], PAIR_SCORES, s0, s1) < 0 < by_hand(pairs, PAIR_SCORES, s0, s1)
    # many pairs scoring near the hypotheses: the normal approximation N (s1 − s0)(2 ŝ − s0 − s1) / (2 σ̂²)
    # agrees closely
    many = [50 * c for c in pairs]
    n = sum(many)
    mean = sum(a * c for a, c in zip(PAIR_SCORES, many)) / n
    var = sum(c * (a - mean) ** 2 for a, c in zip(PAIR_SCORES, many)) / n
    assert pentanomial_llr(many, 0.0, 20.0) == pytest.approx(n * (s1 - s0) * (2 * mean - s0 - s1) / (2 * var), rel=0.02)


def test_trinomial_ratio_bounds_and_short_records() -> None:
    s0, s1 = expected_score(0.0), expected_score(50.0)
    assert llr(60, 30, 30, 0.0, 50.0) == pytest.approx(by_hand([30, 30, 60], (0.0, 0.5, 1.0), s0, s1), rel=1e-9)
    assert expected_score(0.0) == 0.5
    cfg = SPRTConfig(0.0, 50.0, 0.05, 0.1)
    assert cfg.bounds == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    assert verdict(10.0, cfg) == "H1" and verdict(-10.0, cfg) == "H0" and verdict(0.1, cfg) == ""
    assert llr(0, 0, 0, 0.0, 10.0) == 0.0 and pentanomial_llr([0] * 5, 0.0, 10.0) == 0.0
    assert llr(0, 7, 0, 0.0, 10.0) < 0, "only draws: a score of exactly ½, evidence for Elo 0"
    # a perfect record is finite evidence: about log(s1/s0) per won game, per won pair when paired
    assert llr(10, 0, 0, 0.0, 100.0) == pytest.approx(10 * math.log(expected_score(100.0) / 0.5), rel=1e-3)
    assert pentanomial_llr([0, 0, 0, 0, 10], 0.0, 100.0) == pytest.approx(llr(10, 0, 0, 0.0, 100.0), rel=1e-3)


def test_correlated_twins_are_weighed_as_pairs() -> None:
    """80 games, 50-0-30. Twins that go the same way (WW or LL) say less than 80 independent games;
    twins that split (WL) say the candidate is exactly even, more surely than the games alone."""
    together = pentanomial_llr([15, 0, 0, 0, 25], 0.0, 30.0)
    assert 0 < together < llr(50, 0, 30, 0.0, 30.0)
    split = pentanomial_llr([0, 0, 40, 0, 0], 0.0, 30.0)
    assert split < llr(40, 0, 40, 0.0, 30.0) < 0


def game(p1: int, p2: int, index: int, winner: int) -> GameResult:
    return GameResult(p1, p2, index, winner, 10, 0.0, 0.0)


def test_side_swapped_twins_pair_up_in_any_order() -> None:
    state = SPRTState.start(SPRTConfig(0.0, 30.0), (0,))
    state.add(game(0, 1, 0, P1_WINS))  # candidate as p1 wins game 0 against 1 …
    state.add(game(0, 2, 0, DRAW))  # … game 0 against another opponent is another pair
    assert state.records[0].model() == "trinomial"
    state.add(game(1, 0, 0, DRAW))  # … and draws the side-swapped twin: 1½ points
    state.add(game(2, 0, 0, P1_WINS))  # twin arriving second the other way: ½ point
    state.add(game(3, 0, 5, P2_WINS))  # waiting for its twin
    rec = state.records[0]
    assert rec.pairs == [0, 1, 0, 1, 0] and rec.wdl == [2, 2, 1] and rec.unpaired() == (1, 0, 0)
    assert rec.model() == "pentanomial + trinomial"
    assert state.value(0) == pytest.approx(pentanomial_llr(rec.pairs, 0.0, 30.0) + llr(1, 0, 0, 0.0, 30.0))
    (row,) = state.summary(["cand", "a", "b", "c"])
    assert row["model"] == "pentanomial + trinomial" and row["pentanomial"] == [0, 1, 0, 1, 0]
    assert row["unpaired"] == 1 and (row["wins"], row["draws"], row["losses"]) == (2, 2, 1)
    state.add(game(0, 3, 5, P1_WINS))
    assert rec.model() == "pentanomial" and rec.pairs == [0, 1, 0, 1, 1]


def load_benchmark():
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "sprt_error_rates.py"
    if str(path.parent) not in sys.path:  # as when run as a script: it imports its folder's script_args
        sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location("sprt_error_rates", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_error_rates_stay_near_alpha_and_beta_on_correlated_twins() -> None:
    """A small run of benchmarks/sprt_error_rates.py (1,000 gauntlets a row there): twins correlated
    through their start, H0 then H1 true. The bound is loose for 60 gauntlets: twice α or β."""
    bench = load_benchmark()
    setup = bench.Setup(cfg=SPRTConfig(0.0, 80.0, 0.05, 0.05), opponents=16, games_per_pairing=32, bias=0.25)
    for truth in ("H0", "H1"):
        (rates,) = bench.error_rates(setup, "start", truth, runs=60, models=("pentanomial",)).values()
        assert rates["wrong"] <= 0.10 and rates["undecided"] < 0.1, (truth, rates)


def test_a_decided_gauntlet_stops_early(write_league, registry) -> None:
    """A batch holds both sides of one pairing (16 games, max_envs 4): the first batch's twins pair up."""
    config = load_config(write_league(LEAGUE, format="gauntlet", candidates=["far"], games_per_pairing=16,
                                      max_envs=4, sprt={"elo0": 0, "elo1": 150, "alpha": 0.1, "beta": 0.1}))
    report = run_tournament(config, registry=registry, progress=False)
    assert report.run["stopped_by_sprt"] and report.games < report.expected_games
    (test,) = report.run["sprt"]
    assert test["candidate"] == "far" and test["verdict"] == "H1" and test["llr"] >= test["upper"]
    assert test["model"] == "pentanomial" and 2 * sum(test["pentanomial"]) == report.games
    md = (config.output / "report.md").read_text()
    assert "stopped early: the SPRT decided" in md and "## SPRT" in md
    assert "| far | 0 | 150 | 16-0-0 | 0-0-0-0-8 | 0 | pentanomial | +2.73 |" in md
    assert "pentanomial LLR +2.73" in render(report)


@pytest.mark.parametrize("settings, key, words", [
    ({"sprt": {"elo0": 0, "elo1": 5}}, "sprt", "only used with format: gauntlet"),
    ({"format": "gauntlet", "candidates": ["near"], "sprt": {"elo0": 5, "elo1": 5}}, "sprt", "elo0 < elo1"),
    ({"format": "gauntlet", "candidates": ["near"], "sprt": {"alpha": 0.7}}, "sprt.alpha", "(0, 0.5)"),
    ({"format": "gauntlet", "candidates": ["near"], "sprt": {"elo": 3}}, "sprt.elo", "unknown key"),
])
def test_bad_sprt_settings_name_their_key(write_league, settings, key, words) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(write_league(LEAGUE, **settings))
    assert exc.value.key == key and words in exc.value.message
