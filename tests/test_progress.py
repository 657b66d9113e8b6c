"""Progress display: plain lines off a terminal, rate and ETA, a time limit that caps the ETA."""

from __future__ import annotations

import io

from arena.progress import Progress, format_duration


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_format_duration() -> None:
    assert format_duration(5) == "00:05"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(float("nan")) == "?"
    assert format_duration(float("inf")) == "?"


def test_plain_lines_with_rate_and_eta(monkeypatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr("arena.progress.time.perf_counter", clock)
    out = io.StringIO()
    meter = Progress(1000, unit="games", label="league", stream=out, log_every=10.0)
    clock.now += 10.0
    meter.update(250, forfeits=0)
    clock.now += 1.0
    meter.update(300)  # within log_every of the last line: not printed
    lines = out.getvalue().splitlines()
    assert lines == ["league 250/1,000 games ( 25.0%)  25 games/s  elapsed 00:10  eta 00:30  forfeits 0"]
    assert "\r" not in out.getvalue()
    meter.close()
    assert out.getvalue().splitlines()[-1].startswith("league 300/1,000 games ( 30.0%)")


def test_time_limit_caps_the_eta(monkeypatch) -> None:
    clock = FakeClock()
    monkeypatch.setattr("arena.progress.time.perf_counter", clock)
    meter = Progress(1_000_000, stream=io.StringIO(), time_limit=60.0)
    clock.now += 20.0
    meter.done = 1000  # at this rate the step budget would take hours; the time limit ends it in 40 s
    assert "eta 00:40" in meter.line()
    assert "eta ?" in Progress(10, stream=io.StringIO()).line()
