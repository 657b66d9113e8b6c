"""Who plays whom, from which side, and how many games.

A *pairing* is an unordered pair of participants. It is played from both sides: a :class:`Unit` is one
ordered pair (who is p1, who is p2) with its half of the games, numbered ``0 .. games_per_pairing/2 - 1``.
Those numbers are the games' identity in the results database, which is what lets an interrupted
tournament play only the games it is missing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Pairing:
    a: int  # participant positions, a < b
    b: int


@dataclass
class Unit:
    """Games of one ordered pairing still to be played: ``p1`` plays the p1 side in all of them."""

    p1: int
    p2: int
    games: list[int] = field(default_factory=list)  # game indices within this ordered pairing


def pairings(num_participants: int, fmt: str = "round-robin", candidates: Sequence[int] = (),
             references: Sequence[int] = ()) -> list[Pairing]:
    """Round-robin: every pair once. Gauntlet: every candidate against every non-candidate (candidates
    do not meet each other, as in fastchess's gauntlet, so each game says something about a candidate
    against the reference field), and the ``references`` against each other: their games fix the
    scale the candidates are rated on. The pairs of :func:`scheduled_pairs`, each once, in order."""
    import numpy as np

    played = np.triu(scheduled_pairs(num_participants, fmt, candidates, references), 1)
    return [Pairing(int(a), int(b)) for a, b in zip(*np.nonzero(played))]


def scheduled_pairs(num_participants: int, fmt: str = "round-robin", candidates: Sequence[int] = (),
                    references: Sequence[int] = ()) -> "np.ndarray":
    """[P, P] booleans: whether the ordered pair (p1, p2) is played, for both sides of every pairing of
    :func:`pairings`. The report's filter and count of a league of hundreds: a quarter of a million
    :class:`Unit` objects would take a second to build."""
    import numpy as np

    n = num_participants
    if fmt == "round-robin":
        return ~np.eye(n, dtype=bool)
    if fmt == "gauntlet":
        if not len(candidates):
            raise ValueError("a gauntlet needs at least one candidate")
        cand, ref = np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        cand[list(candidates)], ref[list(references)] = True, True
        return ((cand[:, None] != cand[None, :]) | (ref[:, None] & ref[None, :])) & ~np.eye(n, dtype=bool)
    raise ValueError(f"unknown format {fmt!r}; expected round-robin or gauntlet")


def games_per_side(games_per_pairing: int) -> int:
    """Games each ordered pair plays: half the pairing's; ``ValueError`` unless that is even and >= 2."""
    if games_per_pairing < 2 or games_per_pairing % 2:
        raise ValueError(f"games_per_pairing must be even and >= 2, got {games_per_pairing}")
    return games_per_pairing // 2


def units(pairs: Sequence[Pairing], games_per_pairing: int) -> list[Unit]:
    """Both sides of every pairing, half the games each. Sides alternate in the list so that a batch cut
    from its front holds both sides of the pairings it covers."""
    half = games_per_side(games_per_pairing)
    out: list[Unit] = []
    for p in pairs:
        out.append(Unit(p.a, p.b, list(range(half))))
        out.append(Unit(p.b, p.a, list(range(half))))
    return out


def missing(all_units: Sequence[Unit], stored: Mapping[tuple[int, int], set[int]]) -> list[Unit]:
    """The games of ``all_units`` not yet in ``stored`` (``{(p1, p2): {game indices}}``); units with
    nothing left are dropped."""
    out = []
    for u in all_units:
        done = stored.get((u.p1, u.p2), set())
        left = [g for g in u.games if g not in done]
        if left:
            out.append(Unit(u.p1, u.p2, left))
    return out


def total_games(all_units: Sequence[Unit]) -> int:
    return sum(len(u.games) for u in all_units)
