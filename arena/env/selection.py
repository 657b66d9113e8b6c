"""The checks for arguments that size a batch of battles (``num_envs``) or pick battles out of one by
index (``keep_envs``, ``restart_envs``, ``watch``): done in full before anything changes, so a refused
call leaves the env as it was, and worded the same wherever it is given."""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np
import torch


def check_num_envs(num_envs: object) -> int:
    """``num_envs`` as an int when it is a positive integer (a numpy one too), else a ``ValueError``."""
    if isinstance(num_envs, bool) or not isinstance(num_envs, numbers.Integral) or int(num_envs) < 1:
        raise ValueError(f"num_envs must be a positive int, got {num_envs!r:.40}")
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
        tensor = envs.detach()
    else:
        try:
            array = np.asarray(envs)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{who}: expected {wanted}, got {type(envs).__name__} ({exc})") from None
        if array.dtype.kind not in "iu" and array.size:
            shown = "None" if envs is None else f"{type(envs).__name__} of dtype {array.dtype}"
            raise ValueError(f"{who}: expected {wanted}, got {shown}")
        tensor = torch.as_tensor(array.astype(np.int64))
    if tensor.dtype == torch.bool or tensor.dtype.is_floating_point or tensor.dtype.is_complex:
        raise ValueError(f"{who}: expected {wanted}, got a tensor of dtype {tensor.dtype}")
    if tensor.dim() != 1 or tensor.numel() == 0:
        raise ValueError(f"{who}: expected {wanted}, got shape {list(tensor.shape)}")
    index = tensor.to("cpu", torch.int64)
    low, high = int(index.min()), int(index.max())
    if low < 0 or high >= num_envs:
        raise ValueError(f"{who}: expected {wanted}, got values in [{low}, {high}]")
    if increasing and bool((index[1:] <= index[:-1]).any()):
        raise ValueError(f"{who}: expected {wanted}, got {index.tolist()[:8]}{' ...' if len(index) > 8 else ''}")
    return index
