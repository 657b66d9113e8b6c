"""best.pt / best.json: which evaluated weights a run keeps, and the record read back."""

from __future__ import annotations

import json
import math

import pytest
import torch

from arena.training import BestRecord, EvalResult, keep_best, rate, read_best, reference_scale


def record(step, **scores_in_games_of_ten):
    """A record from (wins, draws) out of 10 games per opponent."""
    return BestRecord.of(step, {name: EvalResult(10, w, d, 10 - w - d)
                                for name, (w, d) in scores_in_games_of_ten.items()})


def test_score_counts_a_draw_as_half_a_win():
    assert EvalResult(10, 6, 2, 2).score == pytest.approx(0.7)
    assert EvalResult(0, 0, 0, 0).score == 0.0


def test_the_worst_matchup_decides_then_the_mean():
    sweep_but_one_loss = record(1, crank=(10, 0), ace=(3, 0))  # mean 0.65, worst 0.3
    even = record(2, crank=(6, 0), ace=(5, 0))  # mean 0.55, worst 0.5
    assert (even.worst, even.mean, even.weakest()) == (0.5, 0.55, "ace")
    assert even.beats(sweep_but_one_loss) and not sweep_but_one_loss.beats(even)
    same_worst_higher_mean = record(3, crank=(7, 0), ace=(5, 0))
    assert same_worst_higher_mean.beats(even)
    assert not record(4, crank=(6, 0), ace=(5, 0)).beats(even)  # a tie keeps the earlier weights
    assert even.beats(None)


def rated(step, scale, **scores_in_games_of_hundred):
    """A record rated against references of Elo ``scale`` from (wins, draws) out of 100 games each."""
    results = {name: EvalResult(100, w, d, 100 - w - d) for name, (w, d) in scores_in_games_of_hundred.items()}
    return BestRecord.of(step, results, rate(results, scale), "sampled")


SCALE = {"crank": 1000.0, "ace": 1600.0}


def test_the_rating_against_the_references_decides_before_the_worst_score():
    # 60 % against the ace is worth more than a clean sweep of crank with 40 % against the ace
    strong = rated(1, SCALE, crank=(90, 0), ace=(60, 0))
    sweep = rated(2, SCALE, crank=(100, 0), ace=(40, 0))
    assert strong.rating.elo > sweep.rating.elo and strong.beats(sweep) and not sweep.beats(strong)
    # above every reference: compared by the lower bound its games give
    above = rated(3, SCALE, crank=(100, 0), ace=(99, 1))
    more_games_won = rated(4, SCALE, crank=(100, 0), ace=(100, 0))
    assert above.rating.note == "above every reference" and above.rating.elo == math.inf
    assert above.beats(strong) and more_games_won.beats(above)
    # ... and ahead of any finite rating, whose record fell short of 99 % against some reference
    nearly = rated(5, SCALE, crank=(100, 0), ace=(98, 0))
    assert math.isfinite(nearly.rating.elo) and nearly.rating.elo > above.rating.low
    assert above.beats(nearly) and not nearly.beats(above)
    # a record of an older run has no rating: compared by worst score and mean, as that run chose
    older = record(0, crank=(10, 0), ace=(5, 0))
    assert older.rating is None and strong.beats(older) and not sweep.beats(older) and older.beats(sweep)


def test_the_score_against_the_training_mix_decides_before_the_rating():
    """--vs crank with the floor: crank 0.75 of the envs, the placeholder 0.25. Weights that beat crank a
    little more but draw the placeholder lose; a few more games won against the placeholder do not outweigh
    crank's (the rating over both references would keep them: crank sits far above it)."""
    scale, mix = {"placeholder": 1000.0, "crank": 1800.0}, {"crank": 0.75, "placeholder": 0.25}

    def kept(step, crank, placeholder):
        results = {"crank": EvalResult(200, *crank), "placeholder": EvalResult(200, *placeholder)}
        return BestRecord.of(step, results, rate(results, scale), "sampled", mix)

    early = kept(6, (193, 3, 4), (157, 18, 25))
    drawing = kept(10, (199, 0, 1), (42, 119, 39))
    assert early.aim == pytest.approx(0.75 * 0.9725 + 0.25 * 0.83)
    assert early.beats(drawing) and not drawing.beats(early)
    team = kept(14, (180, 0, 20), (150, 10, 40))  # 0.90 against crank, 0.775 against the placeholder
    earlier_team = kept(2, (140, 0, 60), (195, 5, 0))  # 0.70, 0.9875: more in all, rated higher
    assert earlier_team.rating.key() > team.rating.key()
    assert team.beats(earlier_team) and not earlier_team.beats(team)
    unmixed = rated(3, SCALE, crank=(90, 0), ace=(60, 0))  # a league's record: the rating decides
    assert unmixed.aim is None and unmixed.beats(rated(4, SCALE, crank=(100, 0), ace=(40, 0)))
    assert BestRecord.from_dict(early.to_dict()) == early and early.to_dict()["aim"] == early.aim
    with pytest.raises(ValueError, match="aim"):
        BestRecord.from_dict({**early.to_dict(), "aim": 2.0})


def test_the_training_mix_is_each_fixed_opponents_share_of_the_envs():
    from arena.training import OpponentSpec, with_floor
    from arena_ppo.runners.evaluator import training_mix

    crank = with_floor([OpponentSpec("agent", "crank")], 0.25, 1024)
    assert training_mix(crank) == pytest.approx({"crank": 0.75, "placeholder": 0.25})
    assert training_mix([OpponentSpec("agent", "crank"), OpponentSpec("league", "league")]) is None


def test_references_with_a_perfect_record_among_themselves_are_named():
    among = {("crank", "placeholder"): EvalResult(10, 10, 0, 0), ("crank", "ace"): EvalResult(10, 0, 0, 10)}
    assert reference_scale(["crank", "placeholder", "ace"], among).perfect == ("placeholder", "ace")
    mixed = {("crank", "placeholder"): EvalResult(10, 9, 1, 0), ("crank", "ace"): EvalResult(10, 1, 0, 9)}
    assert reference_scale(["crank", "placeholder", "ace"], mixed).perfect == ()


def test_a_lone_reference_is_elo_1000_and_the_learner_is_its_odds_away():
    results = {"crank": EvalResult(100, 75, 0, 25)}
    assert reference_scale(["crank"], {}).elo == {"crank": 1000.0}
    rating = rate(results, {"crank": 1000.0})
    assert rating.elo == pytest.approx(1000.0 + 400.0 * math.log10(3.0), abs=1e-6)
    assert rating.low < rating.elo < rating.high


def test_the_references_scale_is_the_tournaments():
    from arena.tournament.ratings import bradley_terry
    from arena.tournament.results import P1_WINS, P2_WINS, GameResult

    scale = reference_scale(["a", "b"], {("a", "b"): EvalResult(100, 75, 0, 25)}).elo
    games = [GameResult(0, 1, k, P1_WINS if k < 75 else P2_WINS, 0, 0.0, 0.0) for k in range(100)]
    fit = bradley_terry(games, 2, rounds=0)
    assert [scale["a"], scale["b"]] == pytest.approx(list(fit.elo))
    assert scale["a"] - scale["b"] == pytest.approx(400.0 * math.log10(3.0), abs=2.0)


def test_a_rated_record_reads_back_with_its_infinite_side_as_null():
    above = rated(3, SCALE, crank=(100, 0), ace=(100, 0))
    data = json.loads(json.dumps(above.to_dict(), allow_nan=False))  # strict JSON
    assert data["rating"]["elo"] is None and data["rating"]["high"] is None and data["policy"] == "sampled"
    assert BestRecord.from_dict(data) == above
    with pytest.raises(ValueError, match="rating: note"):
        BestRecord.from_dict({**data, "rating": {**data["rating"], "note": "great"}})


def test_a_record_reads_back_as_it_was_written_and_refuses_damage():
    kept = record(2, crank=(10, 0), ace=(9, 0))
    assert BestRecord.from_dict(kept.to_dict()) == kept
    with pytest.raises(ValueError, match="worst"):
        BestRecord.from_dict({**kept.to_dict(), "worst": 1.5})


def test_an_evaluation_without_games_is_no_record():
    assert BestRecord.of(5, {"crank": EvalResult(0, 0, 0, 0)}) is None
    assert BestRecord.of(5, {}) is None
    assert record(5, crank=(4, 2), none=(0, 0)).scores == {"crank": 0.5, "none": 0.0}  # 0 of 10 games still counts


def test_keep_best_writes_a_loadable_file_and_its_record(tmp_path):
    kept = record(4096, crank=(9, 1), ace=(6, 2))
    payload = {"format_version": 1, "agent": "fake", "model": {"w": torch.ones(2)}}
    path = keep_best(tmp_path, payload, kept)
    data = torch.load(path, weights_only=True)
    assert path.name == "best.pt" and torch.equal(data["model"]["w"], torch.ones(2))
    assert BestRecord.from_dict(data["best"]) == kept
    assert json.loads((tmp_path / "best.json").read_text())["checkpoint"] == "best.pt"
    assert read_best(tmp_path) == kept
    assert sorted(p.name for p in tmp_path.iterdir()) == ["best.json", "best.pt"]  # no temp file left


def test_no_record_and_a_damaged_record(tmp_path):
    assert read_best(tmp_path) is None
    (tmp_path / "best.json").write_text("{not json")
    with pytest.raises(ValueError, match="best.json"):
        read_best(tmp_path)


@pytest.mark.parametrize("data, field", [
    ([], "expected a dict"),
    ({"step": -1, "worst": 0.5, "mean": 0.5, "scores": {}}, "step"),
    ({"step": True, "worst": 0.5, "mean": 0.5, "scores": {}}, "step"),
    ({"step": 1, "worst": float("nan"), "mean": 0.5, "scores": {}}, "worst"),
    ({"step": 1, "worst": 0.5, "mean": 1.5, "scores": {}}, "mean"),
    ({"step": 1, "worst": 0.5, "mean": 0.5, "scores": {"ace": "high"}}, "scores"),
    ({"step": 1, "worst": 0.5, "mean": 0.5}, "scores"),
])
def test_a_bad_record_names_its_field(data, field):
    with pytest.raises(ValueError, match=field):
        BestRecord.from_dict(data)
