"""Sequential probability ratio test for gauntlets: stop playing once the games decide.

A candidate is tested against the whole field: H0 "its Elo advantage is ``elo0``" against H1 "it is
``elo1``" (logistic Elo: an advantage e predicts the score 1 / (1 + 10^(−e/400))). After each batch the
log-likelihood ratio of its games so far is compared with Wald's bounds log(β/(1−α)) and log((1−β)/α);
crossing the upper one accepts H1, the lower one H0. When every candidate is decided the league stops
early: the games not played are not needed for the verdict.

**Pairs, not games.** Game g of (a, b) and game g of (b, a) start from the same seed with the sides
swapped. Their outcomes are correlated through that start: a start that suits the candidate's tactics
tends to give it both games, and counting them as two independent games then overstates the evidence
(and the SPRT's error rates). So, as fastchess and fishtest do, a completed pair is one observation
of the pentanomial model: the candidate's points in it are 0, ½, 1, 1½ or 2 (LL, LD, WL or DD, WD, WW).
A game whose twin is not in yet is one trinomial observation (loss, draw, win). That fallback is
exact, not a shortcut: each waiting half comes from a start no other counted game shares, so it is
independent of everything else counted. The two log-likelihood ratios add.

**The ratio** is the generalized one (GSPRT) of Michel Van den Bergh, fastchess's ``logistic`` model.
Outcome i has score a_i per game (0, ¼, ½, ¾, 1 for a pair; 0, ½, 1 for a game) and frequency p̂_i.
Under a hypothesis whose Elo predicts the score s, the likeliest outcome distribution with mean s is

    p_i = p̂_i / (1 + θ·(a_i − s)),   θ the root of   Σ p̂_i (a_i − s) / (1 + θ·(a_i − s)) = 0,

and LLR = N · Σ p̂_i · log(p1_i / p0_i) over the N observations. Nothing about draws or the correlation
is assumed: both are taken from the games. An outcome not seen yet counts as 0.001 of an observation
(fastchess's regularization), so a short or perfect record gives a finite ratio: ten won pairs is
evidence, not a zero variance. A forfeit counts as the loss it is.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from arena.declared_settings import setting
from arena.tournament.results import DRAW, GameResult

Verdict = Literal["H0", "H1", ""]

PAIR_SCORES = (0.0, 0.25, 0.5, 0.75, 1.0)  # a pair's points per game: LL, LD, WL or DD, WD, WW
GAME_SCORES = (0.0, 0.5, 1.0)  # loss, draw, win
UNSEEN = 1e-3  # weight of an outcome not seen yet
MAX_ABS_ELO = 2000.0  # |elo0| and |elo1| a league file may ask for


@dataclass(frozen=True)
class SPRTConfig:
    """``sprt: {elo0, elo1, alpha, beta}`` of a league file."""

    elo0: float = setting(0.0, "H0: the candidate's Elo advantage over the field", low=-MAX_ABS_ELO,
                          high=MAX_ABS_ELO)
    elo1: float = setting(10.0, "H1: the advantage it is tested for (above elo0)", low=-MAX_ABS_ELO, high=MAX_ABS_ELO)
    alpha: float = setting(0.05, "false positive rate: accepting H1 when H0 holds", low=0.0, low_open=True,
                           high=0.5, high_open=True)
    beta: float = setting(0.05, "false negative rate: accepting H0 when H1 holds", low=0.0, low_open=True,
                          high=0.5, high_open=True)

    @property
    def bounds(self) -> tuple[float, float]:
        return math.log(self.beta / (1.0 - self.alpha)), math.log((1.0 - self.beta) / self.alpha)


def expected_score(elo: float) -> float:
    return 1.0 / (1.0 + 10.0 ** (-elo / 400.0))


def closest_with_mean(freqs: Sequence[float], scores: Sequence[float], s: float) -> list[float]:
    """The distribution on ``scores`` with mean ``s`` that makes the frequencies ``freqs`` likeliest
    (Van den Bergh, *Comments on Normalized Elo*, proposition 1.1). ``s`` must lie strictly between the
    lowest and highest score, and every frequency must be positive.

    The root θ is found by Newton's method kept inside its bracket by bisection: the left-hand side is
    decreasing in θ on the interval where every 1 + θ·(a_i − s) is positive, and runs from +∞ to −∞
    there, so the root exists and is unique."""
    d = [a - s for a in scores]
    lo, hi = -1.0 / max(d), -1.0 / min(d)  # open bracket: f(lo⁺) = +∞, f(hi⁻) = −∞
    theta = 0.0
    for _ in range(200):
        terms = [p * x / (1.0 + theta * x) for p, x in zip(freqs, d)]
        f = sum(terms)
        if f == 0.0:
            break
        if f > 0.0:
            lo = theta
        else:
            hi = theta
        slope = -sum(t * x / (1.0 + theta * x) for t, x in zip(terms, d))
        step = theta - f / slope
        nxt = step if lo < step < hi else 0.5 * (lo + hi)
        if abs(nxt - theta) <= 1e-15 * max(1.0, abs(theta)):
            theta = nxt
            break
        theta = nxt
    return [p / (1.0 + theta * x) for p, x in zip(freqs, d)]


def gsprt_llr(counts: Sequence[float], scores: Sequence[float], s0: float, s1: float) -> float:
    """Generalized log-likelihood ratio of "mean score s1" against "mean score s0" for ``counts`` of
    the outcomes ``scores`` (0 when there are none)."""
    if sum(counts) <= 0:
        return 0.0
    weights = [c if c > 0 else UNSEEN for c in counts]
    total = sum(weights)
    freqs = [w / total for w in weights]
    p0, p1 = closest_with_mean(freqs, scores, s0), closest_with_mean(freqs, scores, s1)
    return total * sum(f * math.log(b / a) for f, a, b in zip(freqs, p0, p1))


def llr(wins: int, draws: int, losses: int, elo0: float, elo1: float) -> float:
    """Trinomial ratio of H1 against H0 for W/D/L of independent games (0 when there are none)."""
    return gsprt_llr((losses, draws, wins), GAME_SCORES, expected_score(elo0), expected_score(elo1))


def pentanomial_llr(pairs: Sequence[int], elo0: float, elo1: float) -> float:
    """Pentanomial ratio of H1 against H0 for counts of pairs scoring 0, ½, 1, 1½, 2 (0 when none)."""
    return gsprt_llr(pairs, PAIR_SCORES, expected_score(elo0), expected_score(elo1))


def verdict(value: float, cfg: SPRTConfig) -> Verdict:
    lower, upper = cfg.bounds
    return "H1" if value >= upper else "H0" if value <= lower else ""


@dataclass
class CandidateRecord:
    """A candidate's games so far, from its side: W/D/L of all of them, the pentanomial counts of the
    completed pairs, and the halves still waiting for their twin (their score, by pair)."""

    wdl: list[int] = field(default_factory=lambda: [0, 0, 0])
    pairs: list[int] = field(default_factory=lambda: [0] * 5)  # pairs scoring 0, ½, 1, 1½, 2
    waiting: dict[tuple[int, int, int], float] = field(default_factory=dict)

    def add(self, key: tuple[int, int, int], score: float) -> None:
        self.wdl[0 if score == 1.0 else 1 if score == 0.5 else 2] += 1
        twin = self.waiting.pop(key, None)
        if twin is None:
            self.waiting[key] = score
        else:
            self.pairs[round(2 * (score + twin))] += 1

    def unpaired(self) -> tuple[int, int, int]:
        """W/D/L of the halves waiting for their twin."""
        scores = list(self.waiting.values())
        return scores.count(1.0), scores.count(0.5), scores.count(0.0)

    def model(self) -> str:
        """Which likelihood the ratio uses: ``pentanomial``, ``trinomial``, both, or ``none`` yet."""
        paired, single = sum(self.pairs) > 0, bool(self.waiting)
        return ("pentanomial + trinomial" if paired and single else "pentanomial" if paired
                else "trinomial" if single else "none")

    def value(self, elo0: float, elo1: float) -> float:
        return pentanomial_llr(self.pairs, elo0, elo1) + llr(*self.unpaired(), elo0, elo1)


@dataclass
class SPRTState:
    """The running records of each candidate (positions), and the test on them."""

    cfg: SPRTConfig
    candidates: tuple[int, ...]
    records: dict[int, CandidateRecord]

    @classmethod
    def start(cls, cfg: SPRTConfig, candidates: tuple[int, ...]) -> "SPRTState":
        return cls(cfg, candidates, {c: CandidateRecord() for c in candidates})

    def add(self, game: GameResult) -> None:
        """One game, for whichever side is a candidate; paired with its side-swapped twin when that is in."""
        for me, side in ((game.p1, 1), (game.p2, 2)):
            if me in self.records:
                score = 0.5 if game.winner == DRAW else 1.0 if game.winner == side else 0.0
                self.records[me].add(game.pair, score)

    def value(self, candidate: int) -> float:
        return self.records[candidate].value(self.cfg.elo0, self.cfg.elo1)

    def decided(self) -> bool:
        return bool(self.candidates) and all(verdict(self.value(c), self.cfg) for c in self.candidates)

    def summary(self, names: list[str]) -> list[dict[str, object]]:
        """Per candidate: W/D/L, the model used, the pentanomial counts (pairs scoring 0 … 2, as
        fastchess's ``Ptnml(0-2)``), the games not paired yet, the ratio, its bounds and the verdict."""
        lower, upper = self.cfg.bounds
        out: list[dict[str, object]] = []
        for c in self.candidates:
            rec, value = self.records[c], self.value(c)
            w, d, l_ = rec.wdl
            out.append({"candidate": names[c], "elo0": self.cfg.elo0, "elo1": self.cfg.elo1,
                        "wins": w, "draws": d, "losses": l_, "model": rec.model(),
                        "pentanomial": list(rec.pairs), "unpaired": len(rec.waiting), "llr": round(value, 4),
                        "lower": round(lower, 4), "upper": round(upper, 4), "verdict": verdict(value, self.cfg)})
        return out
