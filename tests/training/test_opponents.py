"""--vs parsing, env split, the opponent pool and prioritized self-play."""

from __future__ import annotations

import pytest
import torch

from arena.agent_calls import raise_failures
from arena.training import (
    OpponentPool,
    OpponentSpec,
    OpponentSpecError,
    SelfPlayPool,
    capture_agent_memory,
    parse_opponent_spec,
    parse_opponent_specs,
    restore_agent_memory,
    save_checkpoint,
    split_envs,
)

CPU = torch.device("cpu")


def p2_action(pool: OpponentPool, observation: dict) -> dict:
    """p2's action as a trainer's game loop gets it: from the pool's seating."""
    actions, failures = pool.seating(CPU).act({"p2": observation})
    raise_failures(failures)
    return actions["p2"]


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


def test_weights_whose_sum_overflows_are_refused_naming_vs_and_the_weights():
    """Each weight is finite, their sum is not: the split would be NaN ("cannot convert float NaN to integer")."""
    with pytest.raises(OpponentSpecError) as refused:
        parse_opponent_specs(["crank=1e308", "sniper=1e308"])
    assert str(refused.value) == (
        "--vs crank=1e+308 --vs sniper=1e+308: the weights add up to more than the largest number (1.8e+308); only "
        "their ratios count, so give smaller ones (crank=1 and sniper=1 split the envs alike)")
    from arena.training import with_floor

    with pytest.raises(OpponentSpecError, match=r"^--vs crank=1e\+308: the weights and the floor's \(placeholder on "
                                                r"0.9 of the envs\) add up to more than the largest number"):
        with_floor(parse_opponent_specs(["crank=1e308"]), 0.9, 64)


def test_weights_near_the_largest_float_split_as_their_ratios_do():
    assert split_envs([1e308, 3e307], 12) == split_envs([10.0, 3.0], 12)
    for weights in ([1.0, float("inf")], [1.0, float("nan")], [1.0, 0.0]):
        with pytest.raises(ValueError, match="^weights: expected positive finite numbers with a finite sum"):
            split_envs(weights, 8)


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
    action = p2_action(pool, {"x": torch.zeros(8)})
    assert action["rudder"].tolist() == [1.0] * 6 + [-1.0] * 2
    mask = torch.zeros(8, dtype=torch.bool)
    mask[7] = True
    raise_failures(pool.seating(CPU).reset(mask))
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


def test_checkpoints_before_since_are_never_drawn(tmp_path):
    """A league's warm-up checkpoints stay out of its pool: only those from ``since`` on are drawn."""
    for step in (1, 2, 3):
        save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / f"ckpt_00000000{step}.pt")
    pool = SelfPlayPool(tmp_path, lambda p: Constant(0.0), since=2)
    pool.refresh()
    assert set(pool.records) == {"ckpt_000000002.pt", "ckpt_000000003.pt"}


def test_the_pfsp_power_sets_how_soon_a_slipping_score_gets_more_games(tmp_path):
    """At a score of 0.8 the squared weight (0.04) is under the floor, as for a mastered opponent; the
    linear weight (0.2) is four times it."""
    weights = {}
    for power in (2.0, 1.0):
        pool = SelfPlayPool(tmp_path, lambda p: Constant(0.0), power=power)
        pool.record("slipping", wins=799, draws=0, losses=199)  # with the prior: 0.8
        pool.record("mastered", wins=998, draws=0, losses=0)
        weights[power] = pool.weights()
    assert weights[2.0]["slipping"] == weights[2.0]["mastered"] == 0.05
    assert weights[1.0]["slipping"] == pytest.approx(0.2) and weights[1.0]["mastered"] == 0.05


def test_league_keeps_the_ladder_share_however_many_checkpoints_pile_up(tmp_path):
    ladder = {"crank": Constant(0.0), "sniper": Constant(0.0)}
    pools = {share: SelfPlayPool(tmp_path, lambda p: Constant(0.0), fixed=ladder, fixed_share=share)
             for share in (None, 0.5, 0.8)}

    def ladder_fraction(pool: SelfPlayPool) -> float:
        pool.refresh()
        picks = pool.sample(4000, torch.Generator().manual_seed(1))
        return sum(p in ladder for p in picks) / len(picks)

    assert all(ladder_fraction(pool) == 1.0 for pool in pools.values()), "no checkpoint yet: the ladder only"
    for step in range(1, 9):
        save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / f"ckpt_{step:09d}.pt")
    assert ladder_fraction(pools[None]) == pytest.approx(2 / 10, abs=0.03)  # one pool: 2 of 10 equal weights
    assert ladder_fraction(pools[0.5]) == pytest.approx(0.5, abs=0.03)
    assert ladder_fraction(pools[0.8]) == pytest.approx(0.8, abs=0.03)
    # Within the ladder's share PFSP still decides: the rung the learner beats gets the floor weight,
    # the one it loses to about 1.
    pool = pools[0.5]
    pool.record("crank", wins=100, draws=0, losses=0)
    pool.record("sniper", wins=0, draws=0, losses=100)
    picks = pool.sample(4000, torch.Generator().manual_seed(2))
    assert picks.count("sniper") > 10 * picks.count("crank") > 0
    assert sum(p in ladder for p in picks) / len(picks) == pytest.approx(0.5, abs=0.03)


def test_self_slot_uses_snapshot_until_a_checkpoint_exists(tmp_path):
    specs = parse_opponent_specs(["self", "crank"])
    snapshot = Constant(0.5)
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.75))
    pool = OpponentPool(specs, 12, lambda s: Constant(0.0), self_play=pfsp, snapshot=lambda: snapshot, self_slots=2)
    gen = torch.Generator().manual_seed(0)
    pool.begin_rollout(gen)
    assert p2_action(pool, {"x": torch.zeros(12)})["rudder"].tolist() == [0.5] * 6 + [0.0] * 6
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000010.pt")
    pool.begin_rollout(gen)
    assert p2_action(pool, {"x": torch.zeros(12)})["rudder"].tolist() == [0.75] * 6 + [0.0] * 6
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


class Broken(Constant):
    """Constant until ``after`` calls, then misbehaves as ``how``."""

    def __init__(self, how: str, after: int = 0) -> None:
        super().__init__(0.0)
        self.how, self.after, self.count = how, after, 0

    def act(self, obs):
        self.count += 1
        action = super().act(obs)
        if self.count <= self.after:
            return action
        if self.how == "raise":
            raise RuntimeError("kaput")
        if self.how == "nan":
            action["rudder"] = torch.full_like(action["rudder"], float("nan"))
        if self.how == "shape":
            action["throttle"] = torch.ones(1)
        return action


def test_pool_names_every_opponent_that_fails_in_the_same_step():
    from arena.match import AgentFailure

    specs = parse_opponent_specs(["a", "b", "c"])
    agents = {"a": Broken("raise"), "b": Constant(0.0), "c": Broken("shape")}
    pool = OpponentPool(specs, 6, lambda s: agents[s.target])
    with pytest.raises(AgentFailure) as exc:
        p2_action(pool, {"x": torch.zeros(6)})
    assert exc.value.no_result and [f[0] for f in exc.value.failures] == ["a", "c"]
    assert "'a' (--vs a) raised RuntimeError: kaput" in str(exc.value)
    assert "'c' (--vs c) returned a malformed action" in str(exc.value)


def test_pool_refuses_nan_at_the_end_of_the_rollout_and_names_the_opponent():
    from arena.match import AgentFailure

    specs = parse_opponent_specs(["good", "bad=2"])
    agents = {"good": Constant(0.0), "bad": Broken("nan", after=1)}
    pool = OpponentPool(specs, 6, lambda s: agents[s.target])
    p2_action(pool, {"x": torch.zeros(6)})
    pool.check_nans()
    action = p2_action(pool, {"x": torch.zeros(6)})
    assert not torch.isnan(action["rudder"]).any()  # the env never sees the NaN
    with pytest.raises(AgentFailure, match=r"'bad' \(--vs bad=2\) returned NaN in 4 action value"):
        pool.check_nans()


def test_self_play_skips_an_unreadable_checkpoint_with_one_warning(tmp_path):
    from arena.training import CheckpointError

    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000001.pt")
    (tmp_path / "ckpt_000000002.pt").write_bytes(b"garbage")
    warnings = []

    def loader(path):
        if path.name.endswith("2.pt"):
            raise CheckpointError(f"checkpoint {path}: not a readable torch checkpoint")
        return Constant(0.25)

    pfsp = SelfPlayPool(tmp_path, loader, warn=warnings.append)
    pool = OpponentPool(parse_opponent_specs(["self"]), 8, lambda s: None, self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=4)
    gen = torch.Generator().manual_seed(0)
    for _ in range(3):
        pool.begin_rollout(gen)
        assert p2_action(pool, {"x": torch.zeros(8)})["rudder"].tolist() == [0.25] * 8
    assert len(warnings) == 1 and "ckpt_000000002.pt" in warnings[0] and "skipping" in warnings[0]
    assert set(pfsp.records) == {"ckpt_000000001.pt"}


def test_the_floor_takes_its_share_of_the_envs() -> None:
    from arena.training import parse_opponent_specs, split_envs, with_floor

    specs = with_floor(parse_opponent_specs(["crank"]), 0.25, 1024)
    assert [(s.target, round(s.weight, 6)) for s in specs] == [("crank", 1.0), ("placeholder", 0.333333)]
    assert split_envs([s.weight for s in specs], 1024) == [768, 256]
    mixed = with_floor(parse_opponent_specs(["crank=3", "self"]), 0.2, 100)
    assert split_envs([s.weight for s in mixed], 100)[-1] == 20


@pytest.mark.parametrize("vs, share, envs", [(["crank", "placeholder=2"], 0.25, 64), (["crank"], 0.0, 64),
                                             (["crank"], 0.25, 1)])
def test_the_floor_steps_aside(vs, share, envs) -> None:
    from arena.training import parse_opponent_specs, with_floor

    specs = parse_opponent_specs(vs)
    assert with_floor(specs, share, envs) == specs


def test_a_floor_share_of_one_is_refused() -> None:
    from arena.training import OpponentSpecError, parse_opponent_specs, with_floor

    with pytest.raises(OpponentSpecError, match=r"floor: expected a share in \[0, 1\)"):
        with_floor(parse_opponent_specs(["crank"]), 1.0, 64)


def test_league_spec_and_its_refusals():
    assert parse_opponent_spec("league=2") == OpponentSpec("league", "league", 2.0)
    with pytest.raises(OpponentSpecError, match="already plays the run's own"):
        parse_opponent_specs(["league", "self"])


def test_league_draws_ladder_agents_and_checkpoints_by_pfsp(tmp_path):
    hard, easy = Constant(1.0), Constant(-1.0)
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.25), fixed={"hard": hard, "easy": easy})
    pool = OpponentPool(parse_opponent_specs(["league"]), 8, lambda s: Constant(0.0), self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=4)
    gen = torch.Generator().manual_seed(1)
    pool.begin_rollout(gen)
    assert set(pfsp.records) == {"hard", "easy"}, "the ladder is drawn before any checkpoint exists"
    rudder = set(p2_action(pool, {"x": torch.zeros(8)})["rudder"].tolist())
    assert rudder <= {1.0, -1.0}
    # the learner beats "easy" every time and loses to "hard": hard gets the envs
    pfsp.record("easy", wins=100, draws=0, losses=0)
    pfsp.record("hard", wins=0, draws=0, losses=100)
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000010.pt")
    pfsp.refresh()  # an unplayed checkpoint reads as an even match
    picks = pfsp.sample(1000, torch.Generator().manual_seed(0))
    assert picks.count("hard") > picks.count("ckpt_000000010.pt") > picks.count("easy") > 0
    pool.begin_rollout(gen)
    for slot in pool.slots:  # results are credited to whichever ladder agent or checkpoint played
        assert slot.checkpoint in {"hard", "easy", "ckpt_000000010.pt"}
    assert pool.who(pool.slots[0])[1] == "--vs league"


def test_a_drawn_opponent_keeps_its_slot_for_its_tenure_and_the_turns_are_staggered(tmp_path):
    """Slots are drawn again only when their tenure is up (a few at each rollout, never all at once),
    and begin_rollout names the slots it drew, whose battles the trainer restarts."""
    fixed = {"a": Constant(1.0), "b": Constant(-1.0)}
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.25), fixed=fixed)
    pool = OpponentPool(parse_opponent_specs(["league"]), 16, lambda s: Constant(0.0), self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=4, tenure=4)
    gen = torch.Generator().manual_seed(0)
    assert pool.begin_rollout(gen) == pool.slots  # the first draw fills every slot
    held = {id(slot): slot.agent for slot in pool.slots}
    redrawn = []
    for _ in range(12):
        drawn = pool.begin_rollout(gen)
        redrawn.append([pool.slots.index(slot) for slot in drawn])
        for slot in pool.slots:
            assert (slot in drawn) or slot.agent is held[id(slot)], "an opponent changed outside its turn"
            held[id(slot)] = slot.agent
    # slot i first plays 4 + i rollouts, then 4 at a time: one slot drawn per rollout from the fourth on
    assert redrawn == [[], [], [], [0], [1], [2], [3], [0], [1], [2], [3], [0]]


def test_each_slot_plays_its_own_copy_of_an_opponent_drawn_twice(tmp_path):
    """Two slots that draw the same ladder agent get separate objects, so its per-env memory for one
    slot's battles survives the other slot's next draw; results still go to the one name."""
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.25), fixed={"only": Constant(1.0)})
    pool = OpponentPool(parse_opponent_specs(["league"]), 8, lambda s: Constant(0.0), self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=2, tenure=2)
    gen = torch.Generator().manual_seed(0)
    pool.begin_rollout(gen)
    first, second = pool.slots
    assert first.agent is not second.agent and first.checkpoint == second.checkpoint == "only"
    p2_action(pool, {"x": torch.zeros(8)})
    assert pool.begin_rollout(gen) == []
    p2_action(pool, {"x": torch.zeros(8)})
    assert first.agent.calls.tolist() == [2.0] * 4  # its own batch: the first slot's 4 envs
    assert pool.begin_rollout(gen) == [first]  # the first slot's turn (tenure 2, staggered)
    p2_action(pool, {"x": torch.zeros(8)})
    assert second.agent.calls.tolist() == [3.0] * 4, "the other slot's memory is untouched"
    pool.record(torch.ones(8), torch.zeros(8), torch.zeros(8))
    assert pfsp.records["only"].wins == 8


def test_a_copy_of_the_learner_plays_only_until_a_checkpoint_can_be_drawn(tmp_path):
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.75))
    pool = OpponentPool(parse_opponent_specs(["self"]), 4, lambda s: None, self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=2, tenure=100)
    gen = torch.Generator().manual_seed(0)
    pool.begin_rollout(gen)
    assert pool.begin_rollout(gen) == [] and p2_action(pool, {"x": torch.zeros(4)})["rudder"].tolist() == [0.5] * 4
    save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / "ckpt_000000010.pt")
    assert pool.begin_rollout(gen) == pool.slots, "long before the tenure is up"
    assert p2_action(pool, {"x": torch.zeros(4)})["rudder"].tolist() == [0.75] * 4


def test_with_handover_a_new_draw_takes_over_the_battles_in_flight(tmp_path):
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.25), fixed={"a": Constant(1.0), "b": Constant(-1.0)})
    pool = OpponentPool(parse_opponent_specs(["league"]), 8, lambda s: Constant(0.0), self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=4, tenure=1, handover=True)
    gen = torch.Generator().manual_seed(0)
    assigned = []
    assign = pool.assign
    pool.assign = lambda slot, name: (assigned.append(slot), assign(slot, name))
    for rollout in range(1, 4):
        assert pool.begin_rollout(gen) == [], "no battle restarts"
        assert assigned == pool.slots * rollout, "every slot drawn again at every rollout"


def test_with_a_tenure_of_one_rollout_slots_that_drew_the_same_agent_share_one_batch(tmp_path):
    only = Constant(1.0)
    pfsp = SelfPlayPool(tmp_path, lambda p: Constant(0.25), fixed={"only": only})
    pool = OpponentPool(parse_opponent_specs(["league"]), 8, lambda s: Constant(0.0), self_play=pfsp,
                        snapshot=lambda: Constant(0.5), self_slots=4, tenure=1)
    pool.begin_rollout(torch.Generator().manual_seed(0))
    assert all(slot.agent is only for slot in pool.slots)
    p2_action(pool, {"x": torch.zeros(8)})
    assert only.calls.tolist() == [1.0] * 8, "one call over all four slots' envs"


class Kin(Constant):
    """A stub whose copies with other values act as one call (a family of per-row values)."""

    together: list[int] = []  # rows of every family call

    def family_key(self):
        return "kin"

    @classmethod
    def act_together(cls, members, rows, streams):
        value = torch.repeat_interleave(torch.tensor([m.value for m in members]), torch.tensor(rows))
        return KinFamily(value)


class KinFamily:
    def __init__(self, value: torch.Tensor) -> None:
        self.value = value

    def act(self, obs):
        Kin.together.append(int(self.value.numel()))
        return {"rudder": self.value.clone(), "throttle": torch.ones_like(self.value),
                "fire": torch.zeros(self.value.shape, dtype=torch.bool)}

    def reset(self, env_mask=None):
        pass

    def keep_rows(self, rows):
        self.value = self.value[rows]


@pytest.mark.parametrize("tenure", [1, 2])
def test_drawn_past_checkpoints_act_as_one_call_when_every_draw_is_fresh(tmp_path, tenure):
    for step in (10, 20, 30):
        save_checkpoint({"agent": "stub", "format_version": 1}, tmp_path / f"ckpt_{step:09d}.pt")
    values = {"ckpt_000000010.pt": 0.1, "ckpt_000000020.pt": 0.2, "ckpt_000000030.pt": 0.3}
    pfsp = SelfPlayPool(tmp_path, lambda p: Kin(values[p.name]))
    pool = OpponentPool(parse_opponent_specs(["self"]), 12, lambda s: Kin(0.0), self_play=pfsp,
                        snapshot=lambda: Kin(0.0), self_slots=3, tenure=tenure)
    pool.begin_rollout(torch.Generator().manual_seed(4))
    Kin.together.clear()
    rudder = p2_action(pool, {"x": torch.zeros(12)})["rudder"]
    assert len(pool.seating(torch.device("cpu")).families) == (tenure == 1)
    drawn = [s.agent.value for s in pool.slots for _ in range(s.start, s.stop)]
    assert rudder.tolist() == pytest.approx(drawn)  # each slot's envs got their own checkpoint's action
    assert len(Kin.together) == (tenure == 1)  # with a longer tenure, one call each
