"""What makes a report's ratings less comparable, as data: a kind, whom it concerns, where it applies.

A :class:`ReportWarning` is made where the problem is found (the rating's fit, the references, the
runner) and read as data by observers of ``arena_tournament_finished`` and in ``report.json``; its
sentence (``str()``), the one report.md and the console print, is written here, once for each kind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

NAMES_SHOWN = 6  # participants named in one sentence
GROUPS_SHOWN = 4  # groups named in one sentence, and names of each


def _listed(names: tuple[str, ...], most: int | None) -> str:
    """``names`` joined, the first ``most`` of them (None: all) and an ellipsis for the rest."""
    return ", ".join(names[:most]) + (", …" if most is not None and len(names) > most else "")


def _groups(groups: tuple[tuple[str, ...], ...], most: int | None = GROUPS_SHOWN) -> str:
    return "; ".join("{" + _listed(group, most) + "}" for group in groups[:most])


# kind -> its sentence, from the warning's fields
SENTENCES: dict[str, Callable[["ReportWarning"], str]] = {
    "anchor_absent": lambda w: (f"rating.anchor {w.names[0]!r} is not a participant of this run; the scale is the "
                                f"average of the mixed records instead"),
    "split_league": lambda w: (f"the league is split into {len(w.groups)} groups that never played each other "
                               f"({_groups(w.groups)}): Elo and ranks compare only within a group"),
    "perfect_records": lambda w: (f"perfect records have no finite Elo: "
                                  f"{_listed(tuple(f'{n} ({f})' for n, f in zip(w.names, w.flags)), NAMES_SHOWN)}"
                                  f"; their Elo is the capped estimate and the open side of the interval is unbounded"),
    "references_unlinked": lambda w: (f"{w.where}: their games so far do not link them ({_groups(w.groups, None)}); "
                                      f"no reference rating until they have played each other"),
    "references_perfect": lambda w: (f"{w.where}: {', '.join(w.names)} won or lost every game among the references, "
                                     f"so the scale's spread there is the fit's cap, not a measurement; expected "
                                     f"references that score between them"),
    "batch_lost": lambda w: w.note,
    "replays_failed": lambda w: f"replays not recorded: {w.note}",
    "rating_changed": lambda w: (f"rated with the league file's rating settings as they are now ({w.note}), not those "
                                 f"the games were played under; they change no game, only how the games are rated"),
    "seed_changed": lambda w: (f"the league's seed changed since some of its games were played ({w.note}); those "
                               f"games started from other positions than this seed gives, yet are rated as this "
                               f"league's; use --fresh (or another output) to play every game under this seed"),
}


@dataclass(frozen=True)
class ReportWarning:
    """One reason the ratings compare less well. ``kind`` is one of :data:`SENTENCES`; ``names`` the
    participants it is about (``flags``: what each one's record is), ``groups`` the parts of a league
    that never met, ``where`` the part of the league file it concerns, ``note`` what the runner adds."""

    kind: str
    names: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    groups: tuple[tuple[str, ...], ...] = ()
    where: str = ""
    note: str = ""

    def __str__(self) -> str:
        return SENTENCES[self.kind](self)

    def to_json(self) -> dict[str, Any]:
        """The fields that are set, and the sentence."""
        fields = {"kind": self.kind, "names": list(self.names), "flags": list(self.flags),
                  "groups": [list(g) for g in self.groups], "where": self.where, "note": self.note}
        return {**{k: v for k, v in fields.items() if v or k == "kind"}, "text": str(self)}
