"""play_match: side assignment, counting, determinism and blaming a misbehaving agent."""

from __future__ import annotations

import pytest
import torch

from arena.agents import BaseAgent, build_agent
from arena.env import EnvConfig
from arena.match import RESULT_KEYS, AgentFailure, MatchResult, play_match

SHORT = EnvConfig(max_time=40.0)  # nobody gets into range: every game a time-out draw


class Straight(BaseAgent):
    """Flies straight; ``bad`` picks a way to break the action contract."""

    name = "straight"

    def __init__(self, device="cpu", env_config=None, bad: str = "", training: bool = False):
        super().__init__(device, env_config)
        self.bad = bad
        self.training = training
        self.calls = 0

    def eval(self):
        if self.bad == "eval":
            raise ValueError("no eval mode")
        return super().eval()

    def reset(self, env_mask=None):
        if self.bad == "reset" and env_mask is not None and bool(env_mask.any()):
            raise RuntimeError("stale memory\nsecond line")

    def act(self, observation):
        self.calls += 1
        n = observation["x"].shape[0]
        action = {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}
        if self.bad == "raise":
            raise RuntimeError("network exploded")
        if self.bad == "exit":
            import sys

            sys.exit("bye")
        if self.bad == "kbint":
            raise KeyboardInterrupt
        if self.bad == "keys":
            del action["fire"]
        if self.bad == "shape":
            action["rudder"] = torch.zeros(n + 1)
        if self.bad == "nan" and self.calls == 3:
            action["rudder"] = torch.full((n,), float("nan"))
        return action


def test_counts_and_schema():
    result = play_match(Straight(), Straight(), 9, env_config=SHORT, seed=3)
    assert isinstance(result, MatchResult)
    assert list(result.to_dict()) == list(RESULT_KEYS)
    assert (result.wins, result.draws, result.losses) == (0, 9, 0)
    assert result.mean_length == 40.0 and result.games_per_second > 0
    assert result.a == "straight" and result.games == 9


def test_a_flies_p1_in_the_first_half_and_the_odd_game():
    details = play_match(Straight(), Straight(), 7, env_config=SHORT).details
    assert details["a_is_p1"].tolist() == [True] * 4 + [False] * 3


def test_each_env_counts_only_its_first_episode_and_is_deterministic():
    a1 = play_match(build_agent("crank"), build_agent("placeholder"), 32, seed=5, name_a="A", name_b="B")
    a2 = play_match(build_agent("crank"), build_agent("placeholder"), 32, seed=5, name_a="A", name_b="B")
    assert a1.to_dict() | {"games_per_second": 0} == a2.to_dict() | {"games_per_second": 0}
    assert a1.wins + a1.draws + a1.losses == 32
    d = a1.details
    assert torch.equal(d["outcome"], a2.details["outcome"]) and (d["length"] > 0).all()
    assert (d["length"] <= EnvConfig().max_steps).all()
    assert int((d["outcome"] == 1).sum()) == a1.wins and (a1.a, a1.b) == ("A", "B")


def test_sides_are_swapped_fairly():
    """A strong agent wins from both sides: sides are assembled per env, not per match."""
    d = play_match(build_agent("crank"), build_agent("placeholder"), 64, seed=1).details
    for side in (d["a_is_p1"], ~d["a_is_p1"]):
        assert (d["outcome"][side] == 1).float().mean() > 0.75


@pytest.mark.parametrize("bad, words", [
    ("raise", "raised RuntimeError: network exploded"),
    ("reset", "reset() raised RuntimeError: stale memory"),
    ("keys", "missing key(s) ['fire']"),
    ("shape", "expected shape [4], got [5]"),
    ("nan", "NaN"),
])
def test_a_misbehaving_agent_is_named(bad, words):
    with pytest.raises(AgentFailure) as exc:
        play_match(Straight(), Straight(bad=bad), 4, env_config=SHORT, name_b="wobbly")
    assert exc.value.agent == "wobbly" and exc.value.role == "B"
    assert "agent 'wobbly' (B)" in str(exc.value) and words in str(exc.value) and "\n" not in str(exc.value)


def test_agents_play_in_eval_mode_and_get_their_mode_back():
    learner = Straight(training=True)
    seen = []
    original = learner.act

    def spy(observation):
        seen.append(learner.training)
        return original(observation)

    learner.act = spy
    play_match(learner, Straight(), 2, env_config=EnvConfig(max_time=3.0))
    assert seen and not any(seen) and learner.training


class Wobbly(BaseAgent):
    """In train mode (sampled) it draws its rudder from torch's global generator; in eval mode it flies straight."""

    name = "wobbly"

    def act(self, observation):
        n = observation["x"].shape[0]
        rudder = torch.rand(n) * 2 - 1 if self.training else torch.zeros(n)
        return {"rudder": rudder, "throttle": torch.ones(n), "fire": torch.rand(n) < 0.05 if self.training
                else torch.zeros(n, dtype=torch.bool)}


def test_a_sampled_match_replays_exactly_and_restores_the_mode():
    modes = []

    def played(seed):
        a, b = Wobbly(), Wobbly()
        original = a.act
        a.act = lambda observation: (modes.append(a.training), original(observation))[1]
        torch.manual_seed(seed)  # whatever the caller's generator holds, the match draws from its own stream
        result = play_match(a, b, 64, seed=5, env_config=EnvConfig(max_time=120.0),
                            policies=("sampled", "deterministic"))
        assert not a.training, "back to the mode it was in"
        return result

    first, second = played(0), played(1)
    assert modes and all(modes), "A played in train mode (sampled)"
    assert torch.equal(first.details["outcome"], second.details["outcome"])
    assert torch.equal(first.details["length"], second.details["length"])
    other = play_match(Wobbly(), Wobbly(), 64, seed=6, env_config=EnvConfig(max_time=120.0),
                       policies=("sampled", "deterministic"))
    assert not torch.equal(first.details["length"], other.details["length"]), "another seed, other draws"
    with pytest.raises(ValueError, match="policies"):
        play_match(Wobbly(), Wobbly(), 2, policies=("greedy", "sampled"))


@pytest.mark.parametrize("games", [0, -3, 2.5, True])
def test_games_must_be_a_positive_int(games):
    with pytest.raises(ValueError, match="games"):
        play_match(Straight(), Straight(), games)


@pytest.mark.parametrize("bad, words", [
    ("exit", "raised SystemExit (called sys.exit('bye'))"),
    ("eval", "eval() raised ValueError: no eval mode"),
])
def test_sys_exit_and_eval_failures_are_the_agents_fault(bad, words):
    with pytest.raises(AgentFailure) as exc:
        play_match(Straight(), Straight(bad=bad), 4, env_config=SHORT, name_b="wobbly")
    assert exc.value.agent == "wobbly" and words in str(exc.value)


def test_an_agents_own_keyboard_interrupt_is_a_failure_under_the_cli_counter():
    from arena.guard import install_sigint_counter

    restore = install_sigint_counter()
    try:
        with pytest.raises(AgentFailure, match="KeyboardInterrupt"):
            play_match(Straight(), Straight(bad="kbint"), 4, env_config=SHORT)
    finally:
        restore()


@pytest.mark.parametrize("bad_a, bad_b", [("raise", "shape"), ("nan", "nan"), ("eval", "eval"), ("reset", "reset"),
                                          ("exit", "keys")])
def test_both_failing_in_the_same_step_is_no_result_for_both(bad_a, bad_b):
    with pytest.raises(AgentFailure) as exc:
        play_match(Straight(bad=bad_a), Straight(bad=bad_b), 4, env_config=SHORT, name_a="first", name_b="second")
    failure = exc.value
    assert failure.no_result and [(a, r) for a, r, _ in failure.failures] == [("first", "A"), ("second", "B")]
    assert str(failure).startswith("no result: 2 agents failed in the same step")
    assert "'first' (A)" in str(failure) and "'second' (B)" in str(failure) and "\n" not in str(failure)


@pytest.mark.parametrize("device, words", [
    ("cpu:5", "the CPU has no device index"),
    ("tpu", "invalid device 'tpu'"),
    ("", "invalid device ''"),
])
def test_bad_devices_are_refused_before_anything_is_played(device, words):
    """Through arena.env.resolve_device (tests/env/test_devices.py has the rest)."""
    with pytest.raises(ValueError, match=words):
        play_match(Straight(), Straight(), 2, env_config=SHORT, device=device)


def test_single_aircraft_agents_fly_every_seat_of_a_team() -> None:
    from arena.agents import build_agent
    from arena.env import EnvConfig
    from arena.match import play_match

    cfg = EnvConfig(team_size=2)
    result = play_match(build_agent("crank", env_config=cfg), build_agent("placeholder", env_config=cfg), 16,
                        env_config=cfg)
    assert result.games == 16 and result.wins >= 12
    assert result.details["return_a"].shape == (16,)


def test_observers_see_every_step_of_a_match() -> None:
    seen = []
    result = play_match(Straight(), Straight(), 4, observers=[lambda turn: seen.append(turn.step)])
    assert seen == list(range(1, len(seen) + 1)) and len(seen) >= result.mean_length
