"""--vs parsing, env split, the opponent pool and prioritized self-play."""

from __future__ import annotations

import pytest
import torch

from arena.training import (
    OpponentPool, OpponentSpec, OpponentSpecError, SelfPlayPool, capture_agent_memory, parse_opponent_spec,
    parse_opponent_specs, restore_agent_memory, save_checkpoint, split_envs,
)


@pytest.mark.parametrize("text, kind, target, weight", [
    ("crank", "agent", "crank", 1.0),
    ("placeholder=0.2", "agent", "placeholder", 0.2),
    ("ckpt:runs/a/ckpt_000000100.pt", "checkpoint", "runs/a/ckpt_000000100.pt", 1.0),
    ("ckpt:runs/a=b/x.pt=3", "checkpoint", "runs/a=b/x.pt", 3.0),
    ("self=2", "self", "self", 2.0),
    (" rule_based ", "agent", "rule_based", 1.0),
])
def test_parse(text, kind, target, weight):
    spec = parse_opponent_spec(text)
    assert (spec.kind, spec.target, spec.weight) == (kind, target, weight)


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("crank=", "not a number"),
    ("crank=abc", "not a number"),
    ("crank=0", "positive"),
    ("crank=-1", "positive"),
    ("crank=nan", "positive"),
    ("=2", "missing opponent name"),
    ("ckpt:", "needs a path"),
    ("runs/a/ckpt.pt", "ckpt:"),
])
def test_parse_errors(text, message):
    with pytest.raises(OpponentSpecError, match=message):
        parse_opponent_spec(text)


def test_duplicates_and_empty_refused():
    with pytest.raises(OpponentSpecError, match="given twice"):
        parse_opponent_specs(["crank", "crank=2"])
    with pytest.raises(OpponentSpecError, match="at least one"):
        parse_opponent_specs([])


@pytest.mark.parametrize("weights, n, expected", [
    ([1.0], 8, [8]),
    ([1.0, 1.0], 9, [5, 4]),
    ([3.0, 1.0], 1024, [768, 256]),
    ([1.0, 0.2], 12, [9, 3]),
    ([1.0, 1.0, 1.0], 3, [1, 1, 1]),
    ([100.0, 0.001], 4, [3, 1]),
])
def test_split_envs(weights, n, expected):
    counts = split_envs(weights, n)
    assert counts == expected and sum(counts) == n and min(counts) >= 1


def test_split_needs_an_env_per_opponent():
    with pytest.raises(OpponentSpecError, match="at least 3 envs"):
        split_envs([1, 1, 1], 2)


class Constant:
    """A stateful stub: rudder = its value, and it counts act calls per env."""

    def __init__(self, value: float) -> None:
        self.value = value
        self.calls: torch.Tensor | None = None
        self.resets: list = []

    def act(self, obs):
        n = obs["x"].shape[0]
        self.calls = (self.calls if self.calls is not None else torch.zeros(n)) + 1
        return {"rudder": torch.full((n,), self.value), "throttle": torch.ones(n),
                "fire": torch.zeros(n, dtype=torch.bool)}

    def reset(self, env_mask=None):
        self.resets.append(None if env_mask is None else env_mask.clone())

    def eval(self):
        return self


def test_pool_acts_on_contiguous_slices_and_tallies():
    specs = parse_opponent_specs(["a=3", "b"])
    made = {}
    pool = OpponentPool(specs, 8, lambda s: made.setdefault(s.target, Constant(1.0 if s.target == "a" else -1.0)))
    action = pool.act({"x": torch.zeros(8)})
    assert action["rudder"].tolist() == [1.0] * 6 + [-1.0] * 2
    mask = torch.zeros(8, dtype=torch.bool)
    mask[7] = True
    pool.reset(mask)
    assert made["b"].resets[-1].tolist() == [False, True]
    wins = torch.tensor([1, 0, 0, 0, 0, 1, 0, 0.0])
    losses = torch.tensor([0, 0, 0, 0, 0, 0, 1, 1.0])
    pool.record(wins, torch.zeros(8), losses)
    a, b = pool.take_tallies()
    assert (a.wins, a.losses, b.wins, b.losses) == (2, 0, 0, 2)
    assert pool.take_tallies()[0].games == 0


def test_self_play_prefers_checkpoints_the_learner_beats_least(tmp_path):
    for step in (1, 2):
        save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / f"ckpt_{step:09d}.pt")
    loaded = []
    pfsp = SelfPlayPool(tmp_path, lambda p: loaded.append(p.name) or Constant(0.0))
    pfsp.refresh()
    pfsp.record("ckpt_000000001.pt", wins=50, draws=0, losses=0)  # easy
    pfsp.record("ckpt_000000002.pt", wins=5, draws=0, losses=45)  # hard
    w = pfsp.weights()
    assert w["ckpt_000000002.pt"] > 10 * w["ckpt_000000001.pt"] and w["ckpt_000000001.pt"] >= pfsp.floor
    picks = pfsp.sample(400, torch.Generator().manual_seed(0))
    assert picks.count("ckpt_000000002.pt") > 300

    # New checkpoints are picked up on refresh; state survives a round trip.
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000003.pt")
    pfsp.refresh()
    assert set(pfsp.records) == {"ckpt_000000001.pt", "ckpt_000000002.pt", "ckpt_000000003.pt"}
    other = SelfPlayPool(tmp_path, lambda p: Constant(0.0))
    other.load_state_dict(pfsp.state_dict())
    assert other.weights() == pfsp.weights()


def test_self_slot_uses_snapshot_until_a_checkpoint_exists(tmp_path):
    specs = parse_opponent_specs(["self", "crank"])
    snapshot = Constant(5.0)
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(7.0))
    pool = OpponentPool(specs, 12, lambda s: Constant(0.0), self_play=pfsp, snapshot=lambda: snapshot, self_slots=2)
    gen = torch.Generator().manual_seed(0)
    pool.begin_rollout(gen)
    assert pool.act({"x": torch.zeros(12)})["rudder"].tolist() == [5.0] * 6 + [0.0] * 6
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000010.pt")
    pool.begin_rollout(gen)
    assert pool.act({"x": torch.zeros(12)})["rudder"].tolist() == [7.0] * 6 + [0.0] * 6
    pool.record(torch.ones(12), torch.zeros(12), torch.zeros(12))
    assert pfsp.records["ckpt_000000010.pt"].wins == 6


def test_agent_memory_round_trip():
    agent = Constant(0.0)
    agent.act({"x": torch.zeros(3)})
    agent.gen = torch.Generator().manual_seed(3)
    memory = capture_agent_memory(agent)
    expected = torch.rand(2, generator=agent.gen)
    fresh = Constant(0.0)
    restore_agent_memory(fresh, memory)
    assert torch.equal(fresh.calls, torch.ones(3))
    assert torch.equal(torch.rand(2, generator=fresh.gen), expected)
    assert OpponentSpec("checkpoint", "runs/x/ckpt_1.pt").label == "ckpt:ckpt_1"
