"""Who is whose enemy: index tables and pairwise geometry over the aircraft axis.

Aircraft ``0..T-1`` are p1's seats, ``T..2T-1`` p2's. Everything here is a gather with a small
constant index table, so the env never loops over aircraft in Python.
"""

from __future__ import annotations

import torch


def side_index(team_size: int, side: int, device: torch.device) -> torch.Tensor:
    """[T] aircraft indices of ``side`` (0 = p1, 1 = p2), seat order."""
    return torch.arange(team_size, device=device) + side * team_size


def enemy_index(team_size: int, device: torch.device) -> torch.Tensor:
    """[A, T] for each aircraft, the aircraft of the other side in seat order."""
    t = team_size
    seats = torch.arange(t, device=device)
    return torch.cat((seats.expand(t, t) + t, seats.expand(t, t)), 0)


def ally_index(team_size: int, device: torch.device) -> torch.Tensor:
    """[A, T-1] for each aircraft, the other aircraft of its own side in seat order."""
    t = team_size
    a = torch.arange(2 * t, device=device)
    own = (a // t * t).unsqueeze(-1) + torch.arange(t, device=device)  # [A, T] own side, self included
    keep = own != a.unsqueeze(-1)
    return own[keep].view(2 * t, t - 1)


def shooter_table(team_size: int, device: torch.device) -> torch.Tensor:
    """[T, A]: the shooter of slot block ``seat`` (slots ``seat·M .. seat·M + M-1``) in target column ``a``.

    Missiles chasing an aircraft of one side are fired by the other side; the slot block is the
    shooter's seat there.
    """
    t = team_size
    return enemy_index(t, device).t()


def offsets(x: torch.Tensor, y: torch.Tensor, index: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """[N, A, K] position of ``index``'s aircraft ([A, K]) relative to each aircraft."""
    return x[:, index] - x.unsqueeze(-1), y[:, index] - y.unsqueeze(-1)


def nearest(dist: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """[N, A] position (in the last axis of ``dist``, [N, A, K]) of the nearest live one, else the nearest."""
    live = torch.where(alive, dist, torch.full_like(dist, float("inf")))
    any_live = alive.any(-1, keepdim=True)
    return torch.where(any_live, live, dist).argmin(-1)
