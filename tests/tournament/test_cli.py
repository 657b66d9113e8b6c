from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

import arena
from arena.cli import main
from arena.plugins import PluginInfo, get_host
from arena.tournament import LEADERBOARD_COLUMNS
from cli_checks import refused
from tourney_helpers import LEAGUE, TEST_AGENTS, Faulty


class _TestPlugin:
    """Offers the test agents and records finished tournaments, like an installed plugin would."""

    def __init__(self) -> None:
        self.reports: list = []

    @arena.hookimpl
    def arena_agents(self) -> list[type]:
        return list(TEST_AGENTS)

    @arena.hookimpl
    def arena_tournament_finished(self, report) -> None:
        self.reports.append(report)


@pytest.fixture()
def plugin():
    Faulty.armed = True
    host = get_host()
    plug = _TestPlugin()
    info = PluginInfo("tests", "arena-tests", "0", "tests.tournament")
    host.register(plug, info)
    yield plug
    host.pm.unregister(plug)
    host.plugins.pop("arena-tests:tests", None)


def test_tournament_then_leaderboard(plugin, write_league, tmp_path) -> None:
    path = write_league(LEAGUE)
    runner = CliRunner()
    result = runner.invoke(main, ["tournament", str(path), "--json", "-q"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["games"] == data["expected_games"] == 12 and data["played"] == 12
    assert [row["rank"] for row in data["leaderboard"]] == [1, 2, 3]
    assert set(data["leaderboard"][0]) == set(LEADERBOARD_COLUMNS)
    assert len(plugin.reports) == 1 and plugin.reports[0].leaderboard.shape[0] == 3

    again = runner.invoke(main, ["tournament", str(path), "-q"])
    assert again.exit_code == 0 and "nothing left to play" in again.stdout

    out = tmp_path / "out"
    csv_file = tmp_path / "export" / "board.csv"
    board = runner.invoke(main, ["leaderboard", str(out), "--format", "csv", "--csv", str(csv_file)])
    assert board.exit_code == 0, board.output
    assert board.stdout.splitlines()[0] == ",".join(LEADERBOARD_COLUMNS)
    assert csv_file.read_text().splitlines()[0] == ",".join(LEADERBOARD_COLUMNS)
    for fmt, marker in (("table", "W-D-L"), ("markdown", "|---:|"), ("json", '"leaderboard"')):
        res = runner.invoke(main, ["leaderboard", str(path), "--format", fmt])
        assert res.exit_code == 0 and marker in res.stdout, res.output
    assert len(plugin.reports) == 2  # leaderboard does not notify; only played tournaments do


def test_user_errors_are_one_line_without_traceback(plugin, write_league, tmp_path) -> None:
    runner = CliRunner()
    bad = write_league(LEAGUE, games_per_pairing=3)
    res = runner.invoke(main, ["tournament", str(bad)])
    assert res.exit_code == 2
    assert res.stderr.strip().splitlines() == [f"Error: {bad}: games_per_pairing: expected an even integer in "
                                              f"[2, 100000] (half the games from each side), got 3"]
    res = runner.invoke(main, ["tournament", str(write_league(LEAGUE + ["nobody"]))])
    refused(res, "participants[3].agent: unknown agent 'nobody'")
    res = runner.invoke(main, ["tournament", str(write_league(LEAGUE)), "--device", "tpu"])
    assert res.exit_code == 2 and res.stderr.startswith("Error: --device: invalid device 'tpu'"), res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = runner.invoke(main, ["leaderboard", str(empty)])
    assert res.exit_code == 2 and "no results database" in res.stderr
    note = tmp_path / "notes.txt"
    note.write_text("not a tournament")
    res = runner.invoke(main, ["leaderboard", str(note)])
    assert res.exit_code == 2 and "expected a tournament's output directory" in res.stderr


def test_leaderboard_csv_that_cannot_be_written(plugin, write_league, tmp_path) -> None:
    path = write_league(LEAGUE)
    runner = CliRunner()
    assert runner.invoke(main, ["tournament", str(path), "-q"]).exit_code == 0
    res = runner.invoke(main, ["leaderboard", str(path), "--csv", str(path / "board.csv")])  # under a file
    refused(res, "cannot write")
    assert "cannot write" in res.stderr


def test_empty_glob_warns_and_plays(plugin, write_league) -> None:
    path = write_league(LEAGUE + [{"agent": "fromfile", "checkpoints": "runs/demo/ckpt_*.pt"}])
    res = CliRunner().invoke(main, ["tournament", str(path), "-q"])
    assert res.exit_code == 0, res.output
    assert "warning: participants[3].checkpoints: 'runs/demo/ckpt_*.pt' matches no file yet" in res.stderr


def test_cli_ray_without_ray_installed_says_how_to_get_it(write_league, monkeypatch) -> None:
    # Here rather than in test_ray.py: it runs without Ray, and no local Ray of other tests streams
    # its workers' logs (a killed worker's traceback) into this output.
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    result = CliRunner().invoke(main, ["tournament", str(write_league(["crank", "placeholder"])), "--ray", "-q"])
    refused(result, "--ray needs Ray, which is not installed: pip install 'agent-arena[ray]'")
