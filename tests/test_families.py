"""Agents of one kind acting as one call (arena.families) and the seating that groups them."""

from __future__ import annotations

import math
import re
from typing import Any, ClassVar

import pytest
import torch

from arena.agents import BaseAgent
from arena.env import TensorEnv
from arena.families import ActsWithVariants, MemberRows, family_key
from arena.loop import Controller, GameLoop, Seating
from arena.testing import check_family


class Steerer(ActsWithVariants, BaseAgent):
    """Turns toward the enemy with its own gain and fires inside its own range; counts its calls."""

    name: ClassVar[str] = "steerer"
    calls: ClassVar[list[int]] = []  # rows of every act() call, over all instances

    def __init__(self, device: Any = "cpu", env_config: Any = None, gain: float = 3.0, fire_km: float = 20.0,
                 poison: float = 0.0) -> None:
        super().__init__(device, env_config)
        self.gain, self.fire_m, self.poison = gain, fire_km * 1000.0, poison
        self.since_fire: torch.Tensor | None = None  # per-env memory: steps since the last launch

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        bearing = observation["enemy_relative_angle"]
        dist = observation["enemy_distance"] * self.env_config.diagonal
        n = bearing.shape[0]
        type(self).calls.append(n)
        if self.since_fire is None or self.since_fire.shape[0] != n:
            self.since_fire = torch.zeros(n, dtype=torch.int64)
        fire = (dist < self.fire_m) & (bearing.abs() < 0.2) & (self.since_fire > 20)
        self.since_fire = torch.where(fire, 0, self.since_fire + 1)
        rudder = (self.gain * math.pi * bearing).clamp(-1, 1)
        rudder = torch.where(torch.as_tensor(self.poison) > 0, float("nan"), rudder)  # poisoned: NaN
        return {"rudder": rudder, "throttle": torch.ones_like(bearing), "fire": fire}

    def reset(self, env_mask: torch.Tensor | None = None) -> None:
        if env_mask is None or self.since_fire is None:
            self.since_fire = None
        else:
            self.since_fire = torch.where(env_mask, 0, self.since_fire)

    def keep_rows(self, rows: torch.Tensor) -> None:
        if self.since_fire is not None:
            self.since_fire = self.since_fire[rows]


def test_member_rows_spans_values_and_kept_rows() -> None:
    rows = MemberRows([2, 0, 3], torch.device("cpu"))
    assert rows.spans() == [(0, 0, 2), (2, 2, 5)] and rows.total == 5
    assert rows.per_row([1.0, 2.0, 3.0], torch.float32).tolist() == [1, 1, 3, 3, 3]
    rows.keep(torch.tensor([1, 3]))
    assert rows.counts == [1, 0, 1] and rows.spans() == [(0, 0, 1), (2, 1, 2)]


def test_variants_act_as_one_exactly_as_alone_and_keep_their_rows() -> None:
    check_family([Steerer(gain=3.0), Steerer(gain=1.5, fire_km=30.0), Steerer(gain=0.5, fire_km=10.0)])
    check_family([Steerer(gain=3.0), Steerer(gain=1.5)], team_size=2)


def test_one_call_a_step_for_the_family_and_one_for_each_other_agent() -> None:
    agents = [Steerer(gain=g) for g in (3.0, 2.0, 1.0)] + [BaseLoner()]
    owner = torch.tensor([[0, 1, 2, 3, 0, 1], [3, 2, 1, 0, 2, 3]])
    env = TensorEnv(6, seed=0)
    seating = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(agents)], owner, 1, env.device,
                      families=True)
    assert [t.members for t in seating.families] == [[0, 1, 2]]
    Steerer.calls.clear()
    loop = GameLoop(env, seating)
    obs = env.reset()
    for _ in range(3):
        obs = loop.step(obs).next_obs
    assert Steerer.calls == [9, 9, 9]  # the steerers' 5 rows of p1 and 4 of p2, together


class BaseLoner(BaseAgent):
    """An agent that does not opt in: flies straight."""

    name: ClassVar[str] = "loner"

    def act(self, observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        n = observation["x"].shape[0]
        return {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}


def test_a_members_nan_is_its_own_and_a_raise_is_every_members() -> None:
    agents = [Steerer(), Steerer(poison=1.0), Steerer(gain=2.0)]
    owner = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1]])
    env = TensorEnv(4, seed=0)
    seating = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(agents)], owner, 1, env.device,
                      families=True)
    actions, failures = seating.act(env.reset())
    assert not failures
    assert [f.agent for f in seating.nan_failures()] == ["a1"]  # member 1's rows only
    assert float(actions["p1"]["rudder"][1]) == 0.0  # a NaN flies as a zero action, as for one agent

    def broken(observation: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        raise RuntimeError("boom")

    seating.families[0].actor.act = broken
    _, failures = seating.act(env.reset())
    assert sorted(f.agent for f in failures) == ["a0", "a1", "a2"]
    assert all("acting as one" in f.reason and "boom" in f.reason for f in failures)


def test_a_disabled_member_idles_while_the_family_plays_on() -> None:
    agents = [Steerer(), Steerer(gain=2.0)]
    owner = torch.tensor([[0, 1, 0, 1], [1, 0, 1, 0]])
    env = TensorEnv(4, seed=0)
    seating = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(agents)], owner, 1, env.device,
                      families=True)
    obs = env.reset()
    before, _ = seating.act(obs)
    seating.set_active([True, False])
    after, _ = seating.act(obs)
    ones = owner == 1
    assert bool((after["p1"]["throttle"][ones[0]] == 0).all()) and bool((after["p2"]["throttle"][ones[1]] == 0).all())
    assert torch.equal(after["p1"]["rudder"][~ones[0]], before["p1"]["rudder"][~ones[0]])


def test_timed_agents_act_alone() -> None:
    agents = [Steerer(), Steerer(gain=2.0)]
    seating = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(agents)], torch.tensor([[0, 1], [1, 0]]),
                      1, torch.device("cpu"), move_limit=5.0, families=True)
    assert seating.families == []
    seating.close()


@pytest.mark.parametrize("agent", [BaseLoner(), Steerer()])
def test_only_agents_that_opt_in_have_a_family_key(agent: Any) -> None:
    assert (family_key(agent) is None) == isinstance(agent, BaseLoner)


class BrokenHash:
    def __hash__(self) -> int:
        raise RuntimeError("no hash")


class BadKey(Steerer):
    """A steerer whose family_key or act_together is broken in the way ``fault`` names."""

    fault: ClassVar[str] = ""

    def family_key(self) -> Any:
        if self.fault == "key raises":
            raise RuntimeError("no key today")
        if self.fault == "key exits":
            raise SystemExit(7)
        if self.fault == "key unhashable":
            return ["a", "list"]
        if self.fault == "key hash raises":
            return BrokenHash()
        return super().family_key()

    @classmethod
    def act_together(cls, members: Any, rows: Any, streams: Any) -> Any:
        if cls.fault == "together raises":
            raise ValueError("cannot join")
        if cls.fault == "together returns None":
            return None
        return super().act_together(members, rows, streams)


@pytest.mark.parametrize("fault, words", [
    ("key raises", "family_key() raised RuntimeError: no key today"),
    ("key exits", "family_key() raised SystemExit (called sys.exit(7))"),
    ("key unhashable", "family_key() returned a key that cannot group agents (TypeError: "),
    ("key hash raises", "family_key() returned a key that cannot group agents (RuntimeError: no hash)"),
    ("together raises", "act_together() raised ValueError: cannot join"),
    ("together returns None", "act_together() returned NoneType, not an object with act(), reset() and keep_rows()"),
])
def test_a_broken_family_acts_one_by_one_with_one_line_naming_it(fault: str, words: str, monkeypatch, caplog) -> None:
    monkeypatch.setattr(BadKey, "fault", fault)
    agents = [BadKey(), BadKey(gain=2.0), BaseLoner()]
    owner = torch.tensor([[0, 1, 2, 0], [1, 2, 0, 1]])
    env = TensorEnv(4, seed=0)
    with caplog.at_level("WARNING", logger="arena.parties"):
        seating = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(agents)], owner, 1, env.device,
                          families=True)
    assert seating.families == []
    assert len(caplog.records) == (2 if fault.startswith("key") else 1)
    assert all(words in r.getMessage() and "'a0'" in caplog.text for r in caplog.records)
    obs = env.reset()
    actions, failures = seating.act(obs)
    assert not failures and not seating.nan_failures()
    fresh = [BadKey(), BadKey(gain=2.0), BaseLoner()]
    alone = Seating([Controller(a, f"a{i}", "p") for i, a in enumerate(fresh)], owner, 1, env.device)
    assert all(torch.equal(actions["p1"][k], alone.act(obs)[0]["p1"][k]) for k in actions["p1"])


@pytest.mark.parametrize("fault, words", [
    ("key raises", "member 0's family_key() raised RuntimeError: no key today"),
    ("key unhashable", "member 0's family_key() returned a key that is not hashable"),
    ("together raises", "act_together() raised ValueError: cannot join"),
    ("together returns None", "act_together() returned NoneType, not an object with act(), reset() and keep_rows()"),
])
def test_check_family_names_a_broken_key_or_act_together(fault: str, words: str, monkeypatch) -> None:
    monkeypatch.setattr(BadKey, "fault", fault)
    with pytest.raises(AssertionError, match=re.escape(f"check_family: {words}")):
        check_family([BadKey(), BadKey(gain=2.0)])


def test_check_family_names_a_nan_before_comparing_actions() -> None:
    with pytest.raises(AssertionError, match=r"check_family: step 0, alone: agent 'member 1' \(member\) returned NaN"):
        check_family([Steerer(), Steerer(poison=1.0)])
