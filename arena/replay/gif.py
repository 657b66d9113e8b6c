"""An animated GIF of a recorded battle, drawn with matplotlib (for docs and issue threads)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from arena.output_files import staged
from arena.replay.events import SIDE_NAMES, aircraft_label, battle_events, outcome_text
from arena.replay.recorder import Battle

COLORS = ("#2f6fdf", "#d83a3a")
MAX_FRAMES = 150  # a longer battle is sampled down: a GIF is for a glance, the HTML viewer for study
TRAIL = 40  # frames of trail behind each aircraft
# The modules a GIF is drawn and written with, and the distribution that installs each.
GIF_PACKAGES: tuple[tuple[str, str], ...] = (("matplotlib", "matplotlib"), ("PIL", "pillow"))


def missing_gif_packages() -> list[str]:
    """The distributions a GIF needs that cannot be imported here (empty when all can).

    Asked before any battle is played, so that a missing one costs the user a line, not the work
    already done: matplotlib is imported only once the first GIF is drawn.
    """
    import importlib

    missing = []
    for module, distribution in GIF_PACKAGES:
        try:
            importlib.import_module(module)
        except ImportError:
            missing.append(distribution)
    return missing


def write_gif(battle: Battle, path: str | Path, fps: int = 15) -> Path:
    """Write ``battle`` as a GIF of at most :data:`MAX_FRAMES` frames."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.animation import FuncAnimation, PillowWriter

    path = Path(path)
    frames = np.unique(np.linspace(0, battle.frames - 1, min(battle.frames, MAX_FRAMES)).round().astype(int))
    deaths = {e.aircraft: e.frame for e in battle_events(battle) if e.kind in ("shot-down", "left-area")}
    xs = np.concatenate([battle.x.ravel(), battle.mx[battle.m_active]])
    ys = np.concatenate([battle.y.ravel(), battle.my[battle.m_active]])
    pad = 5000.0

    fig, ax = plt.subplots(figsize=(6, 6), dpi=80)
    fig.subplots_adjust(left=0.02, right=0.98, bottom=0.02, top=0.92)

    def draw(f: int) -> None:
        ax.clear()
        ax.set_facecolor("#0f1722")
        ax.set_xlim(xs.min() - pad, xs.max() + pad)
        ax.set_ylim(ys.min() - pad, ys.max() + pad)
        ax.set_aspect("equal")
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{battle.meta.title} · t = {f * battle.meta.dt:.0f} s"
                     + (f" · {outcome_text(battle)}" if f == battle.frames - 1 else ""), fontsize=9)
        for a in range(battle.aircraft):
            side = battle.side_of(a)
            end = min(f, deaths.get(a, battle.frames - 1))
            lo = max(0, end - TRAIL)
            ax.plot(battle.x[lo:end + 1, a], battle.y[lo:end + 1, a], color=COLORS[side], alpha=0.5, lw=1)
            if a in deaths and f >= deaths[a]:
                ax.plot(battle.x[end, a], battle.y[end, a], marker="x", color=COLORS[side], ms=10, mew=3)
                continue
            h = battle.heading[f, a]
            ax.quiver(battle.x[f, a], battle.y[f, a], np.cos(h), np.sin(h), color=COLORS[side], scale=25, width=0.012)
            ax.annotate(aircraft_label(battle, a), (battle.x[f, a], battle.y[f, a]), color="white", fontsize=7,
                        xytext=(6, 6), textcoords="offset points")
        active = battle.m_active[: f + 1]
        for slot, target in zip(*np.nonzero(active.any(0))):
            live = np.nonzero(active[:, slot, target])[0]
            side = 1 - battle.side_of(int(target))
            ax.plot(battle.mx[live, slot, target], battle.my[live, slot, target], color=COLORS[side], lw=0.8,
                    ls="-" if battle.m_locked[live[-1], slot, target] else "--")
            if battle.m_active[f, slot, target]:
                ax.plot(battle.mx[f, slot, target], battle.my[f, slot, target], "o", color="white", ms=3)
        ax.text(0.01, 0.01, f"{SIDE_NAMES[0]}: {battle.meta.p1}   {SIDE_NAMES[1]}: {battle.meta.p2}",
                transform=ax.transAxes, color="white", fontsize=8)

    animation = FuncAnimation(fig, lambda i: draw(int(frames[i])), frames=len(frames))
    try:
        with staged(path, keep_suffix=True) as temp:  # whole, and never through a link (arena.output_files)
            animation.save(str(temp), writer=PillowWriter(fps=fps))
    finally:
        plt.close(fig)
    return path
