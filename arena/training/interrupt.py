"""Ctrl-C during training: finish the update in progress, save, then stop.

The first SIGINT only raises a flag that the training loop checks after each update, so the
checkpoint it writes is a consistent one (no half-collected rollout) and ``--resume`` continues
exactly. A second Ctrl-C interrupts at once (``KeyboardInterrupt``), for when waiting is not an option.
Every SIGINT is also counted by :mod:`arena.guard`, so an opponent that raises ``KeyboardInterrupt``
itself is blamed instead of being taken for the user's Ctrl-C. A run on several processes also
treats SIGTERM this way (``signals``): a cluster or launcher that ends one process then gives every
process the chance to stop together after the update, instead of leaving the others waiting.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any


class StopRequest:
    """Context manager installing the two-stage handler of ``signals`` (main thread only; a no-op
    elsewhere). An empty ``message`` stops quietly (the processes of a run other than the main one)."""

    def __init__(self,
                 message: str = "stopping after this update and saving a checkpoint (Ctrl-C again to abort)",
                 signals: tuple[signal.Signals, ...] = (signal.SIGINT,)) -> None:
        self.requested = False
        self.message = message
        self.signals = signals
        self._previous: dict[signal.Signals, Any] = {}
        self._installed = False

    @classmethod
    def for_processes(cls, rank: Any = None) -> "StopRequest":
        """A plain run's request (Ctrl-C); a process of a run on several (its ``rank``) also stops on
        SIGTERM, which torchrun sends to all of them, and only the main one says so."""
        if rank is None:
            return cls()
        return cls(signals=(signal.SIGINT, signal.SIGTERM), **({} if rank.main else {"message": ""}))

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        from arena.guard import note_interrupt

        note_interrupt()
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        if self.message:
            print(f"\n{self.message}", file=sys.stderr, flush=True)

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
