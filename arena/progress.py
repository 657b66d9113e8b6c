"""Progress display for long runs: a live line on a terminal, plain log lines elsewhere.

CI logs and ``| tee`` get one line every ``log_every`` seconds instead of carriage-return noise,
and a forced line (a batch's end, the close) only when it says something new. A caller that logs
lines of its own (training's update lines) turns the plain lines off and puts :meth:`Progress.eta` in
its own, so a log gets one line a moment; on a terminal it prints them through :meth:`Progress.echo`,
above the live line rather than glued to its end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

# The first units of a run carry its warm-up (imports, compilation, the first batch): a rate measured
# over them extrapolates badly. The ETA is measured from the first update on, and shown only once that
# span is long enough to mean something.
ETA_MIN_SECONDS = 5.0  # seconds since the first update
ETA_MIN_FRACTION = 0.01  # share of the total done since the first update
UNKNOWN = "--:--"


def format_duration(seconds: float) -> str:
    if seconds != seconds or seconds == float("inf"):  # NaN or inf: unknown
        return UNKNOWN
    seconds = int(round(seconds))
    h, rem = divmod(seconds, 3600)
    m, s = divmod(rem, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def format_stat(value: float, spec: str = ".3g") -> str:
    """``value`` by the format ``spec``, or ``-`` for NaN: a statistic nothing was measured for yet (no
    episode or game has ended) is shown as missing rather than as a number."""
    return "-" if value != value else format(value, spec)


class Progress:
    """Tracks ``done`` out of ``total`` units (steps, games) and shows rate and ETA.

    ``update(done, **fields)`` sets the absolute count; extra fields (win rate, loss, …) are shown
    after the rate, NaN as ``-``. Use as a context manager so the live line is closed cleanly.
    ``plain`` False: off a terminal nothing is printed (the caller's own lines say how far it is).
    """

    def __init__(self, total: int, unit: str = "steps", label: str = "", stream: TextIO | None = None,
                 log_every: float = 10.0, enabled: bool = True, time_limit: float | None = None,
                 plain: bool = True) -> None:
        self.total = max(int(total), 1)
        self.time_limit = time_limit  # s; a run that stops on time as well shows the nearer of the two ETAs
        self.unit, self.label = unit, label
        self.stream = stream if stream is not None else sys.stderr
        self.live = bool(getattr(self.stream, "isatty", lambda: False)())
        self.log_every = log_every if not self.live else 0.2
        self.enabled = enabled and (self.live or plain)
        self.drawn = False  # a live line is on the screen, not ended by a newline
        self.start = time.perf_counter()
        self.last_print = -float("inf")
        self.done = 0
        self.fields: dict[str, object] = {}
        self.anchor: tuple[float, int] | None = None  # (time, done) of the first update: the ETA's origin
        self.printed: tuple[int, str] | None = None  # what the last plain line showed

    def update(self, done: int, force: bool = False, **fields: object) -> None:
        """Set the count; print when ``log_every`` has passed, or at once with ``force``. Off a terminal a
        forced line that would repeat the last one (same count, same fields) is left out: a batch's end
        and ``close`` often follow the line that already showed their state."""
        now = time.perf_counter()
        if self.anchor is None:
            self.anchor = (now, int(done))
        self.done = int(done)
        self.fields.update(fields)
        if not self.enabled or not (force or now - self.last_print >= self.log_every):
            return
        if force and not self.live and self._shown() == self.printed:
            return
        self.last_print = now
        self.printed = self._shown()
        self._emit(self.line(now))

    @property
    def elapsed(self) -> float:
        return time.perf_counter() - self.start

    def rate(self, now: float | None = None) -> float:
        elapsed = (now if now is not None else time.perf_counter()) - self.start
        return self.done / elapsed if elapsed > 0 else 0.0

    def eta(self, now: float | None = None) -> float:
        """Seconds left, NaN while unknown. The rate is the one since the first update, so the warm-up
        before it does not count, and it is used only after ``ETA_MIN_SECONDS`` and ``ETA_MIN_FRACTION``
        of the work. With a time limit, the time left caps it (and stands in for it while unknown)."""
        now = now if now is not None else time.perf_counter()
        if self.done >= self.total:
            return 0.0
        eta = float("nan")
        if self.anchor is not None:
            since, first = self.anchor
            span, gained = now - since, self.done - first
            if span >= ETA_MIN_SECONDS and gained > 0 and gained >= ETA_MIN_FRACTION * self.total:
                eta = (self.total - self.done) * span / gained
        if self.time_limit is not None:
            left = max(self.time_limit - (now - self.start), 0.0)
            eta = left if eta != eta else min(eta, left)
        return eta

    def line(self, now: float | None = None) -> str:
        now = now if now is not None else time.perf_counter()
        pct = 100.0 * min(self.done, self.total) / self.total
        extra = self._extra()
        head = f"{self.label} " if self.label else ""
        return (f"{head}{self.done:,}/{self.total:,} {self.unit} ({pct:5.1f}%)  {self.rate(now):,.0f} {self.unit}/s  "
                f"elapsed {format_duration(now - self.start)}  eta {format_duration(self.eta(now))}"
                + (f"  {extra}" if extra else ""))

    def _extra(self) -> str:
        return "  ".join(f"{k} {format_stat(v)}" if isinstance(v, float) else f"{k} {v}"
                         for k, v in self.fields.items())

    def _shown(self) -> tuple[int, str]:
        """What a line says beyond the clock: two lines alike in this are one repeated."""
        return self.done, self._extra()

    def _emit(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text)
            self.drawn = True
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def echo(self, text: str, write: Callable[[str], None]) -> None:
        """Print ``text`` with ``write`` (a line of the caller's, on any stream): on a terminal the live
        line is erased first and drawn again below it, so the two never share a line."""
        if not self.drawn:
            write(text)
            return
        self.stream.write("\r\033[K")
        self.stream.flush()
        write(text)
        self._emit(self.line())

    def close(self) -> None:
        """The final state, unless a plain line already showed it; ends the live line."""
        if self.enabled:
            self.update(self.done, force=True)
            if self.live:
                self.stream.write("\n")
                self.stream.flush()
                self.drawn = False

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
