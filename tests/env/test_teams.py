"""Team battles: T aircraft a side, the team axis, targets, outcomes and symmetries."""

from __future__ import annotations

import math

import pytest
import torch

from arena.env import EnvConfig, TensorEnv, obs_vector
from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY, neighbour_keys

pytestmark = pytest.mark.usefixtures("both_step_paths")  # eager packed and static step


def pursue(obs: dict[str, torch.Tensor], gen: torch.Generator | None = None) -> dict[str, torch.Tensor]:
    """Per-aircraft pursuit that fires when close and ahead (noise only when a generator is given)."""
    shape = obs["x"].shape
    rudder = obs["enemy_relative_angle"] * 4.0
    if gen is not None:
        rudder = rudder + torch.rand(shape, generator=gen) - 0.5
    fire = (obs["enemy_relative_angle"].abs() < 0.08) & (obs["enemy_distance"] < 0.25)
    return {"rudder": rudder.clamp(-1.0, 1.0), "throttle": torch.ones(shape), "fire": fire}


def team_action(n: int, t: int, rudder: float = 0.0, throttle: float = 1.0,
                fire: bool = False) -> dict[str, torch.Tensor]:
    return {"rudder": torch.full((n, t), rudder), "throttle": torch.full((n, t), throttle),
            "fire": torch.full((n, t), fire)}


def place(env: TensorEnv, aircraft: list[tuple[float, float, float, float]]) -> None:
    """Put every aircraft (p1's seats, then p2's) at (x m, y m, heading rad, speed m/s); no missiles."""
    n, s = env.num_envs, env.state
    values = torch.tensor(aircraft, dtype=torch.float32)  # [A, 4]
    s.x, s.y = values[:, 0].repeat(n, 1), values[:, 1].repeat(n, 1)
    s.heading = torch.remainder(values[:, 2], 2 * math.pi).repeat(n, 1)
    s.speed = values[:, 3].repeat(n, 1)
    s.alive = torch.ones(n, len(aircraft), dtype=torch.bool)
    s.m_active = torch.zeros_like(s.m_active)
    s.m_locked = torch.zeros_like(s.m_locked)


def test_shapes_of_a_team_battle() -> None:
    cfg = EnvConfig(team_size=3, obs_mode="extended")
    env = TensorEnv(5, config=cfg, final_global_state=True)
    obs = env.reset()
    assert set(obs["p1"]) == {*env.obs_keys, LAUNCH_KEY, LAUNCH_CLEAR_KEY}  # beside the vector
    assert all(v.shape == (5, 3) for v in obs["p1"].values())
    assert obs_vector(obs["p2"], env.obs_keys).shape == (5, 3, env.obs_size)
    assert env.obs_keys[:15] == tuple(obs_vector.__globals__["EXTENDED_OBS_KEYS"])
    assert len(neighbour_keys(cfg)) == 6 * (2 + 3)  # two allies, three enemies
    _, rewards, dones, infos = env.step(team_action(5, 3), team_action(5, 3))
    assert rewards["p1"].shape == (5, 3) and dones.shape == (5,)
    assert infos["kills"]["p2"].shape == (5, 3) and infos["deaths"]["p1"].dtype == torch.bool
    assert infos["final_global_state"]["p1"].shape == (5, env.global_state_size)
    assert env.state.m_active.shape == (3 * cfg.missiles, 5, 6)


def test_wrong_action_shape_names_the_team_shape() -> None:
    env = TensorEnv(4, config=EnvConfig(team_size=2))
    env.reset()
    bad = {"rudder": torch.zeros(4), "throttle": torch.zeros(4), "fire": torch.zeros(4, dtype=torch.bool)}
    with pytest.raises(ValueError, match=r"action_p1\['rudder'\]: expected shape \[4, 2\], got \[4\]"):
        env.step(bad, team_action(4, 2))


def rollout(env: TensorEnv, steps: int, gen_seed: int | None = None) -> list[torch.Tensor]:
    obs = env.reset()
    gen = None if gen_seed is None else torch.Generator().manual_seed(gen_seed)
    trace = []
    for _ in range(steps):
        obs, rewards, dones, infos = env.step(pursue(obs["p1"], gen), pursue(obs["p2"], gen))
        trace += [obs_vector(obs["p1"], env.obs_keys), rewards["p2"], infos["winner"].float(), infos["kills"]["p1"]]
    return trace


def test_same_seed_same_team_battles() -> None:
    cfg = EnvConfig(team_size=3, obs_mode="extended")
    a = rollout(TensorEnv(16, seed=4, config=cfg), 150, gen_seed=1)
    b = rollout(TensorEnv(16, seed=4, config=cfg), 150, gen_seed=1)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    c = rollout(TensorEnv(16, seed=5, config=cfg), 150, gen_seed=1)
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


UNIT_KEYS = ("x", "y", "angle", "missiles", "alive", "enemy_distance", "enemy_alive", "threat_distance")
SIGNED_KEYS = ("enemy_relative_angle", "enemy_aspect", "threat_relative_angle")


def observation_bounds(keys: tuple[str, ...]) -> tuple[torch.Tensor, torch.Tensor]:
    """Each observation's lowest and highest value, in ``obs_vector``'s order (unbounded: only finite), so
    a step's observations are checked in one comparison."""
    assert set(UNIT_KEYS + SIGNED_KEYS) <= set(keys)
    low, high = [], []
    for i, key in enumerate(keys):
        if key in UNIT_KEYS:
            bounds = (0.0, 1.0)
        elif key in SIGNED_KEYS:
            bounds = (-1.0, 1.0)
        elif i >= 15:  # the neighbours' features
            bounds = (-1.0, 1.0) if key.endswith(("bearing", "aspect")) else (0.0, 2.5)
        else:
            bounds = (-math.inf, math.inf)
        low.append(bounds[0])
        high.append(bounds[1])
    return torch.tensor(low), torch.tensor(high)


@pytest.mark.parametrize("team_size", range(1, 9))
def test_observations_stay_in_range_at_every_team_size(team_size: int) -> None:
    # Battles of 100 s, stepped 130 times: the spawn, the fights, the time limit and battles started again.
    cfg = EnvConfig(team_size=team_size, obs_mode="extended", max_time=100.0)
    env = TensorEnv(24, seed=team_size, config=cfg)
    low, high = observation_bounds(env.obs_keys)
    obs = env.reset()
    gen = torch.Generator().manual_seed(team_size)
    ended = 0
    for _ in range(130):
        obs, _, dones, infos = env.step(pursue(obs["p1"], gen), pursue(obs["p2"], gen))
        ended += int(dones.sum())
        for side in ("p1", "p2"):
            v = obs_vector(obs[side], env.obs_keys)  # [envs, seats, keys]
            inside = torch.isfinite(v) & (v >= low) & (v <= high)
            if not bool(inside.all()):
                bad = sorted({env.obs_keys[k] for k in (~inside).nonzero()[:, -1].tolist()})
                pytest.fail(f"{side}: out of range or not finite: {bad}")
            gs = env.global_state(side)
            assert gs.shape == (24, env.global_state_size) and bool(torch.isfinite(gs).all())
    assert ended > 0


def permute_seats(env: TensorEnv, perm: list[int]) -> None:
    """Reorder the aircraft of a freshly reset env (no missiles in flight) by ``perm``."""
    s = env.state
    for name in s.AIRCRAFT_FIELDS:
        setattr(s, name, getattr(s, name)[:, perm])


def test_swapping_two_teammates_permutes_everything() -> None:
    cfg = EnvConfig(team_size=3, obs_mode="extended", max_time=200.0)
    a, b = TensorEnv(32, seed=9, config=cfg), TensorEnv(32, seed=9, config=cfg)
    obs_a, obs_b = a.reset(), b.reset()
    perm = [1, 0, 2, 3, 4, 5]  # p1's first two seats change places
    permute_seats(b, perm)
    obs_b = b.observe()
    seats = [1, 0, 2]
    launches = wins = 0
    same = torch.ones(32, dtype=torch.bool)  # battles still in their first episode (new ones spawn unpermuted)
    for _ in range(150):
        obs_a, ra, da, ia = a.step(pursue(obs_a["p1"]), pursue(obs_a["p2"]))
        obs_b, rb, db, ib = b.step(pursue(obs_b["p1"]), pursue(obs_b["p2"]))
        assert torch.equal(da[same], db[same]) and torch.equal(ia["winner"][same], ib["winner"][same])
        assert torch.allclose(ra["p1"][same][:, seats], rb["p1"][same])
        assert torch.allclose(ra["p2"][same], rb["p2"][same])
        for key in obs_a["p1"]:
            fa, fb = ia["final_obs"], ib["final_obs"]
            assert torch.allclose(fa["p1"][key][same][:, seats], fb["p1"][key][same], atol=1e-5), key
            assert torch.allclose(fa["p2"][key][same], fb["p2"][key][same], atol=1e-5), key
        assert torch.equal(ia["kills"]["p1"][same][:, seats], ib["kills"]["p1"][same])
        launches += int(ia["episode"]["missiles_fired"]["p1"][same & da].sum())
        wins += int((ia["winner"][same] > 0).sum())
        same &= ~da
    assert launches > 0 and wins > 0


def test_mirroring_the_world_swaps_the_sides() -> None:
    """Battles spawned at half their distances and stepped to their 50 s limit: each is compared through
    its fights, its kills and its outcome (a wiped-out side, or more aircraft alive at the limit), won by
    either side."""
    cfg = EnvConfig(team_size=2, obs_mode="extended", max_time=50.0)
    a, b = TensorEnv(32, seed=3, config=cfg), TensorEnv(32, seed=3, config=cfg)
    a.reset()
    b.reset()
    size = cfg.arena_size
    s, m = a.state, b.state  # b is a turned 180° with p1 and p2 exchanged
    s.x, s.y = size / 2 + (s.x - size / 2) / 2, size / 2 + (s.y - size / 2) / 2  # closer: fights within 50 s
    roll = lambda v: v.roll(2, -1)  # noqa: E731
    m.x, m.y = roll(size - s.x), roll(size - s.y)
    m.heading = roll(torch.remainder(s.heading + math.pi, 2 * math.pi))
    m.speed, m.alive, m.missiles_left = roll(s.speed), roll(s.alive), roll(s.missiles_left)
    obs_a, obs_b = a.observe(), b.observe()
    same = torch.ones(32, dtype=torch.bool)  # battles in their first episode: a new spawn is not mirrored
    for key in obs_a["p1"]:
        assert torch.allclose(obs_a["p1"][key], obs_b["p2"][key], atol=2e-4), key
    winners: list[int] = []
    kills = 0.0
    for _ in range(50):
        obs_a, ra, da, ia = a.step(pursue(obs_a["p1"]), pursue(obs_a["p2"]))
        obs_b, rb, db, ib = b.step(pursue(obs_b["p1"]), pursue(obs_b["p2"]))
        fa, fb = ia["final_obs"], ib["final_obs"]
        # Mirrored coordinates round differently, and a missile's bearing at close range magnifies it.
        for key in fa["p1"]:
            assert torch.allclose(fa["p1"][key][same], fb["p2"][key][same], atol=5e-3), key
            assert torch.allclose(fa["p2"][key][same], fb["p1"][key][same], atol=5e-3), key
        assert torch.equal(ra["p1"][same], rb["p2"][same])
        assert torch.equal(ia["kills"]["p1"][same], ib["kills"]["p2"][same])
        assert torch.equal(da[same], db[same])
        flipped = torch.where(ib["winner"] > 0, 3 - ib["winner"], ib["winner"])
        assert torch.equal(ia["winner"][same], flipped[same])
        winners += ia["winner"][same & da].tolist()
        kills += float(ia["kills"]["p1"][same].sum() + ia["kills"]["p2"][same].sum())
        same &= ~da
    assert not bool(same.any()) and len(winners) == 32, "every battle ended within the steps compared"
    assert {0, 1, 2} <= set(winners) and kills > 0, (winners, kills)


def test_a_missile_locks_the_enemy_nearest_the_nose_and_only_hits_it() -> None:
    cfg = EnvConfig(team_size=2)
    env = TensorEnv(1, config=cfg)
    env.reset()
    # p1's lead flies east; p2's seat 0 is 20° off its nose at 12 km, seat 1 dead ahead at 30 km.
    off = math.radians(20.0)
    place(env, [(20_000, 50_000, 0.0, 300.0), (20_000, 80_000, 0.0, 300.0),
                (20_000 + 12_000 * math.cos(off), 50_000 + 12_000 * math.sin(off), math.pi, 250.0),
                (50_000, 50_000, math.pi, 250.0)])
    fire = torch.tensor([[True, False]])
    env.step({"rudder": torch.zeros(1, 2), "throttle": torch.ones(1, 2), "fire": fire}, team_action(1, 2))
    s = env.state
    assert int(s.m_active[:, 0, 3].sum()) == 1 and int(s.m_active[:, 0, 2].sum()) == 0  # chasing seat 1
    assert int(s.m_active[: cfg.missiles, 0, 3].sum()) == 1  # slot block 0: fired by p1's seat 0
    # Put seat 0 right in the missile's path: it flies through it without harm.
    slot = int(s.m_active[:, 0, 3].nonzero()[0, 0])
    s.x[0, 2] = float(s.mx[slot, 0, 3]) + 400.0
    s.y[0, 2] = float(s.my[slot, 0, 3])
    s.heading[0, 2] = math.pi / 2
    _, _, _, infos = env.step(team_action(1, 2, throttle=0.0), team_action(1, 2, throttle=0.0))
    assert bool(s.alive[0, 2]) and int(infos["kills"]["p1"].sum()) == 0
    assert bool(env.state.m_active[slot, 0, 3])


def test_without_an_enemy_in_the_cone_the_missile_flies_unguided_at_the_nearest() -> None:
    env = TensorEnv(1, config=EnvConfig(team_size=2))
    env.reset()
    # Both enemies behind p1's lead: seat 1 is the nearer.
    place(env, [(50_000, 50_000, 0.0, 300.0), (50_000, 80_000, 0.0, 300.0),
                (20_000, 50_000, 0.0, 250.0), (40_000, 52_000, 0.0, 250.0)])
    env.step({"rudder": torch.zeros(1, 2), "throttle": torch.ones(1, 2), "fire": torch.tensor([[True, False]])},
             team_action(1, 2))
    s = env.state
    assert int(s.m_active[:, 0, 3].sum()) == 1 and int(s.m_active[:, 0, 2].sum()) == 0
    assert not bool(s.m_locked.any())


def test_a_wiped_out_side_loses_and_the_killer_is_credited() -> None:
    cfg = EnvConfig(team_size=2)
    env = TensorEnv(2, config=cfg)
    env.reset()
    place(env, [(10_000, 50_000, 0.0, 300.0), (10_000, 60_000, 0.0, 300.0),
                (50_000, 50_000, math.pi, 400.0), (90_000, 90_000, math.pi, 300.0)])
    s = env.state
    s.alive[:, 3] = False  # p2's seat 1 is already down
    # A missile of p1's seat 1 (slot block 1), dead on course for p2's seat 0.
    slot = cfg.missiles  # block 1, first launch
    s.mx[slot, :, 2], s.my[slot, :, 2] = 47_000.0, 50_000.0
    s.m_heading[slot, :, 2], s.m_speed[slot, :, 2], s.m_age[slot, :, 2] = 0.0, 1000.0, 10.0
    s.m_active[slot, :, 2] = s.m_locked[slot, :, 2] = True
    s.missiles_left[:, 1] = cfg.missiles - 1
    for _ in range(3):
        _, rewards, dones, infos = env.step(team_action(2, 2), team_action(2, 2))
        if bool(dones.all()):
            break
    assert bool(dones.all()) and infos["winner"].tolist() == [1, 1]
    assert infos["kills"]["p1"].tolist() == [[0.0, 1.0]] * 2
    assert infos["deaths"]["p2"].tolist() == [[True, False]] * 2  # seat 1 died before this step
    assert infos["episode"]["kills"]["p1"].tolist() == [[0.0, 1.0]] * 2
    assert bool((rewards["p1"] > 0.9).all()) and bool((rewards["p2"] < -0.9).all())


def test_two_missiles_striking_one_target_together_share_the_kill() -> None:
    cfg = EnvConfig(team_size=2)
    env = TensorEnv(1, config=cfg)
    env.reset()
    place(env, [(10_000, 50_000, 0.0, 300.0), (10_000, 60_000, 0.0, 300.0),
                (50_000, 50_000, math.pi, 400.0), (90_000, 90_000, math.pi, 300.0)])
    s = env.state
    for seat in (0, 1):  # one missile of each p1 seat, side by side, dead on course for p2's seat 0
        slot = seat * cfg.missiles
        s.mx[slot, :, 2], s.my[slot, :, 2] = 47_000.0, 50_000.0 + seat
        s.m_heading[slot, :, 2], s.m_speed[slot, :, 2], s.m_age[slot, :, 2] = 0.0, 1000.0, 10.0
        s.m_active[slot, :, 2] = s.m_locked[slot, :, 2] = True
        s.missiles_left[:, seat] = cfg.missiles - 1
    for _ in range(3):
        _, _, _, infos = env.step(team_action(1, 2), team_action(1, 2))
        if bool(infos["deaths"]["p2"].any()):
            break
    assert infos["deaths"]["p2"].tolist() == [[True, False]]
    assert infos["kills"]["p1"].tolist() == [[0.5, 0.5]]  # one enemy down: one kill, shared


def test_at_the_time_limit_the_side_with_more_aircraft_alive_wins() -> None:
    cfg = EnvConfig(team_size=3, max_time=3.0)
    env = TensorEnv(3, config=cfg)
    env.reset()
    place(env, [(10_000, 40_000 + 5_000 * i, math.pi / 2, 200.0) for i in range(3)]
          + [(90_000, 40_000 + 5_000 * i, math.pi / 2, 200.0) for i in range(3)])
    s = env.state
    s.alive[0, 4] = False  # env 0: p1 3 alive against 2
    s.alive[1, 1] = s.alive[1, 2] = False  # env 1: p1 1 alive against 3
    s.alive[2, 0] = s.alive[2, 3] = False  # env 2: 2 against 2
    dones = infos = rewards = None
    for _ in range(3):
        _, rewards, dones, infos = env.step(team_action(3, 3), team_action(3, 3))
    assert bool(dones.all()) and bool(infos["truncated"].all())
    assert infos["winner"].tolist() == [1, 2, 0]
    assert bool((rewards["p1"][0] > 0.9).all()) and bool((rewards["p1"][1] < -0.9).all())
    assert bool((rewards["p1"][2].abs() < 0.01).all())


def test_a_dead_aircraft_neither_moves_nor_fires() -> None:
    env = TensorEnv(1, config=EnvConfig(team_size=2))
    env.reset()
    place(env, [(20_000, 50_000, 0.0, 300.0), (20_000, 60_000, 0.0, 300.0),
                (60_000, 50_000, math.pi, 300.0), (60_000, 60_000, math.pi, 300.0)])
    env.state.alive[0, 1] = False
    before = (float(env.state.x[0, 1]), float(env.state.y[0, 1]))
    env.step(team_action(1, 2, rudder=1.0, fire=True), team_action(1, 2))
    assert (float(env.state.x[0, 1]), float(env.state.y[0, 1])) == before
    assert float(env.state.missiles_left[0, 1]) == env.config.missiles
    assert float(env.state.missiles_left[0, 0]) == env.config.missiles - 1


def test_team_state_round_trip_and_shape_check() -> None:
    cfg = EnvConfig(team_size=2)
    a = TensorEnv(8, seed=2, config=cfg)
    rollout(a, 40, gen_seed=0)
    saved = a.state_dict()
    b = TensorEnv(8, seed=99, config=cfg)
    b.load_state_dict(saved)
    assert torch.equal(a.state.mx, b.state.mx) and torch.equal(a._ep_kills, b._ep_kills)
    with pytest.raises(ValueError, match="team_size 1"):
        TensorEnv(8, config=EnvConfig()).load_state_dict(saved)


def test_team_size_is_bounded() -> None:
    from arena.env.config import EnvConfigError

    with pytest.raises(EnvConfigError, match=r"team_size: expected an integer in \[1, 8\]"):
        EnvConfig.from_dict({"team_size": 9})
    with pytest.raises(EnvConfigError, match="formation_spacing"):
        EnvConfig.from_dict({"team_size": 8, "formation_spacing": 20_000.0})


@pytest.mark.parametrize("team_size", [2, 3])
def test_packed_and_dense_missiles_fly_the_same_team_battles(team_size: int) -> None:
    # The CPU writes launches and integrates missiles sparsely; a GPU uses the dense slots.
    cfg = EnvConfig(team_size=team_size, obs_mode="extended")
    packed = TensorEnv(24, seed=6, config=cfg, packed_missiles=True)
    dense = TensorEnv(24, seed=6, config=cfg, packed_missiles=False)
    obs_p, obs_d = packed.reset(), dense.reset()
    launched = 0
    for _ in range(60):
        obs_p, rp, dp, ip = packed.step(pursue(obs_p["p1"]), pursue(obs_p["p2"]))
        obs_d, rd, dd, idd = dense.step(pursue(obs_d["p1"]), pursue(obs_d["p2"]))
        assert torch.equal(dp, dd) and torch.equal(ip["winner"], idd["winner"])
        assert torch.equal(ip["kills"]["p1"], idd["kills"]["p1"])
        for key in obs_p["p1"]:
            assert torch.allclose(obs_p["p1"][key], obs_d["p1"][key], atol=1e-4), key
        launched += int(packed.state.m_active.sum())
    assert launched > 0
    assert torch.allclose(packed.state.mx * packed.state.m_active, dense.state.mx * dense.state.m_active, atol=0.5)


def test_after_auto_reset_only_restarted_battles_are_observed_again_and_nothing_differs() -> None:
    env = TensorEnv(37, seed=4, config=EnvConfig(team_size=3, max_time=40.0), packed_missiles=True)
    assert env._runner().plan.observe_subsets
    env.reset()
    g = torch.Generator().manual_seed(0)
    restarted = 0
    for _ in range(90):
        act = {"rudder": torch.rand(37, 3, generator=g) * 2 - 1, "throttle": torch.rand(37, 3, generator=g),
               "fire": torch.rand(37, 3, generator=g) < 0.1}
        obs, _, dones, _ = env.step(act, act)
        restarted += int(dones.sum())
        full = env.observe()
        for side in ("p1", "p2"):
            assert obs[side].keys() == full[side].keys()
            assert all(same_observation(obs[side][k], full[side][k]) for k in full[side]), side
    assert restarted > 37  # every battle ended at least once


def same_observation(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Equal, floats to 1e-6: a vectorised kernel (atan2 under AVX2/AVX-512) rounds the last bit of a value
    by where it sits in the batch, and a subset puts it elsewhere; a stale observation is off by far more."""
    if a.dtype.is_floating_point:
        return a.shape == b.shape and torch.allclose(a, b, rtol=0.0, atol=1e-6)
    return torch.equal(a, b)
