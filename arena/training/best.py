"""The best weights a run has evaluated: ``best.pt`` and ``best.json`` beside its checkpoints.

A league policy's score against a hard opponent can swing from one checkpoint to the next (0.39 to
0.995 against the ace between neighbours, docs/experiments/), so the last checkpoint is not always the
one to keep. After each evaluation a trainer offers the evaluated weights here; they replace the
kept ones when they score better against the opponents the run trained against: the *aim*, each
reference's score weighted by its share of the training envs (``--vs crank`` with the floor: crank
0.75, the placeholder 0.25). A run whose opponents are drawn (a league, self-play) has no fixed
shares; its weights compare by their rating against the evaluation's references: the Elo a
tournament with the same references gives (:mod:`arena.training.evaluation`), so ``best.pt`` is the
checkpoint the league report rates highest among the run's own. The rating alone would keep a
team's early weights for a few more games won against the floor's placeholder, far below the
opponent trained against on the references' scale (docs/experiments/). Weights above every reference
compare by the lower bound of their rating, and equal ratings by the worst score, then the mean.

The evaluation games that choose the weights also measure them: a fair figure for the kept weights
comes from fresh games (other seeds), as ``benchmarks/train_league.py`` plays.

The file names and the reading of ``best.json`` are :mod:`arena.run_files`' (a tournament reads the
kept step from there too); the record itself, and the choice, are here.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.run_files import BEST_CHECKPOINT, BEST_RECORD, read_best_record, record_step
from arena.training.checkpoint import save_checkpoint
from arena.training.evaluation import EvalResult, Rating
from arena.training.metrics import write_text_atomically


@dataclass(frozen=True)
class BestRecord:
    """Which evaluated weights are kept, and how they scored (wins plus half the draws, per game)."""

    step: int
    worst: float
    mean: float
    scores: dict[str, float] = field(default_factory=dict)
    rating: Rating | None = None  # against the evaluation's references; None in records of older runs
    policy: str = ""  # how the evaluated weights played ("sampled" or "deterministic")
    aim: float | None = None  # score against the training mix; None for drawn opponents and older runs

    @classmethod
    def of(cls, step: int, results: Mapping[str, EvalResult], rating: Rating | None = None,
           policy: str = "", mix: Mapping[str, float] | None = None) -> "BestRecord | None":
        """The record of one evaluation (``mix``: each reference's share of the training envs); None when it
        played no games."""
        scores = {label: r.score for label, r in results.items() if r.games > 0}
        if not scores:
            return None
        return cls(step, min(scores.values()), sum(scores.values()) / len(scores), scores, rating, policy,
                   training_aim(scores, mix))

    def beats(self, other: "BestRecord | None") -> bool:
        """A higher aim; then a higher rating; then the same and a higher worst score, then mean. A record
        of an older run has no rating: the two then compare by worst score and mean, as such runs chose."""
        if other is None:
            return True
        if self.aim is not None and other.aim is not None and self.aim != other.aim:
            return self.aim > other.aim
        if self.rating is None or other.rating is None:
            return (self.worst, self.mean) > (other.worst, other.mean)
        return (self.rating.key(), self.worst, self.mean) > (other.rating.key(), other.worst, other.mean)

    def weakest(self) -> str:
        """The opponent of the worst score."""
        return min(self.scores, key=lambda label: self.scores[label])

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"step": self.step, "worst": self.worst, "mean": self.mean, "scores": dict(self.scores)}
        if self.rating is not None:
            out["rating"] = self.rating.to_dict()
        if self.policy:
            out["policy"] = self.policy
        if self.aim is not None:
            out["aim"] = self.aim
        return out

    @classmethod
    def from_dict(cls, data: Any) -> "BestRecord":
        """A record read back from a checkpoint or best.json; ``ValueError`` naming the bad field."""
        step = record_step(data)  # a dict, with a step
        scores = data.get("scores")
        if not isinstance(scores, Mapping) or not all(isinstance(k, str) and is_fraction(v) for k, v in scores.items()):
            raise ValueError(f"scores: expected a dict of opponent names to fractions 0..1, got {scores!r}"[:200])
        for name in ("worst", "mean"):
            if not is_fraction(data.get(name)):
                raise ValueError(f"{name}: expected a fraction 0..1, got {data.get(name)!r}"[:200])
        rating = None
        if data.get("rating") is not None:
            try:
                rating = Rating.from_dict(data["rating"])
            except ValueError as exc:
                raise ValueError(f"rating: {exc}") from None
        policy = data.get("policy", "")
        if policy not in ("", "sampled", "deterministic"):
            raise ValueError(f"policy: expected sampled or deterministic, got {policy!r}"[:200])
        aim = data.get("aim")
        if aim is not None and not is_fraction(aim):
            raise ValueError(f"aim: expected a fraction 0..1, got {aim!r}"[:200])
        return cls(step, float(data["worst"]), float(data["mean"]), {k: float(v) for k, v in scores.items()}, rating,
                   policy, None if aim is None else float(aim))


def training_aim(scores: Mapping[str, float], mix: Mapping[str, float] | None) -> float | None:
    """The aim: each reference's score weighted by its share of the training envs (``mix``); None without a
    mix (drawn opponents) or without a score against each opponent of it."""
    if not mix or not set(mix) <= set(scores):
        return None
    return sum(share * scores[label] for label, share in mix.items())


def is_fraction(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            and 0.0 <= value <= 1.0)


def keep_best(out_dir: str | os.PathLike[str], payload: Mapping[str, Any], record: BestRecord) -> Path:
    """Write ``payload`` (a loadable checkpoint of the evaluated weights) to ``best.pt`` and the record to
    ``best.json``, each atomically; the record also travels inside ``best.pt`` under ``"best"``."""
    root = Path(out_dir)
    path = save_checkpoint({**payload, "best": record.to_dict()}, root / BEST_CHECKPOINT)
    write_text_atomically(root / BEST_RECORD, json.dumps({"checkpoint": BEST_CHECKPOINT, **record.to_dict()},
                                                         indent=2) + "\n")
    return path


def read_best(out_dir: str | os.PathLike[str]) -> BestRecord | None:
    """The record in a run's ``best.json``; None when the run kept none. ``ValueError`` naming the file
    when it is unreadable."""
    return read_best_record(out_dir, BestRecord.from_dict)
