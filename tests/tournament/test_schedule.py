from __future__ import annotations

import itertools
import random

import pytest

from arena.tournament.batching import allocate, plan_batches
from arena.tournament.schedule import Unit, games_per_side, missing, pairings, scheduled_pairs, total_games, units


def test_round_robin_every_pairing_from_both_sides() -> None:
    us = units(pairings(5), 6)
    assert len(us) == 2 * 10
    assert {(u.p1, u.p2) for u in us} == {(a, b) for a, b in itertools.permutations(range(5), 2)}
    assert all(u.games == [0, 1, 2] for u in us)  # half the games each side
    assert total_games(us) == 10 * 6


def test_gauntlet_only_against_candidates() -> None:
    pairs = pairings(6, "gauntlet", candidates=[1, 4])
    cands = {1, 4}
    assert all((p.a in cands) != (p.b in cands) for p in pairs)
    assert {(p.a, p.b) for p in pairs} == {(min(c, o), max(c, o)) for c in cands for o in range(6) if o not in cands}
    us = units(pairs, 2)
    assert {(u.p1, u.p2) for u in us} >= {(1, 0), (0, 1), (4, 5), (5, 4)}


def test_bad_schedules() -> None:
    with pytest.raises(ValueError):
        units(pairings(3), 3)
    with pytest.raises(ValueError):
        pairings(3, "gauntlet", [])
    with pytest.raises(ValueError):
        pairings(3, "swiss")


@pytest.mark.parametrize("seed", range(6))
def test_the_pair_matrix_is_the_units_ordered_pairs(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randrange(2, 12)
    candidates = rng.sample(range(n), rng.randrange(1, n))
    references = rng.sample(range(n), rng.randrange(0, n))
    for fmt in ("round-robin", "gauntlet"):
        wanted = scheduled_pairs(n, fmt, candidates, references)
        us = units(pairings(n, fmt, candidates, references), 4)
        assert {(int(a), int(b)) for a, b in zip(*wanted.nonzero())} == {(u.p1, u.p2) for u in us}
        assert int(wanted.sum()) * games_per_side(4) == total_games(us)


def test_the_pair_matrix_refuses_what_pairings_refuses() -> None:
    for args in ((3, "gauntlet", []), (3, "swiss")):
        with pytest.raises(ValueError) as matrix:
            scheduled_pairs(*args)
        with pytest.raises(ValueError) as listed:
            pairings(*args)
        assert str(matrix.value) == str(listed.value)
    with pytest.raises(ValueError, match="must be even and >= 2, got 3"):
        games_per_side(3)


def test_missing_subtracts_stored_games() -> None:
    us = units(pairings(3), 4)
    left = missing(us, {(0, 1): {0, 1}, (2, 0): {1}})
    by_pair = {(u.p1, u.p2): u.games for u in left}
    assert (0, 1) not in by_pair
    assert by_pair[(2, 0)] == [0]
    assert by_pair[(1, 0)] == [0, 1]
    assert total_games(left) == 12 - 3


@pytest.mark.parametrize("max_envs", [1, 3, 7, 64, 10_000])
def test_batches_cover_every_game_once_within_max_envs(max_envs: int) -> None:
    us = units(pairings(4), 10)
    batches = plan_batches(us, max_envs)
    seen = [(u.p1, u.p2, g) for b in batches for u in b.units for g in u.games]
    assert sorted(seen) == sorted((u.p1, u.p2, g) for u in us for g in u.games)
    for b in batches:
        assert b.num_envs <= max_envs
        assert all(1 <= s <= len(u.games) for s, u in zip(b.slots, b.units))


def test_allocate_is_proportional() -> None:
    assert allocate([10, 10], 20) == [10, 10]
    assert allocate([30, 10], 8) == [6, 2]
    assert sum(allocate([5, 1, 1, 9], 7)) == 7
    with pytest.raises(ValueError):
        allocate([1, 1, 1], 2)
    assert Unit(0, 1).games == []
