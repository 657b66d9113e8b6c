"""Notable games of a league, recorded after rating by playing their batches again: the recordings are
the stored games, the report links them, and a game that cannot be reproduced is said so, not shown."""

from __future__ import annotations

import json
from typing import Any, ClassVar

import pytest
import torch
from click.testing import CliRunner

from arena.cli import main
from arena.tournament import load_config, plan_batches, rebuild_report, run_tournament
from arena.tournament.replays import notable_games, read_index, rebuild_batch
from arena.tournament.results import GameResult
from arena.tournament.schedule import pairings, units
from arena.tournament.store import ResultStore, db_path
from tourney_helpers import LEAGUE, Pursuer

pyacmi = pytest.importorskip("pyacmi", reason="pyacmi (a test dependency) reads the ACMI files back")


def games(*rows: tuple[int, int, int, int, int]) -> list[GameResult]:
    """(p1, p2, game, winner, length) rows as results."""
    return [GameResult(p1, p2, g, w, n, 0.0, 0.0) for p1, p2, g, w, n in rows]


def test_notable_games_upsets_first_then_longest_then_shortest():
    elo = [1200.0, 1000.0, 800.0]
    names = ["a", "b", "c"]
    played = games((0, 1, 0, 1, 50), (1, 0, 0, 1, 70), (0, 1, 1, 2, 90), (1, 0, 1, 2, 30),  # b beat a twice
                   (0, 2, 0, 1, 40), (2, 0, 0, 2, 45))
    forfeit = GameResult(2, 0, 1, 1, 1, 0.0, 0.0, forfeit_by=0, forfeit_reason="boom")  # never a replay
    picks = notable_games(played + [forfeit], elo, names, per_pairing=3)
    ab = [(p.kind, p.game.p1, p.game.p2, p.game.game_index) for p in picks if {p.game.p1, p.game.p2} == {0, 1}]
    # the shorter of b's two wins over a comes first; then the longest game and the shortest
    assert ab == [("upset", 1, 0, 0), ("longest", 0, 1, 1), ("shortest", 1, 0, 1)]
    ac = [(p.kind, p.game.game_index, p.game.p1) for p in picks if {p.game.p1, p.game.p2} == {0, 2}]
    assert ac == [("longest", 0, 2), ("shortest", 0, 0)], "no upset (a won both), no forfeit, no repeats"
    assert "b (Elo 1000) beat a (Elo 1200)" in picks[0].reason
    assert len(notable_games(played, elo, names, per_pairing=1)) == 2


def test_a_batch_is_rebuilt_from_its_stored_games():
    for n, slots in ((3, 64), (4, 5)):
        schedule = units(pairings(n), 6)
        for batch in plan_batches(schedule, slots):
            rows = []
            starts = [sum(batch.slots[:i]) for i in range(len(batch.units))]
            for u, start, count in zip(batch.units, starts, batch.slots):
                for k, g in enumerate(u.games):  # every slot of a unit plays some of its games
                    rows.append((u.p1 + 10, u.p2 + 10, g, start + k % count, 1, 5, None))
            rebuilt = rebuild_batch(rows, {i + 10: i for i in range(n)}, batch.num_envs)
            assert rebuilt == batch
    assert "not in this league" in rebuild_batch([(1, 99, 0, 0, 1, 5, None)], {1: 0}, 1)


def check_recordings(out, expected: int, team_size: int = 1) -> list[Any]:
    entries = read_index(out)
    assert len(entries) == expected and all(e.html and not e.skipped for e in entries), entries
    store = ResultStore(db_path(out), create=False)
    try:
        stored = {(p1, p2, g): (w, n) for p1, p2, g, _, w, n, _ in
                  [row for b in range(1, store.batch_count() + 1) for row in store.batch_games(b)]}
        names = {r.id: r.name for r in store.participants(store.latest_run().participant_ids)}
    finally:
        store.close()
    by_name = {(names[p1], names[p2], g): v for (p1, p2, g), v in stored.items()}
    for e in entries:
        winner, length = by_name[e.p1, e.p2, e.game]
        acmi = pyacmi.Acmi()
        acmi.load_acmi(str(out / e.acmi))
        assert len(acmi.timeframes) == length + 1, "the recording lasts as long as the stored game"
        planes = [o for o in acmi.objects.values() if o.is_plane]
        assert len(planes) == 2 * team_size
        debrief = {"1": "Blue", "2": "Red", "0": "draw"}[str(winner)]
        assert debrief in (out / e.acmi).read_text().split("0,Debriefing=")[1].splitlines()[0]
        assert (out / e.html).exists()
    return entries


def test_league_replays_are_the_stored_games_and_the_report_links_them(write_league, registry):
    config = load_config(write_league(LEAGUE, games_per_pairing=8, replays=2))
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    out = config.output
    entries = check_recordings(out, expected=6)
    assert report.replays == entries
    md = (out / "report.md").read_text()
    assert "## Replays" in md and f"[html]({entries[0].html})" in md
    assert json.loads(json.dumps(report.to_json()))["replays"][0]["html"] == entries[0].html
    assert rebuild_report(out).replays == entries, "`arena leaderboard` keeps the replays section"


def test_a_resumed_team_league_replays_games_of_both_runs(write_league, registry):
    config = load_config(write_league(LEAGUE, games_per_pairing=8, max_envs=2, replays=1,
                                      env={"team_size": 2, "max_time": 60.0, "arena_size": 40000.0,
                                           "spawn_edge_min": 5000.0, "spawn_edge_max": 8000.0,
                                           "spawn_band": 10000.0}))
    run_tournament(config, registry=registry, progress=False, notify=False, max_batches=2)
    run_tournament(config, registry=registry, progress=False, notify=False)
    entries = check_recordings(config.output, expected=3, team_size=2)
    store = ResultStore(db_path(config.output), create=False)
    try:
        run_of = {}  # (p1, p2, game) by name -> the run that played and stored it
        names = {r.id: r.name for r in store.participants(store.latest_run().participant_ids)}
        for batch in range(1, store.batch_count() + 1):
            record = store.batch_record(batch)
            assert record is not None
            for p1, p2, game, *_ in store.batch_games(batch):
                run_of[names[p1], names[p2], game] = record[0]
    finally:
        store.close()
    assert sorted(set(run_of.values())) == [1, 2]
    assert sorted({run_of[e.p1, e.p2, e.game] for e in entries}) == [1, 2], "replays of games of both runs"


class Drifting(Pursuer):
    """Fires from farther every act() call, counted across instances: a batch never plays the same twice."""

    name: ClassVar[str] = "drifting"
    calls: ClassVar[int] = 0

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        type(self).calls += 1
        self.fire_m = 1000.0 * (5 + type(self).calls % 20)
        return super().act(observation)


def test_a_game_that_does_not_replay_is_skipped_with_its_reason(write_league, registry):
    from arena.plugins import PluginInfo

    registry.add("drifting", Drifting, PluginInfo("tests", "arena-tests", "0", "tests.tournament"))
    config = load_config(write_league([{"name": "d", "agent": "drifting"}, "pursuer"], games_per_pairing=8,
                                      replays=2))
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    skipped = [r for r in report.replays if r.skipped]
    assert skipped and all("did not give the same game" in r.skipped and r.html is None for r in skipped)
    report_md = (config.output / "report.md").read_text()
    assert "not recorded: playing its batch again did not give the same game" in report_md


def test_cli_replays_option_and_bad_value(write_league, tmp_path):
    path = write_league([{"name": "a", "agent": "crank"}, "placeholder"], games_per_pairing=2,
                        env={"max_time": 30.0})
    result = CliRunner().invoke(main, ["tournament", str(path), "--replays", "1", "-q"])
    assert result.exit_code == 0, result.output
    assert "replays: 1 notable game(s) recorded" in result.output
    bad = write_league(["crank", "placeholder"], name="bad.yaml", replays=99)
    result = CliRunner().invoke(main, ["tournament", str(bad), "-q"])
    assert result.exit_code == 2 and "replays" in result.output and "[0, 16]" in result.output


def test_a_failure_while_recording_keeps_the_report(write_league, registry, monkeypatch):
    import arena.tournament.replays as replays

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(replays, "record_replays", broken)
    config = load_config(write_league(LEAGUE, games_per_pairing=4, replays=1))
    report = run_tournament(config, registry=registry, progress=False, notify=False)
    assert report.games == 12 and (config.output / "report.md").exists()
    assert any("replays not recorded: OSError: disk full" in str(w) for w in report.warnings), report.warnings
