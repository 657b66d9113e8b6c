"""A request to stop training: finish the update in progress, save, then stop.

Every way a process is asked to end (Ctrl-C's SIGINT, a scheduler's or ``kill``'s SIGTERM, a
closed terminal's SIGHUP) only raises a flag that the training loop checks after each update, so
the checkpoint it writes is a consistent one (no half-collected rollout) and ``--resume`` continues
exactly; the process then exits with the signal's status (128 + its number), as a shell expects of
a process a signal ended. A second signal interrupts at once (``KeyboardInterrupt``), for when
waiting is not an option. Every such signal is also counted by :mod:`arena.guard`, so an opponent
that raises ``KeyboardInterrupt`` itself is blamed instead of being taken for the user's Ctrl-C.
A hang-up first points output that went to the dead terminal at ``/dev/null``, so no print fails
in the middle of the save; SIGHUP stays ignored where it was (``nohup``).
"""

from __future__ import annotations

import os
import signal
import stat
import sys
import threading
from types import FrameType
from typing import Any

HANGUP: int | None = getattr(signal, "SIGHUP", None)  # absent on Windows


def stop_signals() -> tuple[int, ...]:
    """SIGINT, SIGTERM and SIGHUP, less SIGHUP where it is ignored (``nohup``: the run outlives the terminal)."""
    signals: list[int] = [signal.SIGINT, signal.SIGTERM]
    if HANGUP is not None and signal.getsignal(HANGUP) is not signal.SIG_IGN:
        signals.append(HANGUP)
    return tuple(signals)


def silence_terminal() -> None:
    """Point standard output and error at ``/dev/null`` where they are a terminal that hung up.

    After a hang-up every write to the terminal fails (EIO), and a failing print would end a process
    in the middle of its clean stop. A hung-up terminal is still a character device but no longer
    answers as a terminal; a live one, a file or a pipe keeps what is written to it.
    """
    for fd in (1, 2):
        try:
            if not stat.S_ISCHR(os.fstat(fd).st_mode) or os.isatty(fd):
                continue
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            continue
        os.dup2(null, fd)
        os.close(null)


class StopRequest:
    """Context manager installing the two-stage handler of ``signals`` (main thread only; a no-op
    elsewhere). An empty ``message`` stops quietly (the processes of a run other than the main one)."""

    def __init__(self,
                 message: str = "stopping after this update and saving a checkpoint (again to abort)",
                 signals: tuple[int, ...] | None = None) -> None:
        self.requested = False
        self.signum: int | None = None  # the first signal that asked, None for :meth:`request`
        self.message = message
        self.signals = stop_signals() if signals is None else signals
        self._previous: dict[int, Any] = {}
        self._installed = False

    @classmethod
    def for_processes(cls, rank: Any = None) -> "StopRequest":
        """A plain run's request; of a run on several processes (its ``rank``) only the main one says
        so. There the launcher turns a hang-up into SIGTERM (:func:`arena.training.launcher.follow_launcher`)."""
        if rank is None:
            return cls()
        return cls(signals=(signal.SIGINT, signal.SIGTERM), **({} if rank.main else {"message": ""}))

    @property
    def exit_status(self) -> int | None:
        """128 + the signal's number when a signal asked to stop (130 for Ctrl-C, 143 for SIGTERM)."""
        return None if self.signum is None else 128 + self.signum

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        from arena.guard import note_interrupt

        if signum == HANGUP:
            silence_terminal()
        note_interrupt()
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        self.signum = signum
        if self.message:
            name = signal.Signals(signum).name if signum in signal.valid_signals() else str(signum)
            print(f"\n{name}: {self.message}", file=sys.stderr, flush=True)

    def request(self) -> None:
        """Ask the loop to stop at its next check (tests, budgets)."""
        self.requested = True

    def __enter__(self) -> "StopRequest":
        if threading.current_thread() is threading.main_thread():
            from arena.guard import watch

            self._previous = {sig: signal.signal(sig, self._handle) for sig in self.signals}
            self._installed = True
            watch()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            from arena.guard import unwatch

            for sig, handler in self._previous.items():
                signal.signal(sig, handler)
            self._installed = False
            unwatch()
