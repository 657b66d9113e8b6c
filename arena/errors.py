"""Telling failures apart where the command line and the library meet: a mistake the user can fix
(:class:`ArenaError`), and an allocation the machine could not make (:func:`is_out_of_memory`).

Low in the package: it imports nothing of arena (nor torch), so the command line, the tournament, the
training code and plugins (a trainer's command) all use the same two.
"""

from __future__ import annotations

import click


class ArenaError(click.ClickException):
    """A mistake the user can fix: printed as one line, exit status 2 (or the ``status`` given, as a
    launch that ended with its processes' own status passes on), no traceback."""

    exit_code = 2

    def __init__(self, message: str, status: int = 2) -> None:
        super().__init__(message)
        self.exit_code = status  # type: ignore[misc]  # click types it a ClassVar; a launch passes its own status


def is_out_of_memory(exc: BaseException) -> bool:
    """An allocation that failed for want of memory (host or GPU), as opposed to a bug: a ``MemoryError``,
    torch's ``OutOfMemoryError`` (or a subclass; named, so torch need not be imported here), or an error
    whose message says so (torch's CPU allocator raises a plain ``RuntimeError``)."""
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or any(t.__name__ == "OutOfMemoryError" for t in type(exc).__mro__) or (
        "memory" in text and ("alloc" in text or "out of" in text or "not enough" in text))
