"""No file of a tournament's output is written through a symbolic link (issue 67, item 5): the
reports, pictures, replays and ``arena leaderboard --csv`` replace a link by a new file and leave what it
pointed to alone; the database and the lock file, written in place, refuse a link, naming it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena.tournament import StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.report.render import FILES
from arena.tournament.store import FolderLock
from tourney_helpers import LEAGUE

PRECIOUS = b"a file outside the output folder\n"


def point_elsewhere(path: Path, elsewhere: Path) -> Path:
    """Make ``path`` a symbolic link to a file in ``elsewhere`` holding :data:`PRECIOUS`; returns that file."""
    elsewhere.mkdir(parents=True, exist_ok=True)
    target = elsewhere / path.name
    target.write_bytes(PRECIOUS)
    path.unlink(missing_ok=True)
    path.symlink_to(target)
    return target


@pytest.fixture()
def played(write_league, registry):
    """A league played once, with a replay per pairing: its config."""
    config = load_config(write_league(LEAGUE, replays=1))
    run_tournament(config, registry=registry, progress=False, notify=False)
    return config


def test_reports_and_replays_replace_links_instead_of_writing_through_them(played, registry, tmp_path: Path) -> None:
    out = played.output
    replays = sorted((out / "replays").iterdir())
    names = [*FILES.values(), "replays/index.json",
             *(f"replays/{p.name}" for p in replays if p.suffix in (".html", ".acmi"))]
    targets = {name: point_elsewhere(out / name, tmp_path / "elsewhere" / str(i)) for i, name in enumerate(names)}
    run_tournament(played, registry=registry, progress=False, notify=False)  # resumed: writes every report again
    for name, target in targets.items():
        assert target.read_bytes() == PRECIOUS, f"{name} was written through its link"
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    assert (out / "report.md").read_text().startswith("# Tournament test")
    for name in FILES.values():  # `arena leaderboard` writes them again: links there are replaced too
        point_elsewhere(out / name, tmp_path / "again")
    rebuild_report(out)
    assert all((tmp_path / "again" / name).read_bytes() == PRECIOUS for name in FILES.values())
    assert not any((out / name).is_symlink() for name in FILES.values())


def test_leaderboard_csv_option_replaces_a_link(played, tmp_path: Path) -> None:
    link = tmp_path / "board.csv"
    target = point_elsewhere(link, tmp_path / "elsewhere")
    result = CliRunner().invoke(main, ["leaderboard", str(played.output), "--csv", str(link)])
    assert result.exit_code == 0, result.output
    assert target.read_bytes() == PRECIOUS and not link.is_symlink()
    assert link.read_text().startswith("rank,name,")


@pytest.mark.parametrize("suffix", ["", "-wal"])
def test_a_database_that_is_a_link_is_refused_and_what_it_points_to_is_left(played, registry, tmp_path: Path,
                                                                            suffix: str) -> None:
    db = played.output / "results.sqlite"
    linked = Path(f"{db}{suffix}")
    target = tmp_path / "elsewhere" / linked.name
    target.parent.mkdir(exist_ok=True)
    if suffix:
        target.write_bytes(PRECIOUS)
    else:
        db.rename(target)
    linked.unlink(missing_ok=True)
    linked.symlink_to(target)
    before = target.read_bytes()
    with pytest.raises(StoreError) as err:
        run_tournament(played, registry=registry, progress=False, notify=False)
    assert str(err.value) == (f"{linked}: a symbolic link to {target}; arena does not write games into a file "
                              f"through a link (it would change that file instead); move the link away or replace "
                              f"it by a copy of the file, then run again")
    assert target.read_bytes() == before and linked.is_symlink()


def test_a_database_link_is_still_read_by_leaderboard(played, tmp_path: Path) -> None:
    db = played.output / "results.sqlite"
    target = tmp_path / "elsewhere.sqlite"
    db.rename(target)
    db.symlink_to(target)
    before = target.read_bytes()
    assert len(rebuild_report(played.output, write=False).leaderboard) == 3  # reading through it is fine
    assert target.read_bytes() == before


def test_a_lock_file_that_is_a_link_is_refused(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    target = point_elsewhere(out / "tournament.lock", tmp_path / "elsewhere")
    with pytest.raises(StoreError, match=f"^{out}/tournament.lock: a symbolic link to {target}; arena does not "
                                         f"write a lock into a file through a link"):
        FolderLock(out).acquire()
    assert target.read_bytes() == PRECIOUS


def test_an_upgrade_copy_replaces_a_link(tmp_path: Path) -> None:
    """The copy kept before a schema upgrade is a new file, whatever was at its name."""
    from arena.tournament.store import ResultStore
    from test_store_safety import schema_1_store

    db = schema_1_store(tmp_path / "out" / "results.sqlite", games=10)
    target = point_elsewhere(db.with_name("results.sqlite.schema1.bak"), tmp_path / "elsewhere")
    ResultStore(db).close()
    assert target.read_bytes() == PRECIOUS
    backup = db.with_name("results.sqlite.schema1.bak")
    assert not backup.is_symlink()
    with sqlite3.connect(backup) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() == ("1",)
