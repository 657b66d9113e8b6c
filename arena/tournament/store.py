"""The results database: ``<output>/results.sqlite``.

The database is the tournament's memory. Every game is a row of ``games`` keyed by the ordered pairing
(the participants flying side 1 and side 2, ``p1``/``p2``) and its number, so a re-run asks it which
games exist and plays only the rest. What each side did is a row of ``sides``: the participant that
flew it (a single aircraft or a whole team, ``team_size`` of the game), its score (1, ½, 0), return,
missiles and kills; ratings rate the participant that flew a side. Ratings and reports are computed
from the database alone, so they can be rebuilt at any time (``arena leaderboard``).

Opening checks the file before anything is written to it: that it is arena's, of a schema version
this arena reads, whole (``PRAGMA quick_check``), and that every value a reader interprets is one
arena writes (a winner 0, 1 or 2, sides that are the game's, ids of stored rows: :data:`VALUE_CHECKS`).
A file that fails is refused, naming the first such row, and left byte for byte as it was. Games are
written only to a file in the output folder, never through a symbolic link (refused, naming it).
Schema 1 (before team battles: returns and missiles as p1/p2 columns) is upgraded in
place, in one transaction, after a byte-for-byte copy of the file is kept as
``results.sqlite.schema1.bak``; a newer schema is refused. ``read_only`` opens (``arena leaderboard``)
never write: a schema-1 file is then upgraded in memory only.

Games are committed as they arrive
(one small transaction per env step that finished any; WAL mode makes that cheap), so a killed run
loses only the games still in flight. ``commit_every`` can space commits out for very slow disks.

A participant is identified by a key over its name, agent, parameters and the SHA-256 of its
checkpoint file: overwrite a checkpoint and it is a new participant with no games, not the old one
with a new brain.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.folder_lock import FolderBusy, FolderUnusable
from arena.folder_lock import FolderLock as OneWriter
from arena.output_files import LinkedOutputError, staged
from arena.tournament.outcomes import Outcomes, from_columns
from arena.tournament.results import GameResult

DB_NAME = "results.sqlite"
LOCK_NAME = "tournament.lock"
SCHEMA_VERSION = "2"
MIGRATIONS = ("1",)  # older schema versions this arena upgrades in place (after a backup copy)
APPLICATION_ID = 0x41524E41  # "ARNA" in PRAGMA application_id: marks the file as arena's own

# Each table's columns, once: the schema creates them, and the migration rebuilds ``games`` from the same text.
COLUMNS = {
    "meta": "key TEXT PRIMARY KEY, value TEXT NOT NULL",
    "participants": """
    id INTEGER PRIMARY KEY, key TEXT NOT NULL UNIQUE, name TEXT NOT NULL, agent TEXT NOT NULL,
    params TEXT NOT NULL, checkpoint TEXT, checkpoint_sha256 TEXT, created REAL NOT NULL""",
    "runs": """
    id INTEGER PRIMARY KEY, started REAL NOT NULL, finished REAL, status TEXT NOT NULL,
    device TEXT NOT NULL, config TEXT NOT NULL, versions TEXT NOT NULL, games_played INTEGER DEFAULT 0""",
    "run_participants": """
    run_id INTEGER NOT NULL REFERENCES runs(id), position INTEGER NOT NULL,
    participant_id INTEGER NOT NULL REFERENCES participants(id), PRIMARY KEY (run_id, position)""",
    "batches": """
    id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), seed INTEGER NOT NULL,
    num_envs INTEGER NOT NULL, games INTEGER NOT NULL, device TEXT NOT NULL, started REAL NOT NULL, finished REAL""",
    "games": """
    id INTEGER PRIMARY KEY,
    p1 INTEGER NOT NULL REFERENCES participants(id), p2 INTEGER NOT NULL REFERENCES participants(id),
    game_index INTEGER NOT NULL, winner INTEGER NOT NULL, length INTEGER NOT NULL,
    team_size INTEGER NOT NULL DEFAULT 1,
    batch_id INTEGER REFERENCES batches(id), slot INTEGER, seed INTEGER,
    forfeit_by INTEGER REFERENCES participants(id), forfeit_reason TEXT, finished_at REAL NOT NULL,
    UNIQUE (p1, p2, game_index)""",
    "sides": """
    game_id INTEGER NOT NULL REFERENCES games(id), side INTEGER NOT NULL,
    participant INTEGER NOT NULL REFERENCES participants(id), score REAL NOT NULL,
    return REAL, missiles INTEGER, kills REAL, PRIMARY KEY (game_id, side)""",
}
TABLES = frozenset(COLUMNS)
REQUIRED = {SCHEMA_VERSION: TABLES, "1": TABLES - {"sides"}}  # the tables a database of each version holds
SCHEMA = "".join(f"CREATE TABLE IF NOT EXISTS {name} ({columns});\n" for name, columns in COLUMNS.items()) + \
    "CREATE INDEX IF NOT EXISTS sides_by_participant ON sides (participant);\n"


# A new database: its tables, version and mark in one transaction, so a crash leaves none of them.
INITIALIZE = f"""
BEGIN;
{SCHEMA}
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', '{SCHEMA_VERSION}');
PRAGMA application_id = {APPLICATION_ID};
COMMIT;
"""

# Schema 1 kept return and missiles as p1/p2 columns of ``games``; schema 2 keeps them per side.
# The script opens a transaction and leaves it open: the caller checks the references, then commits or
# rolls back, so a failed upgrade leaves the file as it was. ``sides`` comes from SCHEMA.
# The table is rebuilt rather than renamed: a rename would carry the references of ``sides`` along.
MIGRATE_FROM_1 = f"""
BEGIN;
{SCHEMA}
CREATE TABLE games_schema2 ({COLUMNS["games"]});
INSERT INTO games_schema2 (id, p1, p2, game_index, winner, length, team_size, batch_id, slot, seed, forfeit_by,
                           forfeit_reason, finished_at)
    SELECT id, p1, p2, game_index, winner, length, 1, batch_id, slot, seed, forfeit_by, forfeit_reason, finished_at
    FROM games;
INSERT OR REPLACE INTO sides (game_id, side, participant, score, return, missiles, kills)
    SELECT id, 1, p1, CASE winner WHEN 1 THEN 1.0 WHEN 0 THEN 0.5 ELSE 0.0 END, return_p1, missiles_p1, NULL
    FROM games;
INSERT OR REPLACE INTO sides (game_id, side, participant, score, return, missiles, kills)
    SELECT id, 2, p2, CASE winner WHEN 2 THEN 1.0 WHEN 0 THEN 0.5 ELSE 0.0 END, return_p2, missiles_p2, NULL
    FROM games;
DROP TABLE games;
ALTER TABLE games_schema2 RENAME TO games;
UPDATE meta SET value = '2' WHERE key = 'schema_version';
PRAGMA application_id = {APPLICATION_ID};
"""


class StoreError(RuntimeError):
    """The database cannot be used as asked (missing, from a newer version, played under other rules)."""


@dataclass(frozen=True)
class ParticipantRecord:
    id: int
    key: str
    name: str
    agent: str
    params: dict[str, Any]
    checkpoint: str | None
    checkpoint_sha256: str | None


@dataclass(frozen=True)
class RunRecord:
    id: int
    started: float
    finished: float | None
    status: str
    device: str
    config: dict[str, Any]
    participant_ids: list[int]  # by league position
    games_played: int


def db_path(output: str | os.PathLike[str]) -> Path:
    return Path(output) / DB_NAME


class ResultStore:
    """A thin typed layer over the SQLite file; one instance per process, used from one thread."""

    def __init__(self, path: str | os.PathLike[str], *, fresh: bool = False, create: bool = True,
                 commit_every: float = 0.0, read_only: bool = False) -> None:
        """``create=False`` requires the file to exist; ``read_only`` (implies it) never writes to the file,
        its ``-wal`` or ``-shm``, so that a report can be rebuilt from a store that is refused, damaged,
        in use or on read-only media without changing it."""
        self.path = Path(path)
        self.read_only = read_only
        self.migrated_from: str | None = None  # the schema version this open upgraded (in memory if read_only)
        try:
            self.conn = self._open_read_only() if read_only else self._open(fresh, create)
        except (OSError, sqlite3.Error) as exc:  # an output path that is a file, unwritable, not a database
            place = "" if read_only else "a writable output directory holding "
            raise StoreError(f"{self.path}: cannot be used as the results database ({_reason(exc)}); expected "
                             f"{place}{DB_NAME} written by `arena tournament`") from None
        self.commit_every = commit_every
        self._last_commit = time.monotonic()
        self._pending = 0

    def _open(self, fresh: bool, create: bool) -> sqlite3.Connection:
        """A writable connection, opened only once a read-only look found the file fit to write to."""
        if self.path.exists() and fresh:
            _check_ours(self.path)  # --fresh deletes arena's database, never someone else's file
            for suffix in ("", "-wal", "-shm", "-journal"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)
        for suffix in ("", "-wal", "-shm", "-journal"):  # SQLite would write games into the file a link points to
            if Path(f"{self.path}{suffix}").is_symlink():
                raise StoreError(str(LinkedOutputError(f"{self.path}{suffix}", "write games into")))
        version: str | None = None
        if self.path.exists():
            probe = _connect_read_only(self.path)
            try:  # every check before the first write: a file that fails them is left as it was
                version = _inspect(self.path, probe, reader=not create)
            finally:
                probe.close()
        elif not create:
            raise StoreError(f"{self.path}: no results database here (expected {DB_NAME} written by "
                             f"`arena tournament`)")
        else:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        backup = self._keep_copy(version) if version in MIGRATIONS else None
        conn = sqlite3.connect(str(self.path))
        try:
            if version is None:
                conn.execute("PRAGMA journal_mode=WAL")  # first: a crash while creating tables leaves no -journal
                conn.executescript(INITIALIZE)
            elif backup is not None:
                self._upgrade(conn, version, f"the database is unchanged and a copy is in {backup}")
            if conn.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:  # from before the mark
                conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.executescript(SCHEMA)  # indexes added within this schema version
            conn.commit()
        except BaseException:
            conn.close()
            raise
        return conn

    def _open_read_only(self) -> sqlite3.Connection:
        """A connection that cannot write; a schema-1 file is copied into memory and upgraded there."""
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no results database here (expected {DB_NAME} written by "
                             f"`arena tournament`)")
        conn = _connect_read_only(self.path)
        try:
            version = _inspect(self.path, conn, reader=True)
            if version not in MIGRATIONS:
                return conn
            memory = sqlite3.connect(":memory:")
            conn.backup(memory)
        except BaseException:
            conn.close()
            raise
        conn.close()
        assert version is not None  # one of MIGRATIONS
        self._upgrade(memory, version, "the file is unchanged")
        return memory

    def _keep_copy(self, version: str) -> Path:
        """Copy the file byte for byte (with its ``-wal``, holding games not yet written into it) to
        ``<name>.schema<version>.bak`` before an upgrade changes it. The caller holds the folder's lock,
        so nothing is writing to the file meanwhile."""
        backup = self.path.with_name(f"{self.path.name}.schema{version}.bak")
        wal, backup_wal = Path(f"{self.path}-wal"), Path(f"{backup}-wal")
        try:
            for stale in (backup_wal, Path(f"{backup}-shm")):  # SQLite would replay a stale log into the copy
                stale.unlink(missing_ok=True)
            with staged(backup) as temp:  # a new file: never written through a link (arena.output_files)
                shutil.copyfile(self.path, temp)
            if wal.is_file() and wal.stat().st_size:
                with staged(backup_wal) as temp:
                    shutil.copyfile(wal, temp)
        except OSError as exc:
            for partial in (backup, backup_wal):
                partial.unlink(missing_ok=True)
            raise StoreError(f"{self.path}: cannot keep a copy as {backup.name} before upgrading schema {version} "
                             f"to {SCHEMA_VERSION} ({_reason(exc)}); the database is unchanged") from None
        return backup

    def _upgrade(self, conn: sqlite3.Connection, version: str, unchanged: str) -> None:
        """Upgrade an older schema through ``conn`` in one transaction, committed only when every reference
        still holds; otherwise rolled back, and a :class:`StoreError` that ends with ``unchanged``."""
        conn.execute("PRAGMA foreign_keys=OFF")  # the games table is rebuilt under its references
        try:
            conn.executescript(MIGRATE_FROM_1)
            broken = conn.execute("PRAGMA foreign_key_check").fetchall()
            if broken:
                raise sqlite3.IntegrityError(f"{len(broken)} row(s) refer to missing rows")
            conn.commit()
        except sqlite3.Error as exc:
            if conn.in_transaction:
                conn.rollback()
            conn.close()
            raise StoreError(f"{self.path}: cannot upgrade schema {version} to {SCHEMA_VERSION} ({_reason(exc)}); "
                             f"{unchanged}") from None
        self.migrated_from = version

    # -- metadata ------------------------------------------------------------------------------------

    def meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
        self.conn.commit()

    # -- participants --------------------------------------------------------------------------------

    def participant_id(self, key: str, name: str, agent: str, params: dict[str, Any], checkpoint: str | None,
                       checkpoint_sha256: str | None) -> int:
        """The id of the participant with ``key``, inserting it the first time it is seen."""
        row = self.conn.execute("SELECT id FROM participants WHERE key = ?", (key,)).fetchone()
        if row is not None:
            return int(row[0])
        cur = self.conn.execute(
            "INSERT INTO participants (key, name, agent, params, checkpoint, checkpoint_sha256, created) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, name, agent, json.dumps(params, sort_keys=True, default=str), checkpoint, checkpoint_sha256,
             time.time()))
        self.conn.commit()
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def participants(self, ids: Sequence[int]) -> list[ParticipantRecord]:
        rows = {r[0]: r for r in self.conn.execute(
            "SELECT id, key, name, agent, params, checkpoint, checkpoint_sha256 FROM participants")}
        return [ParticipantRecord(int(r[0]), r[1], r[2], r[3], json.loads(r[4]), r[5], r[6])
                for r in (rows[i] for i in ids)]

    # -- runs and batches ----------------------------------------------------------------------------

    def start_run(self, config: dict[str, Any], participant_ids: Sequence[int], device: str,
                  versions: dict[str, str]) -> int:
        cur = self.conn.execute(
            "INSERT INTO runs (started, status, device, config, versions) VALUES (?, 'running', ?, ?, ?)",
            (time.time(), device, json.dumps(config, sort_keys=True, default=str),
             json.dumps(versions, sort_keys=True)))
        run_id = int(cur.lastrowid)  # type: ignore[arg-type]
        self.conn.executemany("INSERT INTO run_participants (run_id, position, participant_id) VALUES (?, ?, ?)",
                              [(run_id, pos, pid) for pos, pid in enumerate(participant_ids)])
        self.conn.commit()
        return run_id

    def finish_run(self, run_id: int, status: str, games_played: int) -> None:
        self.flush()
        self.conn.execute("UPDATE runs SET finished = ?, status = ?, games_played = ? WHERE id = ?",
                          (time.time(), status, games_played, run_id))
        self.conn.commit()

    def latest_run(self) -> RunRecord:
        """The newest run: what ``arena leaderboard`` reports (a tournament reports its own run instead)."""
        row = self.conn.execute("SELECT MAX(id) FROM runs").fetchone()
        if row is None or row[0] is None:
            raise StoreError(f"{self.path}: no tournament has been run into this database yet")
        return self.run(int(row[0]))

    def run(self, run_id: int) -> RunRecord:
        row = self.conn.execute("SELECT id, started, finished, status, device, config, games_played FROM runs "
                                "WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise StoreError(f"{self.path}: no run {run_id} in this database")
        try:
            config = json.loads(row[5])
        except ValueError:
            config = None
        if not isinstance(config, dict):
            raise StoreError(f"{self.path}: run {run_id} has a damaged config record; expected a JSON object "
                             f"written by `arena tournament`")
        ids = [int(r[0]) for r in self.conn.execute(
            "SELECT participant_id FROM run_participants WHERE run_id = ? ORDER BY position", (run_id,))]
        return RunRecord(int(row[0]), row[1], row[2], row[3], row[4], config, ids, int(row[6] or 0))

    def tidy_stale_runs(self) -> int:
        """Mark runs still ``running`` as ``interrupted`` (a kill -9 or a power cut leaves them so), with
        the time of their last batch and the games they stored. Call it only while holding the output
        folder's lock, when no other process can be running. Returns how many were tidied."""
        cur = self.conn.execute(
            "UPDATE runs SET status = 'interrupted', "
            "finished = COALESCE((SELECT MAX(COALESCE(b.finished, b.started)) FROM batches b "
            "WHERE b.run_id = runs.id), started), "
            "games_played = (SELECT COUNT(*) FROM games g JOIN batches b ON g.batch_id = b.id "
            "WHERE b.run_id = runs.id) "
            "WHERE status = 'running'")
        self.conn.commit()
        return cur.rowcount

    def start_batch(self, run_id: int, seed: int, num_envs: int, games: int, device: str) -> int:
        cur = self.conn.execute(
            "INSERT INTO batches (run_id, seed, num_envs, games, device, started) VALUES (?, ?, ?, ?, ?, ?)",
            (run_id, seed, num_envs, games, device, time.time()))
        self.conn.commit()
        return int(cur.lastrowid)  # type: ignore[arg-type]

    def finish_batch(self, batch_id: int) -> None:
        self.conn.execute("UPDATE batches SET finished = ? WHERE id = ?", (time.time(), batch_id))
        self.flush()

    def batch_record(self, batch_id: int) -> tuple[int, int, int, str] | None:
        """``(run id, seed, num_envs, device)`` of a stored batch; None when there is no such batch."""
        row = self.conn.execute("SELECT run_id, seed, num_envs, device FROM batches WHERE id = ?",
                                (batch_id,)).fetchone()
        return None if row is None else (int(row[0]), int(row[1]), int(row[2]), str(row[3]))

    def batch_games(self, batch_id: int) -> list[tuple[int, int, int, int, int, int, int | None]]:
        """``(p1, p2, game_index, slot, winner, length, forfeit_by)`` of every game a batch stored (ids)."""
        rows = self.conn.execute("SELECT p1, p2, game_index, slot, winner, length, forfeit_by FROM games "
                                 "WHERE batch_id = ? ORDER BY slot, game_index", (batch_id,))
        return [(int(a), int(b), int(g), -1 if s is None else int(s), int(w), int(n), None if f is None else int(f))
                for a, b, g, s, w, n, f in rows]

    def batch_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM batches").fetchone()[0])

    def game_count(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM games").fetchone()[0])

    # -- games ---------------------------------------------------------------------------------------

    def add_games(self, games: Iterable[GameResult]) -> None:
        """Queue finished games; they are committed at most ``commit_every`` seconds later (or on
        :meth:`flush`). A game already stored is left as it is."""
        now = time.time()
        games = list(games)
        if not games:
            return
        rows = [(g.p1, g.p2, g.game_index, g.winner, g.length, g.team_size, g.batch if g.batch >= 0 else None,
                 g.slot, g.seed, g.forfeit_by, g.forfeit_reason, now) for g in games]
        self.conn.executemany(
            "INSERT OR IGNORE INTO games (p1, p2, game_index, winner, length, team_size, batch_id, slot, seed, "
            "forfeit_by, forfeit_reason, finished_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        # A game stored before keeps its sides: (game_id, side) is the key.
        sides = [(side, who, score, _real(ret), missiles, kills, g.p1, g.p2, g.game_index)
                 for g in games for side, who, score, ret, missiles, kills in g.sides()]
        self.conn.executemany(
            "INSERT OR IGNORE INTO sides (game_id, side, participant, score, return, missiles, kills) "
            "SELECT id, ?, ?, ?, ?, ?, ? FROM games WHERE p1 = ? AND p2 = ? AND game_index = ?", sides)
        self._pending += len(rows)
        if time.monotonic() - self._last_commit >= self.commit_every:
            self.flush()

    def flush(self) -> None:
        self.conn.commit()
        self._last_commit = time.monotonic()
        self._pending = 0

    def stored_indices(self, participant_ids: Sequence[int]) -> dict[tuple[int, int], set[int]]:
        """``{(p1 id, p2 id): {game indices}}`` over games between the given participants."""
        ids = set(participant_ids)
        out: dict[tuple[int, int], set[int]] = {}
        for p1, p2, idx in self.conn.execute("SELECT p1, p2, game_index FROM games"):
            if p1 in ids and p2 in ids:
                out.setdefault((p1, p2), set()).add(int(idx))
        return out

    def delete_forfeits(self, participant_ids: Sequence[int]) -> int:
        """Delete the stored forfeits of games between ``participant_ids`` (their sides too), so that they
        are played again; returns how many games were deleted."""
        ids = set(participant_ids)
        doomed = [(gid,) for gid, p1, p2 in self.conn.execute(
            "SELECT id, p1, p2 FROM games WHERE forfeit_by IS NOT NULL") if p1 in ids and p2 in ids]
        with self.conn:
            self.conn.executemany("DELETE FROM sides WHERE game_id = ?", doomed)
            self.conn.executemany("DELETE FROM games WHERE id = ?", doomed)
        return len(doomed)

    def games(self, participant_ids: Sequence[int] | None = None, max_index: int | None = None,
              outcomes_only: bool = False, relabel: "Mapping[int, int] | None" = None) -> list[GameResult]:
        """Stored games, optionally only those between ``participant_ids`` with ``game_index <
        max_index``, in a fixed order (p1, p2, game_index) that does not depend on when they were played.

        ``outcomes_only`` skips the per-side records (returns NaN, missiles 0, kills None): what rating
        needs, read without the join. ``relabel`` maps participant ids (``p1``, ``p2``, ``forfeit_by``)
        to other numbers, such as league positions, as the records are built.
        """
        ids = set(participant_ids) if participant_ids is not None else None
        nan = float("nan")
        if outcomes_only:
            query = ("SELECT g.p1, g.p2, g.game_index, g.winner, g.length, NULL, NULL, NULL, NULL, g.batch_id, g.slot, "
                     "g.seed, g.forfeit_by, g.forfeit_reason, g.team_size, NULL, NULL FROM games g "
                     "ORDER BY g.p1, g.p2, g.game_index")
        else:
            query = ("SELECT g.p1, g.p2, g.game_index, g.winner, g.length, a.return, b.return, a.missiles, b.missiles, "
                     "g.batch_id, g.slot, g.seed, g.forfeit_by, g.forfeit_reason, g.team_size, a.kills, b.kills "
                     "FROM games g LEFT JOIN sides a ON a.game_id = g.id AND a.side = 1 "
                     "LEFT JOIN sides b ON b.game_id = g.id AND b.side = 2 ORDER BY g.p1, g.p2, g.game_index")
        name = (lambda i: i) if relabel is None else relabel.__getitem__
        out = []
        for (p1, p2, index, winner, length, r1, r2, m1, m2, batch, slot, seed, forfeit_by, reason, team,
             k1, k2) in self.conn.execute(query):
            if ids is not None and (p1 not in ids or p2 not in ids):
                continue
            if max_index is not None and index >= max_index:
                continue
            out.append(GameResult(name(p1), name(p2), index, winner, length, nan if r1 is None else r1,
                                  nan if r2 is None else r2, m1 or 0, m2 or 0, -1 if batch is None else batch,
                                  -1 if slot is None else slot, seed or 0,
                                  None if forfeit_by is None else name(forfeit_by), reason, team or 1,
                                  None if k1 is None else float(k1), None if k2 is None else float(k2)))
        return out

    def outcomes(self, participant_ids: Sequence[int], max_index: int | None = None) -> Outcomes:
        """The games :meth:`games` gives with ``outcomes_only`` and ``relabel`` by position in
        ``participant_ids``, in the same order, as columns (:mod:`arena.tournament.outcomes`): what rating
        reads, without a :class:`GameResult` per game."""
        import numpy as np

        order = " ORDER BY p1, p2, game_index"
        rows = self.conn.execute("SELECT p1, p2, game_index, winner, COALESCE(forfeit_by, -1) FROM games" + order)
        table = np.array(rows.fetchall(), dtype=np.int64).reshape(-1, 5)
        reasons = [r for (r,) in self.conn.execute(
            "SELECT forfeit_reason FROM games WHERE forfeit_by IS NOT NULL" + order)]
        games = from_columns(table[:, 0], table[:, 1], table[:, 2], table[:, 3], table[:, 4], reasons)
        if max_index is not None:
            games = games.select(games.game_index < max_index)
        return games.among(participant_ids)

    def games_by_run(self, max_index: int | None = None) -> list[tuple[int, int, int | None, int]]:
        """``(p1 id, p2 id, run id, games)``: how many of each ordered pairing's games (``game_index <
        max_index``) each run played; run None for games of no stored batch. Which run played a game says
        under which league settings (its seed: where the game started) it was played."""
        rows = self.conn.execute(
            "SELECT g.p1, g.p2, b.run_id, COUNT(*) FROM games g LEFT JOIN batches b ON b.id = g.batch_id "
            "WHERE g.game_index < ? GROUP BY g.p1, g.p2, b.run_id",
            (max_index if max_index is not None else 2 ** 62,))
        return [(int(a), int(b), None if r is None else int(r), int(n)) for a, b, r, n in rows]

    def side_records(self, participant_ids: Sequence[int] | None = None) -> list[tuple[int, int, int, float]]:
        """``(game id, side, participant, score)`` of every side of every stored game: what a participant
        scored, whichever side it flew."""
        rows = self.conn.execute("SELECT game_id, side, participant, score FROM sides ORDER BY game_id, side")
        ids = set(participant_ids) if participant_ids is not None else None
        return [(int(g), int(s), int(p), float(score)) for g, s, p, score in rows if ids is None or p in ids]

    def close(self) -> None:
        try:
            self.flush()
        finally:
            self.conn.close()

    def __enter__(self) -> "ResultStore":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_ours(path: Path, conn: sqlite3.Connection | None = None) -> set[str]:
    """The tables of ``path`` if it is arena's results database (or an empty file); a
    :class:`StoreError` otherwise. Only reads: a foreign database must come out of this unchanged.

    Arena marks its file with ``PRAGMA application_id``; a file from before that mark counts as arena's
    when it holds only arena's tables and a ``meta`` table with a schema version."""
    own = conn is None
    try:
        if own:
            conn = _connect_read_only(path)
        assert conn is not None
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        tables = {str(r[0]) for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
                  if not str(r[0]).startswith("sqlite_")}  # SQLite's own (ANALYZE's statistics)
        legacy = False
        if app_id == 0 and "meta" in tables and tables <= TABLES:
            legacy = conn.execute("SELECT 1 FROM meta WHERE key = 'schema_version'").fetchone() is not None
    except sqlite3.Error as exc:
        raise StoreError(f"{path}: cannot be used as the results database ({_reason(exc)}); expected "
                         f"{DB_NAME} written by `arena tournament`; move it away or use another output") from None
    finally:
        if own and conn is not None:
            conn.close()
    if app_id == APPLICATION_ID or legacy or (app_id == 0 and not tables):
        return tables
    what = (f"application_id 0x{app_id & 0xFFFFFFFF:08x}" if app_id else
            f"tables {', '.join(sorted(tables)[:5])}{', …' if len(tables) > 5 else ''}")
    raise StoreError(f"{path}: not an arena results database ({what}); expected {DB_NAME} written by "
                     f"`arena tournament`; move it away or use another output (arena neither changes nor deletes it)")


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection to ``path`` that cannot write to it. Without a ``-wal`` or ``-journal`` beside the
    file, no one is writing it and every committed game is in the file itself: it is opened
    ``immutable``, which reads it as it is and creates no ``-wal``/``-shm`` files. Otherwise
    ``mode=ro``, which reads the games a live or killed writer left in the log."""
    busy = any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-journal"))
    uri = f"{path.resolve().as_uri()}?{'mode=ro' if busy else 'immutable=1'}"
    return sqlite3.connect(uri, uri=True)


def _inspect(path: Path, conn: sqlite3.Connection, reader: bool) -> str | None:
    """The schema version of the arena database ``conn`` reads (None for an empty file or one never
    initialised), once it is known to be arena's, of a version this arena reads or upgrades, whole and
    holding that version's tables; a one-line :class:`StoreError` otherwise. ``reader``: the file must
    hold games to report. Only reads, so that a refused file is left byte for byte as it was."""
    cut = _truncation(path)
    if cut is not None:
        raise StoreError(_damaged(path, cut))
    try:
        conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.Error as exc:  # anything else is reported by _check_ours, naming what SQLite says
        name = getattr(exc, "sqlite_errorname", None)  # Python 3.11+; before, a journal beside it tells
        if name == "SQLITE_READONLY_ROLLBACK" or (name is None and path.with_name(f"{path.name}-journal").exists()):
            raise StoreError(f"{path}: a write to it was interrupted and {path.name}-journal holds what it changed; "
                             f"arena reads a file before it writes to it, so roll that back first by opening it "
                             f"once with SQLite (`sqlite3 {path.name} 'PRAGMA quick_check'`), then run again") from None
    tables = _check_ours(path, conn)
    if reader and not {"meta", "games"} <= tables:  # an empty file: nothing to report
        raise StoreError(f"{path}: not an arena results database (expected {DB_NAME} written by "
                         f"`arena tournament`)")
    version: str | None = None
    try:
        if "meta" in tables:
            row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = None if row is None else str(row[0])
        if version is not None and version != SCHEMA_VERSION and version not in MIGRATIONS:
            raise StoreError(f"{path}: schema version {version[:40]}, this arena reads {SCHEMA_VERSION} (and "
                             f"upgrades {', '.join(MIGRATIONS)}); use a newer arena, --fresh or another output "
                             f"directory (arena has not changed it)")
        problem = _integrity_problem(conn)
    except sqlite3.Error as exc:
        problem = _reason(exc)
    if problem is None and (version is not None or reader):
        missing = REQUIRED[version or SCHEMA_VERSION] - tables
        problem = f"missing table {', '.join(sorted(missing))}" if missing else None
    if problem is not None:
        raise StoreError(_damaged(path, problem))
    try:
        lie = _impossible_value(conn, tables)
    except sqlite3.Error as exc:
        lie = _reason(exc)
    if lie is not None:
        raise StoreError(f"{path}: holds a value arena never writes ({lie}), so its games cannot be read as they "
                         f"are; arena has not changed it: restore it from a copy, or move it away or use another "
                         f"output directory")
    return version


def _whole(column: str, low: int) -> str:
    return f"(typeof({column}) != 'integer' OR {column} < {low})"


def _optional(column: str, condition: str) -> str:
    return f"({column} IS NOT NULL AND {condition})"


# What each column a reader interprets may hold, as arena writes it: table -> (SQL naming a row, checks),
# each check (column, SQL true of a row holding something else, what was expected). A reader trusts these,
# so a store holding anything else (a hand edit, another tool, a bug) is refused, naming the row, rather
# than read as if it did not: a winner 5 would count as a decisive game, a negative id would index the
# wrong participant, a side's score that is not its game's would be another game's result.
_PARTICIPANT = "(SELECT id FROM participants)"
JOINED = {"sides": "LEFT JOIN games g ON g.id = sides.game_id"}  # what a table's checks read beside it
VALUE_CHECKS: dict[str, tuple[str, tuple[tuple[str, str, str], ...]]] = {
    "participants": ("'participant id ' || quote(id)", (
        ("id", _whole("id", 1), "an id >= 1"),
        ("key", "(typeof(key) != 'text' OR key = '')", "the participant's key (text)"),
        ("name", "(typeof(name) != 'text' OR trim(name) = '')", "a name (text that is not blank)"),
        ("agent", "(typeof(agent) != 'text' OR agent = '')", "the name of an agent (text)"),
        ("checkpoint", _optional("checkpoint", "typeof(checkpoint) != 'text'"), "NULL or a checkpoint path (text)"),
    )),
    "runs": ("'run id ' || quote(id)", (
        ("games_played", _optional("games_played", _whole("games_played", 0)), "a count of games >= 0"),
    )),
    "run_participants": ("'run ' || quote(run_id) || ' position ' || quote(position)", (
        ("position", _whole("position", 0), "a league position >= 0"),
        ("participant_id", f"participant_id NOT IN {_PARTICIPANT}", "the id of a stored participant"),
        ("run_id", "run_id NOT IN (SELECT id FROM runs)", "the id of a stored run"),
    )),
    "batches": ("'batch id ' || quote(id)", (
        ("run_id", "run_id NOT IN (SELECT id FROM runs)", "the id of a stored run"),
        ("seed", "typeof(seed) != 'integer'", "an integer seed"),
        ("num_envs", _whole("num_envs", 1), "a number of env slots >= 1"),
        ("games", _whole("games", 0), "a count of games >= 0"),
    )),
    "games": ("'game id ' || quote(id)", (
        ("p1", f"(typeof(p1) != 'integer' OR p1 NOT IN {_PARTICIPANT})", "the id of a stored participant"),
        ("p2", f"(typeof(p2) != 'integer' OR p2 NOT IN {_PARTICIPANT} OR p2 = p1)",
         "the id of a stored participant other than p1's"),
        ("game_index", _whole("game_index", 0), "a game number >= 0"),
        ("winner", "(typeof(winner) != 'integer' OR winner NOT IN (0, 1, 2))",
         "0 (a draw), 1 or 2 (the side that won)"),
        ("length", _whole("length", 0), "a number of steps >= 0"),
        ("team_size", _whole("team_size", 1), "aircraft a side, >= 1"),
        ("batch_id", _optional("batch_id", "batch_id NOT IN (SELECT id FROM batches)"), "NULL or a stored batch's id"),
        ("slot", _optional("slot", _whole("slot", 0)), "NULL or an env slot >= 0"),
        ("seed", _optional("seed", "typeof(seed) != 'integer'"), "NULL or an integer seed"),
        ("forfeit_by", _optional("forfeit_by", "forfeit_by NOT IN (p1, p2)"),
         "NULL or the participant of the game that forfeited it (p1 or p2)"),
        ("winner", _optional("forfeit_by", "winner != CASE WHEN forfeit_by = p1 THEN 2 ELSE 1 END"),
         "the side that did not forfeit (a forfeit is a loss for forfeit_by)"),
    )),
    "sides": ("'game id ' || quote(sides.game_id) || ' side ' || quote(sides.side)", (  # g: the side's game
        ("game_id", "g.id IS NULL", "the id of a stored game"),
        ("side", "(typeof(sides.side) != 'integer' OR sides.side NOT IN (1, 2))", "1 or 2"),
        ("participant", "sides.participant IS NOT CASE sides.side WHEN 1 THEN g.p1 ELSE g.p2 END",
         "the participant that flew this side in games (p1 for side 1, p2 for side 2)"),
        ("score", "sides.score IS NOT CASE g.winner WHEN 0 THEN 0.5 WHEN sides.side THEN 1.0 ELSE 0.0 END",
         "the side's points by the game's winner (1 a win, 0.5 a draw, 0 a loss)"),
        ("return", _optional('sides."return"', "typeof(sides.\"return\") NOT IN ('real', 'integer')"),
         "NULL or a number"),
        ("missiles", _optional("sides.missiles", _whole("sides.missiles", 0)), "NULL or a count >= 0"),
        ("kills", _optional("sides.kills", "(typeof(sides.kills) NOT IN ('real', 'integer') OR sides.kills < 0)"),
         "NULL or a count >= 0"),
    )),
}


def _impossible_value(conn: sqlite3.Connection, tables: set[str]) -> str | None:
    """The first value of a column a reader interprets that arena never writes there, on one line: the
    table, the row, the column, the value and what was expected (and how many rows more hold such
    values); None when every one is possible. One scan of each table (two when one is found). Only
    reads; the checks of columns an older schema lacks are skipped."""
    for table, (label, checks) in VALUE_CHECKS.items():
        if table not in tables:
            continue
        present = {str(r[1]) for r in conn.execute(f"PRAGMA table_info({table})")}
        checks = tuple(c for c in checks if c[0] in present)
        if not checks:
            continue
        where = " OR ".join(c[1] for c in checks)
        which = " ".join(f"WHEN {c[1]} THEN {i}" for i, c in enumerate(checks))
        value = " ".join(f'WHEN {c[1]} THEN quote({table}."{c[0]}")' for c in checks)
        rows = f"FROM {table} {JOINED.get(table, '')} WHERE {where}"
        row = conn.execute(f"SELECT {label}, CASE {which} END, CASE {value} END {rows} LIMIT 1").fetchone()
        if row is not None:
            column, _, expected = checks[int(row[1])]
            more = int(conn.execute(f"SELECT COUNT(*) {rows}").fetchone()[0]) - 1
            also = f"; {more:,} more row(s) of {table} hold such values" if more else ""
            return f"{table}, {row[0]}: {column} is {_shown(row[2])}, expected {expected}{also}"
    if "participants" in tables:  # read in Python: SQLite's JSON functions are missing from some builds
        for pid, params in conn.execute("SELECT id, params FROM participants ORDER BY id"):
            try:
                ok = isinstance(json.loads(params), dict)
            except (TypeError, ValueError):
                ok = False
            if not ok:
                return (f"participants, participant id {pid}: params is {_shown(repr(params))}, expected the "
                        f"agent's parameters as a JSON object")
    return None


def _shown(value: object) -> str:
    text = str(value)
    return text if len(text) <= 60 else text[:59] + "…"


def _damaged(path: Path, problem: str) -> str:
    return (f"{path}: damaged ({problem}); arena has not changed it: restore it from a copy, or move it away "
            f"or use another output directory")


def _truncation(path: Path) -> str | None:
    """How much of ``path`` is missing when it is shorter than its header says; None otherwise. SQLite
    reads the missing end as zeros, so ``quick_check`` can pass on a file cut short in unused space."""
    if Path(f"{path}-wal").exists():  # pages live in the log too, and a checkpoint may be growing the file
        return None
    with open(path, "rb") as f:
        header = f.read(100)
    if len(header) < 100 or not header.startswith(b"SQLite format 3\0"):
        return None  # not a database at all: SQLite's own error says so
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] != header[92:96] or not pages:  # the page count is only valid when these agree
        return None
    expected, size = pages * page_size, path.stat().st_size
    return f"cut short: {size} of {expected} bytes" if size < expected else None


def _integrity_problem(conn: sqlite3.Connection) -> str | None:
    """The first problem ``PRAGMA quick_check`` finds, on one line; None when the file is whole. It reads
    every page (about 0.6 s for a million games) but none of the indexes' contents."""
    rows = [str(r[0]) for r in conn.execute("PRAGMA quick_check(10)")]
    if rows == ["ok"]:
        return None
    first = " ".join(rows[0].replace("*** in database main ***", "").split())
    first = first if len(first) <= 160 else first[:159] + "…"
    return first + (f"; {len(rows) - 1} more problem(s)" if len(rows) > 1 else "")


class FolderLock(OneWriter):
    """An exclusive lock on a tournament's output folder (:class:`arena.folder_lock.FolderLock`), so two
    tournaments never play into (or ``--fresh`` away) the same database at once; :class:`StoreError`
    when another holds it or the folder cannot hold it."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        super().__init__(folder, LOCK_NAME)

    def acquire(self) -> "FolderLock":
        try:
            super().acquire()
        except FolderBusy as exc:
            raise StoreError(f"{self.folder}: another tournament (pid {exc.holder}) is playing into this output "
                             f"folder; wait for it to finish, or set another output") from None
        except FolderUnusable as exc:
            raise StoreError(f"{self.folder}: cannot be used as the output folder ({exc.reason}); expected a "
                             f"writable directory") from None
        except LinkedOutputError as exc:
            raise StoreError(str(exc)) from None
        return self


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror + (f": {exc.filename}" if exc.filename else "")
    return str(exc) or type(exc).__name__


def _real(x: float) -> float | None:
    return None if x != x else float(x)  # NaN → NULL
