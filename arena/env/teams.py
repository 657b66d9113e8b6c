"""Who is whose enemy, as views over the aircraft axis.

Aircraft ``0..T-1`` are p1's seats and ``T..2T-1`` p2's, so ``[N, 2T]`` views as ``[N, 2, T]`` (side,
seat) and the other side is a roll over the side axis. Everything here is a view, a roll or a
broadcast: no index tables, which on the CPU cost a copy per use, and no loop over aircraft.
"""

from __future__ import annotations

import torch


def by_side(v: torch.Tensor, team_size: int) -> torch.Tensor:
    """[N, 2, T] view of an [N, 2T] per-aircraft tensor."""
    return v.view(v.shape[0], 2, team_size)


def enemies_of(v: torch.Tensor, team_size: int) -> torch.Tensor:
    """[N, 2, T]: for each side, the other side's values (seat order)."""
    return by_side(v, team_size).roll(1, 1)


def pairwise(v: torch.Tensor, team_size: int) -> torch.Tensor:
    """[N, 2, T, T]: enemy seat's value minus own seat's (side, own seat, enemy seat)."""
    own = by_side(v, team_size)
    return own.roll(1, 1).unsqueeze(2) - own.unsqueeze(3)


def nearest(dist: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """Position in the last axis of ``dist`` of the nearest live one, else the nearest (``alive`` broadcasts)."""
    live = torch.where(alive, dist, torch.full_like(dist, float("inf")))
    any_live = alive.any(-1, keepdim=True)
    return torch.where(any_live, live, dist).argmin(-1)
