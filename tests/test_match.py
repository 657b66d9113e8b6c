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

    def reset(self, env_mask=None):
        if self.bad == "reset" and env_mask is not None and bool(env_mask.any()):
            raise RuntimeError("stale memory\nsecond line")

    def act(self, observation):
        self.calls += 1
        n = observation["x"].shape[0]
        action = {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}
        if self.bad == "raise":
            raise RuntimeError("network exploded")
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


@pytest.mark.parametrize("games", [0, -3, 2.5, True])
def test_games_must_be_a_positive_int(games):
    with pytest.raises(ValueError, match="games"):
        play_match(Straight(), Straight(), games)
