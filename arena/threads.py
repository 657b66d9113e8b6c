"""CPU thread defaults that are never the slow case, on a quiet machine or a busy one.

The env steps thousands of battles with many small tensor operations. torch's default is one OpenMP
thread per core, spinning between operations. With another process busy on one core of two (a
second job on a laptop, a shared CI runner) every operation waits for a thread that is not running:
a 2-core machine ran 3-4x slower than with one thread (20-38x on small batches). On a quiet machine,
more threads pay only for large batches (1.6x at 65,536 envs; nothing at 4,096, and `arena play`
was faster with one). docs/performance.md has the table.

So the default count depends on the batch and on the machine: batches under ``LARGE_BATCH`` envs get
one thread; larger ones get one thread per core that sat idle over 50 ms at start (one when the
other cores are busy). ``--threads N`` or ``ARENA_THREADS=N`` fix the count (0: torch's own choice;
``ARENA_THREADS=auto`` asks for the idle-core count whatever the batch).

The count is decided when work starts, not when ``arena`` is imported: a command applies it before
it plays (:func:`apply_threads`), and a ``TensorEnv`` on the CPU settles it for its batch
(:func:`settle_threads`) unless someone already chose, so a library user who imported torch first
(a notebook, a Gymnasium script) steps as fast as the command line. ``import arena`` also sets
``OMP_WAIT_POLICY=PASSIVE`` when it comes before torch, unless the variable is already set, so that
threads that find no work sleep instead of spinning. This module never imports torch at import time.
"""

from __future__ import annotations

import os
import sys
import time

ENV_VAR = "ARENA_THREADS"
MAX_THREADS = 1024  # far above any CPU arena runs on; guards against a typo such as 99999
LARGE_BATCH = 16_384  # envs from which more threads pay on a quiet machine


HELP = (f"torch CPU threads [default: ${ENV_VAR}, else 1 below {LARGE_BATCH:,} envs and one per idle core "
        "above; 0: torch's own]. Threads on busy cores slow everything down (docs/performance.md).")


class ThreadsError(ValueError):
    """A thread count that is not an integer in [0, MAX_THREADS]."""


def prepare_openmp() -> None:
    """Choose the OpenMP wait policy before torch loads (it is read once, when the library loads).

    Respects a policy the user set, and does nothing once torch is imported: by then it is too late.
    """
    if "torch" in sys.modules:
        note_torch_default()
        return
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")


def check_threads(value: int, where: str = "--threads") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_THREADS:
        raise ThreadsError(f"{where}: expected an integer from 0 (torch's default) to {MAX_THREADS}, got {value!r}")
    return value


def idle_cores(sample_s: float = 0.05) -> float | None:
    """How many cores sat idle over the next ``sample_s`` seconds (Linux ``/proc/stat``), else the
    count of cores minus the 1-minute load average; None where neither can be read."""
    cores = usable_cores()
    try:
        before = _cpu_times()
        time.sleep(sample_s)
        after = _cpu_times()
        total = after[1] - before[1]
        if total > 0:
            return (os.cpu_count() or cores) * (after[0] - before[0]) / total
    except (OSError, ValueError, IndexError):
        pass
    try:
        return max(0.0, cores - os.getloadavg()[0])
    except (OSError, AttributeError):
        return None


def _cpu_times() -> tuple[int, int]:
    """(idle + iowait, total) jiffies of all CPUs."""
    with open("/proc/stat") as f:
        values = [int(v) for v in f.readline().split()[1:]]
    return values[3] + values[4], sum(values)


def usable_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def auto_threads() -> int:
    """One thread per idle core, at least one: all cores on a quiet machine, one when the others are busy."""
    idle = idle_cores()
    if idle is None:
        return 1
    return max(1, min(usable_cores(), int(idle + 0.25)))


def default_threads(batch: int | None = None, processes: int = 1) -> int:
    """``ARENA_THREADS`` when set (a count, or ``auto``); else one thread per idle core for a batch of
    at least ``LARGE_BATCH`` envs, and one thread otherwise (or when the batch is unknown).

    ``processes`` training processes started together on this machine all see the same idle cores:
    each takes its share of them, not all of them.
    """
    text = os.environ.get(ENV_VAR, "").strip()
    if not text:
        return max(1, auto_threads() // processes) if batch is not None and batch >= LARGE_BATCH else 1
    if text.lower() == "auto":
        return max(1, auto_threads() // processes)
    try:
        value = int(text)
    except ValueError:
        raise ThreadsError(f"{ENV_VAR}={text!r}: expected auto or an integer from 0 (torch's default) to "
                           f"{MAX_THREADS}") from None
    return check_threads(value, ENV_VAR)


_chosen = False  # a command (or a script through apply_threads) decided the count
_settled: int | None = None  # the count settle_threads last set on its own
_torch_default: int | None = None  # torch's count when arena first saw torch loaded


def note_torch_default() -> None:
    """Remember torch's thread count the first time arena finds torch loaded (``import arena`` after
    torch, or arena's env loading it), as torch's own default: torch picks it from the machine (one
    per core, or per physical core), which this module cannot recompute everywhere."""
    global _torch_default
    if _torch_default is None and "torch" in sys.modules:
        _torch_default = sys.modules["torch"].get_num_threads()


def thread_count(threads: int | None, batch: int | None = None, processes: int = 1) -> int:
    """The count a ``--threads`` value stands for: ``threads`` checked, or the default for a batch of ``batch``
    envs in each of ``processes`` processes when None (0: torch's own choice); :class:`ThreadsError`."""
    return default_threads(batch, processes) if threads is None else check_threads(threads)


def apply_threads(threads: int | None = None, batch: int | None = None, processes: int = 1) -> int:
    """Set torch's intra-op thread count and return the count in force.

    ``None`` takes the default for a batch of ``batch`` envs in each of ``processes`` processes on
    this machine (see :func:`default_threads`); 0 keeps torch's own choice (one per core). The count
    is then the caller's: envs built afterwards leave it as it is.
    """
    import torch

    global _chosen
    count = thread_count(threads, batch, processes)
    if count > 0:
        torch.set_num_threads(count)
    _chosen = True
    return torch.get_num_threads()


def settle_threads(batch: int) -> int:
    """Apply the default count for an env of ``batch`` battles on the CPU, unless a count was chosen.

    A choice is a command's or a script's :func:`apply_threads` (``--threads``), ``ARENA_THREADS``,
    ``OMP_NUM_THREADS``, or a ``torch.set_num_threads`` that left a count other than torch's own (as
    first seen by arena) and other than the one this function set last. Returns the count in force.
    """
    import torch

    global _settled
    current = torch.get_num_threads()
    if _chosen:
        return current
    if not os.environ.get(ENV_VAR, "").strip():
        if os.environ.get("OMP_NUM_THREADS"):
            return current
        note_torch_default()
        if current != (_settled if _settled is not None else _torch_default):
            return current  # the user's own torch.set_num_threads
    count = default_threads(batch)
    if count > 0:
        torch.set_num_threads(count)
    _settled = torch.get_num_threads()
    return _settled
