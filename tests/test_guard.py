"""arena.guard: every way agent code can fail becomes one AgentCodeError, except the user's own Ctrl-C."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from arena import guard
from arena.guard import AgentCodeError, call_agent


@pytest.fixture
def counting():
    """The CLI's SIGINT counter, installed as `arena` installs it at start-up."""
    restore = guard.install_sigint_counter()
    yield
    restore()


def test_a_normal_call_returns_its_value():
    assert call_agent("a", "act", lambda x, y=1: x + y, 2, y=3) == 5


@pytest.mark.parametrize("fn, cause", [
    (lambda: 1 / 0, "ZeroDivisionError: division by zero"),
    (lambda: (_ for _ in ()).throw(RuntimeError("two\nlines")), "RuntimeError: two"),
    (lambda: sys.exit(4), "SystemExit (called sys.exit(4))"),
    (lambda: sys.exit(), "SystemExit (called sys.exit(None))"),
])
def test_exceptions_and_sys_exit_become_agent_errors(fn, cause):
    with pytest.raises(AgentCodeError) as exc:
        call_agent("wobbly", "act", fn)
    assert (exc.value.agent, exc.value.what, exc.value.cause) == ("wobbly", "act", cause)
    assert str(exc.value) == f"agent 'wobbly': act() raised {cause}" and "\n" not in str(exc.value)


def raise_keyboard_interrupt():
    raise KeyboardInterrupt


def test_an_agents_own_keyboard_interrupt_is_its_fault_when_sigints_are_counted(counting):
    with pytest.raises(AgentCodeError, match="KeyboardInterrupt .*not a Ctrl-C"):
        call_agent("sneaky", "reset", raise_keyboard_interrupt)


def test_a_real_ctrl_c_passes_through(counting):
    def user_presses_ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1_000_000):  # the handler runs between bytecodes
            pass

    with pytest.raises(KeyboardInterrupt):
        call_agent("innocent", "act", user_presses_ctrl_c)


def test_without_a_counter_keyboard_interrupt_is_re_raised_as_is():
    assert not guard.counting()
    with pytest.raises(KeyboardInterrupt):
        call_agent("library", "act", raise_keyboard_interrupt)


def test_stop_request_counts_sigints_too():
    from arena.training import StopRequest

    with StopRequest() as stop:
        assert guard.counting()
        with pytest.raises(AgentCodeError):
            call_agent("sneaky", "act", raise_keyboard_interrupt)
        before = guard.interrupt_count()
        os.kill(os.getpid(), signal.SIGINT)  # the first Ctrl-C only asks to stop
        for _ in range(1000):
            pass
        assert stop.requested and guard.interrupt_count() == before + 1
    assert not guard.counting()


# -- the watchdog: calls that may never return ----------------------------------------------------------


def test_the_watchdog_returns_values_and_re_raises_on_one_reused_daemon_thread():
    dog = guard.Watchdog("test-dog")
    seen = []

    def who():
        seen.append(threading.current_thread())
        return 7

    assert dog.call(5.0, who) == 7 and dog.call(5.0, who) == 7
    assert seen[0] is seen[1] and seen[0] is not threading.current_thread() and seen[0].daemon
    with pytest.raises(ZeroDivisionError):
        dog.call(5.0, lambda: 1 / 0)
    with pytest.raises(KeyboardInterrupt):  # a BaseException crosses back as it is (the guard judges it)
        dog.call(5.0, raise_keyboard_interrupt)
    dog.close()
    seen[0].join(2.0)
    assert not seen[0].is_alive()


def test_a_call_past_its_deadline_is_abandoned_and_its_late_answer_dropped():
    dog = guard.Watchdog("test-dog")
    release, returned = threading.Event(), threading.Event()
    workers = []

    def hang():
        workers.append(threading.current_thread())
        release.wait()
        returned.set()
        return "late"

    start = time.perf_counter()
    with pytest.raises(guard.CallTimedOut, match=r"no return within 0\.1 s") as info:
        dog.call(0.1, hang)
    assert info.value.waited == 0.1 and time.perf_counter() - start < 2.0 and dog.abandoned == 1
    assert dog.call(5.0, lambda: "next") == "next"  # a fresh worker: the hung one is not waited for
    release.set()
    assert returned.wait(5.0)
    workers[0].join(5.0)
    assert not workers[0].is_alive()  # the abandoned worker stops once its call returns
    assert dog.call(5.0, lambda: "after") == "after"  # "late" went nowhere
    dog.close()


def test_a_hung_call_does_not_keep_the_process_from_exiting():
    code = ("import threading; from arena.guard import Watchdog, CallTimedOut\n"
            "try:\n    Watchdog().call(0.1, threading.Event().wait)\nexcept CallTimedOut:\n    print('gave up')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30,
                          cwd=Path(__file__).resolve().parents[1])
    assert (done.returncode, done.stdout.strip()) == (0, "gave up"), done.stderr


def test_a_process_that_abandoned_a_call_in_native_code_ends_with_its_own_status():
    """A thread abandoned inside torch operations would be unwound from under them at shutdown, and the
    process would abort (134) after its work was done; end_process skips the shutdown."""
    code = ("import torch; from arena import guard\n"
            "def spin():\n    x = torch.ones(1000)\n    while True:\n        x = (x * 1.0001).sin()\n"
            "try:\n    guard.Watchdog().call(0.1, spin)\nexcept guard.CallTimedOut:\n    print('gave up')\n"
            "guard.end_process(3 if guard.calls_abandoned() == 1 else 4)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          cwd=Path(__file__).resolve().parents[1])
    assert (done.returncode, done.stdout.strip()) == (3, "gave up"), done.stderr


def test_the_command_line_ends_that_way_only_after_an_abandoned_call(monkeypatch):
    from arena.cli import main

    ended = []

    def end_process(code: int) -> None:
        ended.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(guard, "end_process", end_process)
    monkeypatch.setattr(guard, "_abandoned", 0)
    monkeypatch.setattr(guard, "_native_threads", False)
    with pytest.raises(SystemExit):
        main(["agents", "--json"])
    assert ended == []
    monkeypatch.setattr(guard, "_abandoned", 1)
    with pytest.raises(SystemExit):
        main(["play", "crank", "no-such-agent", "-q"])
    assert ended == [2]  # the command's own status
