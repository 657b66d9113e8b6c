"""Ratings from the game log: TrueSkill and a Bradley-Terry (Elo) fit with bootstrap intervals.

Both are pure functions of the stored games, so the same database always gives the same leaderboard.

TrueSkill is an online method: its result depends on the order it sees the games in. The games are
first sorted by identities that do not depend on when they were played (participant key, opponent key,
game number) and then shuffled with the tournament's seed — a fixed order, and one that interleaves the
pairings, instead of feeding TrueSkill one pairing after another. The update is the package's own 1-v-1
case written out in closed form with the package's ``v``/``w`` functions and draw margin (its factor
graph reduces to exactly that for two players); it is about 20× faster than ``trueskill.rate_1vs1`` and
agrees with it to rounding (see ``tests/tournament/test_ratings.py``).

Bradley-Terry is fitted to the pairwise scores (a draw counts half a win) by Newton's method with a tiny
ridge penalty, which keeps a perfect record finite. It does not depend on order. Its 95 % interval comes
from refitting on bootstrap resamples of the games, as in FastChat's ``elo_analysis.py``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from arena.tournament.config import RatingConfig
from arena.tournament.results import DRAW, P1_WINS, GameResult

ELO_BASE = 1000.0  # the league average
ELO_SCALE = 400.0 / math.log(10.0)  # natural-log strength → Elo points: 400 Elo = 10:1 odds
RIDGE = 1e-3  # penalty on squared log-strength; caps a perfect record near +1900 Elo over 256 games
BOOTSTRAP_CHUNK_CELLS = 1 << 21  # score-matrix cells fitted at once in the bootstrap (~16 MB per array)


@dataclass(frozen=True)
class Skill:
    mu: float
    sigma: float

    @property
    def conservative(self) -> float:
        """mu − 3·sigma: a skill the player very probably (about 99.9 %) has at least."""
        return self.mu - 3.0 * self.sigma


@dataclass(frozen=True)
class EloFit:
    elo: np.ndarray  # [P] point estimate
    low: np.ndarray  # [P] 2.5 % bootstrap quantile (NaN without bootstrap)
    high: np.ndarray  # [P] 97.5 % quantile


# -- TrueSkill ---------------------------------------------------------------------------------------


def rating_order(games: Sequence[GameResult], keys: Sequence[str], seed: int) -> list[int]:
    """Indices into ``games`` in the fixed, seeded order TrueSkill sees them in; ``keys[p]`` is a stable
    identity of participant ``p`` (its database key)."""
    ordered = sorted(range(len(games)), key=lambda i: (keys[games[i].p1], keys[games[i].p2], games[i].game_index))
    perm = np.random.default_rng(seed).permutation(len(ordered))
    return [ordered[j] for j in perm]


def trueskill_env(settings: RatingConfig):  # -> trueskill.TrueSkill
    import trueskill

    return trueskill.TrueSkill(mu=settings.mu, sigma=settings.sigma, beta=settings.beta, tau=settings.tau,
                               draw_probability=settings.draw_probability, backend=None)


def trueskill_ratings(games: Sequence[GameResult], num_participants: int, settings: RatingConfig,
                      keys: Sequence[str] | None = None, seed: int = 0) -> list[Skill]:
    """TrueSkill of each participant after all ``games`` (positions as ids) in :func:`rating_order`.
    A forfeit is rated as the loss it is scored as."""
    import trueskill

    env = trueskill_env(settings)
    keys = list(keys) if keys is not None else [f"{i:09d}" for i in range(num_participants)]
    mu = [settings.mu] * num_participants
    sigma = [settings.sigma] * num_participants
    margin = trueskill.calc_draw_margin(settings.draw_probability, 2, env)
    beta2, tau2 = settings.beta**2, settings.tau**2
    for i in rating_order(games, keys, seed):
        g = games[i]
        if g.winner == DRAW:
            a, b, drawn = g.p1, g.p2, True
        else:
            a, b = (g.p1, g.p2) if g.winner == P1_WINS else (g.p2, g.p1)
            drawn = False
        mu[a], sigma[a], mu[b], sigma[b] = update_1vs1(env, mu[a], sigma[a], mu[b], sigma[b], drawn, margin,
                                                       beta2, tau2)
    return [Skill(m, s) for m, s in zip(mu, sigma)]


def update_1vs1(env, mu_a: float, sigma_a: float, mu_b: float, sigma_b: float, drawn: bool, margin: float,
                beta2: float, tau2: float) -> tuple[float, float, float, float]:
    """One TrueSkill game, ``a`` beat ``b`` (or they drew): the package's factor graph for two players,
    in closed form. A numerically hopeless update (the package would raise) leaves both unchanged."""
    var_a, var_b = sigma_a**2 + tau2, sigma_b**2 + tau2
    c = math.sqrt(var_a + var_b + 2.0 * beta2)
    t, eps = (mu_a - mu_b) / c, margin / c
    try:
        if drawn:
            v, w = env.v_draw(t, eps), env.w_draw(t, eps)
        else:
            v, w = env.v_win(t, eps), env.w_win(t, eps)
    except FloatingPointError:
        return mu_a, math.sqrt(var_a), mu_b, math.sqrt(var_b)
    return (mu_a + var_a / c * v, math.sqrt(var_a * (1.0 - var_a / c**2 * w)),
            mu_b - var_b / c * v, math.sqrt(var_b * (1.0 - var_b / c**2 * w)))


# -- Bradley-Terry -----------------------------------------------------------------------------------


def pairwise(games: Sequence[GameResult], num_participants: int) -> tuple[np.ndarray, np.ndarray]:
    """``(score, count)``: ``score[i, j]`` points of i against j (win 1, draw ½), ``count[i, j]`` games."""
    score = np.zeros((num_participants, num_participants))
    count = np.zeros((num_participants, num_participants))
    for g in games:
        count[g.p1, g.p2] += 1.0
        count[g.p2, g.p1] += 1.0
        if g.winner == DRAW:
            score[g.p1, g.p2] += 0.5
            score[g.p2, g.p1] += 0.5
        elif g.winner == P1_WINS:
            score[g.p1, g.p2] += 1.0
        else:
            score[g.p2, g.p1] += 1.0
    return score, count


def fit_strengths(score: np.ndarray, count: np.ndarray, ridge: float = RIDGE, iterations: int = 100) -> np.ndarray:
    """Maximum-penalised-likelihood log-strengths θ for a stack of score/count matrices [..., P, P].

    Newton's method on Σ s_ij·log σ(θi−θj) − ridge/2·|θ|², steps clipped to ±2 so that lopsided
    records converge; the result is centred to mean 0.
    """
    score, count = np.asarray(score, float), np.asarray(count, float)
    batch_shape, p = score.shape[:-2], score.shape[-1]
    theta = np.zeros(batch_shape + (p,))
    eye = np.eye(p)
    for _ in range(iterations):
        diff = theta[..., :, None] - theta[..., None, :]
        prob = 1.0 / (1.0 + np.exp(-diff))
        grad = (score - count * prob).sum(-1) - ridge * theta
        weight = count * prob * (1.0 - prob)
        hess = weight - (weight.sum(-1) + ridge)[..., :, None] * eye  # negative definite
        step = np.linalg.solve(-hess, grad[..., None])[..., 0]
        step = np.clip(step, -2.0, 2.0)
        theta = theta + step
        if np.max(np.abs(step), initial=0.0) < 1e-10:
            break
    return theta - theta.mean(-1, keepdims=True)


def bradley_terry(games: Sequence[GameResult], num_participants: int, rounds: int = 1000, seed: int = 0,
                  ridge: float = RIDGE) -> EloFit:
    """Elo ratings (league mean ``ELO_BASE``) with bootstrap 95 % intervals over ``rounds`` resamples."""
    score, count = pairwise(games, num_participants)
    elo = ELO_BASE + ELO_SCALE * fit_strengths(score, count, ridge)
    nan = np.full(num_participants, np.nan)
    if rounds <= 0 or not games:
        return EloFit(elo, nan, nan.copy())
    # A bootstrap resample of the games is a multinomial draw over (pair, outcome) cells.
    iu, ju = np.triu_indices(num_participants, 1)
    draws = _draws(games, num_participants)[iu, ju]
    wins_i = score[iu, ju] - 0.5 * draws
    wins_j = count[iu, ju] - wins_i - draws
    cells = np.concatenate([wins_i, draws, wins_j])
    total = int(round(cells.sum()))
    rng = np.random.default_rng(seed)
    k = len(iu)
    # Resamples are fitted in chunks of about BOOTSTRAP_CHUNK_CELLS matrix cells, so memory stays
    # bounded for any number of rounds and participants; drawing the chunks one after another from
    # the same generator gives exactly the samples of one big draw.
    chunk = max(1, BOOTSTRAP_CHUNK_CELLS // (num_participants * num_participants))
    boot = np.empty((rounds, num_participants))
    for start in range(0, rounds, chunk):
        n = min(chunk, rounds - start)
        samples = rng.multinomial(total, cells / cells.sum(), size=n)
        wi, dr, wj = samples[:, :k], samples[:, k:2 * k], samples[:, 2 * k:]
        s = np.zeros((n, num_participants, num_participants))
        c = np.zeros_like(s)
        s[:, iu, ju] = wi + 0.5 * dr
        s[:, ju, iu] = wj + 0.5 * dr
        c[:, iu, ju] = c[:, ju, iu] = wi + dr + wj
        boot[start:start + n] = ELO_BASE + ELO_SCALE * fit_strengths(s, c, ridge)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    return EloFit(elo, low, high)


def _draws(games: Sequence[GameResult], num_participants: int) -> np.ndarray:
    out = np.zeros((num_participants, num_participants))
    for g in games:
        if g.winner == DRAW:
            out[g.p1, g.p2] += 1.0
            out[g.p2, g.p1] += 1.0
    return out
