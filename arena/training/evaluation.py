"""Evaluation of a learner against fixed references: wins, draws and losses, and a rating.

:func:`evaluate` is a thin layer over :func:`arena.match.play_match` (the learner flies p1 in half the
envs and p2 in the other half; each env's first episode counts) that returns only what a trainer logs.
:func:`reference_scale` and :func:`rate` put a learner on the scale a tournament with the same
references uses (:func:`arena.tournament.ratings.reference_elo`): the references' Elo from their games
among themselves, the learner's from its games against them alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.env import EnvConfig


@dataclass(frozen=True)
class EvalResult:
    games: int
    wins: int
    draws: int
    losses: int

    @property
    def win_rate(self) -> float:
        return self.wins / self.games if self.games else 0.0

    @property
    def score(self) -> float:
        """Wins plus half the draws, per game (what a rating counts)."""
        return (self.wins + 0.5 * self.draws) / self.games if self.games else 0.0

    def as_row(self, label: str) -> dict[str, float]:
        """``eval_<label>_win/_draw/_loss`` fractions for eval.csv."""
        games = max(self.games, 1)
        return {f"eval_{label}_win": self.wins / games, f"eval_{label}_draw": self.draws / games,
                f"eval_{label}_loss": self.losses / games}


def evaluate(agent: Any, opponent: Any, games: int, *, env_config: "EnvConfig | None" = None,
             device: "str | torch.device" = "cpu", seed: int = 0, policy: str = "deterministic") -> EvalResult:
    """Play ``games`` battles with both agents playing by ``policy`` (``arena.agents.POLICIES``; scripted
    agents play as written either way)."""
    from arena.match import play_match

    result = play_match(agent, opponent, games, env_config=env_config, device=device, seed=seed,
                        policies=(policy, policy))
    return EvalResult(int(result.games), int(result.wins), int(result.draws), int(result.losses))


@dataclass(frozen=True)
class Rating:
    """A learner's Elo against fixed references, with its 95 % interval. ``note`` is
    ``"above every reference"`` (``elo`` is inf, ``low`` the bound the games give) or its mirror."""

    elo: float
    low: float
    high: float
    note: str = ""

    def key(self) -> tuple[int, float]:
        """Orders ratings as the tournament's leaderboard does (:func:`arena.tournament.ratings.reference_order`):
        above every reference by lower bound, then the Elo, then below every reference by upper bound."""
        from arena.tournament.ratings import reference_order

        return reference_order(self.elo, self.low, self.high)

    def describe(self) -> str:
        if self.elo == math.inf:
            return f"above every reference (Elo > {self.low:.0f})"
        if self.elo == -math.inf:
            return f"below every reference (Elo < {self.high:.0f})"
        return f"Elo {self.elo:.0f} ({self.low:.0f}–{self.high:.0f})"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON: an infinite Elo or bound is null (the note says which side)."""
        return {k: (v if not isinstance(v, float) or math.isfinite(v) else None) for k, v in vars(self).items()}

    @classmethod
    def from_dict(cls, data: Any) -> "Rating":
        """``ValueError`` naming the bad field."""
        from arena.tournament.ratings import ABOVE_REFERENCES as ABOVE
        from arena.tournament.ratings import BELOW_REFERENCES as BELOW

        if not isinstance(data, dict):
            raise ValueError(f"expected a dict, got {type(data).__name__}")
        note = data.get("note", "")
        if note not in ("", ABOVE, BELOW):
            raise ValueError(f"note: expected '', {ABOVE!r} or {BELOW!r}, got {note!r}"[:200])
        unbounded = {"elo": math.inf if note == ABOVE else -math.inf, "low": -math.inf, "high": math.inf}
        values = {}
        for name in ("elo", "low", "high"):
            v = data.get(name)
            v = unbounded[name] if v is None else v
            if isinstance(v, bool) or not isinstance(v, (int, float)) or math.isnan(v):
                raise ValueError(f"{name}: expected a number or null, got {v!r}"[:200])
            values[name] = float(v)
        return cls(values["elo"], values["low"], values["high"], note)


@dataclass(frozen=True)
class ReferenceScale:
    """The references' Elo, and those whose record among them is perfect (unbeaten or winless): the
    scale's spread at those is the fit's cap, not a measurement (a league report warns of the same)."""

    elo: dict[str, float]
    perfect: tuple[str, ...] = ()


def reference_scale(labels: Sequence[str], results: Mapping[tuple[str, str], EvalResult], rounds: int = 0
                    ) -> ReferenceScale:
    """The references' Elo from their games among themselves (``results[(a, b)]`` is a's record against b),
    by the tournament's fit and on its scale: the average of the references with mixed records is 1000.
    A lone reference is 1000."""
    from arena.tournament.ratings import ELO_BASE, bradley_terry
    from arena.tournament.results import DRAW, P1_WINS, P2_WINS, GameResult

    if len(labels) == 1:
        return ReferenceScale({labels[0]: ELO_BASE})
    position = {label: i for i, label in enumerate(labels)}
    games = []
    for (a, b), r in results.items():
        for k, outcome in enumerate([P1_WINS] * r.wins + [DRAW] * r.draws + [P2_WINS] * r.losses):
            games.append(GameResult(position[a], position[b], k, outcome, 0, 0.0, 0.0))
    fit = bradley_terry(games, len(labels), rounds=rounds)
    return ReferenceScale({label: float(fit.elo[i]) for label, i in position.items()},
                          tuple(label for label, i in position.items() if fit.flags[i] in ("unbeaten", "winless")))


def rate(results: Mapping[str, EvalResult], scale: Mapping[str, float]) -> Rating | None:
    """The learner's rating from its ``results`` against the references of ``scale``; None without games."""
    import numpy as np

    from arena.tournament.ratings import rate_against

    played = [label for label, r in results.items() if r.games > 0 and label in scale]
    if not played:
        return None
    points = np.array([results[label].wins + 0.5 * results[label].draws for label in played])
    games = np.array([float(results[label].games) for label in played])
    return Rating(*rate_against(points, games, np.array([scale[label] for label in played])))
