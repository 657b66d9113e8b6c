"""A league file as it plays: read and checked as written (:mod:`arena.tournament.league_config`), then
its participants expanded (:func:`arena.tournament.participants.expand_league`): the two steps every
caller of a league file wants, in one call."""

from __future__ import annotations

import os
from typing import Any

from arena.tournament.league_config import TournamentConfig, parse_league, read_league
from arena.tournament.participants import expand_league


def load_config(path: str | os.PathLike[str]) -> TournamentConfig:
    """Read, validate and expand a tournament file; raises :class:`~arena.tournament.ConfigError`."""
    return expand_league(read_league(path))


def parse_config(data: Any, file: str | os.PathLike[str] | None = None) -> TournamentConfig:
    """Validate and expand already-parsed YAML data; ``file`` anchors relative paths (the cwd when None)."""
    return expand_league(parse_league(data, file))
