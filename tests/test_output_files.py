"""arena.output_files: whole-file writes replace a symbolic link instead of writing through it, appends
refuse one, and a CSV's row cut short by a killed writer is dropped before anything is appended."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

from arena.output_files import LinkedOutputError, open_append, repair_csv_tail, staged, write_bytes, write_text


def linked(tmp_path: Path, name: str, content: bytes = b"precious\n") -> tuple[Path, Path]:
    """``tmp_path/out/name``, a symbolic link to ``tmp_path/elsewhere/name`` holding ``content``."""
    (tmp_path / "out").mkdir(exist_ok=True)
    (tmp_path / "elsewhere").mkdir(exist_ok=True)
    outside = tmp_path / "elsewhere" / name
    outside.write_bytes(content)
    link = tmp_path / "out" / name
    link.symlink_to(outside)
    return link, outside


# -- whole files replace the link -----------------------------------------------------------------


@pytest.mark.parametrize("write", [lambda p: write_text(p, "new\n"), lambda p: write_bytes(p, b"new\n")])
def test_a_whole_file_write_replaces_a_link_and_leaves_its_target_alone(tmp_path: Path, write) -> None:
    link, outside = linked(tmp_path, "report.md")
    write(link)
    assert outside.read_bytes() == b"precious\n"
    assert not link.is_symlink() and link.read_bytes() == b"new\n"
    assert sorted(p.name for p in link.parent.iterdir()) == ["report.md"]  # no temp file left


def test_a_dangling_link_is_replaced_and_nothing_is_created_where_it_pointed(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    link, nowhere = tmp_path / "out" / "leaderboard.csv", tmp_path / "elsewhere.csv"
    link.symlink_to(nowhere)
    write_text(link, "a,b\n")
    assert not nowhere.exists() and not link.is_symlink() and link.read_text() == "a,b\n"


def test_staged_keeps_the_suffix_for_writers_that_choose_the_format_by_name(tmp_path: Path) -> None:
    link, outside = linked(tmp_path, "head_to_head.png")
    with staged(link, keep_suffix=True) as temp:
        assert temp.name.endswith(".tmp.png") and temp.parent == link.parent
        temp.write_bytes(b"png")
    assert outside.read_bytes() == b"precious\n" and link.read_bytes() == b"png"


def test_a_failed_write_leaves_the_link_and_its_target_as_they_were(tmp_path: Path) -> None:
    link, outside = linked(tmp_path, "config.yaml")
    with pytest.raises(RuntimeError), staged(link) as temp:
        temp.write_text("half")
        raise RuntimeError("killed")
    assert link.is_symlink() and outside.read_bytes() == b"precious\n"
    assert sorted(p.name for p in link.parent.iterdir()) == ["config.yaml"]


# -- appends refuse the link ----------------------------------------------------------------------


def test_an_append_refuses_a_link_naming_it_and_where_it_points(tmp_path: Path) -> None:
    link, outside = linked(tmp_path, "metrics.csv", b"step\r\n1\r\n")
    with pytest.raises(LinkedOutputError) as err:
        open_append(link)
    assert str(err.value) == (f"{link}: a symbolic link to {outside}; arena does not append to a file through a link "
                              f"(it would change that file instead); move the link away or replace it by a copy of "
                              f"the file, then run again")
    assert isinstance(err.value, OSError) and err.value.filename == str(link)
    with pytest.raises(LinkedOutputError):
        repair_csv_tail(link)
    assert outside.read_bytes() == b"step\r\n1\r\n" and link.is_symlink()


def test_an_append_to_a_plain_file_appends(tmp_path: Path) -> None:
    path = tmp_path / "eval.csv"
    for row in ("a", "b"):
        with open_append(path) as handle:
            handle.write(row + "\n")
    assert path.read_text() == "a\nb\n"


# -- a row cut short is dropped -------------------------------------------------------------------

HEADER = b"step,update,loss\r\n"
ROWS = b"256,1,0.5\r\n512,2,0.25\r\n"


@pytest.mark.parametrize("tail, dropped", [
    (b"768,3,0.1", "line 4, a row an interrupted write left cut short (3 fields where the header has 3, no end of "
                   "line)"),
    (b"76", "line 4, a row an interrupted write left cut short (1 field where the header has 3, no end of line)"),
    (b"768,3\r\n", "line 4, a row an interrupted write left cut short (2 fields where the header has 3)"),
    (b"768,3,0.1,9\r\n", "line 4, a row an interrupted write left cut short (4 fields where the header has 3)"),
    (b"768,3\r\n1024", "lines 4-5, a row an interrupted write left cut short (2 fields where the header has 3)"),
    (b'768,"a\nb', "lines 4-5, a row an interrupted write left cut short (2 fields where the header has 3, no end "
                   "of line)"),
])
def test_a_cut_last_row_is_dropped_and_said(tmp_path: Path, tail: bytes, dropped: str) -> None:
    path = tmp_path / "metrics.csv"
    path.write_bytes(HEADER + ROWS + tail)
    assert repair_csv_tail(path) == f"{path}: dropped {dropped}"
    assert path.read_bytes() == HEADER + ROWS
    assert repair_csv_tail(path) is None  # whole now: nothing more to drop


@pytest.mark.parametrize("content", [b"", HEADER, HEADER + ROWS, HEADER + b'1,"two\r\nlines",3\r\n'])
def test_a_whole_file_is_left_as_it_is(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "metrics.csv"
    path.write_bytes(content)
    assert repair_csv_tail(path) is None and path.read_bytes() == content
    assert repair_csv_tail(tmp_path / "absent.csv") is None


def test_a_cut_header_leaves_the_file_empty(tmp_path: Path) -> None:
    path = tmp_path / "eval.csv"
    path.write_bytes(b"step,eval_cr")
    assert repair_csv_tail(path) == (f"{path}: dropped line 1, its header cut short by an interrupted write (the "
                                     f"file is left empty)")
    assert path.read_bytes() == b""


def test_a_wrong_row_before_whole_ones_is_not_a_cut_one(tmp_path: Path) -> None:
    """Only the tail is cut: a row is cut only by the writer that died while writing the last one."""
    path = tmp_path / "metrics.csv"
    path.write_bytes(HEADER + b"256,1\r\n" + ROWS)
    assert repair_csv_tail(path) is None
    assert [len(r) for r in csv.reader(path.open(newline=""))] == [3, 2, 3, 3]


def test_a_long_file_is_read_without_holding_it(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    with path.open("wb") as handle:
        handle.write(HEADER)
        for i in range(50_000):
            handle.write(b"%d,%d,0.5\r\n" % (i, i))
        handle.write(b"50000,5")
    size = os.path.getsize(path)
    assert repair_csv_tail(path) == f"{path}: dropped line 50002, " \
        "a row an interrupted write left cut short (2 fields where the header has 3, no end of line)"
    assert os.path.getsize(path) == size - len(b"50000,5")
