"""Games as columns: who played whom, from which side, game number, winner, and who forfeited why.

That is all rating and the report read of a game. A league of 500 participants holds 250,000 games:
as :class:`GameResult` objects they take seconds to build from the database and to read back into
arrays (once per table, several times per report); as columns they take milliseconds, and the tables
(:func:`arena.tournament.ratings.pair_tables`, the leaderboard's counts) are numpy operations on them.
Every rating function takes either form; :func:`as_outcomes` turns a list of results into columns once.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Union

import numpy as np

from arena.tournament.results import DRAW, P1_WINS, GameResult

NO_FORFEIT = -1  # forfeit_by of a game played out


@dataclass(frozen=True)
class Outcomes:
    """``len(self)`` games; each array holds one entry per game, in the same order. Participants are
    whatever numbers the games were given (league positions when rated)."""

    p1: np.ndarray  # int64: the participant that flew side 1
    p2: np.ndarray  # int64: side 2
    game_index: np.ndarray  # int64: the game's number within its ordered pairing
    winner: np.ndarray  # int64: DRAW, P1_WINS or P2_WINS
    forfeit_by: np.ndarray  # int64: the participant that forfeited, NO_FORFEIT when none did
    forfeit_reason: np.ndarray  # object: the reason (str or None) of each forfeit, None for the rest

    def __len__(self) -> int:
        return len(self.p1)

    def select(self, keep: np.ndarray) -> "Outcomes":
        """The games where ``keep`` (a boolean mask or indices) says so, in their order."""
        return Outcomes(self.p1[keep], self.p2[keep], self.game_index[keep], self.winner[keep],
                        self.forfeit_by[keep], self.forfeit_reason[keep])

    def among(self, ids: Sequence[int]) -> "Outcomes":
        """The games between participants ``ids`` only, each participant numbered by its place in ``ids``."""
        places = np.asarray(list(ids), dtype=np.int64)
        top = max(int(self.p1.max(initial=0)), int(self.p2.max(initial=0)), int(places.max(initial=0)))
        number = np.full(top + 1, -1, dtype=np.int64)
        number[places] = np.arange(len(places))
        return self.select((number[self.p1] >= 0) & (number[self.p2] >= 0)).relabel(number)

    def relabel(self, number: np.ndarray) -> "Outcomes":
        """The same games with participant ``p`` numbered ``number[p]``."""
        forfeit = self.forfeit_by != NO_FORFEIT
        forfeit_by = self.forfeit_by.copy()
        forfeit_by[forfeit] = number[self.forfeit_by[forfeit]]
        return Outcomes(number[self.p1], number[self.p2], self.game_index, self.winner, forfeit_by,
                        self.forfeit_reason)

    def points_p1(self) -> np.ndarray:
        """Side 1's points in each game: a win 1, a draw ½, anything else 0 (as :meth:`GameResult.score`)."""
        return np.where(self.winner == P1_WINS, 1.0, np.where(self.winner == DRAW, 0.5, 0.0))


Games = Union[Sequence[GameResult], Outcomes]  # what the rating functions take


def empty() -> Outcomes:
    none = np.zeros(0, dtype=np.int64)
    return Outcomes(none, none, none, none, none, np.zeros(0, dtype=object))


def from_columns(p1: np.ndarray, p2: np.ndarray, game_index: np.ndarray, winner: np.ndarray,
                 forfeit_by: np.ndarray, reasons: Sequence[str | None]) -> Outcomes:
    """Games from integer columns; ``reasons`` are those of the forfeits alone (``forfeit_by`` other
    than :data:`NO_FORFEIT`), in their order."""
    reason = np.full(len(p1), None, dtype=object)
    forfeits = np.flatnonzero(forfeit_by != NO_FORFEIT)
    if len(forfeits) != len(reasons):
        raise ValueError(f"expected a reason for each of the {len(forfeits)} forfeits, got {len(reasons)}")
    reason[forfeits] = list(reasons)
    def ints(a: np.ndarray) -> np.ndarray:
        return np.asarray(a, dtype=np.int64)

    return Outcomes(ints(p1), ints(p2), ints(game_index), ints(winner), ints(forfeit_by), reason)


def as_outcomes(games: Games) -> Outcomes:
    """``games`` as columns (columns are returned as they are): one pass over the objects."""
    if isinstance(games, Outcomes):
        return games
    n = len(games)
    if not n:
        return empty()

    def column(field: str) -> np.ndarray:
        return np.fromiter((getattr(g, field) for g in games), dtype=np.int64, count=n)

    forfeit_by = np.fromiter((NO_FORFEIT if g.forfeit_by is None else g.forfeit_by for g in games),
                             dtype=np.int64, count=n)
    reason = np.empty(n, dtype=object)
    reason[:] = [g.forfeit_reason if g.forfeit_by is not None else None for g in games]
    return Outcomes(column("p1"), column("p2"), column("game_index"), column("winner"), forfeit_by, reason)
