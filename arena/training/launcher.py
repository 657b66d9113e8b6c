"""``--nproc N``: start N training processes on this machine the way torchrun does, and watch them.

Each child runs ``python -m arena ARGS`` with torchrun's variables (``RANK``, ``WORLD_SIZE``,
``LOCAL_RANK``, ``LOCAL_WORLD_SIZE``, ``MASTER_ADDR``, ``MASTER_PORT``), so from its first line on
it runs exactly the code of ``torchrun --nproc-per-node N -m arena ARGS``. What the launcher adds is
what a user at a terminal needs:

- it hosts the rendezvous store itself, on a port the system picks (no free-port race);
- the children run in their own session and the launcher forwards SIGINT and SIGTERM to them, so
  each gets every signal exactly once: one Ctrl-C and they finish the update, save and stop (the
  trainer makes them agree on it); a second and they abort; a third and the launcher kills them;
- when a child fails, the others get ``grace_s`` seconds to notice (a broken collective ends them)
  and are then terminated, then killed: no process is left waiting for a peer that is gone.

This module imports torch only inside :func:`launch`.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType

GRACE_S = 15.0  # after a child fails: seconds before the others are terminated, and again before they are killed
POLL_S = 0.05
CLEAN_EXITS = (0, 2, 130)  # success, a one-line error the child printed itself, an interrupt


@dataclass(frozen=True)
class LaunchResult:
    """How the processes ended: the exit status to pass on, and a line to print when no child explained."""

    status: int
    message: str | None = None


def child_env(rank: int, nproc: int, port: int, base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment torchrun gives local rank ``rank`` of ``nproc`` on one machine."""
    env = dict(os.environ if base is None else base)
    env.update({
        "RANK": str(rank), "LOCAL_RANK": str(rank), "GROUP_RANK": "0", "ROLE_RANK": str(rank),
        "WORLD_SIZE": str(nproc), "LOCAL_WORLD_SIZE": str(nproc), "ROLE_WORLD_SIZE": str(nproc),
        "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port),
        "TORCHELASTIC_USE_AGENT_STORE": "True",  # the store below is the launcher's: every rank is its client
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


class Watcher:
    """Forwards signals to the children and waits for them, ending the rest when one fails."""

    def __init__(self, procs: list[subprocess.Popen[bytes]]) -> None:
        self.procs = procs
        self.signals = 0
        self._previous: dict[int, object] = {}

    def __enter__(self) -> "Watcher":
        import threading

        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGINT, signal.SIGTERM):
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
        self.signals += 1
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
        if first is None:
            return LaunchResult(0)
        rank, code = first
        where = f"process {rank} of {len(self.procs)}"
        if code < 0:
            name = signal.Signals(-code).name if -code in signal.valid_signals() else str(-code)
            return LaunchResult(128 - code, f"{where} was killed by {name}; the others were stopped")
        if code in CLEAN_EXITS:
            return LaunchResult(code)
        return LaunchResult(code, f"{where} failed with exit status {code} (its output is above); the others were "
                                  f"stopped")
