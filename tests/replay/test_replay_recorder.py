"""The recorder: frames equal the env's states, battles are unchanged by recording, the ring keeps the
last finished battle of each env."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from arena.agents import build_agent
from arena.env import EnvConfig, TensorEnv
from arena.match import play_match
from arena.replay import BattleRecorder, battle_meta
from replay_helpers import FIELDS, Trace, env_frame, first_battle, run_loop


@pytest.mark.parametrize("team_size", [1, 2])
def test_frames_are_the_envs_states_until_the_end(team_size):
    battles, trace = first_battle(team_size=team_size, num_envs=3)
    for k, battle in enumerate(battles):
        ends = [s for s, d in enumerate(trace.dones, 1) if bool(d[k])]
        assert battle.length == ends[0], "the battle lasts until the env's first done"
        for f in range(battle.length):  # before the last step the env still shows the battle itself
            expected = env_frame(trace, f, k)
            for name in FIELDS:
                got = getattr(battle, name)[f]
                assert np.array_equal(got, expected[name].numpy()), (k, f, name)


def outcome_of(alive: np.ndarray, team_size: int, length: int, max_steps: int) -> int:
    """The winner a battle's last frame shows: a side destroyed before the time limit, or at the limit the
    side with more aircraft alive (0: a draw)."""
    left = int(alive[:team_size].sum()), int(alive[team_size:].sum())
    if length < max_steps:
        assert 0 in left, f"ended after {length} steps with {left} aircraft alive: no side was destroyed"
    return 0 if left[0] == left[1] else 1 if left[0] > left[1] else 2


@pytest.mark.parametrize("team_size, max_time, num_envs", [(1, 300.0, 16), (2, 300.0, 16), (2, 150.0, 48)])
def test_last_frame_is_the_decided_battle(team_size, max_time, num_envs):
    """The last frame is the battle as it was decided, not the restarted one: every battle's winner is
    the one its last frame shows. The battles hold wins and draws, and with battles of 150 s a win at
    the time limit by the count of aircraft alive: which battles end how depends on the CPU's float
    kernels, so there are enough of them for each kind (over seeds 3-5 and two kernels, 16 battles held
    at least 2 draws and 4 wins, and 24 battles of 150 s from 1 to 5 wins at the limit: 48 are flown)."""
    cfg = EnvConfig(team_size=team_size, max_time=max_time)
    battles, trace = first_battle(team_size=team_size, num_envs=num_envs, config=cfg)
    for battle in battles:
        expected = outcome_of(battle.alive[-1], team_size, battle.length, cfg.max_steps)
        assert battle.winner == expected, (battle.winner, battle.length)
        assert battle.alive[0].all() and battle.m_active[0].sum() == 0
    winners = {battle.winner for battle in battles}
    assert 0 in winners and winners & {1, 2}, winners
    if max_time < 300.0:
        assert any(b.length == cfg.max_steps and b.winner > 0 for b in battles), "a win at the time limit"


@pytest.mark.parametrize("team_size", [1, 2])
def test_recording_does_not_change_the_battles(team_size):
    cfg = EnvConfig(team_size=team_size)
    plain = run_loop(("crank", "placeholder"), 6, 150, team_size=team_size, seed=5)
    recorder = BattleRecorder([0, 2, 5])
    recorded = run_loop(("crank", "placeholder"), 6, 150, team_size=team_size, seed=5, recorder=recorder)
    for name in FIELDS:
        assert torch.equal(getattr(plain.state, name), getattr(recorded.state, name)), name
    assert torch.equal(plain.generator.get_state(), recorded.generator.get_state())

    a = build_agent("crank", env_config=cfg), build_agent("placeholder", env_config=cfg)
    b = build_agent("crank", env_config=cfg), build_agent("placeholder", env_config=cfg)
    without = play_match(*a, 8, env_config=cfg, seed=2)
    with_rec = play_match(*b, 8, env_config=cfg, seed=2, observers=[BattleRecorder(range(8), first_only=True)])
    for key in ("outcome", "length", "return_a", "return_b"):
        assert torch.equal(without.details[key], with_rec.details[key]), key


def test_ring_keeps_the_last_finished_battle_of_each_env():
    cfg = EnvConfig(max_time=60.0)  # short battles: several per env
    recorder = BattleRecorder([1, 3])
    trace = Trace()
    run_loop(("crank", "crank"), 4, 200, seed=1, recorder=recorder, trace=trace, config=cfg)
    for k, env in enumerate([1, 3]):
        ends = [s for s, d in enumerate(trace.dones, 1) if bool(d[env])]
        assert int(recorder.ended[k]) == len(ends) >= 3
        battle = recorder.take(k, battle_meta(cfg, "crank", "crank"))
        assert battle.length == ends[-1] - ends[-2]
        begin = ends[-2]  # the env showed the new battle's start right after the previous one ended
        for f in range(battle.length):
            expected = env_frame(trace, begin + f, env)
            assert np.array_equal(battle.x[f], expected["x"].numpy())
            assert np.array_equal(battle.m_active[f], expected["m_active"].numpy())


def test_first_only_stops_after_the_first_battle():
    cfg = EnvConfig(max_time=40.0)
    recorder = BattleRecorder([0], first_only=True)
    run_loop(("crank", "crank"), 2, 130, recorder=recorder, config=cfg)
    assert int(recorder.ended[0]) == 1
    assert recorder.take(0, battle_meta(cfg, "a", "b")).length == 40


def test_a_battle_not_finished_cannot_be_taken():
    recorder = BattleRecorder([0])
    run_loop(("crank", "crank"), 2, 5, recorder=recorder)
    assert recorder.finished() == []
    with pytest.raises(ValueError, match="no finished battle"):
        recorder.take(0, battle_meta(EnvConfig(), "a", "b"))


def test_watch_checks_its_envs():
    env = TensorEnv(4)
    with pytest.raises(ValueError, match=r"in \[0, 4\)"):
        env.watch(torch.tensor([1, 4]))
    with pytest.raises(ValueError, match="non-empty"):
        env.watch(torch.tensor([], dtype=torch.long))
    with pytest.raises(ValueError, match="distinct"):
        BattleRecorder([1, 1])
    recorder = BattleRecorder([9])
    with pytest.raises(ValueError, match="the env has 4"):
        recorder.before_step(env)


def test_no_watch_no_watched_state():
    env = TensorEnv(2)
    env.reset()
    zero = {"rudder": torch.zeros(2), "throttle": torch.zeros(2), "fire": torch.zeros(2, dtype=torch.bool)}
    assert "watched_state" not in env.step(zero, zero)[3]
    env.watch(torch.tensor([1]))
    assert env.step(zero, zero)[3]["watched_state"].x.shape == (1, 2)
    env.watch(None)
    assert "watched_state" not in env.step(zero, zero)[3]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_recording_never_syncs_the_host_on_a_gpu():
    cfg = EnvConfig()
    env = TensorEnv(64, device="cuda", config=cfg)
    recorder = BattleRecorder(range(0, 64, 7))
    obs = env.reset()
    zero = {"rudder": torch.zeros(64, device="cuda"), "throttle": torch.ones(64, device="cuda"),
            "fire": torch.ones(64, dtype=torch.bool, device="cuda")}
    recorder.before_step(env)  # attaching allocates and checks the indices once
    from arena.loop import Turn

    for step in range(1, 20):
        torch.cuda.set_sync_debug_mode("error")  # only the recorder's own work is checked
        try:
            recorder.before_step(env)
        finally:
            torch.cuda.set_sync_debug_mode("default")
        obs, rewards, dones, infos = env.step(zero, zero)
        torch.cuda.set_sync_debug_mode("error")
        try:
            recorder(Turn(step, obs, {"p1": zero, "p2": zero}, obs, rewards, dones, infos))
        finally:
            torch.cuda.set_sync_debug_mode("default")


def test_a_batch_that_drops_watched_battles_still_watches_the_rest():
    """The executor's order when a batch keeps fewer envs: the recorder follows its battles, and those no
    longer kept all read env 0 (repeats the env's watch must take), while a kept one is still recorded."""
    env = TensorEnv(6, seed=1)
    recorder = BattleRecorder([1, 2, 4])
    recorder._attach(env)
    env.reset()
    envs = torch.tensor([0, 4, 5])
    recorder.keep_envs(envs)
    env.watch(None)
    env.keep_envs(envs)
    env.watch(recorder.index)
    assert recorder.index.tolist() == [0, 0, 1] and recorder.dropped.tolist() == [True, True, False]
    act = {"rudder": torch.zeros(3), "throttle": torch.ones(3), "fire": torch.zeros(3, dtype=torch.bool)}
    *_, info = env.step(act, act)
    assert info["watched_state"].x.shape[0] == 3
