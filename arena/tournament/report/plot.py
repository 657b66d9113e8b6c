"""The report's pictures: the head-to-head matrix and the rating over training (matplotlib's Agg canvas)."""

from __future__ import annotations

import math
import os
from typing import TYPE_CHECKING

from arena.output_files import staged
from arena.tournament.over_training import RunProgress
from arena.tournament.report.compute import percent

if TYPE_CHECKING:
    import pandas as pd


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
    with staged(path, keep_suffix=True) as temp:  # whole, and never through a link (arena.output_files)
        fig.savefig(str(temp), dpi=110)


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
    with staged(path, keep_suffix=True) as temp:  # whole, and never through a link (arena.output_files)
        fig.savefig(str(temp), dpi=PICTURE_DPI)


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
