"""TensorEnv API: auto-reset, truncation, determinism, symmetry, observation ranges, bad actions."""

from __future__ import annotations

import math

import pytest
import torch

from arena.env import EXTENDED_OBS_KEYS, OBS_KEYS, EnvConfig, TensorEnv, obs_vector
from arena.env.observations import LAUNCH_CLEAR_KEY, LAUNCH_KEY
from arena.env.state import WorldState

pytestmark = pytest.mark.usefixtures("both_step_paths")  # eager packed and static step


def random_actions(n: int, gen: torch.Generator, fire_p: float = 0.03) -> dict[str, torch.Tensor]:
    return {
        "rudder": torch.rand(n, generator=gen) * 2 - 1,
        "throttle": torch.rand(n, generator=gen),
        "fire": torch.rand(n, generator=gen) < fire_p,
    }


def played(n: int, seed: int, steps: int, gen: torch.Generator, fire_p: float,
           config: EnvConfig | None = None) -> TensorEnv:
    """An env ``steps`` random steps into its battles (both sides drawing from ``gen``)."""
    env = TensorEnv(n, seed=seed, config=config)
    env.reset()
    for _ in range(steps):
        env.step(random_actions(n, gen, fire_p), random_actions(n, gen, fire_p))
    return env


def rollout(seed: int, steps: int, n: int = 32) -> list[torch.Tensor]:
    env = TensorEnv(n, seed=seed)
    obs = env.reset()
    gen = torch.Generator().manual_seed(123)
    trace = [obs_vector(obs["p1"])]
    for _ in range(steps):
        obs, rewards, dones, infos = env.step(random_actions(n, gen), random_actions(n, gen))
        trace += [obs_vector(obs["p1"]), obs_vector(obs["p2"]), rewards["p1"], infos["winner"].float()]
    return trace


def test_same_seed_same_trajectories() -> None:
    a, b = rollout(7, 120), rollout(7, 120)
    assert all(torch.equal(x, y) for x, y in zip(a, b))
    c = rollout(8, 120)
    assert not all(torch.equal(x, y) for x, y in zip(a, c))


def test_reset_with_seed_restarts_the_stream() -> None:
    env = TensorEnv(16, seed=0)
    first = obs_vector(env.reset()["p1"])
    obs_vector(env.reset()["p1"])
    again = obs_vector(env.reset(seed=0)["p1"])
    assert torch.equal(first, again)


def test_spawn_follows_the_design() -> None:
    cfg = EnvConfig()
    env = TensorEnv(4096, seed=3)
    env.reset()
    s = env.state
    assert bool(((s.x[:, 0] >= 10_000) & (s.x[:, 0] <= 20_000)).all())
    assert bool(((s.x[:, 1] >= 80_000) & (s.x[:, 1] <= 90_000)).all())
    assert bool(((s.y >= 30_000 - 1) & (s.y <= 70_000 + 1)).all())
    sep = torch.hypot(s.x[:, 1] - s.x[:, 0], s.y[:, 1] - s.y[:, 0])
    assert bool(((sep >= 60_000 - 1) & (sep <= 80_000 + 1)).all())
    assert bool(((s.speed >= cfg.spawn_speed_min) & (s.speed <= cfg.spawn_speed_max)).all())
    off_nose = env.observe()["p1"]["enemy_relative_angle"].abs() * math.pi
    assert bool((off_nose <= cfg.spawn_heading_jitter + 1e-4).all())


def test_truncation_and_auto_reset() -> None:
    cfg = EnvConfig(max_time=10.0)
    n = 4
    env = TensorEnv(n, seed=0, config=cfg)
    env.reset()
    idle = {"rudder": torch.zeros(n), "throttle": torch.full((n,), 0.5), "fire": torch.zeros(n, dtype=torch.bool)}
    for t in range(1, 11):
        obs, rewards, dones, infos = env.step(idle, idle)
        if t < 10:
            assert not bool(dones.any())
            assert bool((infos["winner"] == -1).all())
    assert bool(dones.all()) and bool(infos["truncated"].all()) and not bool(infos["terminated"].any())
    assert bool((infos["winner"] == 0).all())
    assert infos["episode"]["length"].tolist() == [10.0] * n
    assert torch.allclose(infos["episode"]["return"]["p1"], torch.full((n,), 10 * cfg.reward.survival))
    # Auto-reset: the returned obs starts a new episode; final_obs is the last one of the old one.
    assert bool((env.state.time == 0).all())
    assert not torch.equal(obs_vector(obs["p1"]), obs_vector(infos["final_obs"]["p1"]))
    fresh_x = obs["p1"]["x"] * cfg.arena_size
    assert bool(((fresh_x >= 10_000 - 1) & (fresh_x <= 20_000 + 1)).all())
    _, _, dones, infos = env.step(idle, idle)
    assert not bool(dones.any()) and bool((infos["episode"]["return"]["p1"] - cfg.reward.survival).abs().max() < 1e-6)


def test_only_finished_envs_reset(place, action) -> None:
    env = TensorEnv(2, seed=0)
    env.reset()
    place(env, (30_000, 50_000, 0.0, 300.0), (70_000, 50_000, math.pi, 300.0))
    env.state.x[1, 0] = 50.0  # env 1: p1 about to leave the arena
    env.state.heading[1, 0] = math.pi
    before = env.state.x[0].clone()
    _, _, dones, infos = env.step(action(2), action(2))
    assert dones.tolist() == [False, True]
    assert infos["winner"].tolist() == [-1, 2]
    assert torch.allclose(env.state.x[0], before + torch.tensor([300.0, -300.0]), atol=2.0)
    assert float(env.state.time[0]) == 1.0 and float(env.state.time[1]) == 0.0


def rotate_and_swap(state: WorldState, size: float) -> WorldState:
    """The same world seen with the roles of p1 and p2 exchanged (180° turn about the centre)."""
    s = state.clone()
    swap = lambda t: t.flip(-1)  # noqa: E731 - player (or target) index is the last dim everywhere
    s.x, s.y = swap(size - state.x), swap(size - state.y)
    s.heading = swap(torch.remainder(state.heading + math.pi, 2 * math.pi))
    s.speed, s.alive, s.missiles_left = swap(state.speed), swap(state.alive), swap(state.missiles_left)
    s.mx, s.my = swap(size - state.mx), swap(size - state.my)
    s.m_heading = swap(torch.remainder(state.m_heading + math.pi, 2 * math.pi))
    s.m_speed, s.m_age = swap(state.m_speed), swap(state.m_age)
    s.m_active, s.m_locked = swap(state.m_active), swap(state.m_locked)
    return s


def angle_close(a: torch.Tensor, b: torch.Tensor, atol: float) -> bool:
    """Compare obs dicts' angle entries modulo one turn (angle/2π wraps at 1)."""
    d = torch.remainder(a - b + 0.5, 1.0) - 0.5
    return bool((d.abs() <= atol).all())


def test_mirroring_the_world_swaps_what_p1_and_p2_see() -> None:
    cfg = EnvConfig(obs_mode="extended")
    n = 64
    gen = torch.Generator().manual_seed(1)
    env = played(n, seed=5, steps=25, gen=gen, fire_p=0.2, config=cfg)  # a world with missiles in flight
    mirror = TensorEnv(n, seed=5, config=cfg)
    mirror.reset()
    mirror.state = rotate_and_swap(env.state, cfg.arena_size)
    ours, theirs = env.observe(), mirror.observe()
    for a, b in (("p1", "p2"), ("p2", "p1")):
        for key in EXTENDED_OBS_KEYS:
            if key == "angle":
                assert angle_close(ours[a][key], theirs[b][key], 1e-5)
            else:
                assert torch.allclose(ours[a][key], theirs[b][key], atol=1e-4), key
    assert torch.allclose(env.global_state("p1"), mirror.global_state("p2"), atol=1e-4)

    # The dynamics are symmetric too: swapped actions keep the two worlds mirror images.
    for _ in range(20):
        a1, a2 = random_actions(n, gen, 0.1), random_actions(n, gen, 0.1)
        o, r, d, _ = env.step(a1, a2)
        mo, mr, md, _ = mirror.step(a2, a1)
        running = ~d
        assert torch.equal(d, md)
        assert torch.allclose(r["p1"][running], mr["p2"][running], atol=1e-6)
        assert torch.allclose(o["p1"]["enemy_distance"][running], mo["p2"]["enemy_distance"][running], atol=1e-3)


def test_observation_ranges_over_long_random_play() -> None:
    n = 256
    env = TensorEnv(n, seed=11, config=EnvConfig(obs_mode="extended"))
    obs = env.reset()
    gen = torch.Generator().manual_seed(2)
    bounds = {
        "x": (0, 1), "y": (0, 1), "angle": (0, 1), "speed": (0, 2), "missiles": (0, 1), "alive": (0, 1),
        "enemy_distance": (0, 1), "enemy_relative_angle": (-1, 1), "enemy_speed": (0, 2), "enemy_alive": (0, 1),
        "enemy_aspect": (-1, 1), "enemy_missiles": (0, 1), "threat_distance": (0, 1),
        "threat_relative_angle": (-1, 1), "threat_present": (0, 1),
    }
    finished = 0
    for _ in range(400):
        obs, _, dones, infos = env.step(random_actions(n, gen, 0.05), random_actions(n, gen, 0.05))
        finished += int(dones.sum())
        for view in (obs, infos["final_obs"]):
            for side in ("p1", "p2"):
                for key, (lo, hi) in bounds.items():
                    v = view[side][key]
                    assert bool(torch.isfinite(v).all()), key
                    assert float(v.min()) >= lo - 1e-6 and float(v.max()) <= hi + 1e-6, key
    assert finished > n  # many episodes ended and restarted along the way


def test_observation_layout() -> None:
    env = TensorEnv(3)
    obs = env.reset()
    assert tuple(obs["p1"]) == (*OBS_KEYS, LAUNCH_KEY, LAUNCH_CLEAR_KEY) and len(OBS_KEYS) == 10  # not in the vector
    assert obs_vector(obs["p2"]).shape == (3, 10)
    ext = TensorEnv(3, config=EnvConfig(obs_mode="extended")).reset()
    assert obs_vector(ext["p1"]).shape == (3, 15)
    assert env.global_state("p1").shape == (3, env.global_state_size)
    with pytest.raises(ValueError, match="p1"):
        env.global_state("p3")


def test_episode_statistics(place, action) -> None:
    env = TensorEnv(1)
    env.reset()
    place(env, (30_000, 50_000, 0.0, 300.0), (70_000, 50_000, math.pi, 300.0))
    env.step(action(1, fire=True), action(1))
    env.state.x[0, 1] = 99_999.0  # p2 is about to leave the arena
    env.state.heading[0, 1] = 0.0
    _, _, dones, infos = env.step(action(1), action(1))
    ep = infos["episode"]
    assert bool(dones[0]) and int(infos["winner"][0]) == 1
    assert float(ep["length"][0]) == 2.0
    assert float(ep["missiles_fired"]["p1"][0]) == 1.0 and float(ep["missiles_fired"]["p2"][0]) == 0.0
    rc = EnvConfig().reward
    assert math.isclose(float(ep["return"]["p1"][0]), 2 * rc.survival - rc.missile_cost + rc.win, rel_tol=1e-5)


# -- bad actions ------------------------------------------------------------------------------------

def good(n: int) -> dict[str, torch.Tensor]:
    return {"rudder": torch.zeros(n), "throttle": torch.ones(n), "fire": torch.zeros(n, dtype=torch.bool)}


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: a.pop("fire"), r"action_p1: missing key\(s\) \['fire'\]"),
        (lambda a: a.update(boost=torch.zeros(4)), r"unexpected key\(s\) \['boost'\]"),
        (lambda a: a.update(rudder=torch.zeros(4, 1)), r"action_p1\['rudder'\]: expected shape \[4\], got \[4, 1\]"),
        (lambda a: a.update(throttle=torch.ones(3)), r"action_p1\['throttle'\]: expected shape \[4\]"),
        (lambda a: a.update(rudder=torch.zeros(4, dtype=torch.int64)),
         r"action_p1\['rudder'\]: expected dtype floating point"),
        (lambda a: a.update(fire=torch.zeros(4, dtype=torch.int32)),
         r"action_p1\['fire'\]: expected dtype bool or floating"),
        (lambda a: a.update(rudder=[0.0] * 4), r"action_p1\['rudder'\]: expected a torch.Tensor"),
        (lambda a: a.update(rudder=torch.zeros(4, device="meta")), r"action_p1\['rudder'\]: expected device cpu"),
    ],
)
def test_malformed_actions_raise_naming_the_key(mutate, message) -> None:
    env = TensorEnv(4)
    env.reset()
    bad = good(4)
    mutate(bad)
    with pytest.raises(ValueError, match=message):
        env.step(bad, good(4))


def test_not_a_dict_raises() -> None:
    env = TensorEnv(2)
    env.reset()
    with pytest.raises(ValueError, match="action_p2: expected a dict"):
        env.step(good(2), torch.zeros(2))


def test_out_of_range_values_are_clamped() -> None:
    a, b = TensorEnv(2, seed=4), TensorEnv(2, seed=4)
    a.reset()
    b.reset()
    hold = torch.zeros(2, dtype=torch.bool)
    wild = {"rudder": torch.tensor([5.0, -7.0]), "throttle": torch.tensor([3.0, -1.0]), "fire": hold}
    tame = {"rudder": torch.tensor([1.0, -1.0]), "throttle": torch.tensor([1.0, 0.0]), "fire": hold}
    oa, *_ = a.step(wild, good(2))
    ob, *_ = b.step(tame, good(2))
    assert torch.equal(obs_vector(oa["p1"]), obs_vector(ob["p1"]))


def test_nan_is_neutral_and_counted() -> None:
    a, b = TensorEnv(3, seed=4), TensorEnv(3, seed=4)
    a.reset()
    b.reset()
    nan = torch.tensor([float("nan"), 0.3, float("nan")])
    bad = {"rudder": nan, "throttle": torch.tensor([float("nan"), 1.0, 1.0]),
           "fire": torch.tensor([float("nan"), 1.0, 0.0])}
    neutral = {"rudder": torch.tensor([0.0, 0.3, 0.0]), "throttle": torch.tensor([0.0, 1.0, 1.0]),
               "fire": torch.tensor([False, True, False])}
    oa, ra, _, ia = a.step(bad, good(3))
    ob, rb, _, ib = b.step(neutral, good(3))
    assert ia["nan_actions"]["p1"].tolist() == [3, 0, 1]
    assert ia["nan_actions"]["p2"].tolist() == [0, 0, 0]
    assert torch.equal(obs_vector(oa["p1"]), obs_vector(ob["p1"]))
    assert torch.equal(ra["p1"], rb["p1"])


def test_step_before_reset_and_bad_construction() -> None:
    with pytest.raises(RuntimeError, match="reset"):
        TensorEnv(2).step(good(2), good(2))
    with pytest.raises(ValueError, match="num_envs"):
        TensorEnv(0)
    with pytest.raises(ValueError, match="device"):
        TensorEnv(2, device="tpu")


def test_a_config_or_mask_of_the_wrong_kind_is_refused_naming_the_argument() -> None:
    """Not an AttributeError from deep inside, nor torch's "Cannot copy out of meta tensor"."""
    with pytest.raises(ValueError, match=r"^config: expected an arena.env.EnvConfig or None, got dict \{'max_time': "
                                         r"60\}; EnvConfig.from_dict\(...\) builds one from a mapping$"):
        TensorEnv(2, config={"max_time": 60})  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"^num_envs must be at most 2\*\*30 \(1,073,741,824: the state of more "
                                         r"battles outgrows any device's memory\), got 9,223,372,036,854,775,813$"):
        TensorEnv(2**63 + 5)
    env = TensorEnv(2)
    env.reset()
    wanted = r"^restart_mask: expected a bool tensor of shape \[2\], got "
    with pytest.raises(ValueError, match=wanted + r"a tensor on the meta device \(it holds no values\)$"):
        env.restart_mask(torch.ones(2, dtype=torch.bool, device="meta"))
    with pytest.raises(ValueError, match=wanted + r"list \[True, False\]$"):
        env.restart_mask([True, False])  # type: ignore[arg-type]


def test_config_from_dict_validates() -> None:
    cfg = EnvConfig.from_dict({"max_time": 60, "reward": {"win": 2.0}, "obs_mode": "extended"})
    assert cfg.max_steps == 60 and cfg.reward.win == 2.0 and cfg.obs_mode == "extended"
    with pytest.raises(ValueError, match="EnvConfig: unknown setting 'max_tim'"):
        EnvConfig.from_dict({"max_tim": 60})
    with pytest.raises(ValueError, match="EnvConfig.substeps: expected an integer"):
        EnvConfig.from_dict({"substeps": "four"})
    with pytest.raises(ValueError, match="EnvConfig: unknown setting 'reward.bonus'"):
        EnvConfig.from_dict({"reward": {"bonus": 1.0}})
    with pytest.raises(ValueError, match="EnvConfig.reward.win: expected a finite number"):
        EnvConfig.from_dict({"reward": {"win": "big"}})
    with pytest.raises(ValueError, match="EnvConfig.reward: expected a mapping"):
        EnvConfig.from_dict({"reward": 3})
    with pytest.raises(ValueError, match="EnvConfig.max_time: expected a number in"):
        EnvConfig.from_dict({"max_time": float("inf")})
    with pytest.raises(ValueError, match="obs_mode"):
        EnvConfig(obs_mode="full")  # type: ignore[arg-type]


def test_state_dict_round_trip_continues_bit_for_bit() -> None:
    n = 16
    gen = torch.Generator().manual_seed(4)
    env = played(n, seed=9, steps=40, gen=gen, fire_p=0.1)
    saved = env.state_dict()
    copy = TensorEnv(n, seed=123)
    copy.load_state_dict(saved)
    for _ in range(200):  # long enough for episodes to end and auto-reset from the generator
        a1, a2 = random_actions(n, gen, 0.1), random_actions(n, gen, 0.1)
        o, r, d, i = env.step(a1, a2)
        co, cr, cd, ci = copy.step(a1, a2)
        assert torch.equal(obs_vector(o["p1"]), obs_vector(co["p1"]))
        assert torch.equal(r["p2"], cr["p2"]) and torch.equal(d, cd)
        assert torch.equal(i["episode"]["return"]["p1"], ci["episode"]["return"]["p1"])
    with pytest.raises(ValueError, match="16 envs"):
        TensorEnv(8).load_state_dict(saved)


def test_restart_envs_starts_only_those_battles_over() -> None:
    """A trainer that gives some envs a new opponent abandons their battles: those envs start from a
    fresh spawn with zeroed episode statistics, the others fly on untouched."""
    n = 8
    gen = torch.Generator().manual_seed(5)
    env = played(n, seed=3, steps=20, gen=gen, fire_p=0.2)
    before = {k: v.clone() for k, v in env.state_dict()["world"].items()}
    obs = env.restart_envs(torch.tensor([1, 4]))
    world = env.state_dict()["world"]
    moved = torch.zeros(n, dtype=torch.bool)
    moved[[1, 4]] = True
    assert world["time"][moved].eq(0).all() and world["time"][~moved].gt(0).all()
    for key, value in world.items():  # per-env fields lead with N; missile fields are [M, N, ...]
        dim = 0 if value.shape[0] == n else 1
        kept = (~moved).nonzero().flatten()
        assert torch.equal(value.index_select(dim, kept), before[key].index_select(dim, kept)), key
    assert torch.equal(obs_vector(obs["p1"]), obs_vector(env.observe()["p1"]))
    _, _, _, infos = env.step(random_actions(n, gen, 0.0), random_actions(n, gen, 0.0))
    assert infos["episode"]["length"][moved].eq(1).all() and infos["episode"]["length"][~moved].gt(20).all()
    with pytest.raises(RuntimeError, match="game_seeds"):
        env.restart_envs(torch.tensor([0]), torch.tensor([7]))


def test_packed_and_dense_missile_layouts_fly_the_same_battles() -> None:
    """The CPU integrates only missiles in flight; the dense slot layout (used on GPUs) must agree."""
    n = 256
    packed, dense = TensorEnv(n, seed=3, packed_missiles=True), TensorEnv(n, seed=3, packed_missiles=False)
    packed.reset()
    dense.reset()
    gen = torch.Generator().manual_seed(0)
    kills = 0
    for _ in range(300):
        a1, a2 = random_actions(n, gen, 0.1), random_actions(n, gen, 0.1)
        a1["rudder"] *= 0.1  # roughly hold the spawn heading, at the enemy: missiles find their targets
        a2["rudder"] *= 0.1
        op, rp, dp, ip = packed.step(a1, a2)
        od, rd, dd, id_ = dense.step(a1, a2)
        assert torch.equal(dp, dd) and torch.equal(ip["winner"], id_["winner"])
        assert torch.allclose(obs_vector(op["p1"]), obs_vector(od["p1"]), atol=1e-4)
        assert torch.allclose(rp["p2"], rd["p2"], atol=1e-6)
        kills += int((ip["winner"] > 0).sum())
    assert kills > 50  # many games decided by hits, so the hit path of both layouts is compared


def test_final_global_state_is_the_state_before_auto_reset() -> None:
    cfg = EnvConfig(max_time=3.0)
    env = TensorEnv(4, seed=2, config=cfg, final_global_state=True)
    env.reset()
    idle = good(4)
    for _ in range(2):
        _, _, dones, infos = env.step(idle, idle)
        assert torch.allclose(infos["final_global_state"]["p2"], env.global_state("p2"))
    before = env.global_state("p1")
    _, _, dones, infos = env.step(idle, idle)  # time limit: every env resets
    assert bool(dones.all())
    last = infos["final_global_state"]["p1"]
    assert torch.allclose(last[:, 0], torch.ones(4))  # elapsed fraction of the time limit: all of it
    assert not torch.allclose(last, env.global_state("p1"))
    assert torch.allclose(last[:, 1:3], before[:, 1:3], atol=0.01)  # 1 s of flight from the step before
    plain = TensorEnv(2)
    plain.reset()
    assert "final_global_state" not in plain.step(good(2), good(2))[3]


def test_one_side_s_final_global_state_is_the_same_as_both_sides_give() -> None:
    both, one = (TensorEnv(8, seed=3, final_global_state=which) for which in (True, "p1"))
    both.reset(), one.reset()
    for _ in range(5):
        infos_both, infos_one = both.step(good(8), good(8))[3], one.step(good(8), good(8))[3]
        assert list(infos_one["final_global_state"]) == ["p1"]
        assert torch.equal(infos_one["final_global_state"]["p1"], infos_both["final_global_state"]["p1"])
    with pytest.raises(ValueError, match="final_global_state: expected True, False or one of p1, p2, got 'p3'"):
        TensorEnv(2, final_global_state="p3")


@pytest.mark.parametrize("seed, error, message", [
    (-1, ValueError, r"^seed: expected an integer in \[0, 2\*\*63 - 1\], got -1$"),
    (2**63, ValueError, r"^seed: expected an integer in \[0, 2\*\*63 - 1\], got 9223372036854775808$"),
    (2**70, ValueError, r"got 1180591620717411303424$"),
    (1.5, TypeError, r"^seed: expected an integer in \[0, 2\*\*63 - 1\], got float 1.5$"),
    (True, TypeError, r"got bool True$"),
])
def test_a_seed_outside_the_one_range_is_refused_by_name(seed, error, message) -> None:
    with pytest.raises(error, match=message):
        TensorEnv(4, seed=seed)
    env = TensorEnv(4, seed=2**63 - 1)  # the edge itself is a seed
    env.reset(seed=0)
    with pytest.raises(error, match=message):
        env.reset(seed=seed)
    assert env.seed == 0  # a refused seed changed nothing
