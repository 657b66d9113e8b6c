"""Writing the files arena outputs: whole or not at all, never through a symbolic link, and appended to
only after a row cut short by a killed writer is dropped.

Every file a command writes (a run's config.yaml, checkpoints, best.json and metric CSVs; a tournament's
database, reports, pictures and replays; ``arena leaderboard --csv``; ``arena replay``) goes through here:

* **Whole files** are written to a fresh temporary file beside the target and renamed onto it
  (:func:`staged`, :func:`write_text`). A reader sees the old file or the new one, never half of it; and
  a target that is a symbolic link is *replaced by the new file* — the rename replaces the link itself,
  so the file it pointed to (anywhere on the machine) is left exactly as it was.
* **Appends** (a run's ``metrics.csv`` and ``eval.csv`` when it resumes in place) cannot go through a
  rename. A target that is a symbolic link is *refused* with one line naming the link and where it
  points (:class:`LinkedOutputError`), before anything is written: appending would write into that
  other file, and replacing the link by a copy would quietly take a file from elsewhere as the run's own
  history. Move the link away, or replace it by a copy of the file, and run again.
  :func:`open_append` opens with ``O_NOFOLLOW``, so a link made after that check is refused too.
* Before appending to a CSV, :func:`repair_csv_tail` drops a last row a killed writer left cut short
  (no end of line, or another number of fields than the header), truncating the file to the end of its
  last whole row, and returns one line saying which line of which file it dropped.

This module sits at the bottom: it imports nothing of arena, so the training code, the tournament and
the command line all use it.
"""

from __future__ import annotations

import csv
import errno
import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO


class LinkedOutputError(OSError):
    """An output file that is a symbolic link where arena would write through it. ``filename`` is the link,
    ``strerror`` one line saying where it points and what to do (``str()`` is ``link: strerror``)."""

    def __init__(self, path: str | os.PathLike[str], action: str = "append to") -> None:
        link = Path(path)
        try:
            target = os.readlink(link)
        except OSError:
            target = "?"
        reason = (f"a symbolic link to {target}; arena does not {action} a file through a link (it would change "
                  f"that file instead); move the link away or replace it by a copy of the file, then run again")
        super().__init__(errno.ELOOP, reason, str(link))

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def temp_prefix(target: Path) -> str:
    """Prefix of this process's temp files for ``target``: ``.<name>.<pid>.``; the pid tells a run that
    finds one whether its writer still lives (``arena.training.checkpoint.clean_stale_temp_files``)."""
    return f".{target.name}.{os.getpid()}."


@contextmanager
def staged(target: str | os.PathLike[str], mode: int = 0o666, keep_suffix: bool = False) -> Iterator[Path]:
    """A fresh temporary file beside ``target``, renamed onto it once the block has written it and it is
    on disk; on any error it goes and ``target`` stays as it was (or absent).

    The rename replaces ``target`` itself: a symbolic link there is replaced by the new file, and what it
    pointed to is not touched. ``mode`` is the new file's, before the umask (checkpoints are the owner's
    alone). ``keep_suffix`` ends the temp name with ``target``'s suffix, for writers that choose the
    format by the name (matplotlib's ``savefig``, Pillow): ``.<name>.<pid>.<random>.tmp<suffix>``.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    temp = target.parent / f"{temp_prefix(target)}{secrets.token_hex(4)}.tmp{target.suffix if keep_suffix else ''}"
    os.close(os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), mode))
    try:
        yield temp
        with temp.open("r+b") as handle:
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def write_text(path: str | os.PathLike[str], text: str, encoding: str | None = "utf-8") -> Path:
    """Write ``text`` as the whole of ``path`` (:func:`staged`): never half a file, never through a link."""
    target = Path(path)
    with staged(target) as temp:
        temp.write_text(text, encoding=encoding)
    return target


def write_bytes(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` as the whole of ``path`` (:func:`staged`): never half a file, never through a link."""
    target = Path(path)
    with staged(target) as temp:
        temp.write_bytes(data)
    return target


def refuse_link(path: str | os.PathLike[str], action: str = "append to") -> None:
    """:class:`LinkedOutputError` when ``path`` is a symbolic link (dangling or not)."""
    if Path(path).is_symlink():
        raise LinkedOutputError(path, action)


def open_append(path: str | os.PathLike[str]) -> IO[str]:
    """``path`` opened to append text (created if absent, ``newline=""`` for the csv module), refusing a
    symbolic link (:class:`LinkedOutputError`) at the open itself."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or Path(path).is_symlink():
            raise LinkedOutputError(path) from None
        raise
    return os.fdopen(fd, "a", newline="")


def repair_csv_tail(path: str | os.PathLike[str]) -> str | None:
    """Drop the rows at the end of the CSV file ``path`` that a writer killed mid-row left cut short — no
    end of line, or another number of fields than the header — by truncating the file after its last
    whole row; returns one line naming the file and the lines dropped (None when the file is whole or
    absent). A header cut short leaves the file empty. A symbolic link is refused (:class:`LinkedOutputError`).

    Only the tail is cut: a row is cut only by a writer that died while writing it, the last one, and
    this runs before anything more is appended. (A wrong row followed by whole ones is left as it is.)
    """
    file = Path(path)
    refuse_link(file)
    if not file.is_file():
        return None
    header = -1  # fields of the header; -1 until a whole header is read
    keep = keep_line = 0  # bytes and lines up to the end of the last whole record
    line = offset = 0
    first_bad: tuple[int, bool] | None = None  # (fields, whole) of the first record after ``keep``
    with file.open("rb") as handle:
        for fields, whole, lines, size in _records(handle):
            line, offset = line + lines, offset + size
            if header < 0 and whole and line == lines:
                header, keep, keep_line = len(fields), offset, line
            elif header >= 0 and whole and len(fields) == header:
                keep, keep_line, first_bad = offset, line, None
            elif first_bad is None:
                first_bad = (len(fields), whole)
    if offset <= keep:
        return None
    with file.open("r+b") as handle:
        handle.truncate(keep)
        os.fsync(handle.fileno())
    which = f"line {keep_line + 1}" if line <= keep_line + 1 else f"lines {keep_line + 1}-{line}"
    if header < 0:
        return f"{file}: dropped {which}, its header cut short by an interrupted write (the file is left empty)"
    count, whole = first_bad or (0, False)
    plural = "" if count == 1 else "s"
    return (f"{file}: dropped {which}, a row an interrupted write left cut short ({count} field{plural} where "
            f"the header has {header}{'' if whole else ', no end of line'})")


def _records(handle: IO[bytes]) -> Iterator[tuple[list[str], bool, int, int]]:
    """``(fields, whole, lines, bytes)`` of each CSV record of the binary file ``handle`` (a quoted field
    may span lines). ``whole``: an end of line outside quotes ends it. Bytes that are no UTF-8 read as
    U+FFFD. Streams: a metrics file of a long run is not held in memory."""
    text, lines, size = "", 0, 0
    for raw in handle:
        text += raw.decode("utf-8", errors="replace")
        lines, size = lines + 1, size + len(raw)
        if text.count('"') % 2:  # inside a quoted field: the record goes on on the next line
            continue
        yield _fields(text), raw.endswith(b"\n"), lines, size
        text, lines, size = "", 0, 0
    if lines:
        yield _fields(text), False, lines, size


def _fields(text: str) -> list[str]:
    try:
        return next(csv.reader([text]), [])
    except csv.Error:
        return []
