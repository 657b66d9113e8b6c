"""Rating against fixed references: the estimator, the league file's keys, the schedule and the report."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from arena.tournament.ratings import (
    ABOVE_REFERENCES,
    BELOW_REFERENCES,
    ELO_SCALE,
    LIKELIHOOD_DROP_95,
    NO_REFERENCE_GAMES,
    REFERENCE,
    SOME_REFERENCES,
    ReferencesUnlinked,
    reference_elo,
    strength_against,
)
from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult


def record(games: list[GameResult], a: int, b: int, wins: int, draws: int, losses: int) -> None:
    """``a`` (p1) against ``b``: ``wins``, ``draws`` and ``losses`` of a, as games."""
    start = sum(1 for g in games if (g.p1, g.p2) == (a, b))
    outcomes = [P1_WINS] * wins + [DRAW] * draws + [P2_WINS] * losses
    games.extend(GameResult(a, b, start + k, w, 10, 0.0, 0.0) for k, w in enumerate(outcomes))


def references_and_players() -> list[GameResult]:
    """References 0 < 1 < 2; player 3 in their midst, player 4 above all of them, 5 below, 6 unplayed,
    7 only against reference 0 so far."""
    games: list[GameResult] = []
    record(games, 1, 0, 150, 0, 50)
    record(games, 2, 1, 150, 0, 50)
    record(games, 2, 0, 180, 0, 20)
    record(games, 3, 0, 190, 0, 10)
    record(games, 3, 1, 120, 0, 80)
    record(games, 3, 2, 40, 0, 160)
    record(games, 4, 0, 200, 0, 0)
    record(games, 4, 1, 200, 0, 0)
    record(games, 4, 2, 198, 2, 0)
    record(games, 5, 0, 1, 0, 199)
    record(games, 5, 1, 0, 0, 200)
    record(games, 5, 2, 0, 0, 200)
    record(games, 7, 0, 200, 0, 0)
    return games


def test_one_reference_gives_the_logit_of_the_score_and_a_likelihood_interval():
    theta, low, high = strength_against(np.array([150.0]), np.array([200.0]), np.array([0.0]))
    assert theta == pytest.approx(math.log(3.0), abs=1e-9), "75 % against an equal: odds 3:1"

    def loglik(t: float) -> float:
        return 150 * math.log(1 / (1 + math.exp(-t))) + 50 * math.log(1 / (1 + math.exp(t)))

    for bound in (low, high):
        assert loglik(theta) - loglik(bound) == pytest.approx(LIKELIHOOD_DROP_95, abs=1e-6)
    assert low < theta < high


def test_a_perfect_record_has_a_lower_bound_only():
    theta, low, high = strength_against(np.array([200.0]), np.array([200.0]), np.array([0.0]))
    assert theta == math.inf and high == math.inf and math.isfinite(low) and low > 0
    theta, low, high = strength_against(np.array([0.0]), np.array([200.0]), np.array([0.0]))
    assert theta == -math.inf and low == -math.inf and math.isfinite(high) and high < 0


def test_players_are_rated_against_the_references_alone():
    games = references_and_players()
    fit = reference_elo(games, 8, [0, 1, 2], rounds=100, seed=0)
    assert fit.flags == (REFERENCE, REFERENCE, REFERENCE, "", ABOVE_REFERENCES, BELOW_REFERENCES, NO_REFERENCE_GAMES,
                         SOME_REFERENCES)
    assert fit.elo[1] == pytest.approx(1000.0, abs=1.0), "the references' mixed records average 1000"
    assert fit.elo[0] < fit.elo[1] < fit.elo[3] < fit.elo[2]
    assert fit.low[3] < fit.elo[3] < fit.high[3]
    assert fit.elo[4] == math.inf and fit.low[4] > fit.elo[2], "above every reference, its bound above the top one"
    assert fit.elo[5] == -math.inf and fit.high[5] < fit.elo[0]
    assert math.isnan(fit.elo[6]) and math.isnan(fit.elo[7]), "a sweep of the weakest reference alone says little"

    # Games between non-references change nothing: one's blind spot against another reorders no one.
    upset = list(games)
    record(upset, 5, 4, 200, 0, 0)
    record(upset, 3, 4, 200, 0, 0)
    again = reference_elo(upset, 8, [0, 1, 2], rounds=100, seed=0)
    np.testing.assert_array_equal(again.elo, fit.elo)


def test_ranked_by_reference_elo_above_every_reference_is_first_and_unrated_last():
    from arena.tournament.league_config import RatingConfig
    from arena.tournament.report import Entrant, build_report

    names = ("r0", "r1", "r2", "mid", "top", "bottom", "idle", "partial")
    report = build_report("t", "out", [Entrant(n, "pursuer") for n in names], references_and_players(),
                          RatingConfig(bootstrap_rounds=0, rank_by="reference_elo"), references=[0, 1, 2])
    board = report.leaderboard
    assert list(board["name"]) == ["top", "r2", "mid", "r1", "r0", "bottom", "idle", "partial"]
    assert list(board["rank"]) == list(range(1, 9))


def test_a_lone_reference_elo_matches_a_hand_computation():
    games: list[GameResult] = []
    record(games, 0, 1, 100, 0, 100)  # two equal references at 1000
    record(games, 2, 0, 75, 0, 25)
    record(games, 2, 1, 75, 0, 25)
    fit = reference_elo(games, 3, [0, 1], rounds=0)
    assert fit.elo[2] == pytest.approx(1000.0 + ELO_SCALE * math.log(3.0), abs=1e-6)


def test_references_that_never_met_fix_no_scale():
    games: list[GameResult] = []
    record(games, 0, 1, 10, 0, 10)
    record(games, 2, 3, 10, 0, 10)
    record(games, 4, 0, 10, 0, 10)
    with pytest.raises(ReferencesUnlinked) as caught:
        reference_elo(games, 5, [0, 1, 2, 3])
    assert sorted(sorted(g) for g in caught.value.groups) == [[0, 1], [2, 3]]


# -- the league file ---------------------------------------------------------------------------------


def test_references_and_policies_are_read_from_the_league_file(write_league, tmp_path):
    from arena.tournament import load_config

    (tmp_path / "a.pt").write_text("8")
    config = load_config(write_league(["idle", "pursuer", {"agent": "fromfile", "checkpoint": "a.pt"},
                                       {"name": "s", "agent": "fromfile", "checkpoint": "a.pt",
                                        "policy": "sampled"}], references=["idle", "pursu*"]))
    assert config.references == ("idle", "pursuer")
    assert [p.policy for p in config.participants] == [None, None, "deterministic", "sampled"]
    assert config.to_dict()["references"] == ["idle", "pursuer"]


@pytest.mark.parametrize(("references", "participants", "key", "expected"), [
    (["idle", "nobody"], ["idle", "pursuer"], "references[1]", "unknown participant 'nobody'"),
    (["idle"], ["idle", "pursuer"], "references", "a pool of one"),
    (["zz*"], ["idle", "pursuer"], "references", "no participant matched"),
    (5, ["idle", "pursuer"], "references", "expected a non-empty list"),
])
def test_a_bad_reference_pool_is_one_line_naming_the_file_and_key(write_league, references, participants, key,
                                                                  expected):
    from arena.tournament import ConfigError, load_config

    path = write_league(participants, references=references)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == key and expected in str(caught.value) and str(path) in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_candidate_cannot_be_a_reference(write_league):
    from arena.tournament import ConfigError, load_config

    path = write_league(["idle", "pursuer", {"name": "far", "agent": "pursuer"}], format="gauntlet",
                        candidates=["far"], references=["idle", "far"])
    with pytest.raises(ConfigError, match="'far' is also a candidate"):
        load_config(path)


@pytest.mark.parametrize(("entry", "expected"), [
    ({"agent": "pursuer", "policy": "sampled"}, "only a checkpoint plays by a policy"),
    ({"agent": "fromfile", "checkpoint": "a.pt", "policy": "greedy"}, "expected one of sampled, deterministic"),
])
def test_a_bad_policy_is_refused(write_league, tmp_path, entry, expected):
    from arena.tournament import ConfigError, load_config

    (tmp_path / "a.pt").write_text("8")
    with pytest.raises(ConfigError) as caught:
        load_config(write_league(["idle", entry]))
    assert caught.value.key == "participants[1].policy" and expected in str(caught.value)


def test_a_sampled_checkpoint_is_another_player_than_the_same_file_played_deterministically(write_league, tmp_path,
                                                                                           registry):
    from arena.tournament import load_config
    from arena.tournament.participants import resolve_participants

    (tmp_path / "a.pt").write_text("8")
    config = load_config(write_league([
        {"name": "x", "agent": "fromfile", "checkpoint": "a.pt", "policy": "sampled"},
        {"name": "y", "agent": "fromfile", "checkpoint": "a.pt", "policy": "deterministic"}, "idle"]))
    sampled, deterministic, _ = resolve_participants(config, registry)
    renamed = load_config(write_league([
        {"name": "x", "agent": "fromfile", "checkpoint": "a.pt", "policy": "deterministic"}, "idle"], name="b.yaml"))
    (same_weights,) = [p for p in resolve_participants(renamed, registry) if p.name == "x"]
    assert same_weights.key != sampled.key, "the policy is part of a participant's identity"
    assert (sampled.policy, deterministic.policy) == ("sampled", "deterministic")


def test_a_gauntlet_with_references_also_plays_the_references_against_each_other():
    from arena.tournament.schedule import Pairing, pairings

    # 0 is the candidate; 1, 2, 3 its opponents, of which 1 and 2 are references
    assert pairings(4, "gauntlet", [0]) == [Pairing(0, 1), Pairing(0, 2), Pairing(0, 3)]
    assert pairings(4, "gauntlet", [0], references=[1, 2]) == [Pairing(0, 1), Pairing(0, 2), Pairing(0, 3),
                                                               Pairing(1, 2)]
    assert len(pairings(4, "round-robin", references=[1, 2])) == 6


# -- the report ----------------------------------------------------------------------------------------


def write_run(folder: Path, fire_km: dict[int, float], best_step: int | None = None) -> None:
    """Checkpoints of the test agent ``fromfile`` (the file holds its firing range), and a best.json."""
    import json

    folder.mkdir(parents=True)
    for step, km in fire_km.items():
        (folder / f"ckpt_{step:09d}.pt").write_text(str(km))
    if best_step is not None:
        (folder / "best.json").write_text(json.dumps({"checkpoint": "best.pt", "step": best_step, "worst": 0.5,
                                                      "mean": 0.5, "scores": {"idle": 0.5}}))


def test_a_league_with_references_rates_a_run_against_them(write_league, registry, tmp_path):
    from arena.tournament import load_config, run_tournament
    from arena.tournament.over_training import training_runs

    write_run(tmp_path / "runs" / "a", {100: 2.0, 200: 6.0, 300: 12.0}, best_step=300)
    path = write_league([{"name": "short", "agent": "pursuer", "params": {"fire_km": 3.0}},
                         {"name": "long", "agent": "pursuer", "params": {"fire_km": 10.0}}, "idle",
                         {"agent": "fromfile", "checkpoints": "runs/a/ckpt_*.pt"}],
                        games_per_pairing=16, references=["short", "long"])
    report = run_tournament(load_config(path), registry=registry, progress=False, notify=False)
    board = report.leaderboard
    assert not report.by_reference, "the leaderboard is ranked by the Elo of all games unless the file asks"
    assert list(board["elo"]) == sorted(board["elo"], reverse=True)
    assert set(board.loc[board["reference_note"] == REFERENCE, "name"]) == {"short", "long"}
    rated = board[board["reference_note"] != REFERENCE]
    assert rated["reference_elo"].notna().all(), "every other participant played the references"

    (run,) = training_runs(board).values()
    assert run.by_reference and list(run.frame["step"]) == [100, 200, 300]
    assert run.best_step == 300 and run.best_rank is not None
    md = (report.output_dir / "report.md").read_text()
    assert "rated only from its games against the references (long, short;" in md, "strongest first"
    assert "Spearman(step, reference Elo)" in md and "Spearman(step, Elo of all games)" in md
    assert report.files["rating_over_training"].stat().st_size > 1000
    from arena.tournament.report import render

    console = render(report)
    assert "rating over training" in console and "against the references (long, short)" in console
    assert "best.json's step 300 ranks" in console
    from arena.tournament.report import BEST_IS_THE_RUNS_OWN

    # where the league ranks another checkpoint first, the line says why the two measures differ
    assert (BEST_IS_THE_RUNS_OWN in console) == (run.best_rank != 1)
    import dataclasses

    report.over_training = {key: dataclasses.replace(r, best_rank=2) for key, r in report.over_training.items()}
    assert f"ranks 2 of 3{BEST_IS_THE_RUNS_OWN}" in render(report)
    (summary,) = report.to_json()["over_training"]
    assert summary["by_reference"] and summary["checkpoints"] == 3 and summary["best_step"] == 300
    csv_header = (report.output_dir / "leaderboard.csv").read_text().splitlines()[0]
    assert "reference_elo" in csv_header and "reference_note" in csv_header


def test_references_without_their_mutual_games_are_a_warning_naming_the_league_file():
    from arena.tournament.league_config import RatingConfig
    from arena.tournament.report import Entrant, build_report

    games: list[GameResult] = []
    record(games, 2, 0, 5, 0, 5)  # 2 played both references, but they never played each other
    record(games, 2, 1, 5, 0, 5)
    entrants = [Entrant(n, "pursuer") for n in ("r0", "r1", "p")]
    report = build_report("t", "out", entrants, games, RatingConfig(bootstrap_rounds=0), references=[0, 1],
                          source="leagues/x.yaml")
    (warning,) = [w for w in report.warnings if w.kind == "references_unlinked"]
    assert (warning.where, warning.groups) == ("leagues/x.yaml: references", (("r0",), ("r1",)))  # as data
    assert str(warning).startswith("leagues/x.yaml: references:") and "{r0}" in str(warning) and "{r1}" in str(warning)
    assert report.to_json()["warnings"][-1] == {"kind": "references_unlinked", "groups": [["r0"], ["r1"]],
                                                 "where": "leagues/x.yaml: references", "text": str(warning)}
    assert not report.by_reference and report.leaderboard["reference_elo"].isna().all()


def test_later_checkpoints_significantly_below_earlier_ones_are_counted():
    from arena.tournament.over_training import inversions

    # three checkpoints: the second is significantly below the first, the third overlaps both
    assert inversions([100.0, 10.0, 40.0], [120.0, 30.0, 110.0]) == 1
    assert inversions([10.0, 20.0, 30.0], [15.0, 25.0, 35.0]) == 0
    assert inversions([2000.0, 10.0], [math.inf, 20.0]) == 1, "above every reference still counts by its bound"


@pytest.mark.parametrize("team_size", [1, 2])
def test_a_sampled_league_of_checkpoints_replays_exactly(tmp_path, write_league, team_size):
    pytest.importorskip("arena_ppo")
    from arena.env import EnvConfig
    from arena.tournament import ResultStore, load_config, run_tournament
    from arena.training.checkpoint import save_checkpoint
    from arena_ppo.agent import PPOAgent
    from arena_ppo.mappo_agent import MAPPOAgent

    agent = PPOAgent() if team_size == 1 else MAPPOAgent(env_config=EnvConfig(team_size=2))
    save_checkpoint(agent.checkpoint(), tmp_path / "run" / "ckpt_000000100.pt")
    save_checkpoint(agent.checkpoint(), tmp_path / "run" / "ckpt_000000200.pt")
    kind = "ppo" if team_size == 1 else "mappo"
    games = {}
    for output, policy in (("one", "sampled"), ("two", "sampled")):
        config = load_config(write_league(["placeholder", "crank", {"agent": kind, "checkpoints": "run/ckpt_*.pt",
                                                                    "policy": policy}],
                                          name=f"{output}.yaml", output=output, games_per_pairing=16,
                                          env={"max_time": 60.0}, references=["placeholder", "crank"]))
        assert [p.policy for p in config.participants][2:] == [policy, policy]
        report = run_tournament(config, progress=False, notify=False)
        assert report.complete and report.forfeits.empty
        assert report.leaderboard["reference_elo"].notna().all(), "rated against the references"
        store = ResultStore(config.output / "results.sqlite")
        try:
            games[output] = [(g.p1, g.p2, g.game_index, g.winner, g.length, g.return_p1, g.return_p2, g.missiles_p1,
                               g.missiles_p2) for g in store.games()]
        finally:
            store.close()
    assert games["one"] == games["two"], "the same league file plays the same games"
    from dataclasses import replace

    from arena.agents import agent_registry
    from arena.env import EnvConfig as Env
    from arena.tournament.participants import build_participant, resolve_participants

    (checkpoint,) = [p for p in resolve_participants(config, agent_registry()) if p.name.endswith("000000100")]
    env = Env(team_size=team_size)
    assert build_participant(checkpoint, "cpu", env, agent_registry()).training, "sampled: it draws its actions"
    deterministic = replace(checkpoint, policy="deterministic")
    assert not build_participant(deterministic, "cpu", env, agent_registry()).training


def test_a_reference_with_a_perfect_record_among_the_references_is_a_warning():
    from arena.tournament.league_config import RatingConfig
    from arena.tournament.report import Entrant, build_report

    games: list[GameResult] = []
    record(games, 0, 1, 10, 0, 0)  # r0 beats r1 every time: their gap is not measured
    record(games, 2, 0, 5, 0, 5)
    record(games, 2, 1, 8, 0, 2)
    entrants = [Entrant(n, "pursuer") for n in ("r0", "r1", "p")]
    report = build_report("t", "out", entrants, games, RatingConfig(bootstrap_rounds=0), references=[0, 1],
                          source="x.yaml")
    (warning,) = [w for w in report.warnings if w.kind == "references_perfect"]
    assert warning.names == ("r0", "r1")
    assert str(warning).startswith("x.yaml: references: r0, r1 won or lost every game")
    assert report.leaderboard["reference_elo"].notna().all(), "a capped scale still rates"


def test_the_same_checkpoint_both_ways_needs_two_names_and_the_refusal_says_so(write_league, tmp_path, registry):
    """docs/tournaments.md: the same file played both ways is two participants, each with a name of its own."""
    from arena.tournament import ConfigError, load_config
    from arena.tournament.participants import resolve_participants

    (tmp_path / "a.pt").write_text("8")
    path = write_league([{"agent": "fromfile", "checkpoint": "a.pt"},
                         {"agent": "fromfile", "checkpoint": "a.pt", "policy": "sampled"}, "idle"])
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert caught.value.key == "participants[1]" and "\n" not in str(caught.value)
    assert str(caught.value).endswith("duplicate participant name 'fromfile:a' (also participants[0]); the same "
                                      "checkpoint played deterministic and sampled is two participants, and each "
                                      "needs a name of its own — give one a 'name'")
    named = load_config(write_league([{"agent": "fromfile", "checkpoint": "a.pt"},
                                      {"name": "a-sampled", "agent": "fromfile", "checkpoint": "a.pt",
                                       "policy": "sampled"}, "idle"], name="named.yaml"))
    deterministic, sampled, _ = resolve_participants(named, registry)
    assert (deterministic.name, sampled.name) == ("fromfile:a", "a-sampled") and sampled.key != deterministic.key
