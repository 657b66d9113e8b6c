"""A results database that says what arena never writes is refused, not read as if it did not (reliability
issue, item 6): each value a reader interprets that no game can have is named — table, row, column, value,
what was expected — before anything is read or written. And a league resumed after its seed changed says
that its stored games started from other positions, as a change of its rating settings is said."""

from __future__ import annotations

import hashlib
import shutil
import sqlite3
from contextlib import closing
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from arena.cli import main
from arena.tournament import StoreError, load_config, rebuild_report, run_tournament
from arena.tournament.report import render
from cli_checks import refused
from tourney_helpers import LEAGUE, league_file, make_registry


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def played_once(tmp_path_factory) -> Path:
    """A league of three played once for the module (12 games, ids 1-12; participants 1-3): its folder."""
    folder = tmp_path_factory.mktemp("played")
    run_tournament(load_config(league_file(folder, LEAGUE)), registry=make_registry(), progress=False, notify=False)
    return folder


@pytest.fixture()
def played(played_once, tmp_path):
    """A copy of that league, to tamper with: its config."""
    shutil.copytree(played_once, tmp_path, dirs_exist_ok=True)
    return load_config(tmp_path / "league.yaml")


def tamper(config, *statements: str) -> Path:
    db = config.output / "results.sqlite"
    with closing(sqlite3.connect(db)) as conn, conn:
        conn.execute("PRAGMA foreign_keys = OFF")
        for statement in statements:
            conn.execute(statement)
    return db


FORFEIT = "UPDATE games SET forfeit_by = p1, forfeit_reason = 'x', winner = 2 WHERE id = 4"

LIES = [  # (what a hand edit or another tool left, what the refusal says)
    (["UPDATE games SET winner = 5 WHERE id = 3"],
     "games, game id 3: winner is 5, expected 0 (a draw), 1 or 2 (the side that won)"),
    (["UPDATE games SET winner = 'p1' WHERE id = 3"], "games, game id 3: winner is 'p1', expected 0 (a draw), 1 or 2"),
    (["UPDATE games SET winner = 1.5 WHERE id = 3"], "games, game id 3: winner is 1.5, expected 0 (a draw), 1 or 2"),
    (["UPDATE games SET p2 = p1 WHERE id = 3"],
     "games, game id 3: p2 is 1, expected the id of a stored participant other than p1's"),
    (["UPDATE games SET p1 = 99 WHERE id = 3"], "games, game id 3: p1 is 99, expected the id of a stored participant"),
    (["UPDATE games SET game_index = -1 WHERE id = 3"],
     "games, game id 3: game_index is -1, expected a game number >= 0"),
    (["UPDATE games SET length = -40 WHERE id = 3"],
     "games, game id 3: length is -40, expected a number of steps >= 0"),
    (["UPDATE games SET team_size = 0 WHERE id = 3"],
     "games, game id 3: team_size is 0, expected aircraft a side, >= 1"),
    (["UPDATE games SET batch_id = 77 WHERE id = 3"], "games, game id 3: batch_id is 77, expected NULL or a stored"),
    (["UPDATE games SET slot = -2 WHERE id = 3"], "games, game id 3: slot is -2, expected NULL or an env slot >= 0"),
    (["UPDATE games SET forfeit_by = 3, forfeit_reason = 'x' WHERE id = 1"],  # game 1 is between 1 and 2
     "games, game id 1: forfeit_by is 3, expected NULL or the participant of the game that forfeited it"),
    ([FORFEIT, "UPDATE games SET winner = 1 WHERE id = 4"],
     "games, game id 4: winner is 1, expected the side that did not forfeit (a forfeit is a loss for forfeit_by)"),
    (["UPDATE sides SET side = 3 WHERE game_id = 2 AND side = 2"],
     "sides, game id 2 side 3: side is 3, expected 1 or 2"),
    (["UPDATE sides SET participant = 3 WHERE game_id = 2 AND side = 1"],
     "sides, game id 2 side 1: participant is 3, expected the participant that flew this side in games"),
    (["UPDATE sides SET score = 0.75 WHERE game_id = 2 AND side = 1"],
     "sides, game id 2 side 1: score is 0.75, expected the side's points by the game's winner"),
    (["UPDATE sides SET missiles = -1 WHERE game_id = 2 AND side = 1"],
     "sides, game id 2 side 1: missiles is -1, expected NULL or a count >= 0"),
    (["UPDATE sides SET kills = -1.0 WHERE game_id = 2 AND side = 1"],
     "sides, game id 2 side 1: kills is -1.0, expected NULL or a count >= 0"),
    (["UPDATE sides SET game_id = 999 WHERE game_id = 2 AND side = 1"],
     "sides, game id 999 side 1: game_id is 999, expected the id of a stored game"),
    (["UPDATE participants SET name = '  ' WHERE id = 2"],
     "participants, participant id 2: name is '  ', expected a name (text that is not blank)"),
    (["UPDATE participants SET name = X'00FF' WHERE id = 2"],
     "participants, participant id 2: name is X'00FF', expected a name"),
    (["UPDATE participants SET params = '[1, 2]' WHERE id = 2"],
     "participants, participant id 2: params is '[1, 2]', expected the agent's parameters as a JSON object"),
    (["UPDATE run_participants SET participant_id = 42 WHERE position = 1"],
     "run_participants, run 1 position 1: participant_id is 42, expected the id of a stored participant"),
    (["UPDATE batches SET num_envs = 0"], "batches, batch id 1: num_envs is 0, expected a number of env slots >= 1"),
    (["UPDATE runs SET games_played = -12"], "runs, run id 1: games_played is -12, expected a count of games >= 0"),
]


@pytest.mark.parametrize("statements, said", LIES, ids=[said.split(":")[1].split(" is ")[0].strip() + "-" + str(i)
                                                       for i, (_, said) in enumerate(LIES)])
def test_leaderboard_refuses_a_value_no_game_can_have_naming_its_row(played, statements, said) -> None:
    db = tamper(played, *statements)
    before = sha(db)
    line = refused(CliRunner().invoke(main, ["leaderboard", str(played.output)])).strip()
    assert line.startswith(f"Error: {db}: holds a value arena never writes ({said}") and "\n" not in line, line
    assert line.endswith("arena has not changed it: restore it from a copy, or move it away or use another output "
                         "directory")
    assert sha(db) == before


def test_a_tournament_refuses_to_resume_into_such_a_store_before_writing(played, registry) -> None:
    db = tamper(played, "UPDATE games SET winner = 5 WHERE id IN (3, 5, 9)")
    before = sha(db)
    with pytest.raises(StoreError) as err:
        run_tournament(played, registry=registry, progress=False, notify=False)
    assert str(err.value) == (f"{db}: holds a value arena never writes (games, game id 3: winner is 5, expected 0 (a "
                              f"draw), 1 or 2 (the side that won); 2 more row(s) of games hold such values), so its "
                              f"games cannot be read as they are; arena has not changed it: restore it from a copy, "
                              f"or move it away or use another output directory")
    assert sha(db) == before


def test_a_store_arena_wrote_has_no_such_value(played, registry) -> None:
    """Forfeits, NULL returns of schema 1 and the games of a second run are all values arena writes."""
    tamper(played, FORFEIT, "UPDATE sides SET score = 0.0 WHERE game_id = 4 AND side = 1",
           "UPDATE sides SET score = 1.0 WHERE game_id = 4 AND side = 2",
           "UPDATE sides SET return = NULL, missiles = NULL, kills = NULL WHERE game_id = 5")
    report = rebuild_report(played.output, write=False)
    assert report.games == 12


# -- a changed seed --------------------------------------------------------------------------------


def edit_league(config, **changes) -> None:
    data = yaml.safe_load(config.file.read_text())
    data.update(changes)
    config.file.write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_league_resumed_after_its_seed_changed_says_its_stored_games_started_elsewhere(played, registry) -> None:
    edit_league(played, seed=4, games_per_pairing=8)  # 4 more games a pairing, played under seed 4
    report = run_tournament(load_config(played.file), registry=registry, progress=False, notify=False)
    said = ("the league's seed changed since some of its games were played (seed 3 -> 4: 12 of its 24 games were "
            "played under seed 3, by run 1); those games started from other positions than this seed gives, yet are "
            "rated as this league's; use --fresh (or another output) to play every game under this seed")
    assert [str(w) for w in report.warnings if w.kind == "seed_changed"] == [said]
    assert f"warning: {said}" in render(report, "table")
    assert f"> **Warning:** {said}" in (played.output / "report.md").read_text()
    result = CliRunner().invoke(main, ["leaderboard", str(played.output)])  # the report rebuilt says it too
    assert result.exit_code == 0 and f"warning: {said}" in result.output


def test_a_league_resumed_under_its_own_seed_says_nothing_of_seeds(played, registry) -> None:
    edit_league(played, games_per_pairing=8)
    report = run_tournament(load_config(played.file), registry=registry, progress=False, notify=False)
    assert report.games == 24 and not [w for w in report.warnings if w.kind == "seed_changed"]
