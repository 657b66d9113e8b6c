"""A schedule cut into batches, and the seeds their games start from.

:func:`plan_batches` cuts a league's schedule (its :class:`~arena.tournament.schedule.Unit` pairings)
into batches of at most ``max_envs`` env slots, each pairing with slots in proportion to its games,
in blocks of participants so that a batch meets as few of them as it can (every participant present
acts once a step). :func:`batch_seed` seeds a batch's envs, :class:`GameSeeds` each game's start.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from arena.seeds import text_seed
from arena.tournament.schedule import Unit

GAMES_PER_SLOT = 4  # games a slot plays back to back in one batch; bounds what one forfeit can cost


@dataclass(frozen=True)
class Batch:
    """Games played together in one env: ``slots[i]`` env slots serve ``units[i]``."""

    units: tuple[Unit, ...]
    slots: tuple[int, ...]

    @property
    def num_envs(self) -> int:
        return sum(self.slots)

    @property
    def games(self) -> int:
        return sum(len(u.games) for u in self.units)


def plan_batches(units: Sequence[Unit], max_envs: int, games_per_slot: int = GAMES_PER_SLOT) -> list[Batch]:
    """Cut the schedule into batches of at most ``max_envs`` slots and ``max_envs·games_per_slot`` games.

    Slots go to pairings in proportion to their games (at least one each), so every pairing of a batch
    finishes at about the same time and few slots idle at the end.
    """
    if max_envs < 1:
        raise ValueError(f"max_envs must be >= 1, got {max_envs}")
    cap = max_envs * max(1, games_per_slot)
    units = tiled(units, cap)
    batches: list[Batch] = []
    current: list[Unit] = []
    count = 0

    def close() -> None:
        nonlocal current, count
        if current:
            batches.append(Batch(tuple(current), tuple(allocate([len(u.games) for u in current],
                                                                 min(max_envs, count)))))
        current, count = [], 0

    for unit in units:
        games = list(unit.games)
        while games:
            if len(current) == max_envs or count == cap:
                close()
            take = min(len(games), cap - count)
            current.append(Unit(unit.p1, unit.p2, games[:take]))
            games = games[take:]
            count += take
    close()
    return batches


def tiled(units: Sequence[Unit], games_per_batch: int) -> list[Unit]:
    """``units`` in blocks of participants, so that a batch meets as few participants as it can.

    Every participant in a batch acts once per step on all its battles there, so a step costs a call
    per participant present. In list order, a league's first batch would hold participant 0 against
    everyone; in b × b blocks of pairings (b about the square root of the pairings a batch holds) it
    holds at most 2b participants. Both sides of a pairing stay next to each other.
    """
    if not units:
        return list(units)
    per_unit = max(1.0, sum(len(u.games) for u in units) / len(units))
    pairings_per_batch = max(1.0, games_per_batch / per_unit / 2.0)
    side = max(1, int(math.sqrt(pairings_per_batch)))

    def block(u: Unit) -> tuple[int, int, int, int, bool]:
        lo, hi = min(u.p1, u.p2), max(u.p1, u.p2)
        return lo // side, hi // side, lo, hi, u.p1 != lo

    return sorted(units, key=block)


def allocate(games: Sequence[int], slots: int) -> list[int]:
    """Split ``slots`` among units with ``games[i]`` games: one each, the rest by largest remainder."""
    n = len(games)
    if n > slots:
        raise ValueError(f"{n} pairings cannot share {slots} slots")
    out = [1] * n
    spare = slots - n
    weights = [g - 1 for g in games]
    total = sum(weights)
    if spare <= 0 or total <= 0:
        return out
    spare = min(spare, total)
    quotas = [spare * w / total for w in weights]
    floors = [int(q) for q in quotas]
    left = spare - sum(floors)
    order = sorted(range(n), key=lambda i: (-(quotas[i] - floors[i]), i))
    for i in order[:left]:
        floors[i] += 1
    return [o + f for o, f in zip(out, floors)]


def batch_seed(seed: int, number: int) -> int:
    """The env seed of batch ``number``: distinct per batch, stable for the same (seed, number)."""
    return text_seed(f"arena-tournament:{seed}:{number}")


class GameSeeds:
    """The start of game g of a pairing, from (league seed, the pairing's two keys, g) alone.

    Both orders of a pairing share it: game g of (a, b) and game g of (b, a) start from the same
    positions with the sides swapped (paired openings, as chess engine testers play them), so the
    side a participant is dealt cancels out of its score. A game can be replayed alone, and a league
    played in another batch layout or on other machines starts every game the same way.
    """

    def __init__(self, league_seed: int, keys: Sequence[str]) -> None:
        self.league_seed, self.keys = league_seed, list(keys)

    def __call__(self, p1: int, p2: int, game: int) -> int:
        lo, hi = sorted((self.keys[p1], self.keys[p2]))
        return text_seed(f"arena-game:{self.league_seed}:{lo}:{hi}:{game}")
