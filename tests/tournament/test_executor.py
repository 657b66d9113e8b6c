from __future__ import annotations

import threading
import time
from collections import Counter

import pytest
import torch

from arena.env import EnvConfig
from arena.tournament.executor import play
from arena.tournament.league_plan import LeaguePlan
from arena.tournament.results import P1_WINS, P2_WINS
from arena.tournament.schedule import pairings, total_games, units
from arena.tournament.sinks import ListSink
from tourney_helpers import FAST_ENV, Faulty, Idle, Pursuer

ENV = EnvConfig.from_dict(FAST_ENV)


def league(extra=None):
    agents = [Pursuer(fire_km=8.0), Pursuer(fire_km=25.0), Idle()]
    if extra is not None:
        agents.append(extra)
    return agents


def run(agents, games=4, max_envs=64, seed=0, **kw):
    sink = ListSink()
    us = units(pairings(len(agents)), games)
    stats = play(LeaguePlan.of(agents, env_config=ENV, max_envs=max_envs, seed=seed, **kw), us, sink)
    return sink, stats, us


@pytest.mark.parametrize("max_envs", [5, 64])
def test_every_game_played_exactly_once(max_envs: int) -> None:
    sink, stats, us = run(league(), games=6, max_envs=max_envs)
    keys = Counter((r.p1, r.p2, r.game_index) for r in sink.results)
    assert set(keys) == {(u.p1, u.p2, g) for u in us for g in u.games}
    assert max(keys.values()) == 1
    assert sink.games == total_games(us) == 18 and sink.forfeits == 0
    assert all(r.winner in (0, 1, 2) and 0 < r.length <= 60 for r in sink.results)
    if max_envs == 5:
        assert stats.batches > 1 and all(b[2] <= 5 for b in sink.batches)


def test_each_participant_acts_once_per_step_on_all_its_envs_until_its_games_are_over() -> None:
    agents = league()
    sink, stats, _ = run(agents, games=4, max_envs=64)
    assert stats.batches == 1
    for k, agent in enumerate(agents[:2]):
        # 2 opponents × 2 sides × 2 games per side = 8 slots, seen together in every single call...
        assert set(agent.calls) == {8} and 0 < len(agent.calls) <= stats.steps
        # ...until its last game ended: from then on it is not called at all.
        last = max(r.length for r in sink.results if k in (r.p1, r.p2))
        assert len(agent.calls) == last


def test_same_seed_same_games() -> None:
    a, _, _ = run(league(), seed=5)
    b, _, _ = run(league(), seed=5)
    c, _, _ = run(league(), seed=6)
    key = lambda r: (r.p1, r.p2, r.game_index)  # noqa: E731
    assert sorted(a.results, key=key) == sorted(b.results, key=key)
    assert sorted(a.results, key=key) != sorted(c.results, key=key)


@pytest.mark.parametrize("mode,reason", [
    ("raise", "raised RuntimeError: boom"),
    ("nan", "returned NaN in 1 action value(s)"),
    ("shape", "returned a malformed action: action['rudder']: expected shape"),
    ("keys", "returned a malformed action: action: missing key(s) ['fire']"),
])
def test_misbehaving_participant_forfeits_its_batch_games(mode: str, reason: str) -> None:
    Faulty.armed = True
    faulty = Faulty(mode=mode, after=3)
    agents = league(faulty)
    sink, stats, us = run(agents, games=4, max_envs=64)
    assert stats.batches == 1
    mine = [r for r in sink.results if 3 in (r.p1, r.p2)]
    others = [r for r in sink.results if 3 not in (r.p1, r.p2)]
    assert len(mine) == 12 and all(r.forfeit_by == 3 for r in mine)
    assert all(reason in r.forfeit_reason for r in mine), mine[0].forfeit_reason
    assert all(r.forfeit_reason.startswith("#3 ") for r in mine)
    assert all(r.winner == (P2_WINS if r.p1 == 3 else P1_WINS) for r in mine)
    assert all(r.length <= 3 for r in mine)
    # everyone else played their games out
    assert len(others) == 12 and not any(r.forfeit for r in others)
    assert sink.forfeits == 12 and sink.games == 24


def test_a_failure_loses_the_games_in_flight_and_leaves_the_queued_ones_unplayed() -> None:
    Faulty.armed = True
    agents = league(Faulty(mode="raise", after=3))
    sink, stats, us = run(agents, games=8, max_envs=12)  # 4 games of each ordered pair, fewer slots than games
    assert stats.batches == 1 and stats.left > 0
    mine = [r for r in sink.results if 3 in (r.p1, r.p2)]
    assert mine and all(r.forfeit_by == 3 and r.length <= 3 for r in mine)  # only the games it was playing
    scheduled = sum(len(u.games) for u in us if 3 in (u.p1, u.p2))
    assert len(mine) + stats.left == scheduled  # the rest are not stored: the next run plays them
    assert sink.games == len(sink.results) and sink.forfeits == len(mine)


def test_forfeit_is_per_batch() -> None:
    Faulty.armed = True
    agents = league(Faulty(mode="raise", after=2, once=True))
    sink, stats, _ = run(agents, games=4, max_envs=2)  # several small batches
    assert stats.batches > 2
    forfeits = [r for r in sink.results if r.forfeit]
    assert 0 < len(forfeits) < 12
    assert len({r.batch for r in forfeits}) == 1  # only the batch it failed in
    later = [r for r in sink.results if 3 in (r.p1, r.p2) and r.batch > forfeits[0].batch]
    assert later and not any(r.forfeit for r in later)  # a fresh chance in the next batches


def test_ctrl_c_propagates_after_reporting_finished_games() -> None:
    Faulty.armed = True
    agents = league(Faulty(mode="interrupt", after=40))
    sink = ListSink()
    us = units(pairings(4), 4)
    with pytest.raises(KeyboardInterrupt):
        play(LeaguePlan.of(agents, env_config=ENV, max_envs=4, seed=0), us, sink)
    assert 0 < len(sink.results) < total_games(us)


def test_actions_reach_the_right_env_and_side() -> None:
    """An agent that only ever fires proves its fire flags land on its own side: its missiles count."""

    class Trigger(Idle):
        def act(self, observation):
            out = super().act(observation)
            out["fire"] = torch.ones_like(out["fire"])
            return out

    sink, _, _ = run([Idle(), Trigger()], games=4)
    for r in sink.results:
        trig_missiles = r.missiles_p1 if r.p1 == 1 else r.missiles_p2
        idle_missiles = r.missiles_p2 if r.p1 == 1 else r.missiles_p1
        assert trig_missiles > 0 and idle_missiles == 0



class Memory(Pursuer):
    """Remembers where it was in each env. Within a battle it moves at most ~0.01 of the arena per step; a
    bigger jump is a new battle's spawn, so a jump in an env it was not reset for means that reset(mask)
    was missed or cleared other envs."""

    def __init__(self, **kw) -> None:
        super().__init__(**kw)
        self.last: torch.Tensor | None = None
        self.fresh: torch.Tensor | None = None
        self.resets = 0

    def reset(self, env_mask=None) -> None:
        if env_mask is None or self.last is None:
            self.last = self.fresh = None
            return
        self.resets += int(env_mask.sum())
        self.fresh = self.fresh | env_mask

    def act(self, observation):
        pos = torch.stack([observation["x"], observation["y"]], 1)
        if self.last is not None:
            stale = ~self.fresh & ((pos - self.last).abs().amax(1) > 0.05)
            if bool(stale.any()):
                raise AssertionError(f"memory of a finished battle kept in env(s) {stale.nonzero().flatten().tolist()}")
        self.last, self.fresh = pos, torch.zeros(pos.shape[0], dtype=torch.bool)
        return super().act(observation)


def test_per_env_memory_is_cleared_when_a_slot_starts_its_next_game() -> None:
    agents = [Memory(fire_km=8.0), Memory(fire_km=25.0), Idle()]
    sink, stats, us = run(agents, games=8, max_envs=3)  # few slots: each plays several games back to back
    assert sink.forfeits == 0, [r.forfeit_reason for r in sink.results if r.forfeit][:1]
    assert sink.games == total_games(us)
    for agent in agents[:2]:
        assert agent.resets >= 8 * 2  # at least every game it played ended with a reset of its env


def test_batches_meet_a_compact_block_of_participants() -> None:
    from arena.tournament.batching import plan_batches

    us = units(pairings(32), 8)  # 496 pairings, 4 games a side
    batches = plan_batches(us, max_envs=64, games_per_slot=4)  # 256 games a batch: 32 pairings, side 4
    first = batches[0]
    members = {k for u in first.units for k in (u.p1, u.p2)}
    assert len(members) <= 10  # blocks of 5: at most 2 × 5; in list order it held all 32 (0 against everyone)
    flat = [(u.p1, u.p2) for b in batches for u in b.units]
    assert sorted(flat) == sorted((u.p1, u.p2) for u in us)  # every unit once
    for (a, b), (c, d) in zip(flat[::2], flat[1::2]):
        assert (a, b) == (d, c)  # both sides of a pairing next to each other


@pytest.mark.parametrize("time_per_move", [None, 5.0])  # with a limit, the interrupt crosses from the watchdog
def test_ctrl_c_propagates_with_or_without_a_time_limit(time_per_move) -> None:
    Faulty.armed = True
    agents = league(Faulty(mode="interrupt", after=40))
    sink = ListSink()
    with pytest.raises(KeyboardInterrupt):
        play(LeaguePlan.of(agents, env_config=ENV, max_envs=4, seed=0, time_per_move=time_per_move),
             units(pairings(4), 4), sink)
    assert sink.results


class Hanging(Pursuer):
    """A pursuer whose ``after``-th act() never returns (it waits on ``release``, which the test sets at
    its end so that no thread outlives it)."""

    def __init__(self, release: threading.Event, after: int = 3) -> None:
        super().__init__()
        self.release, self.after, self.moves = release, after, 0

    def act(self, observation):
        self.moves += 1
        if self.moves == self.after:
            self.release.wait()
        return super().act(observation)


def test_a_move_that_never_returns_forfeits_its_games_and_the_league_plays_on(release) -> None:
    hanging = Hanging(release, after=3)
    agents = league(hanging)
    start = time.perf_counter()
    sink, stats, us = run(agents, games=4, max_envs=4, time_per_move=0.5)  # #3 plays in batches 1 and 2 of 0..2
    assert time.perf_counter() - start < 20.0
    assert stats.batches == 3
    mine = [r for r in sink.results if 3 in (r.p1, r.p2)]
    others = [r for r in sink.results if 3 not in (r.p1, r.p2)]
    assert len(others) == 12 and not any(r.forfeit for r in others)  # every other pairing played normally
    assert mine and all(r.forfeit_by == 3 and r.batch == 1 and r.length == 2 for r in mine)
    assert {r.forfeit_reason for r in mine} == {"#3 ran out of time: a move on 2 battles did not return within "
                                                "1.5 s, so it is abandoned and not called again (time_per_move 0.5 s)"}
    assert len(mine) + stats.left == 12  # its later games wait for the next run, and a fresh instance
    assert hanging.moves == 3  # abandoned: never called again, in its batch or the next


class KeepingPursuer(Pursuer):
    """A pursuer that can drop rows (it keeps no per-env memory), so its batches drop finished battles."""

    def keep_rows(self, rows: torch.Tensor) -> None:
        self.kept = getattr(self, "kept", []) + [int(rows.numel())]


def test_finished_battles_stop_costing_steps_and_change_no_game(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.tournament import executor
    from arena.tournament.batching import GameSeeds

    monkeypatch.setattr(executor, "KEEP_MIN_ENVS", 1)
    seeds = GameSeeds(0, ["a", "b", "c"])
    whole = run([Pursuer(fire_km=8.0), Pursuer(fire_km=25.0), Pursuer(fire_km=15.0)], games=8, game_seeds=seeds)
    agents = [KeepingPursuer(fire_km=8.0), KeepingPursuer(fire_km=25.0), KeepingPursuer(fire_km=15.0)]
    kept = run(agents, games=8, game_seeds=seeds)

    def games(sink: ListSink) -> set[tuple[int, ...]]:
        return {(r.p1, r.p2, r.game_index, r.winner, r.length, r.slot, r.seed) for r in sink.results}

    assert games(kept[0]) == games(whole[0]) and len(kept[0].results) == 24
    assert any(getattr(a, "kept", None) for a in agents)  # the batch did shrink
    assert kept[1].env_steps < whole[1].env_steps and kept[1].steps == whole[1].steps


class KeepingDrifter(KeepingPursuer):
    """A keeping pursuer whose rudder is noisy, drawn from torch's global generator: its draws depend on
    how many battles it flies, so a replay must shrink its batch exactly where play did."""

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        out = super().act(observation)
        out["rudder"] = (out["rudder"] + 0.5 * torch.randn(out["rudder"].shape)).clamp(-1, 1)
        return out


def test_a_batch_that_shrank_replays_its_late_games_exactly(monkeypatch: pytest.MonkeyPatch) -> None:
    from arena.tournament import executor
    from arena.tournament.batching import GameSeeds, plan_batches

    monkeypatch.setattr(executor, "KEEP_MIN_ENVS", 1)
    seeds = GameSeeds(0, ["a", "b", "c"])
    agents = [KeepingDrifter(fire_km=8.0), KeepingDrifter(fire_km=25.0), KeepingPursuer(fire_km=15.0)]
    sink, stats, us = run(agents, games=8, game_seeds=seeds)
    assert any(getattr(a, "kept", None) for a in agents)
    last = max(sink.results, key=lambda r: r.length)  # ends after the batch shrank
    (batch,) = plan_batches(us, 64)
    plan = LeaguePlan.of(agents, env_config=ENV, game_seeds=seeds)
    results, battles = executor.replay_batch(plan, batch, sink.batches[0][1], {last.slot: {last.game_index}})
    replayed = {(r.p1, r.p2, r.game_index): (r.winner, r.length) for r in results}
    assert replayed[last.p1, last.p2, last.game_index] == (last.winner, last.length)
    assert battles[last.slot, last.game_index].x.shape[0] == last.length + 1  # every frame, the first included


def test_two_participants_that_fail_in_the_same_step_are_credited_no_game_between_them() -> None:
    """Both forfeit their games against the others; their games against each other have no result (the
    next run plays them), as for a family whose shared call fails: neither is credited a win."""
    Faulty.armed = True
    agents = league(Faulty(mode="raise", after=3)) + [Faulty(mode="raise", after=3)]
    sink, stats, us = run(agents, games=4, max_envs=64)
    assert stats.batches == 1
    assert not [r for r in sink.results if {r.p1, r.p2} == {3, 4}]
    theirs = [r for r in sink.results if {3, 4} & {r.p1, r.p2}]
    assert len(theirs) == 2 * 3 * 4 and all(r.forfeit_by in (r.p1, r.p2) and r.forfeit_by in (3, 4) for r in theirs)
    assert stats.left == 4 and sink.forfeits == 24
    assert len([r for r in sink.results if not r.forfeit]) == 3 * 4  # the others' games, played out
