"""A candidate against each opponent, as chess engine testers read a match: Elo difference ± error,
likelihood of superiority and draw ratio (the formulas of cutechess-cli and fastchess).

From n games with W wins, D draws and L losses:

- score s = (W + D/2) / n and Elo difference −400·log10(1/s − 1);
- its 95 % error from the trinomial variance of a game's score, σ² = (W(1−s)² + D(½−s)² + L(0−s)²)/n,
  carried through the Elo curve: the Elo of s ± 1.96·σ/√n, half their distance;
- likelihood of superiority LOS = Φ((W − L)/√(W + L)), the chance that the candidate is the stronger
  one given the decisive games (draws carry no information about it);
- draw ratio D / n.

A perfect or nil score has no finite Elo difference: it is reported as ±∞ with an unknown error.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from arena.tournament.outcomes import Games, as_outcomes
from arena.tournament.results import DRAW, P1_WINS, P2_WINS

if TYPE_CHECKING:
    import pandas as pd

MATCHUP_COLUMNS = ("candidate", "opponent", "games", "wins", "draws", "losses", "score", "elo_diff", "elo_error",
                   "los", "draw_ratio")
Z95 = 1.959963984540054


def elo_from_score(score: float) -> float:
    if score <= 0.0:
        return -math.inf
    if score >= 1.0:
        return math.inf
    return -400.0 * math.log10(1.0 / score - 1.0)


def match_stats(wins: int, draws: int, losses: int) -> dict[str, float]:
    """Score, Elo difference, its 95 % error, LOS and draw ratio of one W/D/L record."""
    n = wins + draws + losses
    if n == 0:
        nan = math.nan
        return {"score": nan, "elo_diff": nan, "elo_error": nan, "los": nan, "draw_ratio": nan}
    s = (wins + 0.5 * draws) / n
    var = (wins * (1.0 - s) ** 2 + draws * (0.5 - s) ** 2 + losses * s ** 2) / n
    margin = Z95 * math.sqrt(var / n)
    low, high = elo_from_score(s - margin), elo_from_score(s + margin)
    error = (high - low) / 2.0 if 0.0 < s < 1.0 and math.isfinite(low) and math.isfinite(high) else math.nan
    decisive = wins + losses
    los = 0.5 * (1.0 + math.erf((wins - losses) / math.sqrt(2.0 * decisive))) if decisive else 0.5
    return {"score": s, "elo_diff": elo_from_score(s), "elo_error": error, "los": los, "draw_ratio": draws / n}


def matchups(games: Games, names: Sequence[str], candidates: Sequence[int]) -> "pd.DataFrame":
    """One row per (candidate, opponent) that played, counted from the candidate's side; candidates in
    their order, opponents by number."""
    import numpy as np
    import pandas as pd

    games = as_outcomes(games)
    width = max([len(names), *(int(side.max()) + 1 for side in (games.p1, games.p2) if len(side))])
    rows = []
    for me in dict.fromkeys(candidates):  # W, D, L against each opponent, from either side
        counts = np.zeros((3, width), dtype=np.int64)
        for side, other, mine in ((games.p1, games.p2, P1_WINS), (games.p2, games.p1, P2_WINS)):
            mask = side == me
            result = np.where(games.winner[mask] == mine, 0, np.where(games.winner[mask] == DRAW, 1, 2))
            np.add.at(counts, (result, other[mask]), 1)
        for opponent in np.flatnonzero(counts.sum(0)).tolist():
            w, d, l_ = (int(c) for c in counts[:, opponent])
            rows.append({"candidate": names[me], "opponent": names[opponent], "games": w + d + l_, "wins": w,
                         "draws": d, "losses": l_, **match_stats(w, d, l_)})
    return pd.DataFrame(rows, columns=list(MATCHUP_COLUMNS))


def format_matchups(frame: "pd.DataFrame") -> list[str]:
    """Console lines: ``cand vs opp: 120 games W-D-L 70-20-30, Elo +117 ± 64, LOS 100.0 %, draws 16.7 %``."""
    lines = []
    for r in frame.itertuples(index=False):
        diff = r.elo_diff
        shown = "+∞" if diff == math.inf else "−∞" if diff == -math.inf else f"{diff:+.0f}"
        error = "" if r.elo_error != r.elo_error else f" ± {r.elo_error:.0f}"
        lines.append(f"  {r.candidate} vs {r.opponent}: {r.games} games, W-D-L {r.wins}-{r.draws}-{r.losses}, "
                     f"Elo {shown}{error}, LOS {100 * r.los:.1f} %, draws {100 * r.draw_ratio:.1f} %")
    return lines
