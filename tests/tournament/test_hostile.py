"""Hostile league files and results databases (issue 16): each one is a one-line error before any game
is stored, or a safe outcome. The fuzzed variants are in test_fuzz_league.py."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from arena.agents import BaseAgent
from arena.plugins import PluginInfo
from arena.tournament import ConfigError, StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.runner import league_report
from arena.tournament.store import APPLICATION_ID, SCHEMA_VERSION, FolderLock, ResultStore
from tourney_helpers import FAST_ENV, LEAGUE, Pursuer

HERE = Path(__file__).resolve().parent


def one_line_error(path: Path, key: str = "") -> pytest.RaisesContext:  # type: ignore[type-arg]
    prefix = f"{path}: {key}: " if key else f"{path}: "
    return pytest.raises(ConfigError, match="^" + _re(prefix) + r"[^\n]*$")


def _re(text: str) -> str:
    import re

    return re.escape(text)


def laughs(levels: int = 9, fan: int = 10) -> str:
    """A 'billion laughs': ``fan ** levels`` values from a few hundred bytes."""
    lines = ["x0: &x0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &x{i} [" + ", ".join([f"*x{i - 1}"] * fan) + "]")
    return "\n".join(lines)


# -- item 1: aliases -----------------------------------------------------------------------------------


def test_billion_laughs_under_params_is_refused_at_once(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yaml"
    path.write_text("name: laughs\n" + "env: " + json.dumps(FAST_ENV) + "\nparticipants:\n  - pursuer\n"
                    "  - agent: pursuer\n    name: big\n    params:\n      fire_km: 8\n"
                    "      junk: &a0 [lol, lol, lol]\n"
                    + "\n".join(f"      j{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10))
                    + "\n")
    start = time.perf_counter()
    with one_line_error(path) as info:
        load_config(path)
    assert time.perf_counter() - start < 1.0
    assert "expands to more than 100,000 values" in str(info.value)
    assert not (tmp_path / "reports").exists()


def test_small_aliases_are_fine_and_recursive_ones_refused(tmp_path: Path) -> None:
    path = tmp_path / "alias.yaml"
    path.write_text("env: &e " + json.dumps(FAST_ENV) + "\nparticipants: [pursuer, idle]\n"
                    "rating: &r {bootstrap_rounds: 10}\n")
    assert load_config(path).env["max_time"] == 60.0
    path.write_text("participants: &p [pursuer, *p]\n")
    with one_line_error(path) as info:
        load_config(path)
    assert "refers to a value that contains it" in str(info.value)


# -- item 13: encodings, nesting, NUL ------------------------------------------------------------------

TEXT = "name: Jürgen\nparticipants: [pursuer, idle]\n"


@pytest.mark.parametrize("raw,expected", [
    (TEXT.encode("latin-1"), "is not UTF-8 text (byte 0xfc at offset 7)"),
    (TEXT.encode("utf-16"), "is UTF-16 text; expected UTF-8"),
    (TEXT.encode("utf-16-be"), "is UTF-16 text; expected UTF-8"),
    (TEXT.encode("utf-32"), "is UTF-32 text; expected UTF-8"),
    (TEXT.encode("utf-32-le"), "is UTF-32 text; expected UTF-8"),
    (bytes(range(256)) * 4, "contains a NUL byte (offset 0); expected a UTF-8 YAML text file, not a binary one"),
    (bytes(range(1, 256)) * 4, "is not UTF-8 text (byte 0x80 at offset 127)"),
    (b"name: a\x00b\nparticipants: [pursuer, idle]\n", "contains a NUL byte (offset 7)"),
    (b"participants: " + b"[" * 5000 + b"]" * 5000 + b"\n", "nested more than 32 levels deep"),
    (b"participants: " + b"{a: " * 3000 + b"1" + b"}" * 3000 + b"\n", "nested more than 32 levels deep"),
    (b"output: \"a\\0b\"\nparticipants: [pursuer, idle]\n", "output: expected a folder path, got 'a\\x00b'"),
    (b"participants: [pursuer, \"id\\0le\"]\n", "participants[1]: expected a string without NUL"),
    (b"seed: !!int " + b"9" * 5000 + b"\nparticipants: [pursuer, idle]\n", "a value cannot be read"),
    (b"seed: !!python/object/apply:os.system [ls]\n", "not valid YAML"),
    (b"a: 1\n---\nb: 2\n", "not valid YAML"),
    (b"x" * (1 << 20) + b"x", "larger than 1024 KiB"),
], ids=lambda v: v[:30] if isinstance(v, str) else "raw")
def test_unreadable_files_are_one_line(tmp_path: Path, raw: bytes, expected: str) -> None:
    path = tmp_path / "league.yaml"
    path.write_bytes(raw)
    with one_line_error(path) as info:
        load_config(path)
    assert expected in str(info.value)


def test_utf8_bom_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "league.yaml"
    path.write_bytes(TEXT.encode("utf-8-sig"))
    assert load_config(path).name == "Jürgen"


def test_a_folder_or_unreadable_path(tmp_path: Path) -> None:
    with one_line_error(tmp_path) as info:
        load_config(tmp_path)
    assert "cannot be read" in str(info.value)


# -- items 4, 5, 6: values out of range ---------------------------------------------------------------

OUT_OF_RANGE = [
    ({"seed": -1}, "seed", "expected an integer in [0, 2**62 - 1], got -1"),
    ({"seed": 2**62}, "seed", "expected an integer in [0, 2**62 - 1], got 4611686018427387904"),
    ({"games_per_pairing": 2**40}, "games_per_pairing", "expected an even integer in [2, 100000]"),
    ({"games_per_pairing": 1e30}, "games_per_pairing",
     "expected an even integer in [2, 100000] (half the games from each side), got 1e+30"),
    ({"games_per_pairing": 100_000, "participants": [f"p{i}" for i in range(30)]}, "games_per_pairing",
     "expected at most 10,000,000 in one league"),
    ({"max_envs": 2**40}, "max_envs", "expected a positive integer up to 4194304"),
    ({"rating": {"bootstrap_rounds": 10**12}}, "rating.bootstrap_rounds", "expected an integer in [0, 10000]"),
    ({"rating": {"tau": float("inf")}}, "rating.tau", "expected a number >= 0 and at most 0.1·beta, got inf"),
    ({"rating": {"tau": float("nan")}}, "rating.tau", "expected a number >= 0 and at most 0.1·beta, got nan"),
    ({"rating": {"tau": 1e12}}, "rating.tau", "at most 0.1·beta"),
    ({"rating": {"sigma": 1e12}}, "rating.sigma", "at most 20·beta"),
    ({"rating": {"beta": 0}}, "rating.beta", "expected a number in [0.001, 1e+06]"),
    ({"rating": {"mu": 1e300}}, "rating.mu", "expected a number in [-1e+06, 1e+06]"),
    ({"rating": {"draw_probability": 1.0}}, "rating.draw_probability", "expected a number in [1e-06, 0.99]"),
    ({"rating": {"mu": 10**400}}, "rating.mu", "expected a number in [-1e+06, 1e+06], got 1000"),
    ({"env": {"dt": 1e-9}}, "env.dt", "expected a number in [0.01, 60] s, got 1e-09"),
    ({"env": {"dt": 1e-6}}, "env.dt", "expected a number in [0.01, 60] s"),
    ({"env": {"dt": 0.01, "max_time": 80000.0}}, "env.dt", "decision steps per episode"),
    ({"env": {"substeps": 10**9}}, "env.substeps", "expected an integer in [1, 100]"),
    ({"env": {"arena_size": 1e30}}, "env.arena_size", "expected a number in [1000, 10000000] m"),
    ({"env": {"missiles": 2**40}}, "env.missiles", "expected an integer in [0, 64]"),
    ({"env": {"speed_min": 500.0}}, "env.speed_min", "expected a number below speed_max"),
    ({"env": {1: 2}}, "env", "expected setting names as strings"),
    ({"time_per_move": 0}, "time_per_move",
     "expected seconds per move in (0, 3600]"),
    ({"time_per_move": float("inf")}, "time_per_move",
     "expected seconds per move in (0, 3600] (or leave it out for no limit), got inf"),
    ({"time_per_move": "fast"}, "time_per_move",
     "expected seconds per move in (0, 3600] (or leave it out for no limit), got 'fast'"),
    ({"output": ""}, "output", "expected a folder path"),
]


@pytest.mark.parametrize("settings,key,expected", OUT_OF_RANGE, ids=[c[1] + ":" + c[2][:24] for c in OUT_OF_RANGE])
def test_values_out_of_range_are_refused_up_front(write_league, tmp_path: Path, settings, key, expected) -> None:
    settings = dict(settings)
    participants = settings.pop("participants", LEAGUE)
    env = {**FAST_ENV, **settings.pop("env", {})}
    path = write_league(participants, env=env, **settings)
    with one_line_error(path, key) as info:
        load_config(path)
    assert expected in str(info.value)
    assert not (tmp_path / "out").exists()  # refused before any game: nothing stored


def test_env_errors_blame_the_key_not_an_agent(plugin_free_cli, write_league) -> None:
    path = write_league(["crank", "placeholder"], env={"dt": 1e-9})
    res = plugin_free_cli(["tournament", str(path), "-q"])
    assert res.exit_code == 2
    assert res.stderr.strip() == f"Error: {path}: env.dt: expected a number in [0.01, 60] s, got 1e-09"


@pytest.fixture()
def plugin_free_cli():
    from click.testing import CliRunner

    from arena.cli import main

    return lambda args: CliRunner().invoke(main, args)


def test_stored_settings_out_of_range_are_a_store_error(write_league, registry) -> None:
    """An older or hand-edited database whose run asks for settings that cannot be rated."""
    config = load_config(write_league(LEAGUE))
    run_tournament(config, registry=registry, progress=False)
    db = config.output / "results.sqlite"
    with sqlite3.connect(db) as conn:
        cfg = json.loads(conn.execute("SELECT config FROM runs").fetchone()[0])
        cfg["rating"]["tau"] = float("inf")
        conn.execute("UPDATE runs SET config = ?", (json.dumps(cfg),))
    with pytest.raises(StoreError, match=r"results.sqlite: runs\[1\]\.rating\.tau: expected a number >= 0 and at "
                                         r"most 0\.1·beta, got inf"):
        rebuild_report(config.output)
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE runs SET config = '[1, 2]'")
    with pytest.raises(StoreError, match=r"run 1 has a damaged config record"):
        rebuild_report(config.output)


# -- item 2: the run's own report, and a lock on the output folder ------------------------------------


class Intruder(BaseAgent):
    """Plays like an idle agent, but on its first move slips another league's run into the database,
    as a second process playing into the same folder without the lock would."""

    name = "intruder"
    db: Path | None = None

    def act(self, observation):  # type: ignore[no-untyped-def]
        import torch

        if type(self).db is not None:
            with sqlite3.connect(type(self).db) as conn:
                conn.execute("INSERT INTO runs (started, status, device, config, versions) VALUES "
                             "(0, 'running', 'cpu', ?, '{}')",
                             (json.dumps({"name": "other", "games_per_pairing": 2, "rating": {}}),))
            type(self).db = None
        n = observation["x"].shape[0]
        return {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}


def test_report_is_built_from_the_runs_own_id(write_league, registry) -> None:
    registry.add("intruder", Intruder, PluginInfo("tests", "arena-tests", "0", "tests.tournament"))
    config = load_config(write_league(LEAGUE + ["intruder"]))
    config.output.mkdir(parents=True)
    ResultStore(config.output / "results.sqlite").close()
    Intruder.db = config.output / "results.sqlite"
    report = run_tournament(config, registry=registry, progress=False)
    assert list(report.leaderboard["name"]).count("intruder") == 1 and len(report.leaderboard) == 4
    assert report.name == "test"


def test_second_tournament_on_a_locked_folder_refuses(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    with FolderLock(config.output):
        with pytest.raises(StoreError, match=rf"out: another tournament \(pid {os.getpid()}\) is playing into this "
                                             r"output folder; wait for it to finish, or set another output"):
            run_tournament(config, registry=registry, progress=False)
        with pytest.raises(StoreError, match="another tournament"):
            run_tournament(config, fresh=True, registry=registry, progress=False)  # --fresh waits its turn too
    assert not (config.output / "results.sqlite").exists()
    assert run_tournament(config, registry=registry, progress=False).run["played"] == 12


def test_lock_of_a_killed_process_does_not_block(tmp_path: Path) -> None:
    folder = tmp_path / "out"
    code = ("import sys, time; sys.path.insert(0, sys.argv[1]); from arena.tournament.store import FolderLock; "
            "FolderLock(sys.argv[2]).acquire(); print('locked', flush=True); time.sleep(60)")
    proc = subprocess.Popen([sys.executable, "-c", code, str(HERE.parents[1]), str(folder)], stdout=subprocess.PIPE,
                            text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError, match=rf"another tournament \(pid {proc.pid}\)"):
            FolderLock(folder).acquire()
    finally:
        proc.kill()  # kill -9: no clean-up runs in the holder
        proc.wait()
    assert (folder / "tournament.lock").read_text().strip() == str(proc.pid)  # the stale file stays ...
    FolderLock(folder).acquire().release()  # ... and does not block


# -- item 15: a foreign SQLite file -------------------------------------------------------------------


def _schema(db: Path) -> tuple[list[tuple[str, str]], int, str]:
    with sqlite3.connect(db) as conn:
        return (conn.execute("SELECT type, name FROM sqlite_master ORDER BY name").fetchall(),
                conn.execute("PRAGMA application_id").fetchone()[0], conn.execute("PRAGMA journal_mode").fetchone()[0])


def test_foreign_database_with_a_games_table_is_refused_and_untouched(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    config.output.mkdir(parents=True)
    db = config.output / "results.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE games (id INTEGER PRIMARY KEY, title TEXT)")
        conn.execute("INSERT INTO games (title) VALUES ('chess')")
    before = _schema(db)
    for fresh in (False, True):
        with pytest.raises(StoreError, match=r"results.sqlite: not an arena results database \(tables games\); "
                                             r"expected results.sqlite written by `arena tournament`"):
            run_tournament(config, fresh=fresh, registry=registry, progress=False)
    with pytest.raises(StoreError, match="not an arena results database"):
        rebuild_report(config.output)
    assert _schema(db) == before == ([("table", "games")], 0, "delete")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT title FROM games").fetchall() == [("chess",)]


def test_other_applications_id_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA application_id = 1234")
    with pytest.raises(StoreError, match=r"not an arena results database \(application_id 0x000004d2\)"):
        ResultStore(db)
    assert _schema(db)[:2] == ([], 1234)


def test_own_database_is_marked_and_older_unmarked_ones_still_open(tmp_path: Path) -> None:
    db = tmp_path / "results.sqlite"
    ResultStore(db).close()
    assert _schema(db)[1] == APPLICATION_ID
    with sqlite3.connect(db) as conn:  # as written before the mark existed
        conn.execute("PRAGMA application_id = 0")
    with ResultStore(db) as store:
        assert store.meta("schema_version") == SCHEMA_VERSION
    assert _schema(db)[1] == APPLICATION_ID


# -- item 17: stale runs and the time budget ----------------------------------------------------------


def test_killed_runs_are_tidied_and_failures_recorded(write_league, registry) -> None:
    config = load_config(write_league(LEAGUE))
    config.output.mkdir(parents=True)
    with ResultStore(config.output / "results.sqlite") as store:  # a run killed with -9: never finished
        store.start_run({"name": "test", "games_per_pairing": 4}, [], "cpu", {})
    run_tournament(config, registry=registry, progress=False)
    with sqlite3.connect(config.output / "results.sqlite") as conn:
        rows = conn.execute("SELECT id, status, finished IS NOT NULL FROM runs ORDER BY id").fetchall()
    assert rows == [(1, "interrupted", 1), (2, "finished", 1)]


def test_an_error_while_playing_marks_the_run_failed(write_league, registry, monkeypatch) -> None:
    import arena.tournament.runner as runner

    def broken(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(runner, "play", broken)
    config = load_config(write_league(LEAGUE))
    with pytest.raises(RuntimeError):
        run_tournament(config, registry=registry, progress=False)
    with sqlite3.connect(config.output / "results.sqlite") as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("failed",)]


@pytest.mark.parametrize("error", [
    torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB"),
    RuntimeError("DefaultCPUAllocator: not enough memory: you tried to allocate 21474836480 bytes."),
    MemoryError(),
], ids=["cuda", "cpu", "host"])
def test_a_batch_that_does_not_fit_names_max_envs_and_keeps_the_games(write_league, registry, monkeypatch,
                                                                       error) -> None:
    import arena.tournament.runner as runner

    def too_big(*args, **kwargs):  # type: ignore[no-untyped-def]
        raise error

    monkeypatch.setattr(runner, "play", too_big)
    path = write_league(LEAGUE)
    config = load_config(path)
    with one_line_error(path, "max_envs") as info:
        run_tournament(config, registry=registry, progress=False)
    assert "64 battles at once do not fit in the memory of cpu; expected a lower max_envs" in str(info.value)
    with sqlite3.connect(config.output / "results.sqlite") as conn:
        assert conn.execute("SELECT status FROM runs").fetchall() == [("failed",)]


def test_time_per_move_forfeits_a_slow_participant(write_league, registry) -> None:
    # Room both ways on a loaded machine: the others' moves take milliseconds against the 0.5 s limit;
    # the slow one sleeps past it (sleep never ends early) and returns well before its hang bound (1.5 s),
    # so it is measured, not abandoned.
    slow = {"name": "slow", "agent": "slow", "params": {"delay_s": 0.6}}
    config = load_config(write_league(LEAGUE + [slow], time_per_move=0.5))
    assert config.time_per_move == 0.5
    report = run_tournament(config, registry=registry, progress=False)
    board = report.leaderboard.set_index("name")
    assert board.loc["slow", "forfeits"] == board.loc["slow", "games"] == 12
    assert board.loc["near", "forfeits"] == board.loc["idle", "forfeits"] == 0
    reasons = {f["reason"] for f in report.forfeits} if isinstance(report.forfeits, list) else \
        set(report.forfeits["reason"])
    assert len(reasons) >= 1
    assert all(r.startswith("slow ran out of time: one move took ") and r.endswith("(time_per_move 0.5 s)")
               for r in reasons), reasons
    assert report.complete


class Hung(Pursuer):
    """A pursuer whose ``after``-th act() never returns, as an agent stuck in a deadlock would. It waits on
    ``release``, which the test sets at its end so that no thread outlives it."""

    name = "hung"
    release = threading.Event()

    def __init__(self, device: Any = "cpu", env_config: Any = None, after: int = 3) -> None:
        super().__init__(device, env_config)
        self.after, self.moves = after, 0

    def act(self, observation):  # type: ignore[no-untyped-def]
        self.moves += 1
        if self.moves == self.after:
            type(self).release.wait()
        return super().act(observation)


@pytest.fixture()
def hung(registry, release):  # type: ignore[no-untyped-def]
    Hung.release = release  # set, and its threads joined, when the test ends
    registry.add("hung", Hung, PluginInfo("tests", "arena-tests", "0", "tests.tournament"))
    return registry


def test_time_per_move_forfeits_a_move_that_never_returns_and_the_league_finishes(write_league, hung) -> None:
    config = load_config(write_league(LEAGUE + ["hung"], time_per_move=0.5))
    start = time.perf_counter()
    report = run_tournament(config, registry=hung, progress=False)
    assert time.perf_counter() - start < 30.0
    board = report.leaderboard.set_index("name")
    assert board.loc["hung", "forfeits"] == board.loc["hung", "games"] == 12  # all in flight in the one batch
    assert board.loc[["near", "far", "idle"], "forfeits"].sum() == 0 and report.complete
    reasons = {f["reason"] for f in report.forfeits} if isinstance(report.forfeits, list) else \
        set(report.forfeits["reason"])
    assert reasons == {"hung ran out of time: a move on 12 battles did not return within 1.5 s, so it is abandoned "
                       "and not called again (time_per_move 0.5 s)"}


def test_time_per_move_is_not_applied_when_unset_or_generous(write_league, registry) -> None:
    slow = {"name": "slow", "agent": "slow", "params": {"delay_s": 0.002}}
    report = run_tournament(load_config(write_league(LEAGUE + [slow], time_per_move=5)), registry=registry,
                            progress=False)
    assert report.leaderboard["forfeits"].sum() == 0


def test_league_report_uses_the_given_run(write_league, registry) -> None:
    first = load_config(write_league(LEAGUE, name="a.yaml"))
    run_tournament(first, registry=registry, progress=False)
    second = load_config(write_league(LEAGUE[:2], name="a.yaml"))
    run_tournament(second, registry=registry, progress=False)
    with ResultStore(first.output / "results.sqlite") as store:
        assert len(league_report(store, store.run(1)).leaderboard) == 3
        assert len(league_report(store, store.latest_run()).leaderboard) == 2
