"""The report as text and files: the console table, report.md, the CSVs and JSON.

What is written comes from :mod:`~arena.tournament.report.compute`'s numbers; the pictures are
:mod:`~arena.tournament.report.plot`'s.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.output_files import staged, write_text
from arena.tournament.league_config import RankBy
from arena.tournament.matchups import format_matchups
from arena.tournament.over_training import RunProgress
from arena.tournament.ratings import REFERENCE, SATURATED_SCORE
from arena.tournament.report.compute import TournamentReport, percent
from arena.tournament.report.plot import NAMES_MAX, plot_head_to_head, plot_rating_over_training

if TYPE_CHECKING:
    import pandas as pd


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
        parts += ["", *replay_lines(report.replays)]
    return "\n".join(parts) + "\n"


def replay_lines(replays: Sequence[Any]) -> list[str]:
    """The report's "Replays" section: each notable game recorded, with its files."""
    lines = ["## Replays", "",
             "Notable games of each pairing, recorded: open the .html in a browser (offline), the .acmi in "
             "Tacview. Blue flew p1, Red p2.", "",
             "| Blue (p1) | Red (p2) | game | why | watch |", "|---|---|---:|---|---|"]
    for r in replays:
        watch = f"[html]({r.html}) · [acmi]({r.acmi})" if r.html else f"not recorded: {r.skipped}"
        lines.append(f"| {_cell(r.p1)} | {_cell(r.p2)} | {r.game} | {_cell(r.reason)} | {watch} |")
    return lines


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


def write_report(report: TournamentReport, directory: str | os.PathLike[str] | None = None) -> dict[str, Path]:
    """Write the CSVs, Markdown and the head-to-head picture; returns their paths. Each is written whole
    (:mod:`arena.output_files`): a file there that is a symbolic link is replaced, never written through."""
    out = Path(directory) if directory is not None else report.output_dir
    out.mkdir(parents=True, exist_ok=True)
    paths = {k: out / v for k, v in FILES.items()}
    with staged(paths["leaderboard"]) as temp:
        report.leaderboard.to_csv(temp, index=False)
    with staged(paths["head_to_head"]) as temp:
        report.head_to_head.to_csv(temp)
    write_text(paths["markdown"], markdown_report(report))
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
