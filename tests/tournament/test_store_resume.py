from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from arena.tournament import StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.store import ResultStore
from tourney_helpers import LEAGUE, Faulty

FAULTY = {"name": "shaky", "agent": "faulty", "params": {"mode": "interrupt", "after": 30}}


def stored_keys(db: Path) -> list[tuple[int, int, int]]:
    with sqlite3.connect(db) as conn:
        return [tuple(r) for r in conn.execute("SELECT p1, p2, game_index FROM games")]


def test_resume_after_interruption_plays_only_missing_games(write_league, registry, tmp_path: Path) -> None:
    path = write_league(LEAGUE + [FAULTY], max_envs=4, games_per_pairing=6)
    config = load_config(path)
    db = config.output / "results.sqlite"
    with pytest.raises(KeyboardInterrupt):
        run_tournament(config, registry=registry, progress=False)
    first = stored_keys(db)
    total = 6 * 6  # 6 pairings × 6 games
    assert 0 < len(first) < total
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("interrupted",)]

    Faulty.armed = False  # the same participant, healed
    report = run_tournament(config, registry=registry, progress=False)
    assert report.run["played"] == total - len(first)
    assert report.run["already_stored"] == len(first)
    second = stored_keys(db)
    assert len(second) == len(set(second)) == total
    assert set(first) <= set(second)
    assert report.games == total and report.complete

    again = run_tournament(config, registry=registry, progress=False)
    assert again.run["played"] == 0
    pd.testing.assert_frame_equal(again.leaderboard, report.leaderboard)

    fresh = run_tournament(config, fresh=True, registry=registry, progress=False)
    assert fresh.run["played"] == total and len(stored_keys(db)) == total


def test_leaderboard_identical_from_same_database(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    played = run_tournament(config, registry=registry, progress=False)
    a = rebuild_report(config.output)
    b = rebuild_report(config.output)
    pd.testing.assert_frame_equal(a.leaderboard, b.leaderboard)
    pd.testing.assert_frame_equal(a.head_to_head, b.head_to_head)
    pd.testing.assert_frame_equal(a.leaderboard, played.leaderboard)
    csv = pd.read_csv(config.output / "leaderboard.csv")
    assert list(csv["name"]) == list(a.leaderboard["name"])
    assert np.allclose(csv["mu"], a.leaderboard["mu"])
    assert np.allclose(csv["elo_high"], a.leaderboard["elo_high"], equal_nan=True)


def test_changed_checkpoint_is_a_new_participant(write_league, registry, tmp_path: Path) -> None:
    ckpt = tmp_path / "brain.pt"
    ckpt.write_text("12")
    config = load_config(write_league(LEAGUE + ["fromfile:brain.pt"]))
    first = run_tournament(config, registry=registry, progress=False)
    assert first.run["played"] == 6 * 4
    ckpt.write_text("30")  # retrained in place
    second = run_tournament(config, registry=registry, progress=False)
    assert second.run["played"] == 3 * 4  # only the new participant's games
    with ResultStore(config.output / "results.sqlite") as store:
        rows = store.conn.execute(
            "SELECT name, checkpoint_sha256 FROM participants WHERE agent = 'fromfile'").fetchall()
    assert len(rows) == 2 and rows[0][0] == rows[1][0] == "fromfile:brain" and rows[0][1] != rows[1][1]
    board = second.leaderboard
    assert list(board["name"]).count("fromfile:brain") == 1 and board["games"].sum() == 2 * 6 * 4


def test_games_per_pairing_change_and_env_mismatch(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE, games_per_pairing=4))
    run_tournament(config, registry=registry, progress=False)
    more = run_tournament(load_config(write_league(LEAGUE, games_per_pairing=6)), registry=registry, progress=False)
    assert more.run["played"] == 3 * 2 and more.games == 3 * 6
    fewer = run_tournament(load_config(write_league(LEAGUE, games_per_pairing=2)), registry=registry, progress=False)
    assert fewer.run["played"] == 0 and fewer.games == 3 * 2  # extra stored games are not rated
    other_env = write_league(LEAGUE, env={"max_time": 30.0})
    with pytest.raises(StoreError, match="other env settings"):
        run_tournament(load_config(other_env), registry=registry, progress=False)


def test_missing_database(tmp_path: Path) -> None:
    with pytest.raises(StoreError, match="no results database"):
        rebuild_report(tmp_path)


def test_env_settings_may_change_while_no_game_is_stored(write_league, registry) -> None:
    run_tournament(load_config(write_league(LEAGUE)), registry=registry, progress=False, max_batches=0)
    report = run_tournament(load_config(write_league(LEAGUE, env={"max_time": 30.0})), registry=registry,
                            progress=False)
    assert report.run["played"] == 3 * 4


def test_unusable_output_is_a_store_error_and_is_left_alone(tmp_path: Path, write_league, registry) -> None:
    (tmp_path / "taken").write_text("a file, not a folder")
    with pytest.raises(StoreError, match=r"taken: cannot be used as the output folder \(a file, not a folder\)"):
        run_tournament(load_config(write_league(LEAGUE, output="taken")), registry=registry, progress=False)
    corrupt = tmp_path / "corrupt"
    corrupt.mkdir()
    (corrupt / "results.sqlite").write_text("garbage")
    with pytest.raises(StoreError, match="not a database"):
        run_tournament(load_config(write_league(LEAGUE, output="corrupt")), registry=registry, progress=False)
    assert (corrupt / "results.sqlite").read_text() == "garbage"
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    with sqlite3.connect(foreign / "results.sqlite") as conn:
        conn.execute("CREATE TABLE notes (text)")
    with pytest.raises(StoreError, match="not an arena results database"):
        rebuild_report(foreign)
    with sqlite3.connect(foreign / "results.sqlite") as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == [("notes",)]


def test_a_database_from_before_team_battles_resumes(write_league, registry) -> None:
    import json

    config = load_config(write_league(LEAGUE, games_per_pairing=4))
    run_tournament(config, registry=registry, progress=False)
    with ResultStore(config.output / "results.sqlite") as store:
        settings = json.loads(store.meta("env_config"))
        for key in ("team_size", "formation_spacing", "obs_neighbours"):  # what older databases stored
            del settings[key]
        store.set_meta("env_config", json.dumps(settings, sort_keys=True))
    again = run_tournament(load_config(write_league(LEAGUE, games_per_pairing=6)), registry=registry, progress=False)
    assert again.run["played"] == 3 * 2
    longer = write_league(LEAGUE, env={"max_time": 600.0})
    with pytest.raises(StoreError, match="other env settings"):
        run_tournament(load_config(longer), registry=registry, progress=False)


def test_retry_forfeits_plays_a_healed_participants_forfeits_again(write_league, registry) -> None:
    faulty = {"name": "shaky", "agent": "faulty", "params": {"mode": "raise", "after": 5}}
    config = load_config(write_league(LEAGUE + [faulty], max_envs=64, games_per_pairing=4))
    first = run_tournament(config, registry=registry, progress=False)
    lost = int(first.leaderboard.set_index("name").loc["shaky", "forfeits"])
    assert lost > 0
    Faulty.armed = False  # fixed
    again = run_tournament(config, registry=registry, progress=False, retry_forfeits=True)
    assert again.run["retried_forfeits"] == lost and again.run["played"] == lost
    assert int(again.leaderboard.set_index("name").loc["shaky", "forfeits"]) == 0 and again.complete
