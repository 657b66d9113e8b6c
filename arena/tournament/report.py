"""Leaderboard and head-to-head tables (pandas), and the files written from them.

Everything here is computed from the stored games, so ``arena leaderboard`` can rebuild it at any time.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.tournament.league_config import RankBy, RatingConfig
from arena.tournament.matchups import format_matchups, matchups
from arena.tournament.ordering import ordered
from arena.tournament.outcomes import NO_FORFEIT, Games, as_outcomes
from arena.tournament.over_training import RunProgress, training_runs
from arena.tournament.ratings import (
    ELO_BASE,
    REFERENCE,
    SATURATED_SCORE,
    ReferencesUnlinked,
    bradley_terry,
    pairwise,
    reference_elo,
    trueskill_ratings,
)
from arena.tournament.results import DRAW, P1_WINS

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

LEADERBOARD_COLUMNS = ("rank", "name", "agent", "checkpoint", "elo", "elo_low", "elo_high", "rank_low", "rank_high",
                       "note", "games", "wins", "draws", "losses", "forfeits", "score", "mu", "sigma",
                       "mu_minus_3sigma", "reference_elo", "reference_low", "reference_high", "reference_note")
ORDER_NOTE = ("Ordered by Bradley-Terry Elo (maximum likelihood over all games; a draw is half a win), which does "
              "not depend on the order the games were played in. The Elo interval and the rank bounds are 95 % "
              "intervals; “unknown” means the games cannot bound it (no games, a single game, only draws), and an "
              "unbeaten or winless record's Elo has no upper or lower bound. TrueSkill μ, σ and μ−3σ are given "
              "beside it.")
ORDER_REFERENCE_NOTE = (" The reference Elo beside it rates each participant from its games against the references "
                        "alone: the same yardstick for everyone, which the rating over training follows, but one that "
                        "cannot tell apart participants far above the references (`rating.rank_by: reference_elo` "
                        "ranks by it).")
REFERENCE_NOTE = ("Ordered by reference Elo (`rating.rank_by: reference_elo`): the references' ratings come from "
                  "their games among themselves, and every other participant is rated only from its games against "
                  "them (95 % profile-likelihood interval), "
                  "so one participant's blind spot against another cannot reorder the rest. Scoring at least "
                  "{saturated} against every reference is “above every reference”: shown by its lower bound, as the "
                  "few games it did not win cannot rank it among its like. The Elo from all games is beside it.")
FILES = {"leaderboard": "leaderboard.csv", "head_to_head": "head_to_head.csv", "markdown": "report.md",
         "picture": "head_to_head.png"}


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
    warnings: list[str] = field(default_factory=list)  # what makes the ratings less comparable (a split league)
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
            "leaderboard": records(self.leaderboard), "warnings": list(self.warnings), "scale": self.scale,
            "rank_by": self.rank_by, "by_reference": self.by_reference,
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
    import numpy as np
    import pandas as pd

    n = len(entrants)
    games = as_outcomes(games)  # columns once, for every table below
    keys = [e.key or e.name for e in entrants]
    skills = trueskill_ratings(games, n, rating, keys, seed)
    names = [e.name for e in entrants]
    warnings: list[str] = []
    anchor = names.index(rating.anchor) if rating.anchor in names else None
    if rating.anchor and anchor is None:
        warnings.append(f"rating.anchor {rating.anchor!r} is not a participant of this run; the scale is the average "
                        f"of the mixed records instead")
    fit = bradley_terry(games, n, rating.bootstrap_rounds, seed, anchor=anchor, anchor_elo=rating.anchor_elo)
    if anchor is not None:
        scale = f"{rating.anchor} is fixed at Elo {rating.anchor_elo:g}"
    else:
        scale = (f"the average of the participants with mixed records (neither unbeaten nor winless) is Elo "
                 f"{1000:g}")
    if fit.method == "sandwich":
        scale += ("; intervals and rank bounds from normal draws around the fit (its sandwich covariance), as "
                  "refitting every resample is too slow for this many participants")
    elif fit.method == "bootstrap":
        scale += "; intervals and rank bounds from bootstrap resamples of the games, each refitted"
    if len(fit.components) > 1:
        shown = "; ".join("{" + ", ".join(names[i] for i in group[:4]) + (", …" if len(group) > 4 else "") + "}"
                          for group in fit.components[:4])
        warnings.append(f"the league is split into {len(fit.components)} groups that never played each other "
                        f"({shown}): Elo and ranks compare only within a group")
    flagged = [f"{names[i]} ({flag})" for i, flag in enumerate(fit.flags) if flag in ("unbeaten", "winless")]
    if flagged:
        more = ", …" if len(flagged) > 6 else ""
        warnings.append(f"perfect records have no finite Elo: {', '.join(flagged[:6])}{more}"
                        f"; their Elo is the capped estimate and the open side of the interval is unbounded")
    by_reference = None
    if references:
        try:
            by_reference = reference_elo(games, n, references, rating.bootstrap_rounds, seed, anchor=anchor,
                                         anchor_elo=rating.anchor_elo)
        except ReferencesUnlinked as exc:
            shown = "; ".join("{" + ", ".join(names[i] for i in group) + "}" for group in exc.groups)
            warnings.append(f"{source or 'league'}: references: their games so far do not link them ({shown}); "
                            f"no reference rating until they have played each other")
        if by_reference is not None and by_reference.perfect:
            warnings.append(f"{source or 'league'}: references: {', '.join(names[i] for i in by_reference.perfect)} "
                            f"won or lost every game among the references, so the scale's spread there is the "
                            f"fit's cap, not a measurement; expected references that score between them")
    ref_elo, ref_low, ref_high, ref_flags = ((by_reference.elo, by_reference.low, by_reference.high, by_reference.flags)
                                             if by_reference is not None else (None, None, None, ("",) * n))
    points, played = pairwise(games, n)  # [i, j]: i's points (draw ½) and games against j
    tally = record_counts(games, n)
    forfeit_rows: dict[tuple[str, str], int] = {}
    forfeited = games.forfeit_by != NO_FORFEIT
    for who, why in zip(games.forfeit_by[forfeited].tolist(), games.forfeit_reason[forfeited]):
        key = (entrants[who].name, why or "")
        forfeit_rows[key] = forfeit_rows.get(key, 0) + 1

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
    rank_by: RankBy = rating.rank_by if by_reference is not None else "elo"
    board = ordered(pd.DataFrame(rows), rank_by)
    if by_reference is not None:
        scale += f"; reference Elo: {_reference_scale(rating.anchor if anchor in references else '', rating)}"
    board.insert(0, "rank", range(1, n + 1))
    board = board.reset_index(drop=True)[list(LEADERBOARD_COLUMNS)]

    first: dict[str, int] = {}
    for i, e in enumerate(entrants):
        first.setdefault(e.name, i)
    order = np.array([first[nm] for nm in board["name"]], dtype=np.int64)
    cell = np.ix_(order, order)
    with np.errstate(invalid="ignore", divide="ignore"):
        share = np.where(played[cell] > 0, points[cell] / played[cell], math.nan)
    h2h = pd.DataFrame(share, index=pd.Index([entrants[i].name for i in order], name="player"),
                       columns=[entrants[j].name for j in order])
    forfeits = pd.DataFrame([{"participant": who, "reason": why, "games": count}
                             for (who, why), count in sorted(forfeit_rows.items())],
                            columns=["participant", "reason", "games"])
    return TournamentReport(name, Path(output_dir), board, h2h, forfeits, len(games),
                            expected_games if expected_games is not None else len(games), warnings=warnings,
                            scale=scale, matchups=matchups(games, names, list(candidates)) if candidates else None,
                            rank_by=rank_by, over_training=training_runs(board))


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


# -- text forms --------------------------------------------------------------------------------------


CONSOLE_COLUMNS = ("rank", "name", "elo", "95% CI", "score", "W-D-L", "note")  # "ref elo" when that ranks it


def display_frame(board: "pd.DataFrame", rank_by: RankBy = "elo") -> "pd.DataFrame":
    """Every leaderboard column with numbers rounded for people (report.md and ``--format markdown``;
    the CSV keeps full precision). The Elo that ranks the rows (``rank_by``) leads; the reference
    rating's columns are there where the league has references."""
    import pandas as pd

    referenced = bool(board["reference_note"].astype(bool).any())
    all_games = {
        "elo": board["elo"].map(_elo),
        "elo 95% CI": [_interval(lo, hi) for lo, hi in zip(board["elo_low"], board["elo_high"])],
        "elo rank 95%" if referenced else "rank 95%": [_ranks(lo, hi) for lo, hi in
                                                       zip(board["rank_low"], board["rank_high"])],
    }
    against_references = {"ref elo": _reference_values(board), "ref 95% CI": _reference_intervals(board)} \
        if referenced else {}
    first, second = (against_references, all_games) if rank_by == "reference_elo" else (all_games, against_references)
    return pd.DataFrame({
        "rank": board["rank"], "name": board["name"], **first, **second, "note": _notes(board),
        "games": board["games"], "W": board["wins"], "D": board["draws"], "L": board["losses"],
        "forfeits": board["forfeits"], "score": board["score"].map(_pct),
        "mu": board["mu"].map("{:.2f}".format), "sigma": board["sigma"].map("{:.2f}".format),
        "mu-3σ": board["mu_minus_3sigma"].map("{:.2f}".format),
    })


def console_frame(board: "pd.DataFrame", rank_by: RankBy = "elo") -> "pd.DataFrame":
    """The leaderboard as the console shows it: :data:`CONSOLE_COLUMNS`, the few a reader needs to see
    who is ahead and on what evidence. The Elo and its interval are the rating that ranks the rows (the
    Elo against the references, as ``ref elo``, with ``rank_by: reference_elo``); the CSV and report.md
    have the rest."""
    import pandas as pd

    columns = list(CONSOLE_COLUMNS)
    if rank_by == "reference_elo":
        columns[2], elo, interval = "ref elo", _reference_values(board), _reference_intervals(board)
    else:
        elo = board["elo"].map(_elo).tolist()
        interval = [_interval(lo, hi) for lo, hi in zip(board["elo_low"], board["elo_high"])]
    return pd.DataFrame(dict(zip(columns, (
        board["rank"], board["name"], elo, interval, board["score"].map(_pct),
        [f"{w}-{d}-{lost}" for w, d, lost in zip(board["wins"], board["draws"], board["losses"])], _notes(board)))))


def _notes(board: "pd.DataFrame") -> list[str]:
    """The note column for people: the reference rating's note (where the league has one) and the Elo's."""
    return [", ".join(part for part in (ref, note) if part) for ref, note in
            zip(board["reference_note"].fillna(""), board["note"].fillna(""))]


def _elo(x: float) -> str:
    return "unknown" if x != x else f"{x:.0f}"


def _reference_values(board: "pd.DataFrame") -> list[str]:
    return [_reference_value(x, lo, hi) for x, lo, hi in
            zip(board["reference_elo"], board["reference_low"], board["reference_high"])]


def _reference_intervals(board: "pd.DataFrame") -> list[str]:
    return [_interval(lo, hi) if x == x else "" for x, lo, hi in
            zip(board["reference_elo"], board["reference_low"], board["reference_high"])]


def _reference_value(elo: float, low: float, high: float) -> str:
    """A reference Elo for people: "> 1850" above every reference, "< 400" below, "" unrated."""
    if elo != elo:
        return ""
    if elo == math.inf:
        return f"> {low:.0f}"
    if elo == -math.inf:
        return f"< {high:.0f}"
    return f"{elo:.0f}"


def _ranks(lo: float, hi: float) -> str:
    if lo != lo or hi != hi:
        return ""
    return f"{lo:.0f}" if lo == hi else f"{lo:.0f}–{hi:.0f}"


def _pct(x: float) -> str:
    return percent(x, 1)


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


def _interval(lo: float, hi: float) -> str:
    if lo != lo and hi != hi:
        return "unknown"
    show = lambda x: "?" if x != x else "−∞" if x == -math.inf else "∞" if x == math.inf else f"{x:.0f}"  # noqa: E731
    return f"{show(lo)}–{show(hi)}"


def format_table(board: "pd.DataFrame", rank_by: RankBy = "elo") -> str:
    """The console's leaderboard (:func:`console_frame`) as aligned text."""
    return console_frame(board, rank_by).to_string(index=False)


def markdown_table(frame: "pd.DataFrame", index: bool = False) -> str:
    """A GitHub-flavoured Markdown table (no ``tabulate`` dependency)."""
    df = frame.reset_index() if index else frame
    cols = [str(c) for c in df.columns]
    lines = ["| " + " | ".join(cols) + " |",
             "|" + "|".join("---:" if _numeric(df[c]) else "---" for c in df.columns) + "|"]
    for row in df.itertuples(index=False):
        lines.append("| " + " | ".join(_cell(v) for v in row) + " |")
    return "\n".join(lines)


def _numeric(series: Any) -> bool:
    import pandas as pd

    return bool(pd.api.types.is_numeric_dtype(series))


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return "" if value != value else f"{value:.3g}" if abs(value) < 1 else f"{value:.2f}"
    return str(value).replace("|", "\\|")


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


def _order_note(report: TournamentReport) -> str:
    """What ranks report.md's leaderboard, in words."""
    if report.by_reference:
        return REFERENCE_NOTE.format(saturated=percent(SATURATED_SCORE))
    referenced = bool(report.leaderboard["reference_note"].astype(bool).any())
    return ORDER_NOTE + (ORDER_REFERENCE_NOTE if referenced else "")


def markdown_report(report: TournamentReport) -> str:
    h2h = report.head_to_head.map(percent)
    parts = [
        f"# Tournament {report.name}",
        "",
        f"{report.games:,} games rated" + ("" if report.complete else
                                            f" of {report.expected_games:,} scheduled (stopped early: the SPRT "
                                            f"decided every candidate)" if report.run.get("stopped_by_sprt") else
                                            f" of {report.expected_games:,} scheduled (incomplete: run the "
                                            f"tournament again to play the rest)") + ".",
        "",
        "## Leaderboard",
        "",
        _order_note(report) + f" Elo scale: {report.scale or 'league average 1000'}. Score counts a draw as half "
                              f"a win.",
        "",
        *[f"> **Warning:** {w}\n" for w in report.warnings],
        markdown_table(display_frame(report.leaderboard, report.rank_by)),
        "",
        *(["## Candidates", "",
           "Each candidate against each opponent: Elo difference from the score with its 95 % error, the "
           "likelihood of superiority (LOS) from the decisive games, and the draw ratio.", "",
           markdown_table(report.matchups), ""] if report.matchups is not None and not report.matchups.empty
          else []),
        *sprt_section(report.run),
        "## Head to head",
        "",
        "Score of the row's player against the column's player." + _picture_note(len(report.head_to_head)),
        "",
        markdown_table(h2h, index=True),
        "",
        "## Forfeits",
        "",
    ]
    if report.forfeits.empty:
        parts.append("None: every game was played out.")
    else:
        parts.append("A forfeit counts as a loss for the participant that misbehaved.")
        parts.append("")
        parts.append(markdown_table(report.forfeits))
    if report.over_training:
        parts += ["", *over_training_lines(report.over_training, reference_names(report.leaderboard))]
    if report.replays:
        parts += ["", "## Replays", "",
                  "Notable games of each pairing, recorded: open the .html in a browser (offline), the .acmi in "
                  "Tacview. Blue flew p1, Red p2.", "",
                  "| Blue (p1) | Red (p2) | game | why | watch |", "|---|---|---:|---|---|"]
        for r in report.replays:
            watch = f"[html]({r.html}) · [acmi]({r.acmi})" if r.html else f"not recorded: {r.skipped}"
            parts.append(f"| {_cell(r.p1)} | {_cell(r.p2)} | {r.game} | {_cell(r.reason)} | {watch} |")
    return "\n".join(parts) + "\n"


def _picture_note(n: int) -> str:
    """What head_to_head.png leaves out at this size, where that is more than the numbers in its cells."""
    if n <= NAMES_MAX:
        return ""
    return (f" The picture (head_to_head.png) shows these scores as colours only, its axes marked with "
            f"leaderboard ranks: more than {NAMES_MAX} names would not be legible there.")


SPRT_NOTE = ("Each candidate's sequential test against the field: H0 says its logistic Elo advantage is elo0, H1 "
             "says elo1; the log-likelihood ratio (LLR) accepts H1 at the upper bound and H0 at the lower one. "
             "Game g against an opponent and game g with the sides swapped start alike, so their outcomes are "
             "correlated: together they count as one pair (pentanomial model; pairs scoring 0, ½, 1, 1½, 2 "
             "points), and a game whose twin was not played yet counts alone (trinomial model).")
VERDICTS = {"H1": "H1 accepted", "H0": "H0 accepted", "": "undecided"}


def sprt_section(run: dict[str, Any]) -> list[str]:
    """The report.md lines of a gauntlet's SPRT (none without one)."""
    tests = run.get("sprt")
    if not tests:
        return []
    rows = ["| candidate | elo0 | elo1 | W-D-L | pairs 0-½-1-1½-2 | unpaired games | model | LLR | bounds "
            "| verdict |", "|---|---:|---:|---|---|---:|---|---:|---|---|"]
    for t in tests:
        pairs = "-".join(str(c) for c in t.get("pentanomial", ()))
        elo0, elo1 = (f"{t[k]:g}" if isinstance(t.get(k), (int, float)) else "" for k in ("elo0", "elo1"))
        rows.append(f"| {_cell(t['candidate'])} | {elo0} | {elo1} | "
                    f"{t['wins']}-{t['draws']}-{t['losses']} | {pairs} | {t.get('unpaired', '')} | "
                    f"{t.get('model', '')} | {t['llr']:+.2f} | {t['lower']:+.2f}, {t['upper']:+.2f} | "
                    f"{VERDICTS[t['verdict']]} |")
    stopped = " Every candidate was decided, so the rest of the schedule was not played." \
        if run.get("stopped_by_sprt") else ""
    return ["## SPRT", "", SPRT_NOTE + stopped, "", *rows, ""]


def sprt_lines(run: dict[str, Any]) -> list[str]:
    """The console lines of a gauntlet's SPRT: record, pairs, the model the ratio used, verdict."""
    head = "SPRT (log-likelihood ratio against its bounds; side-swapped twin games count as one pair)"
    if run.get("stopped_by_sprt"):
        head += ": every candidate decided, the rest of the schedule was not played"
    lines = [head + ":"]
    for t in run["sprt"]:
        pairs = "-".join(str(c) for c in t.get("pentanomial", ()))
        lines.append(f"  {t['candidate']}: W-D-L {t['wins']}-{t['draws']}-{t['losses']}, pairs 0-2 points "
                     f"{pairs or '?'}, {t.get('unpaired', '?')} unpaired; {t.get('model', '')} LLR {t['llr']:+.2f} "
                     f"({t['lower']:+.2f}, {t['upper']:+.2f}): {VERDICTS[t['verdict']]}")
    return lines


# -- files -------------------------------------------------------------------------------------------


def write_report(report: TournamentReport, directory: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """Write the CSVs, Markdown and the head-to-head picture; returns their paths."""
    out = Path(directory) if directory is not None else report.output_dir
    out.mkdir(parents=True, exist_ok=True)
    paths = {k: out / v for k, v in FILES.items()}
    report.leaderboard.to_csv(paths["leaderboard"], index=False)
    report.head_to_head.to_csv(paths["head_to_head"])
    paths["markdown"].write_text(markdown_report(report), encoding="utf-8")
    plot_head_to_head(report.head_to_head, paths["picture"], title=f"{report.name}: head to head")
    picture = out / "rating_over_training.png"
    if report.over_training:
        paths["rating_over_training"] = picture
        board = report.leaderboard
        plot_rating_over_training(report.over_training, picture, board[board["reference_note"] == REFERENCE],
                                  title=f"{report.name}: rating over training")
    elif picture.exists():
        picture.unlink()  # from an earlier league in this folder: not about these participants
    report.files = paths
    return paths


def reference_names(board: "pd.DataFrame") -> list[str]:
    return board.loc[board["reference_note"] == REFERENCE, "name"].tolist()


def over_training_lines(runs: dict[str, RunProgress], references: Sequence[str]) -> list[str]:
    """The report's "Rating over training" section."""
    if not runs:
        return []
    if any(r.by_reference for r in runs.values()):
        lines = ["## Rating over training", "",
                 f"Checkpoints of one training run, by step, each rated only from its games against the references "
                 f"({', '.join(references)}; the horizontal lines): "
                 f"![rating over training](rating_over_training.png)", "",
                 "Spearman counts the checkpoints with a finite rating; “later below” counts pairs where a later "
                 "checkpoint's 95 % interval lies wholly below an earlier one's. The Elo of all games (who beats "
                 "whom, checkpoints among themselves included) is beside it: it shows intransitivity, not progress.",
                 "", "| run | checkpoints | rated | above every reference | Spearman(step, reference Elo) | "
                 "later below | Spearman(step, Elo of all games) | best.json |",
                 "|---|---:|---:|---:|---:|---:|---:|---|"]
        for run in runs.values():
            lines.append(f"| {_cell(run.label)} | {len(run.frame)} | {run.rated} | {run.above} | {run.spearman:.3f} | "
                         f"{run.inversions} | {run.all_games_spearman:.3f} | {_best_cell(run)} |")
        return lines
    lines = ["## Rating over training", "",
             "Checkpoints of one training run, by step: ![rating over training](rating_over_training.png)", "",
             "Rated from all games, the checkpoints' games among themselves included: this shows who beats whom, "
             "which is not progress (policies cycle). Declare `references:` in the league file to rate every "
             "checkpoint against fixed opponents instead (docs/tournaments.md).", "",
             "| run | checkpoints | Spearman(step, Elo) | later below | best.json |", "|---|---:|---:|---:|---|"]
    for run in runs.values():
        lines.append(f"| {_cell(run.label)} | {len(run.frame)} | {run.spearman:.3f} | {run.inversions} | "
                     f"{_best_cell(run)} |")
    return lines


def _best_cell(run: RunProgress) -> str:
    if run.best_step is None:
        return ""
    if run.best_rank is None:
        return f"step {run.best_step:,} (no checkpoint of that step here)"
    return f"step {run.best_step:,}: rank {run.best_rank} of {len(run.frame)}"


def plot_rating_over_training(runs: dict[str, RunProgress], path: str | os.PathLike[str],
                              references: "pd.DataFrame | None" = None, title: str = "") -> None:
    """Rating (with its 95 % interval) against training step, one line per run folder; the references'
    ratings as horizontal lines; a checkpoint above every reference as an upward marker at its lower
    bound; the weights a run kept in best.json as a star."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.5, 4.4))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    by_reference = any(r.by_reference for r in runs.values())
    for run in runs.values():
        f = run.frame
        prefix = "reference_" if run.by_reference else "elo_"
        value = f[run.rating].to_numpy(dtype=float)
        low, high = (f[prefix + side].to_numpy(dtype=float) for side in ("low", "high"))
        steps = f["step"].to_numpy()
        shown = np.where(value == np.inf, low, np.where(value == -np.inf, high, value))
        name = f"{_label(run.label, 50)} (Spearman {run.spearman:.2f})"
        line = ax.plot(steps, shown, marker="o", ms=3, label=name)[0]
        color = line.get_color()
        up, down = value == np.inf, value == -np.inf
        if up.any():
            ax.plot(steps[up], shown[up], "^", ms=8, mfc="none", color=color,
                    label="above every reference (lower bound)")
        if down.any():
            ax.plot(steps[down], shown[down], "v", ms=8, mfc="none", color=color, label="below every reference")
        kept = steps == run.best_step
        if kept.any():
            ax.plot(steps[kept], shown[kept], "*", ms=12, color=color, label="best.json's weights")
        finite = np.isfinite(value)  # an unknown or unbounded side of the interval is drawn as no band
        ax.fill_between(steps, np.where(finite & np.isfinite(low), low, shown),
                        np.where(finite & np.isfinite(high), high, shown), alpha=0.2, color=color)
    if references is not None:
        for r in references.itertuples():
            if math.isfinite(r.reference_elo):
                ax.axhline(r.reference_elo, color="0.5", lw=0.8, ls="--")
                ax.annotate(_label(r.name, 24), (0.0, r.reference_elo), xycoords=("axes fraction", "data"),
                            xytext=(3, 2), textcoords="offset points", fontsize=7, color="0.35", va="bottom")
    ax.set_xlabel("training step (env steps)")
    ax.set_ylabel("Elo against the references" if by_reference else "Elo (all games)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="best")
    if title:
        ax.set_title(_label(title, 80))
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)


# The head-to-head picture: a small league's cells are 0.45 inch with the score written in them; a
# large league's picture stops growing at PICTURE_MAX_IN inches (at 100 participants the small-league
# cell size would make it 47 inches, 5,000 pixels a side, and 10 s of drawing; at 500, 25,000 pixels).
PICTURE_DPI = 110
PICTURE_MAX_IN = 20.0
CELL_TEXT_MAX = 24  # participants up to which each cell shows its score in percent
NAMES_MAX = 200  # participants up to which the axes name them; above, the ticks are leaderboard ranks


def plot_head_to_head(h2h: "pd.DataFrame", path: str | os.PathLike[str], title: str = "") -> None:
    """A red-to-blue matrix of scores, one image (the cells coloured here, not by matplotlib at the
    picture's resolution). Up to :data:`CELL_TEXT_MAX` participants each cell also shows its score; up
    to :data:`NAMES_MAX` the axes name the participants, above that they give leaderboard ranks (the
    names would be under 4 points tall). Uses the Agg canvas directly: no display, no global backend."""
    import matplotlib
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.cm import ScalarMappable
    from matplotlib.colors import Normalize
    from matplotlib.figure import Figure

    n = len(h2h)
    size = min(max(4.0, 0.45 * n + 2.5), PICTURE_MAX_IN)
    fig = Figure(figsize=(size + 1.0, size))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    values = h2h.to_numpy(dtype=float)
    colours = ScalarMappable(Normalize(0.0, 1.0), matplotlib.colormaps["RdBu"])
    rgba = colours.to_rgba(values, bytes=True)
    rgba[~np.isfinite(values)] = 0  # no games: transparent, as a masked cell
    ax.imshow(rgba, interpolation="none")
    if n <= NAMES_MAX:
        fontsize = min(8.0, 900.0 / max(n, 1))
        ax.set_xticks(range(n), labels=[_label(c) for c in h2h.columns], rotation=60, ha="right", fontsize=fontsize)
        ax.set_yticks(range(n), labels=[_label(i) for i in h2h.index], fontsize=fontsize)
        ax.set_xlabel("opponent")
        ax.set_ylabel("player")
    else:
        ranks = rank_ticks(n)
        ax.set_xticks([r - 1 for r in ranks], labels=[str(r) for r in ranks], fontsize=8)
        ax.set_yticks([r - 1 for r in ranks], labels=[str(r) for r in ranks], fontsize=8)
        ax.set_xlabel("opponent (leaderboard rank)")
        ax.set_ylabel("player (leaderboard rank)")
    if n <= CELL_TEXT_MAX:
        for i in range(n):
            for j in range(n):
                if values[i, j] == values[i, j]:
                    ax.text(j, i, percent(values[i, j]).rstrip("%"), ha="center", va="center", fontsize=7,
                            color="white" if abs(values[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(colours, ax=ax, fraction=0.046, pad=0.04, label="score (draw = ½)")
    if title:
        ax.set_title(_label(title, 80))
    fig.tight_layout()
    fig.set_layout_engine(None)  # laid out: else savefig draws the whole picture once more to lay it out again
    fig.savefig(str(path), dpi=PICTURE_DPI)


def rank_ticks(n: int) -> list[int]:
    """Leaderboard ranks to mark on an axis of ``n``: 1 and every multiple of a round step, at most 13."""
    step = next((s for s in (10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000) if n / s <= 12),
                -(-n // 12))
    return [1, *range(step, n + 1, step)]


def _label(text: object, limit: int = 40) -> str:
    """Text for the picture, cut short: a database may hold names far longer than the config allows,
    and laying out a 100,000-character label takes matplotlib minutes."""
    text = str(text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def to_json_text(report: TournamentReport) -> str:
    return json.dumps(report.to_json(), indent=2, default=str)


RENDER_FORMATS = ("table", "csv", "markdown", "json")


def render(report: TournamentReport, fmt: str = "table") -> str:
    """The leaderboard as the CLI prints it: ``table`` (rounded, for people), ``csv`` (every column,
    full precision), ``markdown`` or ``json`` (one object with the report's figures)."""
    if fmt == "csv":
        return report.leaderboard.to_csv(index=False).rstrip("\n")
    if fmt == "markdown":
        return markdown_table(display_frame(report.leaderboard, report.rank_by))
    if fmt == "json":
        return to_json_text(report)
    if fmt != "table":
        raise ValueError(f"unknown format {fmt!r}; expected one of {', '.join(RENDER_FORMATS)}")
    head = f"{report.name}: {report.games:,} games" + ("" if report.complete else f" of {report.expected_games:,}")
    run = report.run
    if run.get("played") == 0:
        head += " (nothing left to play: every scheduled game is stored)"
    elif run.get("played") is not None:
        head += (f" ({run['played']:,} played now in {run['wall_s']:.1f} s, {run['games_per_second']:,.0f} games/s; "
                 f"rating {run['rating_s']:.2f} s)")
    lines = [head, format_table(report.leaderboard, report.rank_by)]
    lines.extend(f"warning: {w}" for w in report.warnings)
    if report.matchups is not None and not report.matchups.empty:
        lines.append("candidates (Elo difference ± 95 % error, likelihood of superiority, draw ratio):")
        lines.extend(format_matchups(report.matchups))
    if not report.forfeits.empty:
        lines.append("forfeits:")
        lines.extend(f"  {r.participant}: {r.games} game(s) — {r.reason}" for r in report.forfeits.itertuples())
    if run.get("sprt"):
        lines.extend(sprt_lines(run))
    if run.get("retried_forfeits"):
        lines.append(f"{run['retried_forfeits']:,} stored forfeit(s) deleted and played again (--retry-forfeits)")
    if run.get("left_after_failure"):
        lines.append(f"{run['left_after_failure']:,} game(s) not started because a participant failed earlier in "
                     f"their batch: run the tournament again to play them (--retry-forfeits also replays the "
                     f"forfeits)")
    if report.replays:
        kept = sum(1 for r in report.replays if r.html)
        line = f"replays: {kept} notable game(s) recorded in {report.output_dir / 'replays'} (listed in report.md)"
        if kept < len(report.replays):
            line += f"; {len(report.replays) - kept} could not be replayed exactly (reasons in report.md)"
        lines.append(line)
    lines.extend(over_training_console(report))
    if report.files:
        lines.append(f"reports: {report.output_dir}")
    return "\n".join(lines)


# Why a run's best.pt need not be the checkpoint its league ranks first: two measures, both honest.
BEST_IS_THE_RUNS_OWN = (" (best.pt is the run's own choice: the best score against its training opponents in its "
                        "evaluations; this league rates the checkpoints from its own games, and near the top the "
                        "two can order them differently)")


def over_training_console(report: TournamentReport) -> list[str]:
    """One line per training run among the participants: what its rating over training says."""
    lines = []
    references = reference_names(report.leaderboard)
    for run in report.over_training.values():
        measure = (f"against the references ({', '.join(references)})" if run.by_reference
                   else "by the Elo of all games (no references: who beats whom, not progress)")
        line = (f"rating over training, {run.label}: {len(run.frame)} checkpoints {measure}; Spearman(step, rating) "
                f"{run.spearman:.2f} over {run.rated}, {run.inversions} later significantly below an earlier")
        if run.above:
            line += f", {run.above} above every reference"
        if run.best_step is not None:
            line += f"; best.json's step {run.best_step:,} " + (f"ranks {run.best_rank} of {len(run.frame)}"
                                                                 if run.best_rank else "is not among them")
            if run.best_rank != 1:
                line += BEST_IS_THE_RUNS_OWN
        lines.append(line)
    return lines
