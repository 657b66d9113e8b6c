"""A league's notable games, recorded for watching: upsets against the ratings, the longest, the shortest.

Recording every game of a league would hold every battle's frames at once. Instead, once the league is
rated, the notable games of each pairing are chosen and the batches that played them are played again
exactly as before — same seed, same slots, same agents, each participant on its own random stream, so
a batch is reproducible on the same device — with a recorder on the chosen slots only. Every recorded
game is checked against its stored result (winner and length); one that does not match (an agent that
is not deterministic, a batch from an earlier run with other participants or settings) is listed as
skipped with the reason, never shown as if it were the game that was rated.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.output_files import write_text
from arena.tournament.batching import Batch
from arena.tournament.executor import replay_batch
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.results import DRAW, GameResult
from arena.tournament.schedule import Unit

if TYPE_CHECKING:
    from arena.progress import Progress
    from arena.tournament.stored_league import StoredLeague

FOLDER = "replays"
INDEX = "index.json"


@dataclass(frozen=True)
class Notable:
    """A game worth watching (participants as league positions) and why."""

    game: GameResult
    kind: str  # upset | longest | shortest
    reason: str


@dataclass
class ReplayEntry:
    """One notable game in the report: its files (relative to the league's output), or why it has none."""

    p1: str
    p2: str
    game: int
    kind: str
    reason: str
    html: str | None = None
    acmi: str | None = None
    skipped: str | None = None


def notable_games(games: Sequence[GameResult], elo: Sequence[float], names: Sequence[str],
                  per_pairing: int) -> list[Notable]:
    """Up to ``per_pairing`` notable games of each pairing (both orders together), forfeits excluded:
    the biggest upset (the lower-rated participant won), the longest game, the shortest, then the
    next of each in turn. Ties go to the lower (p1, p2, game) so the choice is reproducible."""
    by_pairing: dict[tuple[int, int], list[GameResult]] = {}
    for g in games:
        if not g.forfeit:
            by_pairing.setdefault((min(g.p1, g.p2), max(g.p1, g.p2)), []).append(g)
    picks: list[Notable] = []
    for key in sorted(by_pairing):
        pool = sorted(by_pairing[key], key=lambda g: (g.p1, g.p2, g.game_index))
        upsets = []
        for g in pool:
            if g.winner == DRAW:
                continue
            won, lost = (g.p1, g.p2) if g.winner == 1 else (g.p2, g.p1)
            if elo[won] < elo[lost]:
                upsets.append((-(elo[lost] - elo[won]), g.length, g, won, lost))
        upsets.sort(key=lambda u: u[:2])
        lists = {
            "upset": [Notable(g, "upset", f"upset: {names[w]} (Elo {_elo(elo[w])}) beat {names[lo]} "
                                          f"(Elo {_elo(elo[lo])})") for _, _, g, w, lo in upsets],
            "longest": [Notable(g, "longest", f"longest game of the pairing ({g.length} steps)")
                        for g in sorted(pool, key=lambda g: -g.length)],
            "shortest": [Notable(g, "shortest", f"shortest game of the pairing ({g.length} steps)")
                         for g in sorted(pool, key=lambda g: g.length)],
        }
        chosen: list[Notable] = []
        seen: set[tuple[int, int, int]] = set()
        depth = 0
        while len(chosen) < per_pairing and any(depth < len(v) for v in lists.values()):
            for kind in ("upset", "longest", "shortest"):
                if depth < len(lists[kind]) and len(chosen) < per_pairing:
                    n = lists[kind][depth]
                    ident = (n.game.p1, n.game.p2, n.game.game_index)
                    if ident not in seen:
                        seen.add(ident)
                        chosen.append(n)
            depth += 1
        picks.extend(chosen)
    return picks


def _elo(x: float) -> str:
    return "∞" if x == math.inf else "−∞" if x == -math.inf else f"{x:.0f}"


def rebuild_batch(rows: Sequence[tuple[int, int, int, int, int, int, int | None]], position: Mapping[int, int],
                  num_envs: int) -> Batch | str:
    """The :class:`Batch` a stored batch was played as, from its games (``store.batch_games``, ids mapped
    to league positions by ``position``); a string says why it cannot be rebuilt."""
    units: dict[tuple[int, int], tuple[list[int], list[int]]] = {}
    for p1, p2, game, slot, *_ in rows:
        if p1 not in position or p2 not in position:
            return "played in a batch with participants that are not in this league"
        if slot < 0:
            return "its batch layout was not stored"
        games, slots = units.setdefault((position[p1], position[p2]), ([], []))
        games.append(game)
        slots.append(slot)
    order = sorted(units.items(), key=lambda kv: min(kv[1][1]))
    starts = [min(slots) for _, (_, slots) in order]
    if not order or starts[0] != 0 or len(set(starts)) != len(starts):
        return "its batch layout cannot be rebuilt from the stored games"
    counts = [b - a for a, b in zip(starts, starts[1:] + [num_envs])]
    for (_, (_, slots)), start, count in zip(order, starts, counts):
        if count < 1 or max(slots) >= start + count:
            return "its batch layout cannot be rebuilt from the stored games"
    return Batch(tuple(Unit(p1, p2, sorted(games)) for (p1, p2), (games, _) in order), tuple(counts))


def slug(text: str) -> str:
    """A participant name as a file-name part."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("_") or "participant"


def record_replays(plan: LeaguePlan, league: "StoredLeague", picks: Sequence[Notable],
                   meter: "Progress") -> list[ReplayEntry]:
    """Record ``picks`` (games by league position, as ``league.ids`` orders the stored participants) by
    playing their batches again; write ``replays/*.html|.acmi`` and an index beside the store. ``meter``
    counts the games recorded."""
    from arena.replay import save_battle

    names, device, store = plan.names, plan.device, league.store
    output = store.path.parent
    position = league.positions()
    folder = output / FOLDER
    entries: dict[int, ReplayEntry] = {}
    by_batch: dict[int, list[int]] = {}
    for k, n in enumerate(picks):
        g = n.game
        entries[k] = ReplayEntry(names[g.p1], names[g.p2], g.game_index, n.kind, n.reason)
        by_batch.setdefault(g.batch, []).append(k)
    done = 0
    try:
        for batch_id, wanted in sorted(by_batch.items()):
            done += len(wanted)
            record = store.batch_record(batch_id) if batch_id >= 0 else None
            layout: Batch | str = "its batch was not stored"
            if record is not None:
                layout = rebuild_batch(store.batch_games(batch_id), position, record[2])
            if isinstance(layout, str):
                for k in wanted:
                    entries[k].skipped = layout
                meter.update(done)
                continue
            _, seed, _, played_on = record  # type: ignore[misc]
            slots: dict[int, set[int]] = {}
            for k in wanted:
                slots.setdefault(picks[k].game.slot, set()).add(picks[k].game.game_index)
            results, battles = replay_batch(plan, layout, seed, slots)
            replayed = {(r.slot, r.game_index): r for r in results}
            for k in wanted:
                g = picks[k].game
                again = replayed.get((g.slot, g.game_index))
                battle = battles.get((g.slot, g.game_index))
                if again is None or battle is None or (again.winner, again.length) != (g.winner, g.length):
                    where = f" (played on {played_on}, replayed on {device})" if played_on != str(device) else ""
                    entries[k].skipped = (f"playing its batch again did not give the same game{where}: an agent "
                                          f"that is not deterministic, or settings changed since")
                    continue
                stem = f"{slug(names[g.p1])}-v-{slug(names[g.p2])}-game{g.game_index}"
                files = save_battle(battle, folder, stem)
                entries[k].html = f"{FOLDER}/{files.html.name}"
                entries[k].acmi = f"{FOLDER}/{files.acmi.name}"
            meter.update(done)
    finally:
        meter.close()
    out = [entries[k] for k in sorted(entries)]
    write_index(output, out)
    return out


def write_index(output: Path, entries: Sequence[ReplayEntry]) -> Path:
    path = output / FOLDER / INDEX
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json.dumps([asdict(e) for e in entries], indent=1))  # never through a link
    return path


def read_index(output: Path) -> list[ReplayEntry]:
    """The replays a league recorded last (none when there is no index, or it cannot be read)."""
    path = output / FOLDER / INDEX
    try:
        raw: Any = json.loads(path.read_text(encoding="utf-8"))
        return [ReplayEntry(**item) for item in raw]
    except (OSError, ValueError, TypeError):
        return []
