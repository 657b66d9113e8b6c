"""What happened in a recorded battle, read off its frames: launches, lost locks, hits, misses, deaths.

Everything is derived from the recorded state, nothing from the agents, so a replay can only show what
the simulation did. A missile occupies one slot of its target's column for its whole flight (slots
are never reused within a battle), so a slot turning active is a launch and turning inactive is the
end of that missile: a hit when its target died in the same step inside the arena, otherwise a miss
(spent or out of time). An aircraft that died outside the arena flew out of it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from arena.replay.recorder import Battle

SIDE_NAMES: tuple[str, str] = ("Blue", "Red")  # p1, p2 (Tacview's Allies and Enemies colours)


@dataclass(frozen=True)
class Event:
    """One thing that happened at ``frame`` (decision steps since the start)."""

    frame: int
    kind: str  # launch | lock-lost | hit | miss | shot-down | left-area | end
    text: str
    aircraft: int = -1  # the shooter (launch, hit, miss) or the aircraft it happened to
    target: int = -1  # the missile's target, or -1
    slot: int = -1  # the missile's slot in its target's column, or -1


def short_name(spec: str) -> str:
    """``ppo:runs/demo/ckpt_1.pt`` -> ``ppo:ckpt_1.pt``: a title needs the checkpoint, not its folder."""
    agent, path = re.match(r"([A-Za-z_][\w.-]+:)?(.*)", spec, re.S).groups()  # type: ignore[union-attr]
    return (agent or "") + path.replace("\\", "/").rsplit("/", 1)[-1]


def aircraft_label(battle: Battle, a: int) -> str:
    """``Blue 1``, ``Red 2``: side colour and seat number."""
    t = battle.meta.team_size
    return f"{SIDE_NAMES[a // t]} {a % t + 1}"


def pilot(battle: Battle, a: int) -> str:
    """The agent flying aircraft ``a``."""
    return battle.meta.p1 if battle.side_of(a) == 0 else battle.meta.p2


def outside(battle: Battle, f: int) -> np.ndarray:
    """[A] bool: aircraft outside the arena at frame ``f``."""
    size = battle.meta.arena_size
    x, y = battle.x[f], battle.y[f]
    return (x < 0.0) | (x > size) | (y < 0.0) | (y > size)


def outcome_text(battle: Battle) -> str:
    alive = battle.alive[-1]
    t = battle.meta.team_size
    left = (int(alive[:t].sum()), int(alive[t:].sum()))
    if battle.winner == 0:
        return f"draw ({left[0]} v {left[1]} left at the time limit)" if all(left) else "draw"
    side = battle.winner - 1
    name = battle.meta.p1 if side == 0 else battle.meta.p2
    return f"{SIDE_NAMES[side]} ({name}) wins, {left[0]} v {left[1]} left"


def battle_events(battle: Battle) -> list[Event]:
    """Every event of ``battle`` in time order (within a frame: launches, lock losses, hits and misses,
    deaths, then the end)."""
    events: list[Event] = []
    label = lambda a: aircraft_label(battle, a)  # noqa: E731
    for f in range(1, battle.frames):
        was, now = battle.m_active[f - 1], battle.m_active[f]
        for slot, target in zip(*np.nonzero(now & ~was)):
            shooter = battle.shooter_of(int(slot), int(target))
            events.append(Event(f, "launch", f"{label(shooter)} fires at {label(int(target))}", shooter, int(target),
                                int(slot)))
        lost = battle.m_locked[f - 1] & ~battle.m_locked[f] & now
        for slot, target in zip(*np.nonzero(lost)):
            shooter = battle.shooter_of(int(slot), int(target))
            events.append(Event(f, "lock-lost", f"{label(shooter)}'s missile loses {label(int(target))}", shooter,
                                int(target), int(slot)))
        died = battle.alive[f - 1] & ~battle.alive[f]
        gone = outside(battle, f)
        killers: dict[int, list[int]] = {}
        for s, t in zip(*np.nonzero(was & ~now)):
            slot, target = int(s), int(t)
            shooter = battle.shooter_of(slot, target)
            if died[target] and not gone[target]:
                killers.setdefault(target, []).append(shooter)
                events.append(Event(f, "hit", f"{label(shooter)}'s missile hits {label(target)}", shooter, target,
                                    slot))
            else:
                events.append(Event(f, "miss", f"{label(shooter)}'s missile misses {label(target)}", shooter, target,
                                    slot))
        for a in map(int, np.nonzero(died)[0]):
            if gone[a]:
                events.append(Event(f, "left-area", f"{label(a)} ({pilot(battle, a)}) leaves the arena and is lost", a))
            else:
                by = " and ".join(label(k) for k in sorted(set(killers.get(a, [])))) or "a missile"
                events.append(Event(f, "shot-down", f"{label(a)} ({pilot(battle, a)}) is shot down by {by}", a))
    events.append(Event(battle.frames - 1, "end", outcome_text(battle)))
    return events
