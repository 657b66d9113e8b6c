"""Tacview ACMI 2.2 export of a recorded battle (text format, flat-earth coordinates).

The arena is flat, so every position is given twice: as the native flat-world U (east) and V (north)
in metres, which Tacview uses for flat worlds, and as longitude and latitude around a reference
point for viewers that want a globe. Heading follows ACMI's convention (degrees clockwise from
north); the simulation is two-dimensional, so every object flies at one altitude. Objects: one per
aircraft, with Name, Type, Coalition, Color, Pilot and CallSign, removed when it dies; one per
missile from its launch to its end, with its Parent (the shooter) and LockedTarget. Launches,
lost locks and hits are ``Message`` events, misses ``Timeout``, deaths ``Destroyed`` or ``LeftArea``.
"""

from __future__ import annotations

import math
from pathlib import Path

from arena.output_files import write_text
from arena.replay.events import SIDE_NAMES, Event, aircraft_label, battle_events, outcome_text, pilot
from arena.replay.recorder import Battle

REFERENCE_TIME = "2026-01-01T12:00:00Z"  # fixed: the same battle always exports to the same file
REFERENCE_LATITUDE = 0.0
REFERENCE_LONGITUDE = 0.0
METRES_PER_DEGREE = 111_320.0
ALTITUDE = 8_000.0  # m, the one altitude the two-dimensional fight is drawn at
COALITIONS: tuple[str, str] = ("Allies", "Enemies")
AIRCRAFT_TYPE = "Air+FixedWing"
MISSILE_TYPE = "Weapon+Missile"


def aircraft_id(a: int) -> str:
    return format(0x100 + a, "x")


def missile_id(battle: Battle, slot: int, target: int) -> str:
    return format(0x10000 + slot * battle.aircraft + target, "x")


def escape(text: str) -> str:
    """A property value as ACMI wants it: commas and line ends escaped with a backslash."""
    return text.replace("\\", "\\\\").replace(",", "\\,").replace("\n", "\\\n")


def yaw_degrees(heading: float) -> float:
    """The env's heading (radians counter-clockwise from east) as ACMI's (degrees clockwise from north)."""
    return (90.0 - math.degrees(heading)) % 360.0


def transform(x: float, y: float, heading: float) -> str:
    """``T=Lon|Lat|Alt|Roll|Pitch|Yaw|U|V|Heading`` of a flat-world object."""
    lon = REFERENCE_LONGITUDE + x / METRES_PER_DEGREE
    lat = REFERENCE_LATITUDE + y / METRES_PER_DEGREE
    yaw = yaw_degrees(heading)
    return f"T={lon:.7f}|{lat:.7f}|{ALTITUDE:.0f}|0|0|{yaw:.2f}|{x:.1f}|{y:.1f}|{yaw:.2f}"


def event_line(battle: Battle, e: Event) -> str | None:
    if e.kind in ("launch", "lock-lost", "hit"):
        return f"0,Event=Message|{missile_id(battle, e.slot, e.target)}|{escape(e.text)}"
    if e.kind == "miss":
        return f"0,Event=Timeout|{missile_id(battle, e.slot, e.target)}|{escape(e.text)}"
    if e.kind == "shot-down":
        return f"0,Event=Destroyed|{aircraft_id(e.aircraft)}|{escape(e.text)}"
    if e.kind == "left-area":
        return f"0,Event=LeftArea|{aircraft_id(e.aircraft)}|{escape(e.text)}"
    if e.kind == "end":
        return f"0,Event=Bookmark|{escape(e.text)}"
    return None


def acmi_text(battle: Battle) -> str:
    """The whole ACMI file of ``battle``."""
    meta = battle.meta
    t = meta.team_size
    lines = [
        "FileType=text/acmi/tacview",
        "FileVersion=2.2",
        f"0,ReferenceTime={REFERENCE_TIME}",
        f"0,ReferenceLongitude={REFERENCE_LONGITUDE}",
        f"0,ReferenceLatitude={REFERENCE_LATITUDE}",
        "0,DataSource=Arena TensorEnv",
        "0,DataRecorder=arena replay",
        f"0,Title={escape(meta.title)}",
        "0,Category=Air-to-Air",
        f"0,Briefing={escape(f'{SIDE_NAMES[0]}: {meta.p1}; {SIDE_NAMES[1]}: {meta.p2}; {t} v {t}')}",
        f"0,Debriefing={escape(outcome_text(battle))}",
        f"0,Comments={escape(f'seed {meta.seed}' if meta.seed is not None else 'arena battle')}",
    ]
    events: dict[int, list[Event]] = {}
    for e in battle_events(battle):
        events.setdefault(e.frame, []).append(e)
    flying: set[tuple[int, int]] = set()
    for f in range(battle.frames):
        lines.append(f"#{f * meta.dt:.2f}")
        for a in range(battle.aircraft):
            if f > 0 and not battle.alive[f - 1, a]:
                continue  # removed when it died
            line = f"{aircraft_id(a)},{transform(battle.x[f, a], battle.y[f, a], battle.heading[f, a])}"
            line += f",TAS={battle.speed[f, a]:.1f}"
            if f == 0:
                side = battle.side_of(a)
                line += (f",Name=F-16C,Type={AIRCRAFT_TYPE},Coalition={COALITIONS[side]},Color={SIDE_NAMES[side]}"
                         f",Pilot={escape(pilot(battle, a))},CallSign={escape(aircraft_label(battle, a))}"
                         f",Group={'p1' if side == 0 else 'p2'}")
            lines.append(line)
        launched = {(e.slot, e.target): e for e in events.get(f, []) if e.kind == "launch"}
        flying |= set(launched)
        for slot, target in sorted(flying):  # in flight, or ending now (its last position)
            at = (f, slot, target)
            where = transform(battle.mx[at], battle.my[at], battle.m_heading[at])
            line = f"{missile_id(battle, slot, target)},{where},TAS={battle.m_speed[at]:.1f}"
            if (slot, target) in launched:
                shooter = launched[slot, target].aircraft
                side = battle.side_of(shooter)
                line += (f",Name=AIM-120C,Type={MISSILE_TYPE},Parent={aircraft_id(shooter)}"
                         f",LockedTarget={aircraft_id(target)},Coalition={COALITIONS[side]},Color={SIDE_NAMES[side]}")
            lines.append(line)
        for e in events.get(f, []):
            text = event_line(battle, e)
            if text is not None:
                lines.append(text)
            if e.kind in ("hit", "miss"):
                flying.discard((e.slot, e.target))
                lines.append(f"-{missile_id(battle, e.slot, e.target)}")
            elif e.kind in ("shot-down", "left-area"):
                lines.append(f"-{aircraft_id(e.aircraft)}")
    return "\n".join(lines) + "\n"


def write_acmi(battle: Battle, path: str | Path) -> Path:
    return write_text(path, acmi_text(battle))  # whole, and never through a link (arena.output_files)
