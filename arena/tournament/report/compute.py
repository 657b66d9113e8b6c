"""The report's numbers: ratings, the leaderboard and head-to-head tables, forfeits and warnings.

Everything here is computed from the stored games, so ``arena leaderboard`` can rebuild it at any time;
:mod:`~arena.tournament.report.render` turns it into text and files, :mod:`~arena.tournament.report.plot`
into pictures.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.tournament.league_config import RankBy, RatingConfig
from arena.tournament.matchups import matchups
from arena.tournament.ordering import ordered
from arena.tournament.outcomes import NO_FORFEIT, Games, Outcomes, as_outcomes
from arena.tournament.over_training import RunProgress, training_runs
from arena.tournament.ratings import (
    ELO_BASE,
    EloFit,
    ReferenceFit,
    ReferencesUnlinked,
    bradley_terry,
    pairwise,
    reference_elo,
    trueskill_ratings,
)
from arena.tournament.report.warnings import ReportWarning
from arena.tournament.results import DRAW, P1_WINS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

LEADERBOARD_COLUMNS = ("rank", "name", "agent", "checkpoint", "elo", "elo_low", "elo_high", "rank_low", "rank_high",
                       "note", "games", "wins", "draws", "losses", "forfeits", "score", "mu", "sigma",
                       "mu_minus_3sigma", "reference_elo", "reference_low", "reference_high", "reference_note")


@dataclass(frozen=True)
class Entrant:
    """What the report needs to know about a participant."""

    name: str
    agent: str
    checkpoint: str | None = None
    key: str = ""  # stable identity (database key) that fixes the TrueSkill order


@dataclass
class TournamentReport:
    """The result handed to ``arena_tournament_finished`` observers and printed by the CLI."""

    name: str
    output_dir: Path
    leaderboard: "pd.DataFrame"  # one row per participant, LEADERBOARD_COLUMNS, best first
    head_to_head: "pd.DataFrame"  # score of the row against the column (draws half), leaderboard order
    forfeits: "pd.DataFrame"  # participant, reason, games
    games: int  # games rated
    expected_games: int  # games the schedule asks for
    files: dict[str, Path] = field(default_factory=dict)
    run: dict[str, Any] = field(default_factory=dict)  # what this run did: games played, wall time, …
    warnings: list[ReportWarning] = field(default_factory=list)  # what makes the ratings less comparable
    scale: str = ""  # what fixes the Elo scale, in words
    matchups: "pd.DataFrame | None" = None  # gauntlets: each candidate against each opponent (matchups.py)
    replays: list[Any] = field(default_factory=list)  # notable games recorded (replays.ReplayEntry)
    rank_by: RankBy = "elo"  # the column that ranks the leaderboard (arena.tournament.ordering)
    over_training: dict[str, RunProgress] = field(default_factory=dict)  # training runs among the participants

    @property
    def complete(self) -> bool:
        return self.games >= self.expected_games

    @property
    def by_reference(self) -> bool:
        """Ranked by the rating against the league's references."""
        return self.rank_by == "reference_elo"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "output": str(self.output_dir), "games": self.games,
            "expected_games": self.expected_games, "complete": self.complete, **self.run,
            "leaderboard": records(self.leaderboard), "warnings": [w.to_json() for w in self.warnings],
            "scale": self.scale, "rank_by": self.rank_by, "by_reference": self.by_reference,
            "matchups": records(self.matchups) if self.matchups is not None else [],
            "forfeits": records(self.forfeits),
            "replays": [vars(r).copy() for r in self.replays],
            "over_training": [run.summary() for run in self.over_training.values()],
            "files": {k: str(v) for k, v in self.files.items()},
        }


def build_report(name: str, output_dir: str | os.PathLike[str], entrants: Sequence[Entrant],
                 games: Games, rating: RatingConfig, seed: int = 0,
                 expected_games: int | None = None, candidates: Sequence[int] = (),
                 references: Sequence[int] = (), source: str = "") -> TournamentReport:
    """Rate ``games`` (participant positions as ids) and tabulate them; ``candidates`` (a gauntlet's)
    also get their match statistics against each opponent, and with ``references`` everyone is also
    rated against them alone (:func:`reference_elo`). ``rating.rank_by`` says which Elo ranks the rows
    (the Elo of all games when the references fix no scale). ``source`` (the league file) names where
    the references were declared when their games cannot fix a scale."""
    import pandas as pd

    n, names = len(entrants), [e.name for e in entrants]
    games = as_outcomes(games)  # columns once, for every table below
    warnings: list[ReportWarning] = []
    anchor = names.index(rating.anchor) if rating.anchor in names else None
    if rating.anchor and anchor is None:
        warnings.append(ReportWarning("anchor_absent", names=(rating.anchor,)))
    fit = bradley_terry(games, n, rating.bootstrap_rounds, seed, anchor=anchor, anchor_elo=rating.anchor_elo)
    scale = fit_scale(fit, rating if anchor is not None else None)
    warnings += fit_warnings(fit, names)
    by_reference = None
    if references:
        by_reference = rate_against_references(games, names, references, rating, seed, anchor,
                                               f"{source or 'league'}: references", warnings)
    if by_reference is not None:
        scale += f"; reference Elo: {_reference_scale(rating.anchor if anchor in references else '', rating)}"
    skills = trueskill_ratings(games, n, rating, [e.key or e.name for e in entrants], seed)
    rows = leaderboard_rows(entrants, games, skills, fit, by_reference)
    rank_by: RankBy = rating.rank_by if by_reference is not None else "elo"
    board = ordered(pd.DataFrame(rows), rank_by)
    board.insert(0, "rank", range(1, n + 1))
    board = board.reset_index(drop=True)[list(LEADERBOARD_COLUMNS)]
    return TournamentReport(name, Path(output_dir), board, head_to_head(entrants, board, games),
                            forfeit_table(entrants, games), len(games),
                            expected_games if expected_games is not None else len(games), warnings=warnings,
                            scale=scale, matchups=matchups(games, names, list(candidates)) if candidates else None,
                            rank_by=rank_by, over_training=training_runs(board))


def fit_scale(fit: EloFit, anchored: RatingConfig | None) -> str:
    """What fixes the Elo scale of ``fit`` (``anchored``: the rating whose anchor played), and where its
    intervals come from, in words."""
    if anchored is not None:
        scale = f"{anchored.anchor} is fixed at Elo {anchored.anchor_elo:g}"
    else:
        scale = (f"the average of the participants with mixed records (neither unbeaten nor winless) is Elo "
                 f"{1000:g}")
    if fit.method == "sandwich":
        scale += ("; intervals and rank bounds from normal draws around the fit (its sandwich covariance), as "
                  "refitting every resample is too slow for this many participants")
    elif fit.method == "bootstrap":
        scale += "; intervals and rank bounds from bootstrap resamples of the games, each refitted"
    return scale


def fit_warnings(fit: EloFit, names: Sequence[str]) -> list[ReportWarning]:
    """What makes the fit's ratings less comparable: a league split into groups, perfect records."""
    warnings = []
    if len(fit.components) > 1:
        groups = tuple(tuple(names[i] for i in group) for group in fit.components)
        warnings.append(ReportWarning("split_league", groups=groups))
    flagged = [(names[i], flag) for i, flag in enumerate(fit.flags) if flag in ("unbeaten", "winless")]
    if flagged:
        warnings.append(ReportWarning("perfect_records", names=tuple(n for n, _ in flagged),
                                      flags=tuple(f for _, f in flagged)))
    return warnings


def rate_against_references(games: Games, names: Sequence[str], references: Sequence[int], rating: RatingConfig,
                            seed: int, anchor: int | None, where: str, warnings: list[ReportWarning]
                            ) -> ReferenceFit | None:
    """Everyone rated from its games against the references alone (None while their games do not link
    them); what makes that rating less sure goes to ``warnings``, under ``where``."""
    try:
        by_reference = reference_elo(games, len(names), references, rating.bootstrap_rounds, seed, anchor=anchor,
                                     anchor_elo=rating.anchor_elo)
    except ReferencesUnlinked as exc:
        warnings.append(ReportWarning("references_unlinked", where=where,
                                      groups=tuple(tuple(names[i] for i in group) for group in exc.groups)))
        return None
    if by_reference.perfect:
        warnings.append(ReportWarning("references_perfect", where=where,
                                      names=tuple(names[i] for i in by_reference.perfect)))
    return by_reference


def leaderboard_rows(entrants: Sequence[Entrant], games: Games, skills: Sequence[Any], fit: EloFit,
                     by_reference: ReferenceFit | None) -> list[dict[str, Any]]:
    """One row per participant, in entrant order: its record, TrueSkill, and both Elos."""
    n = len(entrants)
    ref_elo, ref_low, ref_high, ref_flags = ((by_reference.elo, by_reference.low, by_reference.high, by_reference.flags)
                                             if by_reference is not None else (None, None, None, ("",) * n))
    tally = record_counts(games, n)
    rows = []
    for i, e in enumerate(entrants):
        t = {column: int(counts[i]) for column, counts in tally.items()}
        rows.append({
            "name": e.name, "agent": e.agent, "checkpoint": _show_path(e.checkpoint),
            "mu": skills[i].mu, "sigma": skills[i].sigma, "mu_minus_3sigma": skills[i].conservative,
            **t, "score": (t["wins"] + 0.5 * t["draws"]) / t["games"] if t["games"] else math.nan,
            "elo": float(fit.elo[i]), "elo_low": float(fit.low[i]), "elo_high": float(fit.high[i]),
            "rank_low": _maybe(fit.rank_low, i), "rank_high": _maybe(fit.rank_high, i), "note": fit.flags[i],
            "reference_elo": _maybe(ref_elo, i), "reference_low": _maybe(ref_low, i),
            "reference_high": _maybe(ref_high, i), "reference_note": ref_flags[i],
        })
    return rows


def head_to_head(entrants: Sequence[Entrant], board: "pd.DataFrame", games: Games) -> "pd.DataFrame":
    """Each row's score against each column (draws half), NaN where they never met, in leaderboard order."""
    import numpy as np
    import pandas as pd

    points, played = pairwise(games, len(entrants))  # [i, j]: i's points (draw ½) and games against j
    first: dict[str, int] = {}
    for i, e in enumerate(entrants):
        first.setdefault(e.name, i)
    order = np.array([first[nm] for nm in board["name"]], dtype=np.int64)
    cell = np.ix_(order, order)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(played[cell] > 0, points[cell] / played[cell], math.nan)
    return pd.DataFrame(share, index=pd.Index([entrants[i].name for i in order], name="player"),
                        columns=[entrants[j].name for j in order])


def forfeit_table(entrants: Sequence[Entrant], games: Outcomes) -> "pd.DataFrame":
    """Forfeited games by participant and reason."""
    import pandas as pd

    rows: dict[tuple[str, str], int] = {}
    forfeited = games.forfeit_by != NO_FORFEIT
    for who, why in zip(games.forfeit_by[forfeited].tolist(), games.forfeit_reason[forfeited]):
        key = (entrants[who].name, why or "")
        rows[key] = rows.get(key, 0) + 1
    return pd.DataFrame([{"participant": who, "reason": why, "games": count}
                         for (who, why), count in sorted(rows.items())], columns=["participant", "reason", "games"])


def record_counts(games: Games, num_participants: int) -> dict[str, "np.ndarray"]:
    """Each participant's games, wins, draws, losses and forfeits (arrays over participants), counted with
    ``bincount``; a game whose winner is neither a draw nor side 1 is side 2's win."""
    import numpy as np

    games = as_outcomes(games)
    n = num_participants

    def count(who: "np.ndarray") -> "np.ndarray":
        return np.bincount(who, minlength=n)[:n]

    drawn = games.winner == DRAW
    first = games.winner == P1_WINS
    second = ~drawn & ~first
    return {"games": count(games.p1) + count(games.p2),
            "wins": count(games.p1[first]) + count(games.p2[second]),
            "draws": count(games.p1[drawn]) + count(games.p2[drawn]),
            "losses": count(games.p2[first]) + count(games.p1[second]),
            "forfeits": count(games.forfeit_by[games.forfeit_by != NO_FORFEIT])}


def _reference_scale(anchor: str, rating: RatingConfig) -> str:
    if anchor:
        return f"the reference {anchor} is fixed at Elo {rating.anchor_elo:g}"
    return f"the average of the references with mixed records among themselves is Elo {ELO_BASE:g}"


def _maybe(values: Any, i: int) -> float:
    return float(values[i]) if values is not None else math.nan


def _show_path(path: str | None) -> str:
    if not path:
        return ""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if rel.startswith("..") else rel


def records(frame: "pd.DataFrame") -> list[dict[str, Any]]:
    """Rows as plain dicts with NaN and ±inf as None (strict JSON; a note says what an infinite rating
    was), ready for JSON."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({str(k): (None if isinstance(v, float) and not math.isfinite(v) else _plain(v))
                    for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return value


def percent(x: float, decimals: int = 0) -> str:
    """A fraction as a percentage for people, rounded to ``decimals`` but never to 0 or 100 unless it is
    exactly that: one upset in 256 games is ``0.4%``, not ``0%``, and ``100%`` means every game won.
    Where rounding would still say 0 or 100 it adds a decimal, then gives ``<0.1%`` or ``>99.9%``."""
    if x != x:
        return ""
    text = f"{100.0 * x:.{decimals}f}"
    if 0.0 < x < 1.0 and float(text) in (0.0, 100.0):
        finer = decimals + 1
        text = f"{100.0 * x:.{finer}f}"
        if float(text) in (0.0, 100.0):
            step = 10.0 ** -finer
            return f"<{step:g}%" if x < 0.5 else f">{100.0 - step:g}%"
    return text + "%"
