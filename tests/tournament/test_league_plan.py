"""The league plan: resolved once from the league file, the one input of every player of its games."""

from __future__ import annotations

import io
import pickle

from arena.progress import Progress
from arena.tournament import LeaguePlan, ListSink, load_config
from arena.tournament.executor import play
from arena.tournament.ray_backend import LeagueSpec
from arena.tournament.runner import resolve_league
from arena.tournament.schedule import pairings, units
from tourney_helpers import Pursuer


def test_the_plan_is_resolved_once_and_ray_workers_get_it_without_the_drivers_agents(write_league, registry):
    config = load_config(write_league(["pursuer", "idle"], seed=5, max_envs=8, time_per_move=2.0))
    plan = resolve_league(config, registry)
    assert plan.names == ["pursuer", "idle"] and len(plan.agents) == 2 and plan.participants
    assert (plan.seed, plan.max_envs, plan.time_per_move, str(plan.device)) == (5, 8, 2.0, "cpu")
    assert plan.game_seeds is not None and plan.game_seeds(0, 1, 3) == plan.game_seeds(1, 0, 3)  # paired openings
    spec = pickle.loads(pickle.dumps(LeagueSpec.of(plan, registry, config.device)))
    assert spec.plan.agents == () and spec.plan.names == plan.names and spec.plan.seed == 5
    assert [p.key for p in spec.participants] == [p.key for p in plan.participants]


def test_the_sink_alone_counts_the_games_and_draws_the_progress_line():
    stream = io.StringIO()
    with Progress(12, unit="games", label="t", stream=stream) as bar:
        sink = ListSink(bar)
        stats = play(LeaguePlan.of([Pursuer(fire_km=8.0), Pursuer(fire_km=25.0)], max_envs=4),
                     units(pairings(2), 12), sink)
    assert sink.games == len(sink.results) == 12 and sink.forfeits == 0 and stats.batches == 1
    assert "12/12 games" in stream.getvalue() and "forfeits 0" in stream.getvalue()


def test_the_file_is_read_as_written_and_its_participants_expanded_apart(tmp_path):
    """The league file's reader globs no folder and opens no checkpoint; the expansion does both."""
    import pytest

    from arena.tournament.league_config import parse_league
    from arena.tournament.participants import expand_league

    data = {"participants": ["crank", {"agent": "ppo", "checkpoints": "runs/*.pt"},
                             {"agent": "ppo", "checkpoint": "gone.pt"}], "format": "gauntlet", "candidates": ["ppo:*"]}
    written = parse_league(data, tmp_path / "league.yaml")
    assert [p.pattern for p in written.participants] == [None, str(tmp_path / "runs/*.pt"), None]
    assert written.candidates == ("ppo:*",)
    with pytest.raises(Exception, match=r"participants\[2\]\.checkpoint: no such file: gone.pt \(looked at "):
        expand_league(written)
