"""Rating over training: the checkpoints of one training run, by step, on the league's scale.

With references (``references:`` in the league file) each checkpoint is rated only from its games against
them, so the line says whether the run progressed: a round robin of a run's own checkpoints measures who
beats whom, and deterministic or narrow policies cycle (an early checkpoint can beat every later one while
the ladder says the later ones are far stronger). Without references the figure is the Elo of all games,
labelled as such. This module computes what the report's section and plot show (:mod:`.report`).

A run's checkpoint names and the step in its best.json are read through :mod:`arena.run_files`, which
:mod:`arena.training` writes them with: the tournament imports nothing of the training package.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.run_files import checkpoint_step, read_best_step
from arena.tournament.ordering import ordered

if TYPE_CHECKING:
    import pandas as pd

    from arena.tournament.league_config import RankBy

REFERENCE_COLUMNS = ("reference_elo", "reference_low", "reference_high", "reference_note")


@dataclass(frozen=True)
class RunProgress:
    """What the rating over training says about one run folder."""

    run: str  # the folder of the checkpoints
    frame: "pd.DataFrame"  # by step: step, name, Elo of all games, reference Elo columns
    by_reference: bool  # rated against the league's references (else the Elo of all games)
    spearman: float  # Spearman(step, rating) over the checkpoints with a finite rating
    rated: int  # checkpoints with a finite rating
    above: int  # above every reference (saturated)
    below: int  # below every reference
    inversions: int  # pairs where a later checkpoint's 95 % interval lies wholly below an earlier one's
    all_games_spearman: float  # Spearman(step, Elo of all games), beside it
    best_step: int | None = None  # the step of the weights the run kept in best.json
    best_rank: int | None = None  # their rank among the run's checkpoints by its rating; None: no such checkpoint

    @property
    def label(self) -> str:
        """The folder as people read it (the current one by name, not ".")."""
        return self.run if self.run not in (".", "") else Path.cwd().name

    @property
    def rating(self) -> RankBy:
        """The column the run's checkpoints are rated and ranked by."""
        return "reference_elo" if self.by_reference else "elo"

    def summary(self) -> dict[str, Any]:
        """Plain JSON (an undefined correlation is null)."""
        def number(x: float) -> float | None:
            return x if math.isfinite(x) else None

        return {"run": self.run, "checkpoints": len(self.frame), "by_reference": self.by_reference,
                "spearman": number(self.spearman), "rated": self.rated, "above": self.above, "below": self.below,
                "later_below": self.inversions, "all_games_spearman": number(self.all_games_spearman),
                "best_step": self.best_step, "best_rank": self.best_rank}


def rank_correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN for fewer than two points."""
    import pandas as pd

    if len(a) < 2:
        return float("nan")
    return float(pd.Series(list(a)).rank().corr(pd.Series(list(b)).rank()))


def inversions(low: Sequence[float], high: Sequence[float]) -> int:
    """Pairs (earlier i, later j) in step order where j's interval lies wholly below i's: ``high[j] < low[i]``."""
    return sum(1 for i in range(len(low)) for j in range(i + 1, len(low)) if high[j] < low[i])


def training_runs(board: "pd.DataFrame") -> dict[str, RunProgress]:
    """Participants that are checkpoints of one training run (``ckpt_<step>.pt`` files of one folder, two or
    more), per run folder, with what their ratings say: by the reference Elo where the league has references,
    whatever ranks the leaderboard. ``board`` is a leaderboard."""
    import pandas as pd

    rows = []
    for r in board.itertuples():
        step = checkpoint_step(r.checkpoint) if isinstance(r.checkpoint, str) else None
        if step is not None:
            rows.append({"run": str(Path(r.checkpoint).parent), "step": step, "name": r.name,
                         "elo": r.elo, "elo_low": r.elo_low, "elo_high": r.elo_high,
                         **{c: getattr(r, c, math.nan if c != "reference_note" else "") for c in REFERENCE_COLUMNS}})
    if not rows:
        return {}
    out = {}
    for run, group in pd.DataFrame(rows).groupby("run"):
        if len(group) < 2:
            continue
        frame = group.sort_values("step").reset_index(drop=True)
        by_reference = bool(frame["reference_elo"].notna().any() or frame["reference_note"].astype(bool).any())
        rating: RankBy = "reference_elo" if by_reference else "elo"
        value = frame[rating].to_numpy(dtype=float)
        low = frame["reference_low" if by_reference else "elo_low"].to_numpy(dtype=float)
        high = frame["reference_high" if by_reference else "elo_high"].to_numpy(dtype=float)
        finite = [math.isfinite(v) for v in value]
        try:
            best_step = read_best_step(run)
        except ValueError:  # an unreadable best.json says nothing here
            best_step = None
        best_rank = None
        if best_step is not None and (frame["step"] == best_step).any():
            best_rank = ordered(frame, rating)["step"].tolist().index(best_step) + 1
        out[str(run)] = RunProgress(
            run=str(run), frame=frame, by_reference=by_reference,
            spearman=rank_correlation(frame["step"][finite].tolist(), value[finite].tolist()),
            rated=sum(finite), above=int((value == math.inf).sum()), below=int((value == -math.inf).sum()),
            inversions=inversions(low.tolist(), high.tolist()),
            all_games_spearman=rank_correlation(frame["step"].tolist(), frame["elo"].tolist()),
            best_step=best_step, best_rank=best_rank)
    return out
