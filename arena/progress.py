"""Progress display for long runs: a live line on a terminal, plain log lines elsewhere.

CI logs and ``| tee`` get one line every ``log_every`` seconds instead of carriage-return noise.
"""

from __future__ import annotations

import sys
import time
from typing import TextIO


def format_duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # NaN or inf: unknown
        return "?"
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


class Progress:
    """Tracks ``done`` out of ``total`` units (steps, games) and shows rate and ETA.

    ``update(done, **fields)`` sets the absolute count; extra fields (win rate, loss, …) are shown
    after the rate. Use as a context manager so the live line is closed cleanly.
    """

    def __init__(self, total: int, unit: str = "steps", label: str = "", stream: TextIO | None = None,
                 log_every: float = 10.0, enabled: bool = True, time_limit: float | None = None) -> None:
        self.total = max(int(total), 1)
        self.time_limit = time_limit  # s; a run that stops on time as well shows the nearer of the two ETAs
        self.unit, self.label = unit, label
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log_every = log_every if not self.live else 0.2
        self.enabled = enabled
        self.start = time.perf_counter()
        self.last_print = -float("inf")
        self.done = 0
        self.fields: dict[str, object] = {}

    def update(self, done: int, force: bool = False, **fields: object) -> None:
        self.done = int(done)
        self.fields.update(fields)
        now = time.perf_counter()
        if self.enabled and (force or now - self.last_print >= self.log_every):
            self.last_print = now
            self._emit(self.line(now))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def rate(self, now: float | None = None) -> float:
        elapsed = (now if now is not None else time.perf_counter()) - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def line(self, now: float | None = None) -> str:
        now = now if now is not None else time.perf_counter()
        rate = self.rate(now)
        eta = (self.total - self.done) / rate if rate > 0 else float("nan")
        if self.time_limit is not None:
            left = max(self.time_limit - (now - self.start), 0.0)
            eta = left if eta != eta else min(eta, left)
        pct = 100.0 * min(self.done, self.total) / self.total
        extra = "  ".join(f"{k} {v:.3g}" if isinstance(v, float) else f"{k} {v}" for k, v in self.fields.items())
        head = f"{self.label} " if self.label else ""
        return (f"{head}{self.done:,}/{self.total:,} {self.unit} ({pct:5.1f}%)  {rate:,.0f} {self.unit}/s  "
                f"elapsed {format_duration(now - self.start)}  eta {format_duration(eta)}" + (f"  {extra}" if extra else ""))

    def _emit(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text)
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.update(self.done, force=True)
            if self.live:
                self.stream.write("\n")
                self.stream.flush()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
