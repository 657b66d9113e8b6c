"""Fixtures for tournament tests (the agents live in tourney_helpers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from arena.agents import Registry
from tourney_helpers import Faulty, league_file, make_registry


@pytest.fixture()
def registry() -> Registry[type]:
    Faulty.armed = True
    return make_registry()


@pytest.fixture()
def write_league(tmp_path: Path):
    """Write a league YAML into tmp_path with fast defaults; returns its path."""

    def write(participants: list[Any], name: str = "league.yaml", **settings: Any) -> Path:
        return league_file(tmp_path, participants, name, **settings)

    return write
