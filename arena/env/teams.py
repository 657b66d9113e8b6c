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


def side_slice(team_size: int, side: int) -> slice:
    """The columns of ``side``'s aircraft in an [N, 2T] tensor."""
    return slice(side * team_size, (side + 1) * team_size)


def side_view(v: torch.Tensor, team_size: int, side: int) -> torch.Tensor:
    """A side's columns of an [N, 2T] tensor: [N, T], or [N] in a duel (the 1-v-1 interface)."""
    cols = v[:, side_slice(team_size, side)]
    return cols.squeeze(-1) if team_size == 1 else cols


def relative(v: torch.Tensor, team_size: int, side: int, other: int) -> torch.Tensor:
    """[N, T, T]: ``other`` side's value minus each of ``side``'s own (own seat, other seat)."""
    return v[:, side_slice(team_size, other)].unsqueeze(1) - v[:, side_slice(team_size, side)].unsqueeze(2)


def nearest(dist: torch.Tensor, alive: torch.Tensor) -> torch.Tensor:
    """Position in the last axis of ``dist`` of the nearest live one, else the nearest (``alive`` broadcasts)."""
    live = torch.where(alive, dist, torch.full_like(dist, float("inf")))
    any_live = alive.any(-1, keepdim=True)
    return torch.where(any_live, live, dist).argmin(-1)


def side_total(v: torch.Tensor) -> torch.Tensor:
    """A side's total over its seats: [N] from [N] (duel) or [N, T] (team battle)."""
    return v if v.dim() == 1 else v.sum(-1)


def flatten_seats(obs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """A side's observation with one row per aircraft: [N, T] entries become [N·T] (a duel's [N] stay)."""
    return {k: v.reshape(-1) for k, v in obs.items()}


def seat_rows(value: torch.Tensor, seats: int) -> torch.Tensor:
    """A per-env [N, ...] tensor repeated for each of a side's seats: [N·T, ...], the rows of
    :func:`flatten_seats` (as it is in a duel)."""
    return value if seats == 1 else value.repeat_interleave(seats, 0)
