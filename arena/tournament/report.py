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

from arena.tournament.config import RatingConfig
from arena.tournament.matchups import format_matchups, matchups
from arena.tournament.ratings import bradley_terry, pairwise, trueskill_ratings
from arena.tournament.results import DRAW, P1_WINS, GameResult

if TYPE_CHECKING:
    import pandas as pd

LEADERBOARD_COLUMNS = ("rank", "name", "agent", "checkpoint", "elo", "elo_low", "elo_high", "rank_low", "rank_high",
                       "note", "games", "wins", "draws", "losses", "forfeits", "score", "mu", "sigma",
                       "mu_minus_3sigma")
ORDER_NOTE = ("Ordered by Bradley-Terry Elo (maximum likelihood over all games; a draw is half a win), which does "
              "not depend on the order the games were played in. The Elo interval and the rank bounds are 95 % "
              "intervals; “unknown” means the games cannot bound it (no games, a single game, only draws), and an "
              "unbeaten or winless record's Elo has no upper or lower bound. TrueSkill μ, σ and μ−3σ are given "
              "beside it.")
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

    @property
    def complete(self) -> bool:
        return self.games >= self.expected_games

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name, "output": str(self.output_dir), "games": self.games,
            "expected_games": self.expected_games, "complete": self.complete, **self.run,
            "leaderboard": records(self.leaderboard), "warnings": list(self.warnings), "scale": self.scale,
            "matchups": records(self.matchups) if self.matchups is not None else [],
            "forfeits": records(self.forfeits),
            "replays": [vars(r).copy() for r in self.replays],
            "files": {k: str(v) for k, v in self.files.items()},
        }


def build_report(name: str, output_dir: str | os.PathLike[str], entrants: Sequence[Entrant],
                 games: Sequence[GameResult], rating: RatingConfig, seed: int = 0,
                 expected_games: int | None = None, candidates: Sequence[int] = ()) -> TournamentReport:
    """Rate ``games`` (participant positions as ids) and tabulate them; ``candidates`` (a gauntlet's)
    also get their match statistics against each opponent."""
    import pandas as pd

    n = len(entrants)
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
    points, played = pairwise(games, n)  # [i, j]: i's points (draw ½) and games against j
    tally = [dict(games=0, wins=0, draws=0, losses=0, forfeits=0) for _ in range(n)]
    forfeit_rows: dict[tuple[str, str], int] = {}
    for g in games:
        tally[g.p1]["games"] += 1
        tally[g.p2]["games"] += 1
        if g.winner == DRAW:
            tally[g.p1]["draws"] += 1
            tally[g.p2]["draws"] += 1
        else:
            win, lose = (g.p1, g.p2) if g.winner == P1_WINS else (g.p2, g.p1)
            tally[win]["wins"] += 1
            tally[lose]["losses"] += 1
        if g.forfeit_by is not None:
            tally[g.forfeit_by]["forfeits"] += 1
            key = (entrants[g.forfeit_by].name, g.forfeit_reason or "")
            forfeit_rows[key] = forfeit_rows.get(key, 0) + 1

    rows = []
    for i, e in enumerate(entrants):
        t = tally[i]
        rows.append({
            "name": e.name, "agent": e.agent, "checkpoint": _show_path(e.checkpoint),
            "mu": skills[i].mu, "sigma": skills[i].sigma, "mu_minus_3sigma": skills[i].conservative,
            **t, "score": (t["wins"] + 0.5 * t["draws"]) / t["games"] if t["games"] else math.nan,
            "elo": float(fit.elo[i]), "elo_low": float(fit.low[i]), "elo_high": float(fit.high[i]),
            "rank_low": _maybe(fit.rank_low, i), "rank_high": _maybe(fit.rank_high, i), "note": fit.flags[i],
        })
    board = pd.DataFrame(rows)
    board["_unrated"] = board["elo"].isna()
    board = board.sort_values(["_unrated", "elo", "name"], ascending=[True, False, True], kind="mergesort")
    board = board.drop(columns="_unrated")
    board.insert(0, "rank", range(1, n + 1))
    board = board.reset_index(drop=True)[list(LEADERBOARD_COLUMNS)]

    order = [next(i for i, e in enumerate(entrants) if e.name == nm) for nm in board["name"]]
    h2h = pd.DataFrame(
        [[float(points[i, j] / played[i, j]) if played[i, j] else math.nan for j in order] for i in order],
        index=pd.Index([entrants[i].name for i in order], name="player"),
        columns=[entrants[j].name for j in order])
    forfeits = pd.DataFrame([{"participant": who, "reason": why, "games": count}
                             for (who, why), count in sorted(forfeit_rows.items())],
                            columns=["participant", "reason", "games"])
    return TournamentReport(name, Path(output_dir), board, h2h, forfeits, len(games),
                            expected_games if expected_games is not None else len(games), warnings=warnings,
                            scale=scale, matchups=matchups(games, names, list(candidates)) if candidates else None)


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


def display_frame(board: "pd.DataFrame") -> "pd.DataFrame":
    """The leaderboard with numbers rounded for people (the CSV keeps full precision)."""
    import pandas as pd

    out = pd.DataFrame({
        "rank": board["rank"], "name": board["name"],
        "elo": board["elo"].map(lambda x: "unknown" if x != x else f"{x:.0f}"),
        "elo 95% CI": [_interval(lo, hi) for lo, hi in zip(board["elo_low"], board["elo_high"])],
        "rank 95%": [_ranks(lo, hi) for lo, hi in zip(board["rank_low"], board["rank_high"])],
        "note": board["note"],
        "games": board["games"], "W": board["wins"], "D": board["draws"], "L": board["losses"],
        "forfeits": board["forfeits"], "score": board["score"].map(_pct),
        "mu": board["mu"].map("{:.2f}".format), "sigma": board["sigma"].map("{:.2f}".format),
        "mu-3σ": board["mu_minus_3sigma"].map("{:.2f}".format),
    })
    return out


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


def format_table(board: "pd.DataFrame") -> str:
    return display_frame(board).to_string(index=False)


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
    """Rows as plain dicts with NaN as None, ready for JSON."""
    out = []
    for row in frame.to_dict(orient="records"):
        out.append({str(k): (None if isinstance(v, float) and v != v else _plain(v)) for k, v in row.items()})
    return out


def _plain(value: Any) -> Any:
    if hasattr(value, "item"):  # numpy scalar
        return value.item()
    return value


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
        ORDER_NOTE + f" Elo scale: {report.scale or 'league average 1000'}. Score counts a draw as half a win.",
        "",
        *[f"> **Warning:** {w}\n" for w in report.warnings],
        markdown_table(display_frame(report.leaderboard)),
        "",
        *(["## Candidates", "",
           "Each candidate against each opponent: Elo difference from the score with its 95 % error, the "
           "likelihood of superiority (LOS) from the decisive games, and the draw ratio.", "",
           markdown_table(report.matchups), ""] if report.matchups is not None and not report.matchups.empty
          else []),
        *sprt_section(report.run),
        "## Head to head",
        "",
        "Score of the row's player against the column's player.",
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
    runs = training_runs(report.leaderboard)
    if runs:
        parts += ["", "## Rating over training", "",
                  "Checkpoints of one training run, by step: ![rating over training](rating_over_training.png)", "",
                  "| run | checkpoints | Spearman(step, Elo) |", "|---|---:|---:|"]
        for run, frame in runs.items():
            parts.append(f"| {_cell(run)} | {len(frame)} | {rank_correlation(frame['step'], frame['elo']):.3f} |")
    if report.replays:
        parts += ["", "## Replays", "",
                  "Notable games of each pairing, recorded: open the .html in a browser (offline), the .acmi in "
                  "Tacview. Blue flew p1, Red p2.", "",
                  "| Blue (p1) | Red (p2) | game | why | watch |", "|---|---|---:|---|---|"]
        for r in report.replays:
            watch = f"[html]({r.html}) · [acmi]({r.acmi})" if r.html else f"not recorded: {r.skipped}"
            parts.append(f"| {_cell(r.p1)} | {_cell(r.p2)} | {r.game} | {_cell(r.reason)} | {watch} |")
    return "\n".join(parts) + "\n"


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
    runs = training_runs(report.leaderboard)
    picture = out / "rating_over_training.png"
    if runs:
        paths["rating_over_training"] = picture
        plot_rating_over_training(runs, picture, title=f"{report.name}: rating over training")
    elif picture.exists():
        picture.unlink()  # from an earlier league in this folder: not about these participants
    report.files = paths
    return paths


def training_runs(board: "pd.DataFrame") -> dict[str, "pd.DataFrame"]:
    """Participants that are checkpoints of one training run (``ckpt_<step>.pt`` files of one folder, two
    or more): per run folder, their step, Elo and interval, by step."""
    import pandas as pd

    from arena.training.checkpoint import checkpoint_step

    rows = []
    for r in board.itertuples():
        step = checkpoint_step(r.checkpoint) if isinstance(r.checkpoint, str) else None
        if step is not None:
            rows.append({"run": str(Path(r.checkpoint).parent), "step": step, "name": r.name,
                         "elo": r.elo, "elo_low": r.elo_low, "elo_high": r.elo_high})
    if not rows:
        return {}
    frame = pd.DataFrame(rows)
    return {run: group.sort_values("step").reset_index(drop=True) for run, group in frame.groupby("run")
            if len(group) >= 2}


def rank_correlation(a: Sequence[float], b: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN for fewer than two points."""
    import pandas as pd

    if len(a) < 2:
        return float("nan")
    return float(pd.Series(list(a)).rank().corr(pd.Series(list(b)).rank()))


def plot_rating_over_training(runs: dict[str, "pd.DataFrame"], path: str | os.PathLike[str], title: str = "") -> None:
    """Elo (with its 95 % interval) against training step, one line per run folder."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7.0, 4.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for run, frame in runs.items():
        elo = frame["elo"].to_numpy(dtype=float)
        low, high = (frame[k].to_numpy(dtype=float) for k in ("elo_low", "elo_high"))
        steps = frame["step"].to_numpy()
        rho = rank_correlation(steps, elo)
        ax.plot(steps, elo, marker="o", ms=3, label=f"{_label(run, 50)} (Spearman {rho:.2f})")
        # an unknown or unbounded side of the interval is drawn as no band
        ax.fill_between(steps, np.where(np.isfinite(low), low, elo), np.where(np.isfinite(high), high, elo), alpha=0.2)
    ax.set_xlabel("training step (env steps)")
    ax.set_ylabel("Elo")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    if title:
        ax.set_title(_label(title, 80))
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)


def plot_head_to_head(h2h: "pd.DataFrame", path: str | os.PathLike[str], title: str = "") -> None:
    """A red-to-blue matrix of scores. Uses the Agg canvas directly: no display, no global backend."""
    import numpy as np
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    n = len(h2h)
    size = max(4.0, 0.45 * n + 2.5)
    fig = Figure(figsize=(size + 1.0, size))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    values = h2h.to_numpy(dtype=float)
    image = ax.imshow(np.ma.masked_invalid(values), cmap="RdBu", vmin=0.0, vmax=1.0)
    ax.set_xticks(range(n), labels=[_label(c) for c in h2h.columns], rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(n), labels=[_label(i) for i in h2h.index], fontsize=8)
    ax.set_xlabel("opponent")
    ax.set_ylabel("player")
    if n <= 24:
        for i in range(n):
            for j in range(n):
                if values[i, j] == values[i, j]:
                    ax.text(j, i, percent(values[i, j]).rstrip("%"), ha="center", va="center", fontsize=7,
                            color="white" if abs(values[i, j] - 0.5) > 0.3 else "black")
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="score (draw = ½)")
    if title:
        ax.set_title(_label(title, 80))
    fig.tight_layout()
    fig.savefig(str(path), dpi=110)


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
        return markdown_table(display_frame(report.leaderboard))
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
    lines = [head, format_table(report.leaderboard)]
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
    if report.files:
        lines.append(f"reports: {report.output_dir}")
    return "\n".join(lines)
