"""The best weights a run has evaluated: ``best.pt`` and ``best.json`` beside its checkpoints.

A league policy's score against a hard opponent can swing from one checkpoint to the next (0.39 to
0.995 against the ace between neighbours, docs/experiments/), so the last checkpoint is not always the
one to keep. After each evaluation a trainer offers the evaluated weights here; they replace the
kept ones when their worst score over the evaluation opponents is higher (ties: the higher mean).
The worst case rather than the mean, because a policy is only as robust as its weakest matchup, and a
sweep of the easy opponents would otherwise hide a loss to the hard one.

The evaluation games that choose the weights also measure them: a fair figure for the kept weights
comes from fresh games (other seeds), as ``benchmarks/train_league.py`` plays.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.training.checkpoint import save_checkpoint
from arena.training.evaluation import EvalResult
from arena.training.metrics import write_text_atomically

BEST_CHECKPOINT = "best.pt"
BEST_RECORD = "best.json"


@dataclass(frozen=True)
class BestRecord:
    """Which evaluated weights are kept, and how they scored (wins plus half the draws, per game)."""

    step: int
    worst: float
    mean: float
    scores: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of(cls, step: int, results: Mapping[str, EvalResult]) -> "BestRecord | None":
        """The record of one evaluation; None when it played no games."""
        scores = {label: r.score for label, r in results.items() if r.games > 0}
        if not scores:
            return None
        return cls(step, min(scores.values()), sum(scores.values()) / len(scores), scores)

    def beats(self, other: "BestRecord | None") -> bool:
        """A higher worst score, or the same and a higher mean."""
        return other is None or (self.worst, self.mean) > (other.worst, other.mean)

    def weakest(self) -> str:
        """The opponent of the worst score."""
        return min(self.scores, key=lambda label: self.scores[label])

    def to_dict(self) -> dict[str, Any]:
        return {"step": self.step, "worst": self.worst, "mean": self.mean, "scores": dict(self.scores)}

    @classmethod
    def from_dict(cls, data: Any) -> "BestRecord":
        """A record read back from a checkpoint or best.json; ``ValueError`` naming the bad field."""
        if not isinstance(data, Mapping):
            raise ValueError(f"expected a dict, got {type(data).__name__}")
        step = data.get("step")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise ValueError(f"step: expected an int >= 0, got {step!r}"[:200])
        scores = data.get("scores")
        if not isinstance(scores, Mapping) or not all(isinstance(k, str) and is_fraction(v) for k, v in scores.items()):
            raise ValueError(f"scores: expected a dict of opponent names to fractions 0..1, got {scores!r}"[:200])
        for name in ("worst", "mean"):
            if not is_fraction(data.get(name)):
                raise ValueError(f"{name}: expected a fraction 0..1, got {data.get(name)!r}"[:200])
        return cls(step, float(data["worst"]), float(data["mean"]), {k: float(v) for k, v in scores.items()})


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
    path = Path(out_dir) / BEST_RECORD
    if not path.is_file():
        return None
    try:
        return BestRecord.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path}: {exc}") from exc
