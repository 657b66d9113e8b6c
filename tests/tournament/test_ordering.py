"""What ranks the leaderboard: the Elo of all games by default, the Elo against the references when the
league file asks (``rating.rank_by``); a training run's checkpoints by their rating over training."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest

from arena.tournament import ConfigError, RatingConfig, load_config, rebuild_report, run_tournament
from arena.tournament.ordering import ordered
from arena.tournament.over_training import training_runs
from arena.tournament.ratings import ABOVE_REFERENCES, REFERENCE
from arena.tournament.report import Entrant, build_report
from arena.tournament.results import P1_WINS, P2_WINS, GameResult

NAMES = ("weak", "weaker", "strong", "stronger", "sniper")


def record(games: list[GameResult], a: int, b: int, wins: int, losses: int) -> None:
    """``a`` (p1) against ``b``: ``wins`` and ``losses`` of a, as games."""
    games.extend(GameResult(a, b, k, P1_WINS if k < wins else P2_WINS, 10, 0.0, 0.0) for k in range(wins + losses))


def sniper_league() -> list[GameResult]:
    """Two weak references; two strong players who beat them most of the time; a sniper who beats the
    references every time but scores 3 % against the strong two (``make demo``'s long shot)."""
    games: list[GameResult] = []
    record(games, 0, 1, 60, 40)
    for strong, (a, b) in ((2, (85, 90)), (3, (80, 88))):
        record(games, strong, 0, a, 100 - a)
        record(games, strong, 1, b, 100 - b)
    record(games, 3, 2, 55, 45)
    record(games, 4, 0, 100, 0)
    record(games, 4, 1, 100, 0)
    record(games, 4, 2, 3, 97)
    record(games, 4, 3, 3, 97)
    return games


def sniper_report(rank_by: str = "elo"):
    return build_report("t", "out", [Entrant(n, "pursuer") for n in NAMES], sniper_league(),
                        RatingConfig(bootstrap_rounds=0, rank_by=rank_by), references=[0, 1])


def test_who_beats_the_references_but_loses_to_the_strong_ranks_below_the_strong_by_default():
    report = sniper_report()
    board = report.leaderboard.set_index("name")
    assert board.loc["sniper", "reference_note"] == ABOVE_REFERENCES, "the references cannot tell it from the strong"
    assert board.loc["sniper", "rank"] > max(board.loc["strong", "rank"], board.loc["stronger", "rank"])
    assert list(report.leaderboard["name"][:2]) == ["stronger", "strong"]
    assert report.rank_by == "elo" and not report.by_reference
    assert report.to_json()["rank_by"] == "elo"
    assert list(report.head_to_head.index) == list(report.leaderboard["name"]), "head to head in the same order"


def test_rank_by_reference_elo_ranks_by_the_games_against_the_references():
    report = sniper_report("reference_elo")
    assert list(report.leaderboard["name"]) == ["sniper", "strong", "stronger", "weak", "weaker"]
    assert report.rank_by == "reference_elo" and report.by_reference
    assert list(report.leaderboard["rank"]) == [1, 2, 3, 4, 5]


def test_both_orders_keep_every_rating_column():
    by_elo, by_reference = sniper_report().leaderboard, sniper_report("reference_elo").leaderboard
    columns = ["elo", "elo_low", "elo_high", "reference_elo", "reference_low", "reference_high", "reference_note"]
    pd.testing.assert_frame_equal(by_elo.set_index("name").sort_index()[columns],
                                  by_reference.set_index("name").sort_index()[columns])


def test_without_a_reference_scale_the_leaderboard_falls_back_to_the_elo_of_all_games():
    games: list[GameResult] = []
    record(games, 2, 0, 9, 1)  # the references never met: no scale
    record(games, 2, 1, 1, 9)
    report = build_report("t", "out", [Entrant(n, "pursuer") for n in ("r0", "r1", "p")], games,
                          RatingConfig(bootstrap_rounds=0, rank_by="reference_elo"), references=[0, 1])
    assert report.rank_by == "elo" and list(report.leaderboard["name"]) == ["r1", "p", "r0"]


def test_ordered_puts_unrated_last_and_breaks_ties_by_name():
    frame = pd.DataFrame({"name": ["c", "b", "a", "d"], "elo": [900.0, math.nan, 900.0, 1100.0],
                          "reference_elo": [math.inf, 1000.0, math.nan, -math.inf],
                          "reference_low": [1500.0, 900.0, math.nan, -math.inf],
                          "reference_high": [math.inf, 1100.0, math.nan, 700.0]})
    assert list(ordered(frame, "elo")["name"]) == ["d", "a", "c", "b"]
    assert list(ordered(frame, "reference_elo")["name"]) == ["c", "b", "d", "a"]
    with pytest.raises(ValueError, match="expected one of elo, reference_elo"):
        ordered(frame, "mu")  # type: ignore[arg-type]


def test_a_runs_checkpoints_are_ranked_by_reference_elo_whatever_ranks_the_leaderboard(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.json").write_text(json.dumps({"checkpoint": "best.pt", "step": 100}))
    rows = [(100, 900.0, math.inf, 1400.0), (200, 1200.0, 1300.0, 1250.0), (300, 1100.0, 1350.0, 1300.0)]
    board = pd.DataFrame([{"name": f"ppo:{step}", "checkpoint": str(run / f"ckpt_{step:09d}.pt"), "elo": elo,
                           "elo_low": elo - 50, "elo_high": elo + 50, "reference_elo": ref,
                           "reference_low": low, "reference_high": ref + 50, "reference_note": ""}
                          for step, elo, ref, low in rows])
    progress = training_runs(ordered(board, "elo"))[str(run)]
    assert progress.by_reference and progress.best_rank == 1, "first by reference Elo, last by the Elo of all games"
    assert training_runs(ordered(board, "reference_elo"))[str(run)].best_rank == 1


# -- the league file ---------------------------------------------------------------------------------


def test_the_league_file_chooses_the_ranking_and_arena_leaderboard_keeps_it(write_league, registry):
    path = write_league(["idle", {"name": "short", "agent": "pursuer", "params": {"fire_km": 3.0}},
                         {"name": "long", "agent": "pursuer", "params": {"fire_km": 10.0}},
                         {"name": "far", "agent": "pursuer", "params": {"fire_km": 20.0}}],
                        games_per_pairing=8, references=["idle", "short"],
                        rating={"bootstrap_rounds": 0, "rank_by": "reference_elo"})
    config = load_config(path)
    assert config.rating.rank_by == "reference_elo" and config.to_dict()["rating"]["rank_by"] == "reference_elo"
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    board = report.leaderboard
    assert report.rank_by == "reference_elo"
    assert list(board["name"]) == list(ordered(board, "reference_elo")["name"])
    assert set(board.loc[board["reference_note"] == REFERENCE, "name"]) == {"idle", "short"}
    rebuilt = rebuild_report(config.output, write=False)
    assert rebuilt.rank_by == "reference_elo" and list(rebuilt.leaderboard["name"]) == list(board["name"])
    assert not any(w.kind == "rating_changed" for w in rebuilt.warnings)

    # The file edited after the games: `arena leaderboard FILE` rates as the file says now, and says so.
    import yaml
    from click.testing import CliRunner

    from arena.cli import main

    data = yaml.safe_load(path.read_text())
    data["rating"]["rank_by"] = "elo"
    path.write_text(yaml.safe_dump(data))
    result = CliRunner().invoke(main, ["leaderboard", str(path)])
    assert result.exit_code == 0, result.output
    assert ("warning: rated with the league file's rating settings as they are now (rank_by: reference_elo -> elo), "
            "not those the games were played under") in result.output
    again = rebuild_report(config.output, write=False, rating=load_config(path).rating)
    assert again.rank_by == "elo" and list(again.leaderboard["name"]) == list(ordered(board, "elo")["name"])


@pytest.mark.parametrize(("rating", "references", "expected"), [
    ({"rank_by": "reference_elo"}, None, "this league has none; expected `references:`"),
    ({"rank_by": "mu"}, ["idle", "pursuer"], "expected one of elo, reference_elo, got 'mu'"),
])
def test_a_ranking_the_league_cannot_give_is_refused_naming_the_key(write_league, rating, references, expected):
    extra = {"references": references} if references else {}
    path = write_league(["idle", "pursuer", {"name": "far", "agent": "pursuer"}], rating=rating, **extra)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == "rating.rank_by" and expected in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value)

