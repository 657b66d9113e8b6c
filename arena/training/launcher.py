"""``--nproc N``: start N training processes on this machine the way torchrun does, and watch them.

Each child runs ``python -m arena ARGS`` with torchrun's variables (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), so from its first line on
it runs exactly the code of ``torchrun --nproc-per-node N -m arena ARGS``. What the launcher adds is
what a user at a terminal needs:

- it hosts the rendezvous store itself, on a port the system picks (no free-port race);
- the children run in their own session and the launcher forwards SIGINT, SIGTERM and SIGHUP to
  them, so each gets every signal exactly once: one Ctrl-C and they finish the update, save and stop
  (the trainer makes them agree on it); a second and they abort; a third and the launcher kills them.
  SIGHUP (the terminal was closed) counts once and acts as SIGTERM, and whatever would be written
  to the hung-up terminal goes to ``/dev/null`` instead of failing;
- the children end with the launcher: being in their own session, neither a closed terminal nor a
  ``kill -9`` of the launcher reaches them, so each follows it (:func:`follow_launcher`) and stops
  after the update, as on the first Ctrl-C, the moment it is gone;
- when a child fails, the others get ``grace_s`` seconds to notice (a broken collective ends them)
  and are then terminated, then killed: no process is left waiting for a peer that is gone.

This module imports torch only inside :func:`launch`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import MutableMapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType

from arena.training.interrupt import HANGUP, silence_terminal, stop_signals

GRACE_S = 15.0  # after a child fails: seconds before the others are terminated, and again before they are killed
POLL_S = 0.05
# success, a one-line error the child printed itself, a stop asked by a signal (SIGINT, SIGHUP, SIGTERM)
CLEAN_EXITS = (0, 2, 128 + signal.SIGINT, 128 + signal.SIGTERM, *(() if HANGUP is None else (128 + HANGUP,)))
LAUNCHER_VAR = "ARENA_LAUNCHER_PID"  # set in each child: the process it must not outlive
FOLLOW_S = 0.5  # without a parent-death signal: how often a child checks that its launcher lives
PR_SET_PDEATHSIG = 1  # prctl(2) on Linux


@dataclass(frozen=True)
class LaunchResult:
    """How the processes ended: the exit status to pass on, and a line to print when no child explained."""

    status: int
    message: str | None = None


def child_env(rank: int, nproc: int, port: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment torchrun gives local rank ``rank`` of ``nproc`` on one machine, and this
    process's id, which the child follows (:func:`follow_launcher`)."""
    env = dict(os.environ if base is None else base)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",  # the store below is the launcher's: every rank is its client
        LAUNCHER_VAR: str(os.getpid()),
    })
    if nproc > 1:
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun: N processes must not each take every core
    return env


def launch(args: Sequence[str], nproc: int, *, module: str = "arena", grace_s: float = GRACE_S) -> LaunchResult:
    """Run ``python -m module *args`` as ranks 0..nproc-1 and wait for all of them.

    Returns status 0 when every process succeeded; otherwise the status of the first one that
    failed, with a message unless that process printed its own (exit status 2 or 130).
    """
    import torch.distributed as dist

    store = dist.TCPStore("127.0.0.1", 0, world_size=nproc, is_master=True, wait_for_workers=False,
                          timeout=timedelta(minutes=30))
    command = [sys.executable, "-u", "-m", module, *args]
    procs: list[subprocess.Popen[bytes]] = []
    watcher = Watcher(procs)
    with watcher:
        for rank in range(nproc):
            procs.append(subprocess.Popen(command, env=child_env(rank, nproc, store.port), stdin=subprocess.DEVNULL,
                                          start_new_session=True))
        result = watcher.wait(grace_s)
    del store
    return result


def forwarded_signals() -> tuple[int, ...]:
    """The signals the launcher passes on: those that ask a run to stop (:func:`stop_signals`)."""
    return stop_signals()


# -- in the children -------------------------------------------------------------------------------


class LauncherGone(RuntimeError):
    """The launcher that started this process has already ended."""


def follow_launcher(environ: MutableMapping[str, str] | None = None) -> int | None:
    """In a process started by :func:`launch`: end with the launcher. Returns its pid; None (and
    nothing done) in a process without one, e.g. one started by torchrun. Call it in the main thread.

    The process gets SIGHUP when the launcher ends, however it ended (a closed terminal, ``kill -9``):
    on Linux from the kernel (``PR_SET_PDEATHSIG``), elsewhere from a thread that watches the parent.
    SIGHUP means the same when the launcher passes on a hang-up, and this process answers it once by
    raising SIGTERM, which stops training after the update as the first Ctrl-C does (the kernel can
    send the parent-death signal more than once, once per thread of the dying launcher; a second
    SIGTERM would abort). Checkpoints are written whole (to a temporary file, then renamed), so a
    process ended any way leaves nothing half-written. Raises :class:`LauncherGone` when the launcher
    ended before the signal was set up, ``ValueError`` for a malformed :data:`LAUNCHER_VAR`.
    """
    env = os.environ if environ is None else environ
    text = env.pop(LAUNCHER_VAR, None)  # not inherited by what this process starts
    if text is None:
        return None
    try:
        launcher = int(text)
    except ValueError:
        raise ValueError(f"{LAUNCHER_VAR}={text!r}: expected a process id") from None
    if HANGUP is None:  # no SIGHUP (Windows): the watching thread ends the process
        watch_launcher(launcher, signal.SIGTERM)
        return launcher
    if threading.current_thread() is threading.main_thread():
        signal.signal(HANGUP, _hang_up)  # also under nohup: the launcher's death must still reach it
    watched = set_parent_death_signal(HANGUP)
    if os.getppid() != launcher:  # it ended before the signal was set: nobody will send it
        raise LauncherGone(f"the launcher (process {launcher}) has already ended")
    if not watched:
        watch_launcher(launcher, HANGUP)
    return launcher


def set_parent_death_signal(sig: int) -> bool:
    """Have the kernel send ``sig`` to this process when its parent ends (Linux ``prctl``); False where
    that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        zero = ctypes.c_ulong(0)
        return int(libc.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(int(sig)), zero, zero, zero)) == 0
    except (OSError, AttributeError):
        return False


def watch_launcher(launcher: int, sig: int, period_s: float = FOLLOW_S) -> threading.Thread:
    """Send ``sig`` to this process once ``launcher`` is no longer its parent (an orphan is handed to
    init or a subreaper), checking every ``period_s``: the portable stand-in for the parent-death signal."""

    def watch() -> None:
        while os.getppid() == launcher:
            time.sleep(period_s)
        os.kill(os.getpid(), sig)

    thread = threading.Thread(target=watch, name="launcher-watch", daemon=True)
    thread.start()
    return thread


_HUNG_UP = threading.Lock()  # held from the first SIGHUP on


def _hang_up(signum: int, frame: FrameType | None) -> None:
    """SIGHUP: the launcher or its terminal is gone. Stop as on SIGTERM, once, and write nowhere that
    fails. A second SIGHUP can arrive while the first one's handler runs (before ``SIG_IGN`` takes
    effect) and run it again; taking the lock is one step, so only the first raises SIGTERM."""
    if not _HUNG_UP.acquire(blocking=False):
        return
    signal.signal(signum, signal.SIG_IGN)  # whatever follows reports the same loss
    silence_terminal()
    signal.raise_signal(signal.SIGTERM)


class Watcher:
    """Forwards signals to the children and waits for them, ending the rest when one fails."""

    def __init__(self, procs: list[subprocess.Popen[bytes]]) -> None:
        self.procs = procs
        self.signals = 0
        self.first_signal: int | None = None  # the first signal passed on: the launcher's own exit status
        self.hung_up = False
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "Watcher":
        if threading.current_thread() is threading.main_thread():
            for sig in forwarded_signals():
                self._previous[sig] = signal.signal(sig, self._forward)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]
        for proc in self.procs:  # an exception in the launcher itself: leave nothing running
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def _forward(self, signum: int, frame: FrameType | None) -> None:
        if signum == HANGUP:
            if self.hung_up:  # the shell and the kernel may both report the same closed terminal
                return
            self.hung_up = True
            silence_terminal()
        self.signals += 1
        if self.first_signal is None:
            self.first_signal = signum
        self.send(signal.SIGKILL if self.signals >= 3 else signum)

    def send(self, sig: int) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                try:
                    os.kill(proc.pid, sig)
                except ProcessLookupError:
                    pass

    def wait(self, grace_s: float) -> LaunchResult:
        first: tuple[int, int] | None = None  # (rank, status) of the first process that failed
        failed_at = 0.0
        terminated = killed = False
        while True:
            codes = [proc.poll() for proc in self.procs]
            if first is None:
                # Seen in the same poll: a killed or crashed process is the cause, not the peer that noticed.
                bad = sorted(((code in CLEAN_EXITS, rank), rank, code) for rank, code in enumerate(codes)
                             if code not in (None, 0))
                if bad:
                    first, failed_at = (bad[0][1], bad[0][2]), time.monotonic()
            if all(code is not None for code in codes):
                break
            if first is not None:
                waited = time.monotonic() - failed_at
                if waited > 2 * grace_s and not killed:
                    self.send(signal.SIGKILL)
                    killed = True
                elif waited > grace_s and not terminated:
                    self.send(signal.SIGTERM)
                    terminated = True
            time.sleep(POLL_S)
        asked = None if self.first_signal is None else 128 + self.first_signal  # stopped as the signal asked
        if first is None:
            return LaunchResult(asked or 0)
        rank, code = first
        where = f"process {rank} of {len(self.procs)}"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return LaunchResult(128 - code, f"{where} was killed by {name}; the others were stopped")
        if code in CLEAN_EXITS:
            return LaunchResult(asked if asked is not None and code != 2 else code)
        return LaunchResult(code, f"{where} failed with exit status {code} (its output is above); the others were "
                                  f"stopped")
