"""Match statistics of a candidate against each opponent, against hand computations."""

from __future__ import annotations

import math
import random

import pytest

from arena.tournament import load_config, run_tournament
from arena.tournament.matchups import elo_from_score, match_stats, matchups
from arena.tournament.report import render
from arena.tournament.results import GameResult
from tourney_helpers import LEAGUE


def test_a_record_gives_the_testers_figures() -> None:
    stats = match_stats(70, 20, 30)  # 120 games, score 80/120
    s = 80 / 120
    assert stats["score"] == pytest.approx(s)
    assert stats["elo_diff"] == pytest.approx(-400 * math.log10(1 / s - 1))
    sigma = math.sqrt((70 * (1 - s) ** 2 + 20 * (0.5 - s) ** 2 + 30 * s ** 2) / 120 / 120)
    low, high = elo_from_score(s - 1.959963984540054 * sigma), elo_from_score(s + 1.959963984540054 * sigma)
    assert stats["elo_error"] == pytest.approx((high - low) / 2)
    assert stats["los"] == pytest.approx(0.5 * (1 + math.erf(40 / math.sqrt(2 * 100))))
    assert stats["draw_ratio"] == pytest.approx(20 / 120)


def test_even_perfect_and_empty_records() -> None:
    even = match_stats(10, 5, 10)
    assert even["elo_diff"] == 0.0 and even["los"] == 0.5
    perfect = match_stats(12, 0, 0)
    assert perfect["elo_diff"] == math.inf and math.isnan(perfect["elo_error"]) and perfect["los"] > 0.99
    assert match_stats(0, 4, 0)["los"] == 0.5
    assert math.isnan(match_stats(0, 0, 0)["score"])


def test_counted_from_the_candidates_side_whichever_side_it_flew() -> None:
    games = [GameResult(0, 1, 0, 1, 10, 0, 0), GameResult(1, 0, 0, 1, 10, 0, 0), GameResult(2, 0, 0, 0, 10, 0, 0),
             GameResult(0, 2, 0, 2, 10, 0, 0)]
    frame = matchups(games, ["cand", "b", "c"], [0])
    rows = {r.opponent: (r.wins, r.draws, r.losses) for r in frame.itertuples()}
    assert rows == {"b": (1, 0, 1), "c": (0, 1, 1)}


def test_the_counts_are_a_loop_over_the_games() -> None:
    rng = random.Random(4)
    games = [GameResult(a, b, k, rng.choice([0, 1, 2]), 10, 0, 0)
             for a in range(6) for b in range(6) if a != b and rng.random() < 0.7 for k in range(rng.randrange(1, 5))]
    candidates = [4, 1, 5]
    tally: dict[tuple[int, int], list[int]] = {}
    for g in games:
        for me, other, mine in ((g.p1, g.p2, 1), (g.p2, g.p1, 2)):
            if me in candidates:
                row = tally.setdefault((me, other), [0, 0, 0])
                row[0 if g.winner == mine else 1 if g.winner == 0 else 2] += 1
    expected = [(me, other, *wdl) for (me, other), wdl in
                sorted(tally.items(), key=lambda kv: (candidates.index(kv[0][0]), kv[0][1]))]
    names = [f"p{i}" for i in range(6)]
    frame = matchups(games, names, candidates)
    got = [(names.index(r.candidate), names.index(r.opponent), r.wins, r.draws, r.losses) for r in frame.itertuples()]
    assert got == expected and (frame["games"] == frame["wins"] + frame["draws"] + frame["losses"]).all()


def test_a_gauntlet_reports_its_candidates(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE, format="gauntlet", candidates=["near"]))
    report = run_tournament(config, registry=registry, progress=False)
    assert report.matchups is not None and list(report.matchups["opponent"]) == ["far", "idle"]
    assert int(report.matchups["games"].sum()) == report.games
    assert "candidates (Elo difference" in render(report)
    assert "## Candidates" in (config.output / "report.md").read_text()
