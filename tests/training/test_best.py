"""best.pt / best.json: which evaluated weights a run keeps, and the record read back."""

from __future__ import annotations

import json

import pytest
import torch

from arena.training import BestRecord, EvalResult, falls_behind, keep_best, read_best, replaces


def record(step, **scores_in_games_of_ten):
    """A record from (wins, draws) out of 10 games per opponent."""
    return BestRecord.of(step, {name: EvalResult(10, w, d, 10 - w - d) for name, (w, d) in scores_in_games_of_ten.items()})


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


def test_without_a_duel_the_ladder_alone_decides():
    kept = record(1, crank=(10, 0), ace=(9, 0))
    assert replaces(record(2, crank=(10, 0), ace=(10, 0)), kept)
    assert not replaces(record(3, crank=(10, 0), ace=(9, 0)), kept)
    assert replaces(kept, None) and not replaces(None, kept)
    assert falls_behind(record(4, crank=(10, 0), ace=(8, 0)), kept, margin=0.05)
    assert not falls_behind(record(5, crank=(10, 0), ace=(9, 0)), kept, margin=0.05)
    assert not falls_behind(record(6, ace=(0, 0)), None, margin=0.05)


def test_a_gated_tie_on_the_ladder_is_broken_by_the_duel():
    kept = record(1, crank=(10, 0), ace=(10, 0))  # the ladder at its ceiling: only the duel can tell
    same_ladder = record(2, crank=(10, 0), ace=(10, 0))
    assert replaces(same_ladder, kept, head_to_head=0.6, tie=0.05)
    assert not replaces(same_ladder, kept, head_to_head=0.5, tie=0.05)  # a drawn duel keeps the champion
    assert replaces(same_ladder, kept, head_to_head=0.6)  # equal worst scores are a tie even at 0
    assert not falls_behind(same_ladder, kept, head_to_head=0.46, margin=0.05, tie=0.05)
    assert falls_behind(same_ladder, kept, head_to_head=0.44, margin=0.05, tie=0.05)
    assert not falls_behind(record(4, crank=(9, 0), ace=(10, 0)), kept, head_to_head=0.0, margin=0.2, tie=0.05)
    within = record(3, crank=(10, 0), ace=(9, 0))  # 0.1 below: a tie at 0.1, not at 0.05
    assert replaces(within, kept, head_to_head=0.6, tie=0.1) and not replaces(within, kept, head_to_head=0.6, tie=0.05)


def test_duels_won_one_after_another_cannot_slide_the_ladder_more_than_the_tie():
    kept = record(1, crank=(10, 0), ace=(10, 0))
    for step, ace in enumerate(((10, 0), (9, 1), (9, 1)), start=2):  # 1.0, 0.95, 0.95: within a tie of 0.05
        challenger = record(step, crank=(10, 0), ace=ace)
        assert replaces(challenger, kept, head_to_head=0.6, tie=0.05)
        kept = challenger.succeeding(kept)
    assert (kept.worst, kept.peak, kept.bar) == (0.95, 1.0, 1.0)
    lower = record(9, crank=(10, 0), ace=(9, 0))  # 0.9: within 0.05 of 0.95, not of 1.0
    assert not replaces(lower, kept, head_to_head=0.9, tie=0.05)
    assert not falls_behind(lower, kept, head_to_head=0.9, margin=0.05, tie=0.05)  # nor does it go back
    assert replaces(record(10, crank=(10, 0), ace=(10, 0)), kept, head_to_head=0.6, tie=0.05)
    assert record(10, ace=(10, 0)).succeeding(kept).peak is None  # a new high carries no peak


def test_the_peak_travels_with_the_record(tmp_path):
    kept = record(2, ace=(9, 0)).succeeding(record(1, ace=(10, 0)))
    assert kept.peak == 1.0 and BestRecord.from_dict(kept.to_dict()) == kept
    assert "peak" not in record(3, ace=(9, 0)).to_dict()  # best.json as before when there is none
    with pytest.raises(ValueError, match="peak"):
        BestRecord.from_dict({**kept.to_dict(), "peak": 1.5})


def test_beyond_the_tie_the_ladder_decides_whatever_the_duel():
    kept = record(1, crank=(10, 0), ace=(6, 0))
    better, worse = record(2, crank=(10, 0), ace=(9, 0)), record(3, crank=(10, 0), ace=(3, 0))
    assert replaces(better, kept, head_to_head=0.0, tie=0.1)  # an early policy can beat a later one it trails
    assert not falls_behind(better, kept, head_to_head=0.0, margin=0.05, tie=0.1)
    assert not replaces(worse, kept, head_to_head=1.0, tie=0.1)
    assert falls_behind(worse, kept, head_to_head=1.0, margin=0.05, tie=0.1)


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
