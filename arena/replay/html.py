"""The offline HTML viewer: one file holding the battle's data and the player, no network needed.

The page (``viewer.html`` beside this module) is a template with the battle's JSON inlined in a
``<script type="application/json">`` block, so a replay can be mailed, attached to an issue or opened
from a CI artefact, and keeps working after the arena is gone.
"""

from __future__ import annotations

import html
import json
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from arena.output_files import write_text
from arena.replay.events import SIDE_NAMES, aircraft_label, battle_events, outcome_text, pilot
from arena.replay.recorder import Battle

DATA_MARK = "/*__BATTLE_DATA__*/"


def _metres(v: np.ndarray) -> list[int]:
    return [int(round(float(x))) for x in v]


def viewer_data(battle: Battle) -> dict[str, Any]:
    """The battle as the viewer reads it: tracks in whole metres, headings in milliradians, missiles
    listed from launch to end (a team battle has many empty slots)."""
    meta = battle.meta
    aircraft = []
    for a in range(battle.aircraft):
        dead = np.nonzero(~battle.alive[:, a])[0]
        aircraft.append({
            "label": aircraft_label(battle, a), "side": battle.side_of(a), "seat": a % meta.team_size,
            "pilot": pilot(battle, a),
            "x": _metres(battle.x[:, a]), "y": _metres(battle.y[:, a]),
            "h": [int(round(float(h) * 1000)) for h in battle.heading[:, a]],
            "v": _metres(battle.speed[:, a]),
            "missiles": [int(round(float(m))) for m in battle.missiles_left[:, a]],
            "death": int(dead[0]) if dead.size else None,
        })
    missiles = []
    events = battle_events(battle)
    ends = {(e.slot, e.target): e for e in events if e.kind in ("hit", "miss")}
    for e in events:
        if e.kind != "launch":
            continue
        key = (e.slot, e.target)
        end = ends[key].frame if key in ends else battle.frames - 1
        track = slice(e.frame, end + 1)
        locked = np.nonzero(~battle.m_locked[track, e.slot, e.target])[0]
        missiles.append({
            "shooter": e.aircraft, "target": e.target, "side": battle.side_of(e.aircraft),
            "launch": e.frame, "end": end, "hit": key in ends and ends[key].kind == "hit",
            "x": _metres(battle.mx[track, e.slot, e.target]), "y": _metres(battle.my[track, e.slot, e.target]),
            "locked_until": e.frame + int(locked[0]) if locked.size else None,
        })
    return {
        "meta": {"title": meta.title, "p1": meta.p1, "p2": meta.p2, "sides": list(SIDE_NAMES),
                 "team_size": meta.team_size, "dt": meta.dt, "arena_size": meta.arena_size,
                 "frames": battle.frames, "winner": battle.winner, "outcome": outcome_text(battle),
                 "seed": meta.seed, "missile_max_range": meta.missile_max_range,
                 "seeker_half_angle": meta.seeker_half_angle},
        "aircraft": aircraft,
        "missiles": missiles,
        "events": [{"frame": e.frame, "kind": e.kind, "text": e.text} for e in events],
    }


def viewer_template() -> str:
    return resources.files("arena.replay").joinpath("viewer.html").read_text(encoding="utf-8")


def html_text(battle: Battle) -> str:
    """The viewer page of ``battle``."""
    data = json.dumps(viewer_data(battle), separators=(",", ":"))
    data = data.replace("<", "\\u003c")  # nothing in the data can close the script element
    page = viewer_template()
    if DATA_MARK not in page:
        raise RuntimeError("arena/replay/viewer.html has lost its data marker; reinstall arena")
    return page.replace("__TITLE__", html.escape(battle.meta.title)).replace(DATA_MARK, data)


def write_html(battle: Battle, path: str | Path) -> Path:
    return write_text(path, html_text(battle))  # whole, and never through a link (arena.output_files)
