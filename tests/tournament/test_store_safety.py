"""The results database is checked before anything is written to it, upgraded only after a byte copy,
and never written by reports: a refused or damaged file keeps every byte it had."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from contextlib import closing
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.tournament import StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.store import ResultStore
from test_store_sides import SCHEMA_1
from tourney_helpers import LEAGUE


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def files_of(db: Path) -> list[str]:
    """The database and whatever SQLite or arena keep beside it (-wal, -shm, -journal, .bak)."""
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name))


def schema_1_store(db: Path, journal: str = "delete", games: int = 3000) -> Path:
    """A schema-1 database (as arena wrote before team battles) of ``games`` games between two
    participants: about 200 KiB, so that damage lands in the games."""
    db.parent.mkdir(parents=True, exist_ok=True)
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(f"PRAGMA journal_mode={journal}")
        conn.executescript(SCHEMA_1)
        conn.execute("INSERT INTO meta VALUES ('schema_version', '1')")
        conn.executemany("INSERT INTO participants VALUES (?, ?, ?, 'idle', '{}', NULL, NULL, 0.0)",
                         [(1, "k1", "one"), (2, "k2", "two")])
        conn.executemany("INSERT INTO games (p1, p2, game_index, winner, length, return_p1, return_p2, missiles_p1, "
                         "missiles_p2, finished_at) VALUES (1, 2, ?, ?, 100, 0.5, -0.5, 1, 2, 0.0)",
                         [(i, i % 3) for i in range(games)])
    return db


def newer_store(db: Path, journal: str) -> Path:
    """An arena database as a newer arena might leave it: schema 999, without a ``sides`` table."""
    ResultStore(db).close()
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute(f"PRAGMA journal_mode={journal}")
        conn.execute("DROP TABLE sides")
        conn.execute("UPDATE meta SET value = '999' WHERE key = 'schema_version'")
    return db


OPENERS: dict[str, Callable[[Path], object]] = {
    "tournament": lambda db: ResultStore(db),
    "existing": lambda db: ResultStore(db, create=False),
    "read-only": lambda db: ResultStore(db, read_only=True),
    "report": lambda db: rebuild_report(db.parent, write=False),
}


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_newer_schema_is_refused_before_anything_is_written(tmp_path: Path, journal: str) -> None:
    db = newer_store(tmp_path / "out" / "results.sqlite", journal)
    before = sha(db)
    for name, open_store in OPENERS.items():
        with pytest.raises(StoreError, match="schema version 999, this arena reads 2"):
            open_store(db)
        assert sha(db) == before and files_of(db) == ["results.sqlite"], name  # no WAL switch, no sides table
    res = CliRunner().invoke(main, ["leaderboard", str(db.parent)])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "schema version 999" in res.stderr, res.output
    assert sha(db) == before and files_of(db) == ["results.sqlite"]


def cut_short(db: Path) -> None:
    data = db.read_bytes()
    db.write_bytes(data[: len(data) * 98 // 100])


def scribble(db: Path) -> None:
    """Overwrite the cell pointers of the games table's first page, as a bad sector or a stray write would."""
    with closing(sqlite3.connect(db)) as conn:
        root = conn.execute("SELECT rootpage FROM sqlite_master WHERE name = 'games'").fetchone()[0]
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
    with open(db, "r+b") as f:
        f.seek((root - 1) * page_size + 12)
        f.write(b"\xff" * 64)


@pytest.mark.parametrize("damage", [cut_short, scribble], ids=["cut-short", "scribbled"])
@pytest.mark.parametrize("schema", ["1", "2"])
def test_a_damaged_store_is_refused_unchanged_and_not_upgraded(tmp_path: Path, damage, schema: str) -> None:
    db = schema_1_store(tmp_path / "out" / "results.sqlite")
    if schema == "2":
        ResultStore(db).close()  # upgraded; the .bak is set aside so that only the damaged file is there
        db.with_name("results.sqlite.schema1.bak").unlink()
    damage(db)
    before, size = sha(db), db.stat().st_size
    for name, open_store in OPENERS.items():
        with pytest.raises(StoreError, match=r"results.sqlite: damaged \(.+\); arena has not changed it") as err:
            open_store(db)
        assert "copy" not in str(err.value).split(";")[0] and "\n" not in str(err.value)
        assert sha(db) == before and db.stat().st_size == size, name
        assert files_of(db) == ["results.sqlite"], name  # no .bak of a file that was not upgraded


@pytest.mark.parametrize("journal", ["wal", "delete"])
def test_a_failed_upgrade_leaves_the_file_as_it_was_beside_an_equal_copy(tmp_path: Path, journal: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    db = schema_1_store(tmp_path / "out" / "results.sqlite", journal)
    with closing(sqlite3.connect(db)) as conn, conn:  # whole, but a game of a participant that is gone
        conn.execute("UPDATE games SET p1 = 99 WHERE game_index = 7")
    before = sha(db)
    # Opening refuses such a store before it upgrades anything (test_store_lies.py); past that check, the
    # upgrade's own check of the references still rolls it back.
    monkeypatch.setattr("arena.tournament.store._impossible_value", lambda conn, tables: None)
    with pytest.raises(StoreError, match=r"cannot upgrade schema 1 to 2 \(2 row\(s\) refer to missing rows\); the "
                                         r"database is unchanged and a copy is in .*results.sqlite.schema1.bak$"):
        ResultStore(db)
    assert sha(db) == before
    assert sha(db.with_name("results.sqlite.schema1.bak")) == before
    assert files_of(db) == ["results.sqlite", "results.sqlite.schema1.bak"]


def test_an_upgrade_copies_the_games_still_in_the_log_too(tmp_path: Path) -> None:
    db = schema_1_store(tmp_path / "out" / "results.sqlite", "wal", games=10)
    killed = ("import os, sqlite3, sys; conn = sqlite3.connect(sys.argv[1]); conn.executemany('INSERT INTO games "
              "(p1, p2, game_index, winner, length, finished_at) VALUES (2, 1, ?, 1, 50, 0.0)', "
              "[(i,) for i in range(5)]); conn.commit(); os._exit(0)")  # dies before its checkpoint
    subprocess.run([sys.executable, "-c", killed, str(db)], check=True)
    wal = Path(f"{db}-wal")
    assert wal.stat().st_size > 0
    before, before_wal = sha(db), sha(wal)
    with ResultStore(db) as store:
        assert store.migrated_from == "1" and store.game_count() == 15
    backup = db.with_name("results.sqlite.schema1.bak")
    assert sha(backup) == before and sha(Path(f"{backup}-wal")) == before_wal
    with ResultStore(backup, read_only=True) as old:  # the copy, as it was, holds all 15 games
        assert old.migrated_from == "1" and old.game_count() == 15


def test_reports_never_write_to_the_store(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    played = run_tournament(config, registry=registry, progress=False)
    db = config.output / "results.sqlite"
    before = sha(db)
    assert rebuild_report(config.output).games == played.games
    res = CliRunner().invoke(main, ["leaderboard", str(config.output), "--format", "csv"])
    assert res.exit_code == 0, res.output
    assert sha(db) == before and files_of(db) == ["results.sqlite"]  # no -wal or -shm left behind

    # A tournament still writing: its committed games are in the log, and the report reads them.
    with closing(sqlite3.connect(db)) as writer:
        writer.execute("DELETE FROM sides WHERE game_id IN (SELECT id FROM games WHERE game_index = 0)")
        writer.execute("DELETE FROM games WHERE game_index = 0")
        writer.commit()
        assert Path(f"{db}-wal").exists()
        assert rebuild_report(config.output, write=False).games == played.games // 2


def test_a_write_interrupted_mid_transaction_is_named_and_left_as_it_is(tmp_path: Path) -> None:
    db = schema_1_store(tmp_path / "out" / "results.sqlite")  # rollback-journal mode, as a converted file may be
    crash = ("import os, sqlite3, sys; conn = sqlite3.connect(sys.argv[1]); conn.execute('PRAGMA cache_size = 1'); "
             "conn.execute('DELETE FROM games WHERE game_index % 2 = 0'); os._exit(0)")  # pages spilled, no commit
    subprocess.run([sys.executable, "-c", crash, str(db)], check=True)
    journal = Path(f"{db}-journal")
    before, before_journal = sha(db), sha(journal)
    for name, open_store in OPENERS.items():
        with pytest.raises(StoreError, match=r"a write to it was interrupted and results.sqlite-journal holds what "
                                             r"it changed; .* then run again$"):
            open_store(db)
        assert sha(db) == before and sha(journal) == before_journal, name
    with closing(sqlite3.connect(db)) as conn:  # what the message says to do: SQLite rolls it back
        assert conn.execute("PRAGMA quick_check").fetchone() == ("ok",)
    with ResultStore(db) as store:
        assert store.migrated_from == "1" and store.game_count() == 3000
