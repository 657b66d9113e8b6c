"""Sequential probability ratio test for gauntlets: stop playing once the games decide.

A candidate is tested against the whole field: H0 "its Elo advantage is ``elo0``" against H1 "it is
``elo1``". After each batch the log-likelihood ratio of its record so far is compared with the bounds
log(β/(1−α)) and log((1−β)/α) (Wald); crossing the upper one accepts H1, the lower one H0. When every
candidate is decided the league stops early: the games not played are not needed for the verdict.

The ratio is that of the trinomial model with the draw ratio taken from the games: under a hypothesis
whose Elo difference predicts the score s_H, a game is won with probability s_H − d/2 and lost with
1 − s_H − d/2 (d = draws / games), so LLR = W·log(w₁/w₀) + L·log(l₁/l₀); draws carry no evidence.
Unlike the normal approximation engine testers often use, it stays right for short or perfect records
(ten wins in ten games is evidence, not a zero variance). A forfeit counts as the loss it is.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

Verdict = Literal["H0", "H1", ""]


@dataclass(frozen=True)
class SPRTConfig:
    """``sprt: {elo0, elo1, alpha, beta}`` of a league file."""

    elo0: float = 0.0
    elo1: float = 10.0
    alpha: float = 0.05  # false positive rate: accepting H1 when H0 holds
    beta: float = 0.05  # false negative rate

    @property
    def bounds(self) -> tuple[float, float]:
        return math.log(self.beta / (1.0 - self.alpha)), math.log((1.0 - self.beta) / self.alpha)


def expected_score(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def llr(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """Log-likelihood ratio of H1 against H0 for a W/D/L record (0 when it says nothing yet)."""
    n = wins + draws + losses
    if n == 0:
        return 0.0
    half_draw = 0.5 * draws / n
    tiny = 1e-12  # a hypothesis that forbids what was seen (a huge elo1 and a loss) is all but refuted

    def win_loss(elo: float) -> tuple[float, float]:
        s = expected_score(elo)
        return max(s - half_draw, tiny), max(1.0 - s - half_draw, tiny)

    (w0, l0), (w1, l1) = win_loss(elo0), win_loss(elo1)
    return wins * math.log(w1 / w0) + losses * math.log(l1 / l0)


def verdict(value: float, cfg: SPRTConfig) -> Verdict:
    lower, upper = cfg.bounds
    return "H1" if value >= upper else "H0" if value <= lower else ""


@dataclass
class SPRTState:
    """Running W/D/L of each candidate (positions), and the test on them."""

    cfg: SPRTConfig
    candidates: tuple[int, ...]
    records: dict[int, list[int]]

    @classmethod
    def start(cls, cfg: SPRTConfig, candidates: tuple[int, ...]) -> "SPRTState":
        return cls(cfg, candidates, {c: [0, 0, 0] for c in candidates})

    def add(self, p1: int, p2: int, winner: int) -> None:
        """One game (``winner``: 0 draw, 1 p1, 2 p2) for whichever side is a candidate."""
        for me, side in ((p1, 1), (p2, 2)):
            if me in self.records:
                self.records[me][0 if winner == side else 1 if winner == 0 else 2] += 1

    def value(self, candidate: int) -> float:
        return llr(*self.records[candidate], self.cfg.elo0, self.cfg.elo1)

    def decided(self) -> bool:
        return bool(self.candidates) and all(verdict(self.value(c), self.cfg) for c in self.candidates)

    def summary(self, names: list[str]) -> list[dict[str, object]]:
        lower, upper = self.cfg.bounds
        return [{"candidate": names[c], "wins": w, "draws": d, "losses": l_, "llr": round(self.value(c), 4),
                 "lower": round(lower, 4), "upper": round(upper, 4), "verdict": verdict(self.value(c), self.cfg)}
                for c in self.candidates for w, d, l_ in [self.records[c]]]
