"""The checks for arguments that size a batch of battles (``num_envs``) or pick battles out of one by
index (``keep_envs``, ``restart_envs``, ``watch``): done in full before anything changes, so a refused
call leaves the env as it was, and worded the same wherever it is given."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch

MAX_NUM_ENVS = 1 << 30  # ~1.07 billion battles: hundreds of GB of state, past any one device's memory
# torch's unsigned integers past uint8 have no min or max (nor a cast that keeps a value above 2**63 - 1):
# their values are read through numpy, exactly.
WIDE_UNSIGNED = tuple(getattr(torch, name) for name in ("uint16", "uint32", "uint64") if hasattr(torch, name))


def check_num_envs(num_envs: object) -> int:
    """``num_envs`` as an int when it is a positive integer (a numpy one too) of at most ``MAX_NUM_ENVS``,
    else a ``ValueError``."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or int(num_envs) < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r:.40}")
    if int(num_envs) > MAX_NUM_ENVS:
        raise ValueError(f"num_envs must be at most 2**30 ({MAX_NUM_ENVS:,}: the state of more battles outgrows any "
                         f"device's memory), got {int(num_envs):,}")
    return int(num_envs)


def env_indices(envs: Any, num_envs: int, who: str, increasing: bool = False) -> torch.Tensor:
    """``envs`` as a ``[K]`` int64 tensor (on the CPU) of env indices in ``[0, num_envs)``; ``increasing``
    asks them distinct and in increasing order (an index may repeat otherwise: a replay recorder watches
    env 0 for the battles a batch no longer keeps). Anything else is a ``ValueError`` naming ``who``.

    Floats are refused even when whole: an index computed in floats is a caller's mistake to see, and
    NaN would otherwise become some integer. Reads the values on the host (one sync on a GPU).
    """
    wanted = (f"a non-empty 1-D sequence of {'increasing distinct ' if increasing else ''}integer env indices "
              f"in [0, {num_envs})")
    if isinstance(envs, torch.Tensor):
        if envs.is_meta:
            raise ValueError(f"{who}: expected {wanted}, got a tensor on the meta device (it holds no values)")
        if envs.dtype in WIDE_UNSIGNED:
            envs = envs.detach().cpu().numpy()
    values: np.ndarray | torch.Tensor
    if isinstance(envs, torch.Tensor):
        values = envs.detach().cpu()
        if values.dtype == torch.bool or values.dtype.is_floating_point or values.dtype.is_complex:
            raise ValueError(f"{who}: expected {wanted}, got a tensor of dtype {values.dtype}")
    else:
        if isinstance(envs, (list, tuple)) and envs and all(isinstance(v, int) and not isinstance(v, bool)
                                                            for v in envs):
            envs = np.array(envs, dtype=object)  # Python ints of any size: numpy would read 2**63 as a float
        try:
            values = np.asarray(envs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{who}: expected {wanted}, got {type(envs).__name__} ({exc})") from None
        ints = values.dtype.kind in "iu" or (values.dtype == object and all(
            isinstance(v, int) and not isinstance(v, bool) for v in values.reshape(-1).tolist()))
        if not ints and values.size:
            shown = "None" if envs is None else f"{type(envs).__name__} of dtype {values.dtype}"
            raise ValueError(f"{who}: expected {wanted}, got {shown}")
    if values.ndim != 1 or values.shape[0] == 0:
        raise ValueError(f"{who}: expected {wanted}, got shape {list(values.shape)}")
    low, high = int(values.min()), int(values.max())  # Python ints: a uint64 above 2**63 stays what it is
    if low < 0 or high >= num_envs:
        raise ValueError(f"{who}: expected {wanted}, got values in [{low}, {high}]")
    index = values.long() if isinstance(values, torch.Tensor) else torch.as_tensor(values.astype(np.int64))
    if increasing and bool((index[1:] <= index[:-1]).any()):
        raise ValueError(f"{who}: expected {wanted}, got {index.tolist()[:8]}{' ...' if len(index) > 8 else ''}")
    return index
