"""The benchmark scripts' command lines: one parser and the typed converters they share.

A mistake in a script's arguments is refused before any work, in one line on stderr and with one
wording, as ``arena``'s own options are (click types with ranges, arena/errors.py)::

    error: --sizes: expected comma-separated integers from 1 to 16,777,216; got 'abc'

exit status 2. A script that finds a problem after parsing (a run that failed, a file it cannot write)
says so the same way through :func:`fail`. Light: this module imports neither torch nor the libraries
the scripts drive (``--device`` imports torch when it is checked, as the scripts do anyway).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import NoReturn

from arena.match import MAX_GAMES
from arena.seeds import MAX_SEED  # every seed arena takes from its user
from arena.threads import MAX_THREADS

Converter = Callable[[str], object]
MAX_TEAM = 8  # aircraft a side: EnvConfig.team_size's range (arena.env, not imported here: it loads torch)


def one_line(text: str) -> str:
    return " ".join(str(text).split())


def fail(message: str, status: int = 2) -> NoReturn:
    """Stop the script: ``error: MESSAGE`` as one line on stderr, no traceback; status 2 for a mistake the
    user can fix (as ``arena``'s), 1 for work that failed."""
    sys.stdout.flush()
    print(f"error: {one_line(message)}", file=sys.stderr, flush=True)
    raise SystemExit(status)


class ScriptParser(argparse.ArgumentParser):
    """argparse whose errors are one line, ``error: --opt: ...`` (argparse's own print the usage first and
    name the option ``argument --opt``); ``--help`` is argparse's."""

    def error(self, message: str) -> NoReturn:
        fail(message.removeprefix("argument "))


def _bad(expected: str, text: str, why: str = "") -> argparse.ArgumentTypeError:
    return argparse.ArgumentTypeError(f"expected {expected}; got {text!r}{f' ({why})' if why else ''}")


def integer(low: int | None = None, high: int | None = None, what: str = "") -> Converter:
    """An integer in ``[low, high]`` (either end open when None); ``what`` says so in an error."""
    what = what or _int_words(low, high)

    def convert(text: str) -> int:
        try:
            value = int(text.strip().replace("_", ""))
        except ValueError:
            raise _bad(what, text) from None
        if (low is not None and value < low) or (high is not None and value > high):
            raise _bad(what, text)
        return value

    convert.__name__ = "integer"
    return convert


def _int_words(low: int | None, high: int | None, many: bool = False) -> str:
    noun = "integers" if many else "an integer"
    if low is not None and high is not None:
        return f"{noun} from {low:,} to {high:,}"
    if low in (0, 1) and high is None:
        return f"{'positive' if low else 'non-negative'} integers" if many else \
            f"{'a positive' if low else 'a non-negative'} integer"
    if low is not None:
        return f"{noun} of at least {low:,}"
    if high is not None:
        return f"{noun} of at most {high:,}"
    return noun


def number(low: float | None = None, high: float | None = None, *, above: bool = False, unit: str = "",
           what: str = "") -> Converter:
    """A finite number in ``[low, high]``, or ``(low, high]`` with ``above``; ``unit`` names what it counts,
    ``what`` says it all in an error."""
    what = what or _number_words(low, high, above, f" of {unit}" if unit else "")

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise _bad(what, text) from None
        if not math.isfinite(value) or (low is not None and (value <= low if above else value < low)) \
                or (high is not None and value > high):
            raise _bad(what, text)
        return value

    convert.__name__ = "number"
    return convert


def _number_words(low: float | None, high: float | None, above: bool, of: str) -> str:
    if low == 0 and high is None:
        return f"{'a positive' if above else 'a non-negative'} number{of}"
    if low is not None and high is not None:
        return f"a number{of} from {low:g} to {high:g}" + (f", above {low:g}" if above else "")
    if low is not None:
        return f"a number{of} {'above' if above else 'of at least'} {low:g}"
    return f"a number{of}" + (f" of at most {high:g}" if high is not None else "")


def comma_ints(low: int | None = 1, high: int | None = None, what: str = "", distinct: bool = False) -> Converter:
    """Comma-separated integers, each in ``[low, high]``; at least one; with ``distinct``, none twice."""
    what = f"comma-separated {what or _int_words(low, high, many=True)}"

    def convert(text: str) -> list[int]:
        words = [w.strip() for w in text.split(",")]
        try:
            values = [int(w.replace("_", "")) for w in words]
        except ValueError:
            raise _bad(what, text) from None
        if any((low is not None and v < low) or (high is not None and v > high) for v in values):
            raise _bad(what, text)
        twice = sorted({v for v in values if values.count(v) > 1})
        if distinct and twice:
            raise _bad(f"{what}, each once", text, f"{', '.join(map(str, twice))} twice")
        return values

    convert.__name__ = "comma_ints"
    return convert


def names(choices: Iterable[str]) -> Converter:
    """Comma-separated names from ``choices``: at least one; repeats dropped, order kept."""
    allowed = tuple(choices)
    what = f"comma-separated names, some of {', '.join(allowed)}"

    def convert(text: str) -> list[str]:
        words = [w.strip() for w in text.split(",")]
        unknown = [w for w in words if w not in allowed]
        if unknown:
            raise _bad(what, text, f"unknown {', '.join(repr(w) for w in unknown)}" if text.strip() else "")
        return list(dict.fromkeys(words))

    convert.__name__ = "names"
    return convert


SEED_WORDS = "from 0 to 2**62 - 1"
seed = integer(0, MAX_SEED, f"a seed {SEED_WORDS}")
seeds = comma_ints(0, MAX_SEED, f"seeds {SEED_WORDS}", distinct=True)  # a seed's runs have a folder each
threads = integer(0, MAX_THREADS)
games = integer(1, MAX_GAMES)


def device(text: str) -> str:
    """A device arena can use here (``cpu``, ``cuda``, ``cuda:N``, ``auto``), checked by arena's resolver
    (so ``cuda`` on a machine without it is refused); the text as given."""
    from arena.env import resolve_device

    try:
        resolve_device(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(one_line(str(exc))) from None
    return text


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a folder on the way that cannot be searched
        return False


def _cannot_write_in(folder: Path) -> str:
    """Why no file can be made in ``folder`` (an existing directory); "" when one can. Tried, not read
    from the permission bits: root passes those, not a read-only file system."""
    try:
        with tempfile.TemporaryFile(dir=folder):
            return ""
    except OSError as exc:
        return exc.strerror or str(exc)


def output_dir(text: str) -> Path:
    """A folder to write in: an existing directory, or a new one whose nearest existing parent is a
    directory that can be written (made when the script writes, not here)."""
    path = Path(text).expanduser()
    expected = "a folder to write in, new or existing"
    if text.strip() == "":
        raise _bad(expected, text)
    if _exists(path) and not path.is_dir():
        raise _bad(expected, text, "a file" if path.is_file() else "not a directory")
    base = path
    while not _exists(base) and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise _bad(expected, text, f"{base} is a file")
    why = _cannot_write_in(base)
    if why:
        raise _bad(expected, text, f"{base}: {why}")
    return path


def output_file(text: str) -> Path:
    """A file to write: new or an existing regular file, in an existing folder that can be written."""
    path = Path(text).expanduser()
    expected = "a file to write, in an existing folder"
    if text.strip() == "" or text.endswith(("/", "\\")):
        raise _bad(expected, text)
    if _exists(path) and not path.is_file():
        raise _bad(expected, text, "a folder" if path.is_dir() else "not a regular file")
    parent = path.parent
    if not parent.is_dir():
        raise _bad(expected, text, f"{parent} is {'a file' if _exists(parent) else 'not there'}")
    why = _cannot_write_in(parent)
    if why:
        raise _bad(expected, text, f"{parent}: {why}")
    return path


def existing_file(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_file():
        raise _bad("an existing file", text, "a folder" if path.is_dir() else "no such file")
    return path


def existing_dir(text: str) -> Path:
    path = Path(text).expanduser()
    if not path.is_dir():
        raise _bad("an existing folder", text, "a file" if _exists(path) else "no such folder")
    return path


def write_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (a temporary file beside it, renamed over it)."""
    try:
        mode = path.stat().st_mode & 0o777
    except OSError:  # a new file: what open() would give it
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    handle = tempfile.NamedTemporaryFile("w", dir=path.parent, prefix=f".{path.name}.", delete=False)
    try:
        with handle:
            handle.write(text)
        os.chmod(handle.name, mode)
        Path(handle.name).replace(path)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
