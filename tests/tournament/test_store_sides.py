"""Games stored by side: team leagues, the sides table, and the upgrade of schema-1 databases."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pandas as pd
import pytest

from arena.tournament import StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.results import GameResult
from arena.tournament.store import SCHEMA_VERSION, ResultStore
from tourney_helpers import FAST_ENV, LEAGUE

SCHEMA_1 = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE participants (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL, agent TEXT NOT NULL,
    params TEXT NOT NULL, checkpoint TEXT, checkpoint_sha256 TEXT, created REAL NOT NULL);
CREATE TABLE runs (
    id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
    device TEXT NOT NULL, config TEXT NOT NULL, versions TEXT NOT NULL, games_played INTEGER DEFAULT 0);
CREATE TABLE run_participants (
    run_id INTEGER NOT NULL REFERENCES runs(id), position INTEGER NOT NULL,
    participant_id INTEGER NOT NULL REFERENCES participants(id), PRIMARY KEY (run_id, position));
CREATE TABLE batches (
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), seed INTEGER NOT NULL,
    num_envs INTEGER NOT NULL, games INTEGER NOT NULL, device TEXT NOT NULL, started REAL NOT NULL, finished REAL);
CREATE TABLE games (
    id INTEGER PRIMARY KEY,
    p1 INTEGER NOT NULL REFERENCES participants(id), p2 INTEGER NOT NULL REFERENCES participants(id),
    game_index INTEGER NOT NULL, winner INTEGER NOT NULL, length INTEGER NOT NULL,
    return_p1 REAL, return_p2 REAL, missiles_p1 INTEGER, missiles_p2 INTEGER,
    batch_id INTEGER REFERENCES batches(id), slot INTEGER, seed INTEGER,
    forfeit_by INTEGER REFERENCES participants(id), forfeit_reason TEXT, finished_at REAL NOT NULL,
    UNIQUE (p1, p2, game_index));
"""


def schema_1_copy(db: Path, out: Path) -> Path:
    """The games of ``db`` written as a schema-1 database (what arena stored before team battles)."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(db) as src, sqlite3.connect(out) as dst:
        dst.executescript(SCHEMA_1)
        for table in ("meta", "participants", "runs", "run_participants", "batches"):
            rows = src.execute(f"SELECT * FROM {table}").fetchall()
            if rows:
                dst.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(rows[0]))})", rows)
        dst.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
        dst.executemany(
            "INSERT INTO games VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            src.execute("SELECT g.id, g.p1, g.p2, g.game_index, g.winner, g.length, a.return, b.return, a.missiles, "
                        "b.missiles, g.batch_id, g.slot, g.seed, g.forfeit_by, g.forfeit_reason, g.finished_at "
                        "FROM games g JOIN sides a ON a.game_id = g.id AND a.side = 1 "
                        "JOIN sides b ON b.game_id = g.id AND b.side = 2").fetchall())
    return out


def test_every_game_has_a_row_per_side_scoring_whoever_flew_it(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    run_tournament(config, registry=registry, progress=False)
    with sqlite3.connect(config.output / "results.sqlite") as conn:
        games = conn.execute("SELECT COUNT(*) FROM games").fetchone()[0]
        rows = conn.execute("SELECT g.winner, a.participant = g.p1, b.participant = g.p2, a.score, b.score "
                            "FROM games g JOIN sides a ON a.game_id = g.id AND a.side = 1 "
                            "JOIN sides b ON b.game_id = g.id AND b.side = 2").fetchall()
    assert len(rows) == games > 0
    for winner, first, second, score_1, score_2 in rows:
        assert first and second and score_1 + score_2 == 1.0
        assert score_1 == {0: 0.5, 1: 1.0, 2: 0.0}[winner]


def test_a_league_of_teams_is_a_league(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE, env={**FAST_ENV, "team_size": 2, "formation_spacing": 1000.0}))
    report = run_tournament(config, registry=registry, progress=False)
    assert report.complete and report.games == 3 * 4  # 3 pairings, 4 games each
    with ResultStore(config.output / "results.sqlite", create=False) as store:
        games = store.games()
    assert {g.team_size for g in games} == {2}
    assert all(g.kills_p1 is not None and 0 <= g.kills_p1 <= 2 for g in games)
    decisive = [g for g in games if g.winner == 1]
    assert all(g.kills_p1 == 2 or g.length >= 60 for g in decisive)  # a side wins by kills or by numbers at time


def test_a_schema_1_database_is_read_as_is_by_reports_and_upgraded_with_a_byte_copy(write_league, registry,
                                                                                     tmp_path, capsys) -> None:
    config = load_config(write_league(LEAGUE))
    played = run_tournament(config, registry=registry, progress=False)
    new_db = config.output / "results.sqlite"
    with ResultStore(new_db, create=False) as store:
        expected = store.games()
    old = schema_1_copy(new_db, tmp_path / "old" / "results.sqlite")
    original = old.read_bytes()
    stores = lambda: sorted(p.name for p in old.parent.iterdir() if p.name.startswith("results.sqlite"))  # noqa: E731

    report = rebuild_report(old.parent)  # `arena leaderboard`: reads it as schema 2 in memory, writes nothing
    assert "is schema 1; read as schema 2 without changing the file" in capsys.readouterr().err
    assert old.read_bytes() == original and stores() == ["results.sqlite"]
    pd.testing.assert_frame_equal(report.leaderboard, played.leaderboard)

    with ResultStore(old) as store:  # a tournament's open upgrades it, after copying the file as it was
        assert store.migrated_from == "1"
    assert (old.parent / "results.sqlite.schema1.bak").read_bytes() == original
    assert stores() == ["results.sqlite", "results.sqlite.schema1.bak"]
    with ResultStore(old, create=False) as store:
        assert store.meta("schema_version") == SCHEMA_VERSION and store.migrated_from is None
        upgraded = store.games()
    strip = lambda g: GameResult(**{**vars(g), "kills_p1": None, "kills_p2": None,  # noqa: E731 - schema 1 had none
                                    "batch": g.batch})
    assert [strip(g) for g in upgraded] == [strip(g) for g in expected]
    pd.testing.assert_frame_equal(rebuild_report(old.parent).leaderboard, played.leaderboard)


def test_a_newer_schema_is_refused_and_left_alone(tmp_path) -> None:
    db = tmp_path / "results.sqlite"
    with ResultStore(db):
        pass
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
    with pytest.raises(StoreError, match="schema version 99, this arena reads 2"):
        ResultStore(db)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("99",)
