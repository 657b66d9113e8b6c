"""The shared game loop: seating, seat-by-seat flying of single-aircraft agents, faults, observers."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from arena.agent_calls import AgentFailure, abandoned
from arena.agents import BaseAgent
from arena.env import EnvConfig, TensorEnv
from arena.loop import Controller, GameLoop, Seating

CPU = torch.device("cpu")


class Echo(BaseAgent):
    """Steers by a constant and remembers the shape of what it saw and the masks it was reset with."""

    name = "echo"

    def __init__(self, rudder: float = 0.0, team: bool = False, bad: str = "") -> None:
        super().__init__()
        self.rudder, self.bad = rudder, bad
        self.plays_team = team  # type: ignore[misc]
        self.seen: list[tuple[int, ...]] = []
        self.resets: list[torch.Tensor | None] = []

    def act(self, observation):
        x = observation["enemy_distance"]
        self.seen.append(tuple(x.shape))
        if self.bad == "raise":
            raise RuntimeError("kaput")
        rudder = torch.full_like(x, self.rudder)
        if self.bad == "nan":
            rudder[0] = float("nan")
        if self.bad == "shape":
            rudder = rudder[:1]
        return {"rudder": rudder, "throttle": torch.ones_like(x), "fire": torch.zeros_like(x, dtype=torch.bool)}

    def reset(self, env_mask=None):
        self.resets.append(None if env_mask is None else env_mask.clone())


def seating(agents, owner, team_size=1):
    return Seating([Controller(a, f"agent{i}", "test") for i, a in enumerate(agents)], torch.tensor(owner), team_size,
                   CPU)


def test_each_controller_acts_once_on_its_rows_and_actions_land_on_its_sides():
    env = TensorEnv(4, seed=1)
    obs = env.reset()
    a, b = Echo(0.5), Echo(-0.5)
    seats = seating([a, b], [[0, 0, 1, 1], [1, 1, 0, 0]])
    actions, failures = seats.act(obs)
    assert not failures and a.seen == [(4,)] and b.seen == [(4,)]
    assert actions["p1"]["rudder"].tolist() == [0.5, 0.5, -0.5, -0.5]
    assert actions["p2"]["rudder"].tolist() == [-0.5, -0.5, 0.5, 0.5]


def test_rows_nobody_flies_idle_and_a_missing_side_is_named():
    env = TensorEnv(4, seed=1)
    obs = env.reset()
    seats = seating([Echo(1.0)], [[-1, -1, -1, -1], [0, -1, 0, -1]])
    actions, _ = seats.act({"p2": obs["p2"]})
    assert actions["p2"]["rudder"].tolist() == [1.0, 0.0, 1.0, 0.0] and "p1" not in actions
    with pytest.raises(ValueError, match="p2's observation"):
        seats.act({"p1": obs["p1"]})


def test_single_aircraft_agents_are_flown_seat_by_seat_and_team_agents_get_the_team():
    env = TensorEnv(3, seed=2, config=EnvConfig(team_size=4))
    obs = env.reset()
    single, team = Echo(0.25), Echo(-0.25, team=True)
    seats = seating([single, team], [[0, 0, 0], [1, 1, 1]], team_size=4)
    actions, failures = seats.act(obs)
    assert not failures
    assert single.seen == [(12,)] and team.seen == [(3, 4)]
    assert actions["p1"]["rudder"].shape == (3, 4) and bool((actions["p1"]["rudder"] == 0.25).all())
    # Seat k of env e is row e*T + k: the flattened observation is the team's, seat by seat.
    seen = obs["p1"]["enemy_distance"].reshape(-1)
    assert torch.equal(seats.parties[0].gather(obs, {})["enemy_distance"], seen)
    dones = torch.tensor([False, True, False])
    assert not seats.reset(dones)
    assert single.resets[-1].tolist() == [False] * 4 + [True] * 4 + [False] * 4
    assert team.resets[-1].tolist() == [False, True, False]


@pytest.mark.parametrize("bad, words", [
    ("raise", "raised RuntimeError: kaput"),
    ("shape", "returned a malformed action"),
])
def test_faults_name_the_controller_and_its_rows_idle_once_disabled(bad, words):
    env = TensorEnv(4, seed=1)
    obs = env.reset()
    good, broken = Echo(0.5), Echo(0.5, bad=bad)
    seats = seating([good, broken], [[0, 0, 1, 1], [1, 1, 0, 0]])
    _, failures = seats.act(obs)
    assert len(failures) == 1 and failures[0].index == 1 and words in str(failures[0])
    seats.set_active([True, False])
    actions, failures = seats.act(obs)
    assert not failures and actions["p1"]["rudder"].tolist() == [0.5, 0.5, 0.0, 0.0]


def test_nans_are_counted_until_asked_for():
    env = TensorEnv(2, seed=1)
    obs = env.reset()
    seats = seating([Echo(bad="nan"), Echo()], [[0, 1], [1, 0]])
    seats.act(obs)
    seats.act(obs)
    failures = seats.nan_failures()
    assert [(f.index, f.reason) for f in failures] == [(0, "returned NaN in 2 action value(s)")]
    assert seats.nan_failures() == []


def test_the_loop_steps_given_sides_raises_faults_and_tells_observers():
    env = TensorEnv(4, seed=3)
    seen = []
    learner = {"rudder": torch.full((4,), 0.75), "throttle": torch.ones(4), "fire": torch.zeros(4, dtype=torch.bool)}
    loop = GameLoop(env, seating([Echo(-1.0)], [[-1] * 4, [0] * 4]), observers=[seen.append])
    turn = loop.step(env.reset(), given={"p1": learner})
    assert seen == [turn] and turn.step == 1
    assert turn.actions["p1"] is learner and turn.actions["p2"]["rudder"].tolist() == [-1.0] * 4
    broken = GameLoop(env, seating([Echo(bad="raise")], [[-1] * 4, [0] * 4]))
    with pytest.raises(AgentFailure, match="agent0"):
        broken.step(turn.next_obs, given={"p1": learner})


def test_owner_must_name_both_sides():
    with pytest.raises(ValueError, match=r"\[2, num_envs\]"):
        Seating([], torch.zeros(4, dtype=torch.long), 1, CPU)


class Noisy(Echo):
    """Steers by draws from torch's global generator."""

    def act(self, observation):
        action = super().act(observation)
        action["rudder"] = torch.rand(action["rudder"].shape) * 2 - 1
        return action


@pytest.mark.parametrize("limit", [None, 5.0])  # with a limit, the moves run on the watchdog's thread
def test_an_agent_with_a_seed_draws_from_its_own_stream(limit) -> None:
    env = TensorEnv(3, seed=1)
    obs = env.reset()
    alone = Seating([Controller(Noisy(), "a", "p1", rng_seed=11)], torch.tensor([[0, 0, 0], [-1, -1, -1]]), 1, CPU,
                    move_limit=limit)
    pair = Seating([Controller(Noisy(), "b", "p2", rng_seed=12), Controller(Noisy(), "a", "p1", rng_seed=11)],
                   torch.tensor([[1, 1, 1], [0, 0, 0]]), 1, CPU, move_limit=limit)
    torch.manual_seed(0)
    before = torch.get_rng_state()
    first = [alone.act(obs)[0]["p1"]["rudder"] for _ in range(2)]
    second = [pair.act(obs)[0]["p1"]["rudder"] for _ in range(2)]  # another agent draws first each time
    assert all(torch.equal(x, y) for x, y in zip(first, second))
    expected = torch.rand(3, generator=torch.Generator().manual_seed(11)) * 2 - 1
    assert torch.equal(first[0], expected)
    assert torch.equal(torch.get_rng_state(), before)  # the global stream is left as it was


# -- the extended observation, for the agents that ask for it ---------------------------------------------


class KeyRecorder:
    """Flies straight and remembers which observation keys it was given."""

    name = "keys"
    plays_team = False

    def __init__(self, obs_mode: str = "default") -> None:
        self.obs_mode = obs_mode
        self.seen: set[str] = set()

    def act(self, observation):
        self.seen = set(observation)
        n = observation["x"].shape[0]
        return {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}


def test_each_agent_gets_the_observation_it_asked_for():
    from arena.env import EXTENDED_OBS_KEYS, OBS_KEYS, EnvConfig, TensorEnv
    from arena.env.observations import EXTENDED_ONLY_KEYS, LAUNCH_CLEAR_KEY, LAUNCH_KEY
    from arena.loop import observation_config

    assert EXTENDED_ONLY_KEYS == tuple(k for k in EXTENDED_OBS_KEYS if k not in OBS_KEYS)
    plain, curious = KeyRecorder(), KeyRecorder("extended")
    assert observation_config(EnvConfig(), [plain]).obs_mode == "default"
    cfg = observation_config(EnvConfig(), [plain, curious])
    assert cfg.obs_mode == "extended"
    env = TensorEnv(4, config=cfg)
    owner = torch.tensor([[0, 0, 1, 1], [1, 1, 0, 0]])
    loop = GameLoop(env, Seating([Controller(plain, "plain", "A"), Controller(curious, "curious", "B")], owner, 1,
                                 env.device))
    loop.step(env.reset())
    assert plain.seen == set(OBS_KEYS) | {LAUNCH_KEY, LAUNCH_CLEAR_KEY}  # every observation holds both
    assert curious.seen == set(EXTENDED_OBS_KEYS) | {LAUNCH_KEY, LAUNCH_CLEAR_KEY}


# -- the move limit: slow moves, hung moves ---------------------------------------------------------------


class Stuck(Echo):
    """Steers like Echo until its ``hang_on``-th move (1 = the first), which waits on ``release``: an act()
    that never returns while the test runs. Records each move's thread and grad mode."""

    def __init__(self, hang_on: int, release: threading.Event, delay_s: float = 0.0) -> None:
        super().__init__(0.5)
        self.hang_on, self.release, self.delay_s = hang_on, release, delay_s
        self.threads: list[threading.Thread] = []
        self.grad: list[tuple[bool, bool]] = []  # (grad mode, inference mode) of each move
        self.late = threading.Event()  # set when the hung move finally returns

    def act(self, observation):
        self.threads.append(threading.current_thread())
        self.grad.append((torch.is_grad_enabled(), torch.is_inference_mode_enabled()))
        if len(self.seen) + 1 == self.hang_on:
            self.release.wait()
            self.late.set()
            return {"rudder": torch.full_like(observation["x"], 0.9), "throttle": torch.ones_like(observation["x"]),
                    "fire": torch.ones_like(observation["x"], dtype=torch.bool)}
        time.sleep(self.delay_s)
        return super().act(observation)


# The move limit of these tests: the well-behaved agents' moves take milliseconds, and a loaded machine
# still leaves them far inside it.
LIMIT_S = 0.5


@pytest.fixture
def quick_bounds(monkeypatch):
    """Hang bounds of about a second (a move of LIMIT_S is abandoned after 1 s, a first move after 0.8 s),
    so the tests that wait for one take no longer."""
    import arena.agent_calls

    monkeypatch.setattr(arena.agent_calls, "HANG_GRACE_MIN_S", 0.5)
    monkeypatch.setattr(arena.agent_calls, "FIRST_MOVE_MIN_S", 0.8)
    monkeypatch.setattr(arena.agent_calls, "FIRST_MOVE_FACTOR", 1.0)


def timed(agents, owner, limit):
    return Seating([Controller(a, f"agent{i}", "test") for i, a in enumerate(agents)], torch.tensor(owner), 1, CPU,
                   move_limit=limit)


def test_hang_bounds_grow_with_the_limit_and_the_first_move_gets_a_generous_one():
    from arena.agent_calls import FIRST_MOVE_MIN_S, HANG_GRACE_MIN_S, hang_bound

    assert hang_bound(0.5, first=False) == 0.5 + HANG_GRACE_MIN_S
    assert hang_bound(10.0, first=False) == 20.0
    assert hang_bound(0.5, first=True) == FIRST_MOVE_MIN_S == 60.0
    assert hang_bound(10.0, first=True) == 1000.0


def test_untimed_moves_run_in_the_callers_thread_and_timed_ones_on_a_daemon_under_its_grad_mode(release):
    env = TensorEnv(2, seed=1)
    obs = env.reset()
    plain, watched = Stuck(0, release), Stuck(0, release)
    timed([plain], [[0, 0], [-1, -1]], None).act(obs)
    seats = timed([watched], [[0, 0], [-1, -1]], 5.0)
    with torch.no_grad():
        seats.act(obs)
        seats.act(obs)
    seats.act(obs)
    with torch.inference_mode():
        seats.act(obs)
    assert plain.threads == [threading.current_thread()]
    assert watched.threads[0] is watched.threads[3] is not threading.current_thread() and watched.threads[0].daemon
    assert watched.grad == [(False, False), (False, False), (True, False), (False, True)]
    seats.close()


def test_a_move_over_the_limit_is_measured_and_the_first_move_is_not_timed(release):
    from arena.agent_calls import hang_bound

    env = TensorEnv(2, seed=1)
    obs = env.reset()
    # Sleeping makes it over the limit whatever the load; the hang bounds (the defaults) leave it room.
    slow = Stuck(0, release, delay_s=LIMIT_S + 0.1)
    assert hang_bound(LIMIT_S, first=False) - slow.delay_s >= 0.9
    seats = timed([slow, Echo()], [[0, 1], [1, 0]], LIMIT_S)
    assert seats.act(obs)[1] == []  # the first move may take its time
    actions, failures = seats.act(obs)
    assert [(f.index, f.agent) for f in failures] == [(0, "agent0")]
    assert failures[0].reason.startswith("ran out of time: one move took ")
    assert failures[0].reason.endswith(" s on 2 battles (time_per_move 0.5 s)")
    assert not abandoned(slow)  # it answered: it may play again (a tournament's next batch)


def test_a_move_that_never_returns_is_a_time_forfeit_and_its_agent_is_never_called_again(release, quick_bounds):
    env = TensorEnv(2, seed=1)
    obs = env.reset()
    stuck, other = Stuck(2, release), Echo(-0.5)
    seats = timed([stuck, other], [[0, 1], [1, 0]], LIMIT_S)
    seats.act(obs)
    start = time.perf_counter()
    actions, failures = seats.act(obs)
    waited = time.perf_counter() - start
    assert 0.95 <= waited < 11.0, "abandoned at its bound (1 s), not before and not never"
    assert [(f.index, f.agent) for f in failures] == [(0, "agent0")]
    assert failures[0].reason == ("ran out of time: a move on 2 battles did not return within 1 s, so it is "
                                  "abandoned and not called again (time_per_move 0.5 s)")
    assert actions["p2"]["rudder"].tolist() == [-0.5, 0.0] and len(other.seen) == 2  # the others played on
    assert abandoned(stuck) and not abandoned(other)
    release.set()  # the hung move returns at last: its action must not reach any later step
    assert stuck.late.wait(5.0)
    actions, failures = seats.act(obs)
    assert [f.reason for f in failures] == ["is not called again: an earlier move of it never returned"]
    assert actions["p1"]["rudder"].tolist() == [0.0, -0.5] and not bool(actions["p1"]["fire"].any())
    assert len(stuck.threads) == 2 and not seats.reset()  # neither act() nor reset() called again
    assert stuck.resets == []
    fresh = timed([stuck], [[0, 0], [-1, -1]], None)  # nor by any other seating of this process
    assert [f.index for f in fresh.act(obs)[1]] == [0] and len(stuck.threads) == 2


def test_a_hang_on_the_very_first_move_is_bounded_too(release, quick_bounds):
    env = TensorEnv(2, seed=1)
    obs = env.reset()
    stuck = Stuck(1, release)
    seats = timed([stuck, Echo()], [[0, 1], [1, 0]], LIMIT_S)
    start = time.perf_counter()
    _, failures = seats.act(obs)
    waited = time.perf_counter() - start
    assert 0.75 <= waited < 10.8, "abandoned at its bound (0.8 s), not before and not never"
    assert [f.reason for f in failures] == ["ran out of time: its first move on 2 battles did not return within "
                                            "0.8 s, so it is abandoned and not called again (time_per_move 0.5 s)"]
