"""Progress display: plain lines off a terminal, a live line on one, rate and an ETA that waits for a
measured rate, missing statistics as "-", and no line printed twice."""

from __future__ import annotations

import io

import pytest

from arena.progress import Progress, format_duration, format_stat


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def clock(monkeypatch) -> FakeClock:
    fake = FakeClock()
    monkeypatch.setattr("arena.progress.time.perf_counter", fake)
    return fake


def test_format_duration() -> None:
    assert format_duration(5) == "00:05"
    assert format_duration(3725) == "1:02:05"
    assert format_duration(float("nan")) == "--:--"
    assert format_duration(float("inf")) == "--:--"


def test_format_stat_shows_nan_as_missing() -> None:
    assert format_stat(float("nan"), "+.3f") == "-"
    assert format_stat(0.25, "+.3f") == "+0.250"
    assert format_stat(0.0) == "0"


def test_plain_lines_with_rate(clock: FakeClock) -> None:
    out = io.StringIO()
    meter = Progress(1000, unit="games", label="league", stream=out, log_every=10.0)
    clock.now += 10.0
    meter.update(250, forfeits=0)
    clock.now += 1.0
    meter.update(300)  # within log_every of the last line: not printed
    lines = out.getvalue().splitlines()
    assert lines == ["league 250/1,000 games ( 25.0%)  25 games/s  elapsed 00:10  eta --:--  forfeits 0"]
    assert "\r" not in out.getvalue()
    meter.close()
    assert out.getvalue().splitlines()[-1].startswith("league 300/1,000 games ( 30.0%)")


def test_nan_fields_are_shown_as_missing_not_as_nan(clock: FakeClock) -> None:
    out = io.StringIO()
    meter = Progress(1000, stream=out, label="ppo")
    meter.update(128, win=float("nan"), ret=float("nan"))  # no episode has ended yet
    meter.update(256, force=True, win=0.5, ret=-1.25)
    first, second = out.getvalue().splitlines()
    assert first.endswith("win -  ret -") and "nan" not in first
    assert second.endswith("win 0.5  ret -1.25")


def test_piped_output_prints_each_state_once(clock: FakeClock) -> None:
    out = io.StringIO()
    meter = Progress(100, unit="games", stream=out, log_every=10.0)
    clock.now += 12.0
    meter.update(40, forfeits=0)  # timed line
    meter.update(40, force=True, forfeits=0)  # a batch's end with nothing new: left out
    meter.update(40, force=True, forfeits=0, lead="ace 1200")  # new fields: printed
    clock.now += 1.0
    meter.update(100, force=True, forfeits=0, lead="ace 1210")  # the last batch
    meter.close()  # already shown: not repeated
    lines = out.getvalue().splitlines()
    assert [line.split(" ")[0] for line in lines] == ["40/100", "40/100", "100/100"]
    assert lines[1].endswith("lead ace 1200") and lines[2].endswith("lead ace 1210")

    closing = io.StringIO()
    meter = Progress(100, stream=closing, log_every=10.0)
    meter.update(10)
    meter.update(30)  # not due yet: the close shows it
    meter.close()
    assert [line.split(" ")[0] for line in closing.getvalue().splitlines()] == ["10/100", "30/100"]


def test_a_timed_line_repeats_the_state_as_a_heartbeat(clock: FakeClock) -> None:
    out = io.StringIO()
    meter = Progress(100, stream=out, log_every=10.0)
    meter.update(5)
    clock.now += 10.0
    meter.update(5)  # a long stretch with no progress still shows the clock moving
    assert len(out.getvalue().splitlines()) == 2


def test_terminal_redraws_one_live_line_and_ends_it_on_close(clock: FakeClock) -> None:
    out = Terminal()
    meter = Progress(100, stream=out, label="ppo")
    meter.update(10)
    clock.now += 1.0
    meter.update(10)  # same state: redrawn in place (elapsed moves), adds no line
    meter.close()
    text = out.getvalue()
    assert text.count("\r\033[K") == 3 and text.endswith("\n") and text.count("\n") == 1


def test_eta_waits_for_a_rate_measured_after_the_warm_up(clock: FakeClock) -> None:
    out = io.StringIO()
    meter = Progress(1000, unit="games", stream=out, log_every=0.0)
    clock.now += 30.0  # warm-up: compiling, the first batch
    meter.update(10)  # from the start the rate (1/3 game/s) would promise 49 minutes
    clock.now += 2.0
    meter.update(100)  # too soon after the first update to trust
    clock.now += 8.0
    meter.update(510)  # 500 games in 10 s since the first update: 490 left at 50/s
    etas = [line.split("eta ")[1] for line in out.getvalue().splitlines()]
    assert etas == ["--:--", "--:--", "00:10"]
    meter.update(1000)
    assert "eta 00:00" in meter.line()


def test_eta_waits_for_a_share_of_the_work(clock: FakeClock) -> None:
    meter = Progress(1_000_000, stream=io.StringIO())
    meter.update(0)
    clock.now += 60.0
    meter.update(5_000)  # a minute in, 0.5 % done: still a warm-up rate
    assert "eta --:--" in meter.line()
    clock.now += 60.0
    meter.update(20_000)  # 2 %, 20,000 steps in 120 s: 980,000 left
    assert "eta 1:38:00" in meter.line()


def test_time_limit_caps_the_eta(clock: FakeClock) -> None:
    meter = Progress(1_000_000, stream=io.StringIO(), time_limit=60.0)
    clock.now += 20.0
    meter.done = 1000  # at this rate the step budget would take hours; the time limit ends it in 40 s
    assert "eta 00:40" in meter.line()
    assert "eta --:--" in Progress(10, stream=io.StringIO()).line()


def test_a_meter_without_plain_lines_prints_nothing_off_a_terminal(clock: FakeClock) -> None:
    """The caller's own lines carry the ETA: a log gets one line a moment, not the meter's beside them."""
    out = io.StringIO()
    meter = Progress(100, stream=out, label="ppo", plain=False)
    meter.update(10)
    clock.now += 30.0
    meter.update(50, force=True)
    meter.close()
    assert out.getvalue() == "" and meter.eta() == pytest.approx(37.5)  # 40 in 30 s, 50 left
    said: list[str] = []
    meter.echo("update 2", said.append)
    assert said == ["update 2"] and out.getvalue() == ""


def test_a_line_echoed_on_a_terminal_goes_above_the_live_line(clock: FakeClock) -> None:
    screen = Terminal()
    meter = Progress(100, stream=screen, label="ppo", plain=False)
    meter.update(10)
    meter.echo("update 1", lambda text: screen.write(text + "\n"))
    rows = screen.getvalue().split("\n")
    assert rows[0].endswith("\r\033[Kupdate 1")  # the live line erased first
    assert rows[1].startswith("\r\033[Kppo 10/100 steps")  # and drawn again below
    meter.close()
    said: list[str] = []
    meter.echo("done", said.append)  # the live line has ended: nothing to erase
    assert said == ["done"] and screen.getvalue().endswith("\n")
