"""The one place that turns a device request into a usable ``torch.device``, or a one-line ``ValueError``.

Everything that takes a device goes through :func:`resolve_device`: the env, matches, tournaments
(also on Ray workers), the command line's ``--device`` and each process of a training run on several
processes. The messages name the request and what was expected; callers prefix the option or key
they blame (``--device: ...``).
"""

from __future__ import annotations

import torch

EXPECTED = "expected cpu, cuda, cuda:N or auto"


class DeviceUnavailableError(ValueError):
    """A well-formed CUDA device on a machine without CUDA (another machine may have it: Ray workers)."""


def resolve_device(device: str | torch.device | None = None, *, local_rank: int | None = None,
                   local_world_size: int = 1) -> torch.device:
    """``device`` checked and made concrete.

    ``None``/"auto": CUDA when present, else the CPU. "cuda" gets its index (the current device), so
    devices compare equal; "cuda:N" must exist here; "cpu:0" is the CPU, "cpu:5" is refused (torch takes
    it as a name, and the failure would surface later as actions on "the wrong device"); "mps" only on a
    machine that has it.

    ``local_rank`` (of ``local_world_size`` processes on this machine) makes it one process of a run on
    several: with "cuda" or "auto" it takes the GPU of its local rank, and needs one GPU per process;
    "cuda:N" would put every process on the same GPU and is refused when there are several; MPS is
    refused (such runs use cpu or cuda).

    Raises ``ValueError`` naming what was expected; :class:`DeviceUnavailableError` (a ``ValueError``)
    for CUDA on a machine without it.
    """
    shown = device if isinstance(device, str) else str(device)
    if device is None or device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError, ValueError) as exc:  # torch's own wording for odd strings
        raise ValueError(f"invalid device {shown!r}: {EXPECTED}") from exc
    if local_rank is not None and not 0 <= local_rank < local_world_size:
        raise ValueError(f"local rank {local_rank}: expected 0 to {local_world_size - 1} "
                         f"(one of the {local_world_size} processes on this machine)")
    if dev.type == "cpu":
        if dev.index not in (None, 0):
            raise ValueError(f"invalid device {shown!r}: the CPU has no device index; use cpu")
        return torch.device("cpu")
    if dev.type == "mps":
        if local_rank is not None:
            raise ValueError(f"device {shown!r}: training on several processes runs on cpu or cuda, not mps")
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"device {shown!r} requested but MPS is not available on this machine; "
                             f"use cpu, cuda or auto")
        if dev.index not in (None, 0):
            raise ValueError(f"invalid device {shown!r}: use mps")
        return torch.device("mps")
    if dev.type != "cuda":
        raise ValueError(f"unsupported device {shown!r}: {EXPECTED}")
    if not torch.cuda.is_available():
        raise DeviceUnavailableError(f"device {shown!r} requested but CUDA is not available on this machine")
    count = torch.cuda.device_count()
    if dev.index is not None:
        if local_rank is not None and local_world_size > 1:
            raise ValueError(f"device {shown!r} names one GPU for the {local_world_size} processes on this "
                             f"machine; expected cuda: each process takes the GPU of its local rank")
        index = dev.index
    elif local_rank is not None:
        if count < local_world_size:
            raise ValueError(f"device {shown!r}: {local_world_size} processes on this machine need one GPU each, "
                             f"found {count}; start at most {count} or use cpu")
        index = local_rank
    else:
        index = torch.cuda.current_device()
    if index >= count:
        raise ValueError(f"device {shown!r}: only {count} CUDA device(s) present")
    return torch.device("cuda", index)
