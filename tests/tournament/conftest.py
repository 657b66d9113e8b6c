"""Fixtures for tournament tests (the agents live in tourney_helpers.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from arena.agents import Registry
from tourney_helpers import FAST_ENV, Faulty, make_registry


@pytest.fixture()
def registry() -> Registry[type]:
    Faulty.armed = True
    return make_registry()


@pytest.fixture()
def write_league(tmp_path: Path):
    """Write a league YAML into tmp_path with fast defaults; returns its path."""

    def write(participants: list[Any], name: str = "league.yaml", **settings: Any) -> Path:
        data: dict[str, Any] = {"name": "test", "output": "out", "seed": 3, "device": "cpu", "max_envs": 64,
                                "games_per_pairing": 4, "env": dict(FAST_ENV), "rating": {"bootstrap_rounds": 50},
                                "participants": participants}
        data.update(settings)
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write
