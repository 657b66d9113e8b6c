"""Checking trainer state read back from a checkpoint before it is applied.

A checkpoint can be damaged or edited by hand; ``torch.load(weights_only=True)`` only promises that
it holds plain containers and tensors. Loading a world tensor of the wrong shape, or an optimizer
moment of the wrong size, would be accepted silently and crash the run later, far from the cause.
These checks compare the saved structure with the live one and name the first key that differs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def describe(value: Any) -> str:
    import torch

    if isinstance(value, torch.Tensor):
        return f"{value.dtype} of shape {list(value.shape)}"
    return type(value).__name__


def check_like(saved: Any, reference: Any, key: str, extra_ok: Sequence[str] = ()) -> None:
    """Raise ``ValueError`` naming ``key`` where ``saved`` differs in structure from ``reference``.

    Dicts must have the same keys (``extra_ok`` may be present or absent), tensors the same dtype and
    shape and finite values where floating point, numbers and strings the same type.
    """
    import torch

    if isinstance(reference, dict):
        if not isinstance(saved, dict):
            raise ValueError(f"{key}: expected a dict, got {describe(saved)}")
        missing = sorted(str(k) for k in reference if k not in saved and k not in extra_ok)
        unknown = sorted(str(k) for k in saved if k not in reference and k not in extra_ok)
        if missing or unknown:
            raise ValueError(f"{key}: missing key(s) {missing}, unexpected key(s) {unknown}"[:300])
        for name, ref in reference.items():
            if name in saved:
                check_like(saved[name], ref, f"{key}.{name}")
        return
    if isinstance(reference, torch.Tensor):
        if not isinstance(saved, torch.Tensor):
            raise ValueError(f"{key}: expected {describe(reference)}, got {describe(saved)}")
        if saved.dtype != reference.dtype or saved.shape != reference.shape:
            raise ValueError(f"{key}: expected {describe(reference)}, got {describe(saved)}")
        if saved.is_floating_point() and not bool(torch.isfinite(saved).all()):
            raise ValueError(f"{key}: holds NaN or infinite values")
        return
    if isinstance(reference, bool) or isinstance(saved, bool):
        if type(saved) is not type(reference):
            raise ValueError(f"{key}: expected {type(reference).__name__}, got {saved!r}"[:200])
        return
    if isinstance(reference, (int, float)):
        if not isinstance(saved, (int, float)) or (isinstance(reference, int) and not isinstance(saved, int)):
            raise ValueError(f"{key}: expected {type(reference).__name__}, got {saved!r}"[:200])
        if isinstance(saved, float) and not math.isfinite(saved):
            raise ValueError(f"{key}: expected a finite number, got {saved!r}")
        return
    if isinstance(reference, str) and not isinstance(saved, str):
        raise ValueError(f"{key}: expected str, got {describe(saved)}")


def check_optimizer_state(saved: Any, optimizer: Any, key: str) -> None:
    """An optimizer ``state_dict`` that fits ``optimizer``: same groups, each parameter's state tensors
    shaped like the parameter and finite (torch checks only the group sizes, then fails at the first step)."""
    import torch

    if not isinstance(saved, dict):
        raise ValueError(f"{key}: expected a dict, got {describe(saved)}")
    groups, state = saved.get("param_groups"), saved.get("state")
    live_groups = optimizer.param_groups
    if not isinstance(groups, list) or len(groups) != len(live_groups):
        raise ValueError(f"{key}.param_groups: expected a list of {len(live_groups)} group(s), got {describe(groups)}")
    if not isinstance(state, dict):
        raise ValueError(f"{key}.state: expected a dict, got {describe(state)}")
    shapes: dict[Any, torch.Size] = {}
    for i, (group, live) in enumerate(zip(groups, live_groups)):
        ids = group.get("params") if isinstance(group, dict) else None
        if not isinstance(ids, list) or len(ids) != len(live["params"]):
            raise ValueError(f"{key}.param_groups[{i}].params: expected {len(live['params'])} parameter id(s), "
                             f"got {describe(ids) if not isinstance(ids, list) else len(ids)}")
        for name, value in group.items():
            if name != "params" and isinstance(value, float) and not math.isfinite(value):
                raise ValueError(f"{key}.param_groups[{i}].{name}: expected a finite number, got {value!r}")
        shapes.update(zip(ids, (p.shape for p in live["params"])))
    for pid, entry in state.items():
        if pid not in shapes:
            raise ValueError(f"{key}.state: entry for unknown parameter id {pid!r}")
        if not isinstance(entry, dict):
            raise ValueError(f"{key}.state[{pid}]: expected a dict, got {describe(entry)}")
        for name, value in entry.items():
            if not isinstance(value, torch.Tensor):
                if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
                    continue
                raise ValueError(f"{key}.state[{pid}].{name}: expected a tensor, got {describe(value)}")
            if value.dim() > 0 and value.shape != shapes[pid]:
                raise ValueError(f"{key}.state[{pid}].{name}: expected shape {list(shapes[pid])}, got "
                                 f"{list(value.shape)}")
            if value.is_floating_point() and not bool(torch.isfinite(value).all()):
                raise ValueError(f"{key}.state[{pid}].{name}: holds NaN or infinite values")
