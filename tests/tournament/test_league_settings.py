"""The league file's scalar keys and its rating and sprt sections are declared once each with setting()
and read by one loop: a new key cannot skip its check, each refuses a value outside its declaration by
name, and the docs table is the one the declarations give."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any

import pytest

from arena.declared_settings import base_kind, choices_of, declared, undeclared
from arena.tournament import ConfigError, RatingConfig, TournamentConfig, parse_config
from arena.tournament.league_config import TOP_KEYS, settings_table
from arena.tournament.sprt import SPRTConfig
from tourney_helpers import FAST_ENV, LEAGUE

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tournaments.md"
# The keys that are not single values: each has code of its own.
NOT_SCALAR = {"participants", "candidates", "references", "env", "rating", "sprt"}
SETTINGS = declared(TournamentConfig) + declared(RatingConfig, "rating") + declared(SPRTConfig, "sprt")


def test_every_scalar_key_is_declared_with_setting():
    assert set(TOP_KEYS) == {f.name for f in fields(TournamentConfig)} - {"file", "warnings"}
    assert {s.name for s in declared(TournamentConfig)} == set(TOP_KEYS) - NOT_SCALAR
    assert set(undeclared(TournamentConfig)) == NOT_SCALAR | {"file", "warnings"}
    assert undeclared(RatingConfig) == [] and undeclared(SPRTConfig) == []
    assert all(s.spec.help for s in SETTINGS)


def outside(s) -> list[Any]:
    """Values just outside what ``s`` declares: its range, choices, length or blankness."""
    kind, spec = base_kind(s.kind)[0], s.spec
    if kind is str:
        values: list[Any] = ["no-such-choice"] if choices_of(s) else []
        if spec.max_length is not None:
            values.append("x" * (spec.max_length + 1))
        if not spec.blank:
            values.append("  ")
        return values
    step = (lambda x: 1) if kind is int else (lambda x: abs(x) * 0.5 or 1.0)
    values = []
    if spec.low is not None:
        values.append(spec.low if spec.low_open else spec.low - step(spec.low))
    if spec.high is not None:
        values.append(spec.high if spec.high_open else spec.high + step(spec.high))
    return values


def league(setting, value) -> dict[str, Any]:
    data: dict[str, Any] = {"name": "test", "output": "out", "device": "cpu", "games_per_pairing": 4,
                            "env": dict(FAST_ENV), "participants": list(LEAGUE)}
    if setting.section:
        data[setting.section] = {setting.name: value}
    else:
        data[setting.name] = value
    return data


@pytest.mark.parametrize("setting", SETTINGS, ids=[s.key for s in SETTINGS])
def test_a_value_outside_a_keys_declaration_is_refused_naming_the_key(tmp_path, setting):
    values = [*outside(setting), [1]]  # [1]: the wrong type for any of them
    assert len(values) >= 2 or setting.name in ("device", "anchor"), "each bounded key has something outside"
    for value in values:
        with pytest.raises(ConfigError) as info:
            parse_config(league(setting, value), tmp_path / "league.yaml")
        message = str(info.value)
        assert info.value.key == setting.key, (value, message)
        assert message.startswith(f"{tmp_path / 'league.yaml'}: {setting.key}: expected "), message
        assert "\n" not in message


def test_values_at_the_edges_of_the_declarations_are_accepted(tmp_path):
    edges = {"seed": 2**62 - 1, "max_envs": 1, "games_per_pairing": 2, "time_per_move": 3600,
             "replays": 16, "name": "x" * 200,
             "rating": {"mu": -1e6, "beta": 1e6, "tau": 0, "draw_probability": 0.99, "bootstrap_rounds": 0,
                        "anchor_elo": 1e6},
             "format": "gauntlet", "candidates": ["near"], "sprt": {"elo0": -2000, "elo1": 2000, "alpha": 0.49}}
    data = {"output": "out", "device": "cpu", "env": dict(FAST_ENV), "participants": list(LEAGUE), **edges}
    config = parse_config(data, tmp_path / "league.yaml")
    assert config.seed == 2**62 - 1 and config.time_per_move == 3600.0 and isinstance(config.time_per_move, float)
    assert config.rating.tau == 0.0 and config.sprt is not None and config.sprt.elo1 == 2000.0


def test_defaults_come_from_the_declarations(tmp_path):
    config = parse_config({"participants": list(LEAGUE)}, tmp_path / "mine.yaml")
    assert config.name == "mine" and config.output == (tmp_path / "reports" / "mine").resolve()
    for s in declared(TournamentConfig):
        if s.name not in ("name", "output"):
            assert getattr(config, s.name) == s.default, s.name
    assert config.rating == RatingConfig()
    stored = config.to_dict()
    assert {s.name for s in declared(TournamentConfig)} <= set(stored) and stored["output"] == str(config.output)


def test_a_stored_rating_section_is_read_by_the_same_declarations():
    assert RatingConfig.from_dict({"mu": 30}) == RatingConfig(mu=30.0)
    with pytest.raises(ConfigError, match=r"^db: runs\[2\]\.rating\.beta: expected a number in \[0.001, 1e\+06\]"):
        RatingConfig.from_dict({"beta": 0}, "db", "runs[2].rating")


def test_the_docs_table_is_the_one_the_declarations_give():
    text = DOCS.read_text()
    begin = ("<!-- league settings table: python -c \"from arena.tournament.league_config import settings_table; "
             "print(settings_table(), end='')\" -->\n")
    end = "<!-- end of the league settings table -->"
    assert begin in text and end in text, "docs/tournaments.md lost its league settings table markers"
    assert text.split(begin, 1)[1].split(end, 1)[0] == settings_table(), \
        "docs/tournaments.md's league settings table is stale: paste the command's output between the markers"
