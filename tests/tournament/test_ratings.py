from __future__ import annotations

import random

import numpy as np
import trueskill

from arena.tournament import GameResult, RatingConfig, bradley_terry, rating_order, trueskill_ratings
from arena.tournament.ratings import ELO_SCALE


def synthetic(strengths, games_per_ordered_pair, seed=0, draw=0.0):
    rng = np.random.default_rng(seed)
    out = []
    n = len(strengths)
    for i in range(n):
        for j in range(n):
            if i == j:
                continue
            p = 1.0 / (1.0 + np.exp(-(strengths[i] - strengths[j])))
            for g in range(games_per_ordered_pair):
                u = rng.random()
                winner = 0 if u < draw else (1 if rng.random() < p else 2)
                out.append(GameResult(i, j, g, winner, 100, 0.0, 0.0))
    return out


def test_trueskill_equals_sequential_package_updates() -> None:
    games = synthetic([0.0, 1.0, -0.5, 2.0], 30, draw=0.15)
    settings = RatingConfig(mu=20.0, sigma=6.0, beta=3.0, tau=0.1, draw_probability=0.15)
    keys = ["a", "b", "c", "d"]
    ours = trueskill_ratings(games, 4, settings, keys, seed=7)

    env = trueskill.TrueSkill(mu=20.0, sigma=6.0, beta=3.0, tau=0.1, draw_probability=0.15)
    ratings = [env.create_rating() for _ in range(4)]
    for i in rating_order(games, keys, 7):
        g = games[i]
        if g.winner == 0:
            ratings[g.p1], ratings[g.p2] = trueskill.rate_1vs1(ratings[g.p1], ratings[g.p2], drawn=True, env=env)
        elif g.winner == 1:
            ratings[g.p1], ratings[g.p2] = trueskill.rate_1vs1(ratings[g.p1], ratings[g.p2], env=env)
        else:
            ratings[g.p2], ratings[g.p1] = trueskill.rate_1vs1(ratings[g.p2], ratings[g.p1], env=env)
    for mine, theirs in zip(ours, ratings):
        assert abs(mine.mu - theirs.mu) < 1e-9 and abs(mine.sigma - theirs.sigma) < 1e-9
    assert ours[3].mu > ours[1].mu > ours[0].mu > ours[2].mu


def test_trueskill_order_is_fixed_by_seed_not_by_input_order() -> None:
    games = synthetic([0.0, 1.0, 0.5], 10, draw=0.1)
    shuffled = games[:]
    random.Random(1).shuffle(shuffled)
    keys = ["x", "y", "z"]
    a = trueskill_ratings(games, 3, RatingConfig(), keys, seed=2)
    b = trueskill_ratings(shuffled, 3, RatingConfig(), keys, seed=2)
    c = trueskill_ratings(games, 3, RatingConfig(), keys, seed=3)
    assert a == b
    assert a != c


def test_bradley_terry_recovers_known_strengths() -> None:
    truth = np.array([0.0, 0.7, -0.4, 1.5, -1.2])
    games = synthetic(truth, 300, seed=4)
    fit = bradley_terry(games, 5, rounds=200, seed=0)
    est = (fit.elo - 1000.0) / ELO_SCALE
    assert np.allclose(est, truth - truth.mean(), atol=0.12)
    truth_elo = 1000.0 + ELO_SCALE * (truth - truth.mean())
    assert np.all(fit.low <= fit.elo) and np.all(fit.elo <= fit.high)
    assert np.all((fit.low - 25 <= truth_elo) & (truth_elo <= fit.high + 25))
    assert np.all(fit.high - fit.low < 120)
    assert abs(fit.elo.mean() - 1000.0) < 1e-6


def test_bradley_terry_is_order_independent_and_finite_for_perfect_records() -> None:
    games = synthetic([0.0, 0.3, 9.0], 40, seed=1)
    reordered = games[::-1]
    a = bradley_terry(games, 3, rounds=100, seed=5)
    b = bradley_terry(reordered, 3, rounds=100, seed=5)
    assert np.allclose(a.elo, b.elo) and np.allclose(a.low, b.low) and np.allclose(a.high, b.high)
    assert np.all(np.isfinite(a.elo)) and a.elo[2] > a.elo[1] + 500


def test_bradley_terry_without_bootstrap_has_no_interval() -> None:
    fit = bradley_terry(synthetic([0.0, 1.0], 10), 2, rounds=0)
    assert np.all(np.isnan(fit.low)) and np.all(np.isfinite(fit.elo))


def test_bootstrap_in_chunks_equals_one_draw(monkeypatch) -> None:
    """Resamples are fitted in chunks to bound memory (rounds × participants² cells); drawn from one
    generator in sequence, the chunks are the samples of one big draw."""
    import arena.tournament.ratings as ratings

    games = synthetic([0.0, 1.0, -0.5, 2.0, 0.3], 6, draw=0.1)
    whole = bradley_terry(games, 5, rounds=300, seed=4)
    monkeypatch.setattr(ratings, "BOOTSTRAP_CHUNK_CELLS", 25 * 7)  # 7 rounds per chunk
    chunked = bradley_terry(games, 5, rounds=300, seed=4)
    assert np.allclose(whole.low, chunked.low, rtol=0, atol=1e-9)
    assert np.allclose(whole.high, chunked.high, rtol=0, atol=1e-9)


def test_tables_count_every_game_as_a_loop_would() -> None:
    from arena.tournament.ratings import pair_tables

    games = synthetic([0.0, 1.0, -0.5, 2.0], 7, seed=3, draw=0.2)
    score, count, draws = pair_tables(games, 4)
    s, c, d = np.zeros((4, 4)), np.zeros((4, 4)), np.zeros((4, 4))
    for g in games:
        c[g.p1, g.p2] += 1
        c[g.p2, g.p1] += 1
        first = {0: 0.5, 1: 1.0, 2: 0.0}[g.winner]
        s[g.p1, g.p2] += first
        s[g.p2, g.p1] += 1 - first
        d[g.p1, g.p2] += g.winner == 0
        d[g.p2, g.p1] += g.winner == 0
    assert np.array_equal(score, s) and np.array_equal(count, c) and np.array_equal(draws, d)


def test_an_unbeaten_participant_does_not_shift_the_others_and_is_flagged() -> None:
    truth = [0.0, 0.6, -0.5, 1.0]
    mixed = synthetic(truth, 60, seed=2)
    alone = bradley_terry(mixed, 5, rounds=200, seed=1)  # participant 4 plays nobody
    champion = [GameResult(4, j, g, 1, 100, 0.0, 0.0) for j in range(4) for g in range(20)]
    champion += [GameResult(j, 4, g, 2, 100, 0.0, 0.0) for j in range(4) for g in range(20)]
    fit = bradley_terry(mixed + champion, 5, rounds=200, seed=1)
    assert fit.flags == ("", "", "", "", "unbeaten") and alone.flags[4] == "no games"
    assert np.allclose(fit.elo[:4], alone.elo[:4], atol=2.0)  # was about -50 each when the mean included it
    assert fit.high[4] == np.inf and fit.low[4] > fit.elo[:4].max()
    assert np.isnan(alone.elo[4]) and np.isnan(alone.low[4]) and np.isnan(alone.high[4])
    assert fit.rank_low[4] == fit.rank_high[4] == 1


def test_the_anchor_fixes_the_scale_and_keeps_the_differences() -> None:
    games = synthetic([0.0, 0.6, -0.5, 1.0], 60, seed=2)
    free = bradley_terry(games, 4, rounds=100, seed=1)
    pinned = bradley_terry(games, 4, rounds=100, seed=1, anchor=2, anchor_elo=1500.0)
    assert pinned.elo[2] == 1500.0 and pinned.flags[2] == "anchor"
    assert np.allclose(np.diff(pinned.elo), np.diff(free.elo))
    assert pinned.low[2] == pinned.high[2] == 1500.0  # exact by definition, not "unknown"


def test_intervals_the_games_cannot_give_are_unknown() -> None:
    one_game = [GameResult(0, 1, 0, 1, 100, 0.0, 0.0)] + synthetic([0.0, 0.5], 30, seed=1)
    draws_only = [GameResult(2, 0, g, 0, 100, 0.0, 0.0) for g in range(6)]
    single = [GameResult(3, 1, 0, 2, 100, 0.0, 0.0)]
    fit = bradley_terry(one_game + draws_only + single, 5, rounds=200, seed=0)
    assert np.isfinite(fit.low[0]) and np.isfinite(fit.high[0])
    assert np.isnan(fit.low[2]) and np.isnan(fit.high[2])  # only draws: the bootstrap never varies
    assert fit.flags[3] == "winless" and fit.low[3] == -np.inf
    assert fit.flags[4] == "no games" and np.isnan(fit.elo[4])


def test_a_split_league_is_reported_as_groups() -> None:
    left = synthetic([0.0, 1.0], 10, seed=1)
    right = [GameResult(g.p1 + 2, g.p2 + 2, g.game_index, g.winner, 100, 0.0, 0.0) for g in synthetic([0.0, 0.5], 10)]
    fit = bradley_terry(left + right, 5, rounds=50, seed=0)
    assert fit.components == ((0, 1), (2, 3))


def union_find_groups(count: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Linked groups the plain way: union every pair that played, then list the groups largest first."""
    n = len(count)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            if count[i, j] > 0:
                parent[root(i)] = root(j)
    groups: dict[int, list[int]] = {}
    for i in range(n):
        if count[i].sum() > 0:
            groups.setdefault(root(i), []).append(i)
    return tuple(sorted((tuple(g) for g in groups.values()), key=lambda g: (-len(g), g)))


def test_linked_groups_are_those_of_a_union_find() -> None:
    from arena.tournament.ratings import components

    rng = np.random.default_rng(0)
    for density in (0.0, 0.02, 0.05, 0.1, 0.5):
        for _ in range(5):
            upper = np.triu(rng.random((30, 30)) < density, 1) * rng.integers(1, 4, (30, 30))
            count = (upper + upper.T).astype(float)
            assert components(count) == union_find_groups(count)


def test_rank_bounds_cover_the_rank_and_narrow_with_clear_gaps() -> None:
    games = synthetic([0.0, 3.0, -3.0, 6.0], 50, seed=5)
    fit = bradley_terry(games, 4, rounds=200, seed=0)
    order = np.argsort(-fit.elo) + 0
    rank = np.empty(4)
    rank[order] = np.arange(1, 5)
    assert np.all(fit.rank_low <= rank) and np.all(rank <= fit.rank_high)
    assert np.array_equal(fit.rank_low, rank) and np.array_equal(fit.rank_high, rank)


def test_the_inlined_trueskill_loop_is_update_1vs1_bit_for_bit() -> None:
    import trueskill as ts

    from arena.tournament.ratings import DRAW, P1_WINS, trueskill_env, update_1vs1

    games = synthetic([0.0, 1.0, -0.5, 2.0, 3.5], 60, draw=0.2, seed=3)
    settings = RatingConfig()
    fast = trueskill_ratings(games, 5, settings, None, 4)
    env = trueskill_env(settings)
    margin = ts.calc_draw_margin(settings.draw_probability, 2, env)
    mu, sigma = [settings.mu] * 5, [settings.sigma] * 5
    for i in rating_order(games, [f"{i:09d}" for i in range(5)], 4):
        g = games[i]
        a, b = (g.p1, g.p2) if g.winner in (DRAW, P1_WINS) else (g.p2, g.p1)
        mu[a], sigma[a], mu[b], sigma[b] = update_1vs1(env, mu[a], sigma[a], mu[b], sigma[b], g.winner == DRAW,
                                                       margin, settings.beta ** 2, settings.tau ** 2)
    assert [(s.mu, s.sigma) for s in fast] == list(zip(mu, sigma))


def test_the_sandwich_intervals_of_big_leagues_agree_with_the_bootstrap(monkeypatch) -> None:
    import arena.tournament.ratings as ratings

    truth = np.linspace(-1.5, 1.5, 8)
    games = synthetic(truth, 40, seed=6, draw=0.15)
    refit = bradley_terry(games, 8, rounds=400, seed=2)
    monkeypatch.setattr(ratings, "EXACT_BOOTSTRAP_BUDGET", 0)  # as for hundreds of participants
    drawn = bradley_terry(games, 8, rounds=400, seed=2)
    assert refit.method == "bootstrap" and drawn.method == "sandwich"
    assert np.array_equal(refit.elo, drawn.elo)
    width_refit, width_drawn = refit.high - refit.low, drawn.high - drawn.low
    assert np.all(np.abs(width_drawn / width_refit - 1.0) < 0.2), (width_refit, width_drawn)
    assert np.all(np.abs(np.array(drawn.rank_low) - refit.rank_low) <= 1)


def test_values_within_the_tie_tolerance_share_the_better_rank() -> None:
    from arena.tournament.ratings import RANK_TIE_ELO, resample_ranks

    values = np.array([[1200.0, 1000.0, 1000.0, 900.0], [1000.0, 1000.0 + RANK_TIE_ELO / 10, 1300.0, 700.0]])
    assert resample_ranks(values).tolist() == [[1, 2, 2, 4], [2, 2, 1, 4]]
    # a rounding-sized nudge in either direction changes no rank
    nudged = values + np.array([[0.0, 1e-9, -1e-9, 0.0], [1e-9, -1e-9, 0.0, 0.0]])
    assert (resample_ranks(nudged) == resample_ranks(values)).all()


def test_the_sandwich_draws_do_not_depend_on_the_eigenvector_basis(monkeypatch) -> None:
    """Equal eigenvalues leave LAPACK free to pick any basis of their space (and any signs): the draws,
    and so the intervals and rank bounds, must come out the same for every choice."""
    from arena.tournament import ratings

    n = 6
    count = np.ones((n, n)) - np.eye(n)  # a symmetric league: repeated eigenvalues
    score = count / 2.0
    theta = np.zeros(n)
    reference = ratings.sandwich_draws(score, count, np.zeros((n, n)), theta, 1e-3, 50, np.random.default_rng(0))
    eigh = np.linalg.eigh

    def rotated(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        values, vectors = eigh(matrix)
        top = np.isclose(values, values[-1])  # rotate within the repeated eigenvalue's space, flip signs
        rotation, _ = np.linalg.qr(np.random.default_rng(1).standard_normal((top.sum(), top.sum())))
        vectors = vectors.copy()
        vectors[:, top] = vectors[:, top] @ rotation
        return values, -vectors

    monkeypatch.setattr(ratings.np.linalg, "eigh", rotated)
    other = ratings.sandwich_draws(score, count, np.zeros((n, n)), theta, 1e-3, 50, np.random.default_rng(0))
    np.testing.assert_allclose(other, reference, atol=1e-10)
