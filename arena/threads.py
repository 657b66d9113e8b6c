"""CPU thread defaults: one torch thread, and OpenMP threads that sleep instead of spinning.

Why: the env steps thousands of battles with many small tensor operations. torch's default is one
OpenMP thread per core, and OpenMP threads spin-wait between operations. With another process busy on
one of the cores (a second job on a laptop, a shared CI runner), each operation waits for a thread
that is not running, and a 2-core machine ran 20-38x slower than with one thread. With one thread
nothing waits, and on a quiet machine one thread is as fast or faster at the sizes arena uses,
because most operations on ``[num_envs]`` tensors stay under torch's parallel grain anyway
(docs/performance.md has the table).

So every command uses one thread unless told otherwise (``--threads N``, or the ``ARENA_THREADS``
environment variable; 0 means torch's own default), and ``import arena`` sets ``OMP_WAIT_POLICY=PASSIVE``
before torch loads, unless the variable is already set, so that a user who asks for more threads
does not get the spinning either. This module never imports torch at import time.
"""

from __future__ import annotations

import os
import sys

ENV_VAR = "ARENA_THREADS"
DEFAULT_THREADS = 1
MAX_THREADS = 1024  # far above any CPU arena runs on; guards against a typo such as 99999


HELP = (f"torch CPU threads [default: 1, or ${ENV_VAR}; 0: one per core]. More threads spin against other "
        "work on a shared CPU and rarely help at arena's sizes (docs/performance.md).")


class ThreadsError(ValueError):
    """A thread count that is not an integer in [0, MAX_THREADS]."""


def prepare_openmp() -> None:
    """Choose the OpenMP wait policy before torch loads (it is read once, when the library loads).

    Respects a policy the user set, and does nothing once torch is imported: by then it is too late.
    """
    if "torch" in sys.modules:
        return
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def check_threads(value: int, where: str = "--threads") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_THREADS:
        raise ThreadsError(f"{where}: expected an integer from 0 (torch's default) to {MAX_THREADS}, got {value!r}")
    return value


def default_threads() -> int:
    """``ARENA_THREADS`` when set, else one thread."""
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return DEFAULT_THREADS
    try:
        value = int(text)
    except ValueError:
        raise ThreadsError(f"{ENV_VAR}={text!r}: expected an integer from 0 (torch's default) to {MAX_THREADS}") from None
    return check_threads(value, ENV_VAR)


def apply_threads(threads: int | None = None) -> int:
    """Set torch's intra-op thread count and return the count in force.

    ``None`` takes the default (``ARENA_THREADS``, else 1); 0 keeps torch's own choice (one per core).
    """
    import torch

    count = default_threads() if threads is None else check_threads(threads)
    if count > 0:
        torch.set_num_threads(count)
    return torch.get_num_threads()
