"""``--nproc``'s launcher and the processes it starts: they end with it, however it ends.

The processes here are stand-ins (launcher_worker.py) that follow the launcher as a trainer does, so
each case takes a second or two; plugins/arena-ppo/tests/test_distributed.py does the same with a
real training run.
"""

from __future__ import annotations

import fcntl
import os
import select
import signal
import subprocess
import sys
import termios
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arena.training.launcher import LAUNCHER_VAR, child_env, forwarded_signals

HERE = Path(__file__).parent
RANK_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "TORCHELASTIC_RUN_ID", "TORCHELASTIC_USE_AGENT_STORE", LAUNCHER_VAR)
# The launcher of two stand-in processes; its exit status is theirs.
LAUNCH = ("import sys\nfrom arena.training.launcher import launch\n"
          "sys.exit(launch([sys.argv[1]], 2, module='launcher_worker', grace_s=2).status)")
linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads process states from /proc")


def env() -> dict[str, str]:
    out = {k: v for k, v in os.environ.items() if k not in RANK_VARS}
    out["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [out.get("PYTHONPATH")])])
    return out


def ended(pid: int) -> bool:
    """Whether process ``pid`` is gone or a zombie nobody reaped yet (an orphan's reaper may be slow)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return True
    return state in ("Z", "X")


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(0.05)


@pytest.fixture()
def spawned() -> Iterator[list[int | subprocess.Popen]]:
    """What to kill at the end, whatever the test did (the processes this test started, and the pids of
    their children): no stand-in outlives a failed test."""
    started: list[int | subprocess.Popen] = []
    yield started
    for item in started:
        if isinstance(item, subprocess.Popen):
            if item.poll() is None:
                item.kill()
                item.wait()
        elif not ended(item):
            os.kill(item, signal.SIGKILL)


def worker_pids(out: Path, spawned: list[int | subprocess.Popen]) -> list[int]:
    """The two stand-ins' pids, once both follow the launcher."""
    wait_for(lambda: all((out / f"{r}.pid").exists() for r in (0, 1)), 60, "the processes to start")
    pids = [int((out / f"{r}.pid").read_text()) for r in (0, 1)]
    spawned.extend(pids)
    return pids


def assert_stopped_once(out: Path, pids: list[int]) -> None:
    """Each process ended within seconds, after exactly one SIGTERM (a second would abort a trainer)."""
    wait_for(lambda: all(ended(pid) for pid in pids), 10, "the processes to end")
    assert [(out / f"{r}.txt").read_text() for r in (0, 1)] == ["1", "1"]


@linux
def test_the_processes_stop_when_the_launcher_is_killed(tmp_path, spawned):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH, str(tmp_path)], env=env(), stdout=subprocess.DEVNULL)
    spawned.append(launcher)
    pids = worker_pids(tmp_path, spawned)
    launcher.kill()
    launcher.wait(10)
    assert_stopped_once(tmp_path, pids)


@linux
def test_closing_the_terminal_stops_the_processes_cleanly(tmp_path, spawned):
    """The launcher runs in a terminal (a pty it controls, as a shell's job does); closing the terminal
    hangs it up, the kernel sends the launcher SIGHUP, and everyone stops as on SIGTERM: writing to
    the dead terminal fails nowhere, so the launcher exits as SIGHUP asked (129), not as a failure."""
    master, slave = os.openpty()

    def own_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # after start_new_session's setsid: the pty is the controlling tty
        hang_ups_heard()

    try:
        launcher = subprocess.Popen([sys.executable, "-c", LAUNCH, str(tmp_path)], env=env(), stdin=slave,
                                    stdout=slave, stderr=slave, start_new_session=True, preexec_fn=own_terminal)
    finally:
        os.close(slave)
    spawned.append(launcher)
    pids = worker_pids(tmp_path, spawned)
    while select.select([master], [], [], 0)[0]:  # what the terminal shows so far, so no writer blocks
        os.read(master, 65536)
    os.close(master)  # the terminal window closes
    assert launcher.wait(15) == 128 + signal.SIGHUP
    assert_stopped_once(tmp_path, pids)


def hang_ups_heard() -> None:
    """In the launcher's process before it starts: SIGHUP as a terminal's job gets it, even when the suite
    runs under ``nohup`` (whose ignored SIGHUP the launcher rightly keeps: the run outlives the terminal)."""
    signal.signal(signal.SIGHUP, signal.SIG_DFL)


@linux
def test_a_hang_up_the_launcher_passes_on_stops_the_processes(tmp_path, spawned):
    launcher = subprocess.Popen([sys.executable, "-c", LAUNCH, str(tmp_path)], env=env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, preexec_fn=hang_ups_heard)
    spawned.append(launcher)
    pids = worker_pids(tmp_path, spawned)
    launcher.send_signal(signal.SIGHUP)
    launcher.send_signal(signal.SIGHUP)  # the shell and the kernel may both report one closed terminal
    output, _ = launcher.communicate(timeout=15)
    assert launcher.returncode == 128 + signal.SIGHUP, output
    assert_stopped_once(tmp_path, pids)
    assert output.count("stopped") == 2, "a terminal that still works keeps what is printed to it"


@linux
def test_under_nohup_a_hang_up_is_ignored_but_the_processes_still_follow_the_launcher(tmp_path, spawned):
    nohup = "import signal\nsignal.signal(signal.SIGHUP, signal.SIG_IGN)\n" + LAUNCH
    launcher = subprocess.Popen([sys.executable, "-c", nohup, str(tmp_path)], env=env(), stdout=subprocess.DEVNULL)
    spawned.append(launcher)
    pids = worker_pids(tmp_path, spawned)
    launcher.send_signal(signal.SIGHUP)
    time.sleep(1.0)
    assert launcher.poll() is None and not any(ended(pid) for pid in pids)
    assert not list(tmp_path.glob("*.txt")), "nothing was asked to stop"
    launcher.kill()
    launcher.wait(10)
    assert_stopped_once(tmp_path, pids)


def follower(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a fresh Python whose launcher is the process running this test."""
    script = "import os, signal, sys, time\nfrom arena.training.launcher import *\n" + code
    return subprocess.run([sys.executable, "-c", script], env={**env(), LAUNCHER_VAR: str(os.getpid())},
                          capture_output=True, text=True, timeout=30)


@linux
def test_a_process_answers_repeated_parent_death_signals_once():
    """The kernel sends the parent-death signal once per thread of the dying launcher: one stop."""
    done = follower("terms = []\nsignal.signal(signal.SIGTERM, lambda *a: terms.append(1))\n"
                    "assert follow_launcher() == os.getppid()\n"
                    "assert LAUNCHER_VAR not in os.environ, 'not inherited by what this process starts'\n"
                    "for _ in range(3):\n    os.kill(os.getpid(), signal.SIGHUP)\n    time.sleep(0.05)\n"
                    "print(len(terms))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]


@linux
def test_a_hang_up_that_arrives_while_the_first_is_answered_is_not_answered_again():
    """Python runs a handler again when its signal comes back before the handler ignored it; on a busy
    machine the second parent-death signal did, and the process aborted on a second SIGTERM."""
    done = follower("terms = []\nsignal.signal(signal.SIGTERM, lambda *a: terms.append(1))\n"
                    "follow_launcher()\nanswer = signal.getsignal(signal.SIGHUP)\n"
                    "answer(signal.SIGHUP, None)\nanswer(signal.SIGHUP, None)\nprint(len(terms))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["1"]


def test_a_launcher_already_gone_is_one_error():
    done = follower("os.environ[LAUNCHER_VAR] = '999999999'\ntry:\n    follow_launcher()\n"
                    "except LauncherGone as exc:\n    print(exc)")
    assert done.stdout.strip() == "the launcher (process 999999999) has already ended", done.stderr
    done = follower("os.environ[LAUNCHER_VAR] = 'x'\nfollow_launcher()")
    assert "ARENA_LAUNCHER_PID='x': expected a process id" in done.stderr


@linux
def test_without_a_parent_death_signal_a_thread_watches_the_launcher(tmp_path, spawned):
    """The portable way: a thread notices that the launcher is no longer the parent."""
    child = ("import os, signal, sys, time\nfrom arena.training.launcher import watch_launcher\n"
             "watch_launcher(os.getppid(), signal.SIGTERM, 0.05)\n"
             "open(sys.argv[1], 'w').write(str(os.getpid()))\ntime.sleep(60)")
    parent = ("import subprocess, sys, time\n"
              f"subprocess.Popen([sys.executable, '-c', {child!r}, sys.argv[1]])\ntime.sleep(60)")
    stand_in = subprocess.Popen([sys.executable, "-c", parent, str(tmp_path / "pid")], env=env())
    spawned.append(stand_in)
    wait_for(lambda: (tmp_path / "pid").exists() and (tmp_path / "pid").read_text() != "", 30, "the child")
    pid = int((tmp_path / "pid").read_text())
    spawned.append(pid)
    stand_in.kill()
    stand_in.wait(10)
    wait_for(lambda: ended(pid), 5, "the child to end")


def test_each_process_learns_the_launcher_and_nohup_keeps_the_hang_up():
    assert child_env(1, 2, 29500, base={})[LAUNCHER_VAR] == str(os.getpid())
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        assert signal.SIGHUP not in forwarded_signals(), "nohup: the run outlives the terminal"
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        assert signal.SIGHUP in forwarded_signals()
    finally:
        signal.signal(signal.SIGHUP, previous)
