"""Checking and cleaning the actions agents hand to the env.

Structural mistakes (wrong keys, shape, dtype, device) are programming errors and raise at once with
the key named. Bad values are data: out-of-range numbers are clamped and NaNs are neutralised and
counted, so one diverging agent cannot poison a batch of thousands of battles.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import torch

ACTION_KEYS: tuple[str, ...] = ("rudder", "throttle", "fire")


@dataclass
class CleanAction:
    rudder: torch.Tensor  # [N] (duel) or [N, T] in [-1, 1]
    throttle: torch.Tensor  # same shape, in [0, 1]
    fire: torch.Tensor  # same shape, bool
    nan_count: torch.Tensor  # same shape, int32: NaN entries replaced in this action


def check_action(action: object, num_envs: int, device: torch.device, who: str = "action",
                 team_size: int = 1) -> CleanAction:
    """Validate ``action`` and return it clamped, with NaNs replaced (rudder 0, throttle 0, no fire).

    Each entry is [N] in a duel and [N, T] (one column per seat) in a team battle.
    """
    return clean_action(validate_action(action, num_envs, device, who, team_size))


def validate_action(action: object, num_envs: int, device: torch.device, who: str = "action",
                    team_size: int = 1) -> Mapping[str, torch.Tensor]:
    """``action`` itself once its keys, types, shapes, dtypes and device are right; else ValueError naming
    the key. Reads no values, so it costs nothing on a GPU and stays outside a compiled step."""
    shape = (num_envs,) if team_size == 1 else (num_envs, team_size)
    shown = list(shape)
    if not isinstance(action, Mapping):
        raise ValueError(f"{who}: expected a dict with keys {list(ACTION_KEYS)}, got {type(action).__name__}")
    missing = [k for k in ACTION_KEYS if k not in action]
    extra = sorted(str(k) for k in action if k not in ACTION_KEYS)
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing key(s) {missing}")
        if extra:
            parts.append(f"unexpected key(s) {extra}")
        raise ValueError(f"{who}: {'; '.join(parts)}; expected exactly {list(ACTION_KEYS)}")
    for key in ACTION_KEYS:
        value = action[key]
        if not isinstance(value, torch.Tensor):
            raise ValueError(f"{who}['{key}']: expected a torch.Tensor of shape {shown}, got {type(value).__name__}")
        if tuple(value.shape) != shape:
            raise ValueError(f"{who}['{key}']: expected shape {shown}, got {list(value.shape)}")
        if value.device != device:
            raise ValueError(f"{who}['{key}']: expected device {device}, got {value.device}")
        ok = value.is_floating_point() or (key == "fire" and value.dtype == torch.bool)
        if not ok:
            want = "bool or floating point" if key == "fire" else "floating point"
            raise ValueError(f"{who}['{key}']: expected dtype {want}, got {value.dtype}")
    return action


def clean_action(action: Mapping[str, torch.Tensor]) -> CleanAction:
    """A validated action clamped to its range, NaNs replaced and counted."""
    rudder, throttle, fire = (action[k] for k in ACTION_KEYS)
    nan_r, nan_t = torch.isnan(rudder), torch.isnan(throttle)
    nan_count = nan_r.int() + nan_t.int()
    rudder = torch.nan_to_num(rudder.float(), nan=0.0).clamp(-1.0, 1.0)
    throttle = torch.nan_to_num(throttle.float(), nan=0.0).clamp(0.0, 1.0)
    if fire.dtype != torch.bool:
        nan_count = nan_count + torch.isnan(fire).int()
        fire = fire > 0.5  # NaN compares False: no fire
    return CleanAction(rudder, throttle, fire, nan_count)
