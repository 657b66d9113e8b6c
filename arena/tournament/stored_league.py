"""A league against its database: what the runner opened, and what its later steps (play, rate, replays) read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from arena.tournament.league_config import TournamentConfig
from arena.tournament.results import GameResult
from arena.tournament.schedule import Unit
from arena.tournament.sprt import SPRTState
from arena.tournament.store import ResultStore


def positions_of(ids: Sequence[int]) -> dict[int, int]:
    """Each participant's league position by its stored id (the games' store speaks in ids)."""
    return {pid: i for i, pid in enumerate(ids)}


@dataclass
class StoredLeague:
    """The league against its database: its file, this run's record, the participants' ids, the planned
    games and what is still to play, and what it started from."""

    config: TournamentConfig
    store: ResultStore
    run_id: int
    ids: list[int]
    planned: list[Unit]
    todo: list[Unit]
    known: list[GameResult]  # the stored games of its schedule, by position
    retried: int  # stored forfeits deleted to be played again
    sprt: SPRTState | None

    def positions(self) -> dict[int, int]:
        """Each participant's league position by its stored id."""
        return positions_of(self.ids)
