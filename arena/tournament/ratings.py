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
from typing import Any

import numpy as np

from arena.tournament.league_config import RatingConfig
from arena.tournament.outcomes import Games, as_outcomes
from arena.tournament.results import DRAW, P1_WINS

ELO_BASE = 1000.0  # the league average
ELO_SCALE = 400.0 / math.log(10.0)  # natural-log strength → Elo points: 400 Elo = 10:1 odds
RIDGE = 1e-3  # penalty on squared log-strength; caps a perfect record near +1900 Elo over 256 games
BOOTSTRAP_CHUNK_CELLS = 1 << 21  # score-matrix cells fitted at once in the bootstrap (~16 MB per array)
# Refitting every resample costs rounds × P³: above this the intervals come from the fit's sandwich
# covariance instead (1000 rounds: refits up to 64 participants).
EXACT_BOOTSTRAP_BUDGET = 1000 * 64**3
# Two Elo values of one resample closer than this are tied for rank: their order would otherwise come
# from the last bits of a linear solve, which differ between BLAS builds.
RANK_TIE_ELO = 1e-6


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
    """Bradley-Terry Elo per participant. An interval bound that the games cannot give is NaN (no games,
    or a bootstrap that never varies: one game, only draws) or infinite (the open side of an unbeaten
    or winless record, whose maximum-likelihood Elo is infinite)."""

    elo: np.ndarray  # [P] point estimate (NaN without games)
    low: np.ndarray  # [P] 2.5 % bootstrap quantile
    high: np.ndarray  # [P] 97.5 % quantile
    rank_low: np.ndarray | None = None  # [P] best rank in 95 % of the resamples (1 = first)
    rank_high: np.ndarray | None = None  # [P] worst rank in 95 % of the resamples
    flags: tuple[str, ...] = ()  # [P] "unbeaten", "winless", "no games", "anchor" or ""
    components: tuple[tuple[int, ...], ...] = ()  # groups of participants linked by games (one when connected)
    method: str = ""  # "bootstrap" (refit on each resample) or "sandwich" (normal draws around the fit)


# -- TrueSkill ---------------------------------------------------------------------------------------


def rating_order(games: Games, keys: Sequence[str], seed: int) -> np.ndarray:
    """Indices into ``games`` in the fixed, seeded order TrueSkill sees them in; ``keys[p]`` is a stable
    identity of participant ``p`` (its database key)."""
    games = as_outcomes(games)
    p1, p2, index = games.p1, games.p2, games.game_index
    rank = {k: r for r, k in enumerate(sorted(set(keys)))}
    key_rank = np.array([rank[k] for k in keys], dtype=np.int64)
    ordered = np.lexsort((index, key_rank[p2], key_rank[p1])) if len(games) else np.zeros(0, dtype=np.int64)
    perm = np.random.default_rng(seed).permutation(len(ordered))
    return ordered[perm]


def trueskill_env(settings: RatingConfig):  # -> trueskill.TrueSkill
    import trueskill

    return trueskill.TrueSkill(mu=settings.mu, sigma=settings.sigma, beta=settings.beta, tau=settings.tau,
                               draw_probability=settings.draw_probability, backend=None)


def trueskill_ratings(games: Games, num_participants: int, settings: RatingConfig,
                      keys: Sequence[str] | None = None, seed: int = 0) -> list[Skill]:
    """TrueSkill of each participant after all ``games`` (positions as ids) in :func:`rating_order`.
    A forfeit is rated as the loss it is scored as."""
    import trueskill
    from trueskill.backends import cdf, pdf  # the package's own functions: the same numbers, bit for bit

    games = as_outcomes(games)
    env = trueskill_env(settings)
    keys = list(keys) if keys is not None else [f"{i:09d}" for i in range(num_participants)]
    mu = [settings.mu] * num_participants
    sigma = [settings.sigma] * num_participants
    margin = trueskill.calc_draw_margin(settings.draw_probability, 2, env)
    beta2, tau2 = settings.beta**2, settings.tau**2
    order = rating_order(games, keys, seed)
    p1, p2, winner = (a[order].tolist() for a in (games.p1, games.p2, games.winner))
    sqrt = math.sqrt
    # update_1vs1 written out in the loop (a million games take seconds, not tens of seconds).
    for x1, x2, won in zip(p1, p2, winner):
        if won == P1_WINS or won == DRAW:
            a, b = x1, x2
        else:
            a, b = x2, x1
        var_a, var_b = sigma[a] * sigma[a] + tau2, sigma[b] * sigma[b] + tau2
        c = sqrt(var_a + var_b + 2.0 * beta2)
        c2 = c * c  # as update_1vs1 squares it back
        t, eps = (mu[a] - mu[b]) / c, margin / c
        if won == DRAW:
            sign = -1.0 if t < 0 else 1.0
            lo, hi = eps - abs(t), -eps - abs(t)
            denom = cdf(lo) - cdf(hi)
            if not denom:
                sigma[a], sigma[b] = sqrt(var_a), sqrt(var_b)
                continue
            v_abs = (pdf(hi) - pdf(lo)) / denom
            v = v_abs * sign
            w = v_abs * v_abs + (lo * pdf(lo) - hi * pdf(hi)) / denom
        else:
            x = t - eps
            denom = cdf(x)
            v = (pdf(x) / denom) if denom else -x
            w = v * (v + x)
            if not 0 < w < 1:
                sigma[a], sigma[b] = sqrt(var_a), sqrt(var_b)
                continue
        mu[a], mu[b] = mu[a] + var_a / c * v, mu[b] - var_b / c * v
        sigma[a], sigma[b] = sqrt(var_a * (1.0 - var_a / c2 * w)), sqrt(var_b * (1.0 - var_b / c2 * w))
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


def pairwise(games: Games, num_participants: int) -> tuple[np.ndarray, np.ndarray]:
    """``(score, count)``: ``score[i, j]`` points of i against j (win 1, draw ½), ``count[i, j]`` games."""
    score, count, _ = pair_tables(games, num_participants)
    return score, count


def pair_tables(games: Games, num_participants: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(score, count, draws)`` matrices, counted with ``bincount`` rather than a loop over games."""
    n = num_participants
    games = as_outcomes(games)
    p1, p2, winner = games.p1, games.p2, games.winner
    first = games.points_p1()
    cells = n * n

    def table(rows: np.ndarray, cols: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        return np.bincount(rows * n + cols, weights=weights, minlength=cells).reshape(n, n).astype(float)

    count = table(p1, p2) + table(p2, p1)
    score = table(p1, p2, first) + table(p2, p1, 1.0 - first)
    drawn = (winner == DRAW).astype(float)
    draws = table(p1, p2, drawn) + table(p2, p1, drawn)
    return score, count, draws


def components(count: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Groups of participants (with games) linked by games, largest first (equal sizes by their first
    member). Each group is grown from its lowest participant a whole frontier at a time, with matrix
    operations: a league is one group reached in a step or two, not a loop over its pairs."""
    linked = np.triu(count, 1) > 0
    linked |= linked.T
    left = count.sum(1) > 0
    groups = []
    while left.any():
        start = int(np.argmax(left))
        group = np.zeros(len(left), dtype=bool)
        group[start] = True
        frontier = group.copy()
        while frontier.any():
            frontier = linked[frontier].any(0) & ~group
            group |= frontier
        groups.append(tuple(int(i) for i in np.flatnonzero(group)))
        left &= ~group
    return tuple(sorted(groups, key=lambda g: (-len(g), g)))


def fit_strengths(score: np.ndarray, count: np.ndarray, ridge: float = RIDGE, iterations: int = 100,
                  start: np.ndarray | None = None) -> np.ndarray:
    """Maximum-penalised-likelihood log-strengths θ for a stack of score/count matrices [..., P, P].

    Newton's method on Σ s_ij·log σ(θi−θj) − ridge/2·|θ|², steps clipped to ±2 so that lopsided
    records converge; the result is centred to mean 0. ``start`` (the fit of the full data, for
    bootstrap resamples) begins next to the answer: a few Newton steps instead of a dozen.
    """
    score, count = np.asarray(score, float), np.asarray(count, float)
    batch_shape, p = score.shape[:-2], score.shape[-1]
    theta = np.zeros(batch_shape + (p,)) if start is None else np.broadcast_to(start, batch_shape + (p,)).copy()
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


def record_flags(score: np.ndarray, count: np.ndarray, anchor: int | None = None) -> tuple[str, ...]:
    """Per participant: "no games", "unbeaten" (every game won), "winless" (no point at all), "anchor", or ""."""
    games, points = count.sum(1), score.sum(1)
    flags = []
    for i in range(len(games)):
        if games[i] == 0:
            flags.append("no games")
        elif i == anchor:
            flags.append("anchor")
        elif points[i] == games[i]:
            flags.append("unbeaten")
        elif points[i] == 0:
            flags.append("winless")
        else:
            flags.append("")
    return tuple(flags)


def bradley_terry(games: Games, num_participants: int, rounds: int = 1000, seed: int = 0,
                  ridge: float = RIDGE, anchor: int | None = None, anchor_elo: float = ELO_BASE) -> EloFit:
    """Elo ratings with bootstrap 95 % intervals and rank bounds over ``rounds`` resamples.

    The scale is fixed by ``anchor`` (that participant's Elo is ``anchor_elo``), or else by the average
    of the participants with mixed records, which is ``ELO_BASE``. An unbeaten or winless record has an
    infinite maximum-likelihood strength that the ridge caps; leaving it out of the average keeps it
    from shifting everyone else, and its flag and open interval say what its Elo is worth.
    """
    n = num_participants
    games = as_outcomes(games)
    score, count, draw_table = pair_tables(games, n)
    played = count.sum(1) > 0
    mixed = np.array([f == "" for f in record_flags(score, count)]) & played
    flags = record_flags(score, count, anchor)
    reference = mixed if mixed.any() else played
    fixed = anchor  # whose Elo the scale pins: its interval is zero-wide by construction, not unknown
    if anchor is None and mixed.sum() == 1:  # one mixed record: the average is that participant alone
        fixed = int(np.flatnonzero(mixed)[0])

    def to_elo(theta: np.ndarray) -> np.ndarray:
        if anchor is not None:
            return anchor_elo + ELO_SCALE * (theta - theta[..., anchor:anchor + 1])
        if not reference.any():
            return ELO_BASE + ELO_SCALE * theta
        return ELO_BASE + ELO_SCALE * (theta - theta[..., reference].mean(-1, keepdims=True))

    theta_hat = fit_strengths(score, count, ridge)
    elo = to_elo(theta_hat)
    nan = np.full(n, np.nan)
    groups = components(count)
    if rounds <= 0 or not games:
        return EloFit(np.where(played, elo, np.nan), nan, nan.copy(), nan.copy(), nan.copy(), flags, groups)
    rng = np.random.default_rng(seed)
    if rounds * n**3 > EXACT_BOOTSTRAP_BUDGET:
        method = "sandwich"
        boot = to_elo(sandwich_draws(score, count, draw_table, theta_hat, ridge, rounds, rng))
    else:
        method = "bootstrap"
        boot = bootstrap_elo(score, count, draw_table, theta_hat, ridge, rounds, rng, to_elo)
    low, high = np.percentile(boot, [2.5, 97.5], axis=0)
    rank_low, rank_high = nan.copy(), nan.copy()
    if played.any():
        ranks = resample_ranks(boot[:, played])
        rank_low[played], rank_high[played] = np.percentile(ranks, [2.5, 97.5], axis=0, method="nearest")
    # What the bootstrap cannot tell: no games, a single game, only draws, no spread at all; the open
    # side of an unbeaten or winless record.
    games_of, decisive = count.sum(1), (count - draw_table).sum(1)
    thin = (games_of < 2) | (decisive == 0)  # a resample of one game, or of draws only, says nothing of spread
    unpinned = np.arange(n) != (-1 if fixed is None else fixed)
    unknown = ~played | (((high - low) < 1e-9) | thin) & unpinned
    low, high = np.where(unknown, np.nan, low), np.where(unknown, np.nan, high)
    high = np.where(np.array([f == "unbeaten" for f in flags]), np.inf, high)
    low = np.where(np.array([f == "winless" for f in flags]), -np.inf, low)
    return EloFit(np.where(played, elo, np.nan), low, high, rank_low, rank_high, flags, groups, method)


def resample_ranks(values: np.ndarray, tie: float = RANK_TIE_ELO) -> np.ndarray:
    """[rounds, P] rank of each participant in each resample (1 = best): one plus the number of
    participants ahead of it by more than ``tie``, so near-equal values share the better rank on every
    machine instead of being ordered by rounding."""
    rounds, n = values.shape
    ranks = np.empty((rounds, n), dtype=np.int64)
    chunk = max(1, BOOTSTRAP_CHUNK_CELLS // max(1, n * n))
    for start in range(0, rounds, chunk):
        v = values[start:start + chunk]
        ranks[start:start + chunk] = 1 + (v[:, None, :] > v[:, :, None] + tie).sum(-1)
    return ranks


def bootstrap_elo(score: np.ndarray, count: np.ndarray, draw_table: np.ndarray, theta_hat: np.ndarray, ridge: float,
                  rounds: int, rng: np.random.Generator, to_elo) -> np.ndarray:
    """[rounds, P] Elo refitted on resamples of the games (as FastChat's ``elo_analysis.py`` does).

    A resample of the games is a multinomial draw over (pair, outcome) cells. Resamples are fitted
    in chunks of about ``BOOTSTRAP_CHUNK_CELLS`` matrix cells, so memory stays bounded for any
    number of rounds and participants; drawn one after another from the same generator, the chunks
    are exactly the samples of one big draw.
    """
    n = score.shape[0]
    iu, ju = np.triu_indices(n, 1)
    draws = draw_table[iu, ju]
    wins_i = score[iu, ju] - 0.5 * draws
    wins_j = count[iu, ju] - wins_i - draws
    cells = np.concatenate([wins_i, draws, wins_j])
    total = int(round(cells.sum()))
    k = len(iu)
    chunk = max(1, BOOTSTRAP_CHUNK_CELLS // (n * n))
    boot = np.empty((rounds, n))
    for start in range(0, rounds, chunk):
        m = min(chunk, rounds - start)
        samples = rng.multinomial(total, cells / cells.sum(), size=m)
        wi, dr, wj = samples[:, :k], samples[:, k:2 * k], samples[:, 2 * k:]
        sc = np.zeros((m, n, n))
        c = np.zeros_like(sc)
        sc[:, iu, ju] = wi + 0.5 * dr
        sc[:, ju, iu] = wj + 0.5 * dr
        c[:, iu, ju] = c[:, ju, iu] = wi + dr + wj
        boot[start:start + m] = to_elo(fit_strengths(sc, c, ridge, start=theta_hat))
    return boot


def sandwich_draws(score: np.ndarray, count: np.ndarray, draw_table: np.ndarray, theta_hat: np.ndarray,
                   ridge: float, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """[rounds, P] log-strengths drawn from N(θ̂, H⁻¹ M H⁻¹): the fit's sandwich covariance.

    H is the penalised log-likelihood's Hessian at θ̂ and M the sum over games of the outer products
    of their score residuals (win 1, draw ½, loss 0, minus the predicted score). It is what the
    bootstrap estimates, to first order, for the cost of a few P³ operations instead of ``rounds``
    refits, so it serves leagues of hundreds of participants. Draws keep the rank bounds.

    The draws use the covariance's symmetric square root, which is unique: a root built from the
    eigenvectors alone would depend on their signs and, for equal eigenvalues, on the basis the
    LAPACK build picks, and every draw with it.
    """
    n = score.shape[0]
    prob = 1.0 / (1.0 + np.exp(-(theta_hat[:, None] - theta_hat[None, :])))
    weight = count * prob * (1.0 - prob)
    info = np.diag(weight.sum(1) + ridge) - weight  # −H, positive definite thanks to the ridge
    wins = score - 0.5 * draw_table
    losses = count - wins - draw_table
    residual2 = wins * (1.0 - prob) ** 2 + draw_table * (0.5 - prob) ** 2 + losses * prob**2
    meat = np.diag(residual2.sum(1)) - residual2
    inverse = np.linalg.inv(info)
    cov = inverse @ meat @ inverse
    values, vectors = np.linalg.eigh((cov + cov.T) / 2.0)
    values = np.where(values > values.max() * 1e-12, values, 0.0)  # rounding noise of a null direction
    root = (vectors * np.sqrt(values)) @ vectors.T
    return theta_hat + rng.standard_normal((rounds, n)) @ root


# -- rating against fixed references -----------------------------------------------------------------

SATURATED_SCORE = 0.99  # at least this against every reference: "above every reference" (at most 1 − it: below)
LIKELIHOOD_DROP_95 = 1.920729  # χ²₁(0.95) / 2: the profile-likelihood 95 % interval of one strength
REFERENCE = "reference"
ABOVE_REFERENCES = "above every reference"
BELOW_REFERENCES = "below every reference"
NO_REFERENCE_GAMES = "no games against references"
SOME_REFERENCES = "not yet against every reference"  # rated once it has played them all


@dataclass(frozen=True)
class ReferenceFit:
    """Elo on a scale fixed by reference participants, each other participant rated only from its games
    against them (OpenAI Five's way of rating a run's checkpoints): a checkpoint's blind spot against
    another checkpoint cannot reorder the rest.

    A participant that scores at least :data:`SATURATED_SCORE` against every reference is "above every
    reference": its Elo is ``inf`` and ``low`` is what the games can say (a handful of lost games out of
    hundreds would otherwise rank such players by noise); "below every reference" mirrors it.
    """

    elo: np.ndarray  # [P]; ±inf above or below every reference; NaN without games against the references
    low: np.ndarray  # [P] 95 % interval (profile likelihood; the references' own from their bootstrap)
    high: np.ndarray
    flags: tuple[str, ...]  # [P] REFERENCE, ABOVE_/BELOW_REFERENCES, NO_REFERENCE_GAMES, SOME_REFERENCES or ""
    references: tuple[int, ...]
    perfect: tuple[int, ...] = ()  # references unbeaten or winless among the references: their Elo is capped


class ReferencesUnlinked(ValueError):
    """The references' games among themselves do not link them all, so they fix no common scale."""

    def __init__(self, groups: tuple[tuple[int, ...], ...]) -> None:
        self.groups = groups
        super().__init__(f"the references form {len(groups)} groups that never played each other")


def reference_elo(games: Games, num_participants: int, references: Sequence[int],
                  rounds: int = 1000, seed: int = 0, anchor: int | None = None, anchor_elo: float = ELO_BASE,
                  ridge: float = RIDGE) -> ReferenceFit:
    """Rate the references by Bradley-Terry on their games among themselves (scale and intervals as
    :func:`bradley_terry`, ``anchor`` when it is a reference), then every other participant that has
    played every reference by the maximum-likelihood strength that explains its games against them
    alone, with the references' strengths held fixed. Raises :class:`ReferencesUnlinked` when the
    references' mutual games do not connect them."""
    refs = sorted(set(int(r) for r in references))
    if len(refs) < 2:
        raise ValueError(f"expected at least 2 references, got {len(refs)}")
    local = {p: i for i, p in enumerate(refs)}
    games = as_outcomes(games)
    among = games.among(refs)
    _, ref_count, _ = pair_tables(among, len(refs))
    groups = components(ref_count)
    if len(groups) != 1 or len(groups[0]) != len(refs):
        missing = tuple((i,) for i in range(len(refs)) if not any(i in g for g in groups))
        raise ReferencesUnlinked(tuple(tuple(refs[i] for i in g) for g in groups + missing))
    fit = bradley_terry(among, len(refs), rounds, seed, ridge,
                        anchor=local.get(anchor) if anchor is not None else None, anchor_elo=anchor_elo)

    n = num_participants
    score, count, _ = pair_tables(games, n)
    elo, low, high = np.full(n, np.nan), np.full(n, np.nan), np.full(n, np.nan)
    flags = [""] * n
    for p, i in local.items():
        elo[p], low[p], high[p], flags[p] = fit.elo[i], fit.low[i], fit.high[i], REFERENCE
    for p in range(n):
        if p in local:
            continue
        games_vs, points_vs = count[p, refs], score[p, refs]
        played = games_vs > 0
        if not played.all():  # an interrupted league: a rating from some references would not compare
            flags[p] = SOME_REFERENCES if played.any() else NO_REFERENCE_GAMES
            continue
        elo[p], low[p], high[p], flags[p] = rate_against(points_vs, games_vs, fit.elo)
    perfect = tuple(p for p, i in local.items() if fit.flags[i] in ("unbeaten", "winless"))
    return ReferenceFit(elo, low, high, tuple(flags), tuple(refs), perfect)


def reference_order(elo: float, low: float, high: float) -> tuple[int, float]:
    """What ranks a rating against references, higher first: above every reference (a category: at least
    :data:`SATURATED_SCORE` against each), by the lower bound its games give; then the Elo; then below
    every reference, by its upper bound; unrated (NaN) last."""
    if elo != elo:
        return -1, 0.0
    if elo == math.inf:
        return 2, low
    if elo == -math.inf:
        return 0, high
    return 1, elo


def rate_against(points: np.ndarray, games: np.ndarray, reference_elo: np.ndarray) -> tuple[float, float, float, str]:
    """``(elo, low, high, flag)`` of a player who scored ``points`` in ``games`` against references of
    ``reference_elo`` (arrays over the references it played): the maximum-likelihood Elo with its 95 %
    interval, ``inf`` and :data:`ABOVE_REFERENCES` when it scored at least :data:`SATURATED_SCORE`
    against every one (``-inf`` and :data:`BELOW_REFERENCES` mirrored)."""
    theta, lo, hi = strength_against(points, games, reference_elo / ELO_SCALE)
    elo, low, high = ELO_SCALE * theta, ELO_SCALE * lo, ELO_SCALE * hi
    fraction = points / games
    if (fraction >= SATURATED_SCORE).all():
        return math.inf, low, math.inf, ABOVE_REFERENCES
    if (fraction <= 1.0 - SATURATED_SCORE).all():
        return -math.inf, -math.inf, high, BELOW_REFERENCES
    return elo, low, high, ""


def strength_against(points: np.ndarray, games: np.ndarray, theta: np.ndarray) -> tuple[float, float, float]:
    """The log-strength that best explains ``points`` out of ``games`` against opponents of log-strength
    ``theta`` (Bradley-Terry, a draw half a win), and its 95 % profile-likelihood interval. A perfect
    (or pointless) record has an infinite estimate and one finite bound."""
    total, won = float(games.sum()), float(points.sum())

    def loglik(t: float) -> float:
        d = t - theta
        return float(-(points * np.logaddexp(0.0, -d) + (games - points) * np.logaddexp(0.0, d)).sum())

    def expected(t: float) -> float:
        return float((games / (1.0 + np.exp(theta - t))).sum())

    span = 40.0  # natural-log units either side of the references: ±6,900 Elo
    lo_edge, hi_edge = float(theta.min()) - span, float(theta.max()) + span

    def solve(f: Any, a: float, b: float) -> float:
        """The root of increasing ``f`` in [a, b] (an edge when it has none there)."""
        if f(a) >= 0:
            return a
        if f(b) <= 0:
            return b
        for _ in range(100):
            mid = 0.5 * (a + b)
            if f(mid) < 0:
                a = mid
            else:
                b = mid
        return 0.5 * (a + b)

    if won >= total:
        best, top = math.inf, 0.0
    elif won <= 0:
        best, top = -math.inf, 0.0
    else:
        best = solve(lambda t: expected(t) - won, lo_edge, hi_edge)
        top = loglik(best)
    floor = top - LIKELIHOOD_DROP_95
    left = -math.inf if best == -math.inf else solve(lambda t: loglik(t) - floor, lo_edge,
                                                      best if math.isfinite(best) else hi_edge)
    right = math.inf if best == math.inf else solve(lambda t: floor - loglik(t),
                                                    best if math.isfinite(best) else lo_edge, hi_edge)
    return best, left, right
