"""Games as columns: the same games as the GameResult lists, from a list or from the database."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from arena.tournament.league_config import RatingConfig
from arena.tournament.outcomes import NO_FORFEIT, Outcomes, as_outcomes, from_columns
from arena.tournament.ratings import bradley_terry, trueskill_ratings
from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult
from arena.tournament.store import ResultStore


def random_games(ids: list[int], count: int, seed: int) -> list[GameResult]:
    rng = random.Random(seed)
    games, seen = [], set()
    while len(games) < count:
        a, b = rng.sample(ids, 2)
        index = rng.randrange(6)
        if (a, b, index) in seen:
            continue
        seen.add((a, b, index))
        forfeit = rng.choice([None, None, None, a, b])
        winner = rng.choice([DRAW, P1_WINS, P2_WINS]) if forfeit is None else (P2_WINS if forfeit == a else P1_WINS)
        games.append(GameResult(a, b, index, winner, 10, 0.0, 0.0, forfeit_by=forfeit,
                                forfeit_reason=None if forfeit is None else f"reason {rng.randrange(3)}"))
    return games


def columns_of(games: list[GameResult]) -> list[list[object]]:
    return [[g.p1 for g in games], [g.p2 for g in games], [g.game_index for g in games], [g.winner for g in games],
            [NO_FORFEIT if g.forfeit_by is None else g.forfeit_by for g in games],
            [g.forfeit_reason if g.forfeit_by is not None else None for g in games]]


def as_lists(o: Outcomes) -> list[list[object]]:
    return [o.p1.tolist(), o.p2.tolist(), o.game_index.tolist(), o.winner.tolist(), o.forfeit_by.tolist(),
            list(o.forfeit_reason)]


def test_columns_hold_every_game_in_order() -> None:
    games = random_games(list(range(6)), 50, seed=1)
    o = as_outcomes(games)
    assert len(o) == 50 and as_lists(o) == columns_of(games)
    assert as_outcomes(o) is o
    assert len(as_outcomes([])) == 0
    picked = [g for g in games if g.p1 < 3]
    assert as_lists(o.select(o.p1 < 3)) == columns_of(picked)


def test_relabel_renumbers_players_and_forfeits() -> None:
    games = random_games([10, 20, 30], 30, seed=2)
    number = np.full(31, -1)
    number[[10, 20, 30]] = [0, 1, 2]
    names = {10: 0, 20: 1, 30: 2}
    renamed = [GameResult(names[g.p1], names[g.p2], g.game_index, g.winner, 10, 0.0, 0.0,
                          forfeit_by=None if g.forfeit_by is None else names[g.forfeit_by],
                          forfeit_reason=g.forfeit_reason) for g in games]
    assert as_lists(as_outcomes(games).relabel(number)) == columns_of(renamed)


def test_each_forfeit_needs_its_reason() -> None:
    with pytest.raises(ValueError, match="a reason for each of the 1 forfeits, got 0"):
        from_columns(np.array([0]), np.array([1]), np.array([0]), np.array([P1_WINS]), np.array([1]), [])


def test_ratings_are_the_same_from_columns_and_from_results() -> None:
    games = random_games(list(range(5)), 120, seed=3)
    o = as_outcomes(games)
    assert trueskill_ratings(o, 5, RatingConfig(), seed=4) == trueskill_ratings(games, 5, RatingConfig(), seed=4)
    fit_lists, fit_columns = bradley_terry(games, 5, rounds=30), bradley_terry(o, 5, rounds=30)
    for field in ("elo", "low", "high", "rank_low", "rank_high"):
        assert np.array_equal(getattr(fit_lists, field), getattr(fit_columns, field), equal_nan=True)


def test_the_store_reads_the_games_the_report_rated_before(tmp_path: Path) -> None:
    """store.outcomes is store.games(outcomes_only, relabel by position) as columns: the same games, in
    the same order, restricted to the participants asked for and to game numbers below max_index."""
    store = ResultStore(tmp_path / "results.sqlite")
    ids = [store.participant_id(f"k{i}", f"p{i}", "crank", {}, None, None) for i in range(7)]
    store.add_games(random_games(ids, 150, seed=5))
    league = [ids[5], ids[1], ids[3], ids[0]]  # a run's participants, in its order: not every stored one
    position = {pid: i for i, pid in enumerate(league)}
    for max_index in (None, 3):
        expected = store.games(league, max_index=max_index, outcomes_only=True, relabel=position)
        got = store.outcomes(league, max_index=max_index)
        assert as_lists(got) == columns_of(expected)
        assert 0 < len(got) < 150
    store.close()
    empty = ResultStore(tmp_path / "empty.sqlite")
    assert len(empty.outcomes(league)) == 0
    empty.close()
