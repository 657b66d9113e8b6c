"""SPRT for gauntlets: the ratio against a hand computation, the bounds, early stop, bad settings."""

from __future__ import annotations

import math

import pytest

from arena.tournament import ConfigError, load_config, run_tournament
from arena.tournament.sprt import SPRTConfig, SPRTState, expected_score, llr, verdict
from tourney_helpers import LEAGUE


def test_ratio_and_bounds_by_hand() -> None:
    w, d, l_ = 60, 30, 30
    s0, s1 = 0.5, 1 / (1 + 10 ** (-50 / 400))
    half = 0.5 * d / 120
    expected = w * math.log((s1 - half) / (s0 - half)) + l_ * math.log((1 - s1 - half) / (1 - s0 - half))
    assert llr(w, d, l_, 0.0, 50.0) == pytest.approx(expected)
    assert expected_score(0.0) == 0.5
    cfg = SPRTConfig(0.0, 50.0, 0.05, 0.1)
    assert cfg.bounds == pytest.approx((math.log(0.1 / 0.95), math.log(0.9 / 0.05)))
    assert verdict(10.0, cfg) == "H1" and verdict(-10.0, cfg) == "H0" and verdict(0.1, cfg) == ""
    assert llr(0, 0, 0, 0.0, 10.0) == 0.0 and llr(0, 7, 0, 0.0, 10.0) == 0.0  # draws carry no evidence
    assert llr(10, 0, 0, 0.0, 100.0) == pytest.approx(10 * math.log(expected_score(100.0) / 0.5))  # perfect


def test_state_counts_from_the_candidates_side() -> None:
    state = SPRTState.start(SPRTConfig(), (0,))
    state.add(0, 1, 1)  # candidate as p1 wins
    state.add(1, 0, 1)  # candidate as p2 loses
    state.add(2, 0, 0)
    assert state.records[0] == [1, 1, 1]


def test_a_decided_gauntlet_stops_early(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE, format="gauntlet", candidates=["far"], games_per_pairing=64,
                                      max_envs=4, sprt={"elo0": 0, "elo1": 100, "alpha": 0.1, "beta": 0.1}))
    report = run_tournament(config, registry=registry, progress=False)
    assert report.run["stopped_by_sprt"] and report.games < report.expected_games
    (test,) = report.run["sprt"]
    assert test["candidate"] == "far" and test["verdict"] == "H1" and test["llr"] >= test["upper"]
    assert "stopped early: the SPRT decided" in (config.output / "report.md").read_text()


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
