"""best.pt / best.json: which evaluated weights a run keeps, and the record read back."""

from __future__ import annotations

import json

import pytest
import torch

from arena.training import BestRecord, EvalResult, keep_best, read_best


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
