"""Which rating ranks a table of participants, and the ranking itself: the one place that decides it,
for the leaderboard (by ``rating.rank_by``) and for a training run's checkpoints (by the run's rating).

The leaderboard's default is the Bradley-Terry Elo of all games: who beats whom in this league. The Elo
against the references measures every participant with the same few opponents, which is what a line
over training needs, but it cannot find a champion: against weak references every strong participant
scores near 100 %, and their order among themselves is noise. So a league file asks for it
(``rank_by: reference_elo``) rather than getting it with its references.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from arena.tournament.league_config import RANK_BY, RankBy
from arena.tournament.ratings import reference_order

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["RANK_BY", "RankBy", "ordered"]


def ordered(frame: "pd.DataFrame", rank_by: RankBy) -> "pd.DataFrame":
    """``frame``'s rows best first, ties by ``name``.

    ``elo``: by the ``elo`` column, unrated (NaN) last. ``reference_elo``: by :func:`reference_order` of the
    ``reference_elo``/``reference_low``/``reference_high`` columns: above every reference (by its lower
    bound), rated, below every reference (by its upper bound), unrated last.
    """
    import numpy as np

    if rank_by not in RANK_BY:
        raise ValueError(f"unknown rank_by {rank_by!r}; expected one of {', '.join(RANK_BY)}")
    if rank_by == "reference_elo":
        keys = [reference_order(e, lo, hi) for e, lo, hi in
                zip(frame["reference_elo"], frame["reference_low"], frame["reference_high"])]
        group, value = np.array([-k[0] for k in keys]), np.array([k[1] for k in keys], dtype=float)
    else:
        value = frame["elo"].to_numpy(dtype=float)
        group = np.isnan(value).astype(int)
    keyed = frame.assign(_group=group, _value=value)
    keyed = keyed.sort_values(["_group", "_value", "name"], ascending=[True, False, True], kind="mergesort")
    return keyed.drop(columns=["_group", "_value"])
