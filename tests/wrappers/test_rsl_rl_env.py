"""The rsl_rl VecEnv: its contract step by step beside the battles it wraps, seeds, refusals, the clock
rsl_rl writes, rsl_rl's own OnPolicyRunner training on it, the example, and no host sync on a GPU."""

from __future__ import annotations

import math
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

pytest.importorskip("rsl_rl", reason="the rsl-rl extra (pip install -e '.[rsl-rl]')")

from rsl_rl.env import VecEnv  # noqa: E402
from tensordict import TensorDict  # noqa: E402

from arena.battles import LearnerBattles  # noqa: E402
from arena.env import EnvConfig  # noqa: E402
from arena.wrappers import ArenaRslRlEnv  # noqa: E402
from host_reads import HostReads  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SHORT = EnvConfig(max_time=20.0)  # 20 decision steps: every battle that nobody wins is truncated at step 20
CLOSE = EnvConfig(arena_size=50_000.0, max_time=60.0)  # spawned within missile range: kills and time-outs


def actions(steps: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.rand(steps, n, 3, generator=g) * 2 - 1


def test_each_step_is_the_battles_step_in_rsl_rl_form():
    """obs, rewards, dones, time_outs and the critic group agree with LearnerBattles flown alike, after
    auto-restarts too; episode_length_buf counts the steps into each battle."""
    n = 32
    env = ArenaRslRlEnv(n, "crank", CLOSE, seed=3)
    twin = LearnerBattles(n, "crank", CLOSE, seed=3)
    first = twin.reset()
    assert isinstance(env, VecEnv)
    assert (env.num_envs, env.num_actions, env.max_episode_length, env.device) == (n, 3, 60, torch.device("cpu"))
    assert env.cfg["opponent"] == ["crank"] and env.cfg["env_config"]["max_time"] == 60.0
    obs = env.get_observations()
    assert isinstance(obs, TensorDict) and set(obs.keys()) == {"policy", "critic"}
    assert obs["policy"].shape == (n, env.num_obs) == (n, 10)
    assert obs["critic"].shape == (n, env.num_privileged_obs) == (n, twin.env.global_state_size)
    assert torch.equal(obs["policy"], first)
    length = torch.zeros(n, dtype=torch.long)
    done_rows = time_outs = kills = 0
    for a in actions(150, n, seed=1):
        obs, rewards, dones, extras = env.step(a)
        want_obs, want_reward, want_dones, out = twin.step(a)
        assert obs.batch_size == (n,) and obs.device == env.device
        assert rewards.shape == dones.shape == (n,) and rewards.dtype == torch.float32 and dones.dtype == torch.bool
        assert torch.equal(obs["policy"], want_obs)  # already the next battle's where one ended
        assert torch.equal(obs["critic"], twin.env.global_state("p1"))
        assert torch.equal(rewards, want_reward)
        assert torch.equal(dones, want_dones) and torch.equal(dones, out["terminated"] | out["truncated"])
        assert torch.equal(extras["time_outs"], out["truncated"])
        length = torch.where(dones, 0, length + 1)
        assert torch.equal(env.episode_length_buf, length)
        assert torch.all(obs["critic"][dones, 0] == 0)  # a fresh battle's elapsed time
        done_rows += int(dones.sum())
        time_outs += int(extras["time_outs"].sum())
        kills += int((dones & ~extras["time_outs"]).sum())
    assert time_outs > 0 and kills > 0, "the test should see both ends of a battle"
    assert done_rows == time_outs + kills


def test_the_log_gives_the_shares_of_finished_battles_won_drawn_and_lost():
    env = ArenaRslRlEnv(16, "crank", SHORT)
    idle = torch.zeros(16, 3)  # nobody is within reach in 20 s: every battle is a draw by the time limit
    for _ in range(19):
        log = env.step(idle)[3]["log"]
        assert all(math.isnan(log[f"/arena/{k}"]) for k in ("won", "drawn", "lost")), "no battle finished yet"
        assert log["/arena/finished_per_step"] == 0
    log = env.step(idle)[3]["log"]
    assert {k: float(v) for k, v in log.items()} == {"/arena/won": 0.0, "/arena/drawn": 1.0, "/arena/lost": 0.0,
                                                    "/arena/finished_per_step": 16.0}
    assert all(v.dim() == 0 for v in log.values())
    assert {k: float(v) for k, v in env.outcome_shares().items()} == {"won": 0.0, "drawn": 1.0, "lost": 0.0}


def test_seeds_replay_the_same_battles():
    def run(seed: int, reset_seed: int | None = None) -> list[torch.Tensor]:
        env = ArenaRslRlEnv(8, "placeholder", SHORT, seed=seed)  # a stochastic opponent: its stream is seeded too
        if reset_seed is not None:
            env.step(torch.zeros(8, 3))
            env.reset(seed=reset_seed)
        seen = [env.get_observations()["critic"]]
        for a in actions(30, 8, seed=0):
            obs, rewards, dones, _ = env.step(a)
            seen += [obs["critic"], rewards, dones]
        return seen

    same = run(7)
    assert all(torch.equal(a, b) for a, b in zip(same, run(7)))
    assert all(torch.equal(a, b) for a, b in zip(same, run(2, reset_seed=7)))
    assert not torch.equal(same[0], run(8)[0])


def test_team_battles_bad_actions_and_bad_opponents_are_refused_in_one_line():
    with pytest.raises(ValueError, match=r"^ArenaRslRlEnv flies duels \(rsl_rl trains a single agent\), got "
                                         r"team_size=2; for team battles use the TorchRL or PettingZoo interface"):
        ArenaRslRlEnv(4, "crank", EnvConfig(team_size=2))
    with pytest.raises(ValueError, match=r"unknown agent 'nosuch'"):
        ArenaRslRlEnv(4, "nosuch")
    env = ArenaRslRlEnv(4, "crank")
    with pytest.raises(ValueError, match=r"^ArenaRslRlEnv.step: expected an array of real numbers \(bool, int or "
                                         r"float\) of shape \(4, 3\), got Tensor of dtype torch.float32 and shape "
                                         r"\(4, 2\)$"):
        env.step(torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"got Tensor of dtype torch.float32 and shape \(12,\)$"):
        env.step(torch.zeros(12))  # nothing is reshaped
    with pytest.raises(ValueError, match=r"^ArenaRslRlEnv.step: .* got a tensor on the meta device"):
        env.step(torch.zeros(4, 3, device="meta"))


@pytest.mark.parametrize("kwargs, message", [
    ({"num_envs": -1}, r"^num_envs must be a positive int, got -1$"),
    ({"reward": 42}, r"^reward: expected the name of a reward .*, got int 42$"),
    ({"opponent": b"crank"}, r"^opponent\[0\]: expected an agent spec .*, got bytes b'crank'$"),
    ({"num_envs": np.uint64(2**63 + 5)}, r"^num_envs must be at most 2\*\*30 \(1,073,741,824: the state of more "
                                         r"battles outgrows any device's memory\), got 9,223,372,036,854,775,813$"),
    ({"env_config": {"max_time": 5.0}}, r"^env_config: expected an arena.env.EnvConfig or None, got dict "
                                        r"\{'max_time': 5.0\}; EnvConfig.from_dict\(...\) builds one from a mapping$"),
])
def test_constructor_arguments_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ArenaRslRlEnv(**{"num_envs": 4, **kwargs})


def test_writing_episode_length_buf_sets_each_battles_clock():
    env = ArenaRslRlEnv(4, "crank", SHORT)
    env.step(torch.zeros(4, 3))
    env.episode_length_buf = torch.tensor([0, 5, 18, 19])
    assert env.episode_length_buf.tolist() == [0, 5, 18, 19]
    assert env.get_observations()["critic"][:, 0].tolist() == pytest.approx([0.0, 0.25, 0.9, 0.95])
    time_outs = [env.step(torch.zeros(4, 3))[3]["time_outs"].tolist() for _ in range(2)]
    assert time_outs == [[False, False, False, True], [False, False, True, False]]
    assert env.episode_length_buf.tolist() == [2, 7, 0, 1]
    in_range = r"expected decision steps in \[0, 19\], got values in "
    for bad, message in [(torch.tensor([0, 0, 0, 20]), in_range + r"\[0, 20\]"),
                         (torch.tensor([-1, 0, 0, 0]), in_range + r"\[-1, 0\]"),
                         (torch.zeros(3), r"expected \[4\] decision steps, got Tensor of dtype torch.float32 and "
                                          r"shape \(3,\)"),
                         ([0, float("nan"), 2, 3], r"expected \[4\] decision steps, got NaN in battle 1"),
                         ("abc", r"expected \[4\] decision steps, got str 'abc'"),
                         (None, r"expected \[4\] decision steps, got NoneType None"),
                         (torch.zeros(4, device="meta"), r"expected \[4\] decision steps, got a tensor on the meta "
                                                         r"device \(it holds no values\)"),
                         (np.full(4, 2**63 + 5, dtype=np.uint64), in_range + r"\[9.22337e\+18, 9.22337e\+18\]")]:
        with pytest.raises(ValueError, match=rf"^ArenaRslRlEnv.episode_length_buf: {message}$"):
            env.episode_length_buf = bad
    assert env.episode_length_buf.tolist() == [2, 7, 0, 1]  # a refused value changes nothing


def test_privileged_false_leaves_the_critic_group_out():
    env = ArenaRslRlEnv(4, "crank", privileged=False)
    assert set(env.get_observations().keys()) == {"policy"}
    assert set(env.step(torch.zeros(4, 3))[0].keys()) == {"policy"}


def run_example(name: str, *args: str):
    saved = sys.argv
    sys.argv = [name, *args]
    try:
        return runpy.run_path(str(EXAMPLES / name), run_name="__example__")
    finally:
        sys.argv = saved


def test_rsl_rl_on_policy_runner_trains_on_it():
    """rsl_rl's own runner, with the example's config: the actor reads the observation, the critic the
    global state; a few updates move both networks and leave them finite; random initial episode
    lengths (init_at_random_ep_len) reach the battles' clocks."""
    from rsl_rl.runners import OnPolicyRunner

    torch.manual_seed(0)
    env = ArenaRslRlEnv(256, "crank", seed=0)
    cfg = run_example("rsl_rl_ppo_vs_crank.py")["train_cfg"](256, 16)
    runner = OnPolicyRunner(env, cfg, log_dir=None, device="cpu")
    assert runner.alg.actor.obs_groups == ["policy"] and runner.alg.actor.obs_dim == env.num_obs
    assert runner.alg.critic.obs_groups == ["critic"] and runner.alg.critic.obs_dim == env.num_privileged_obs
    before = {name: p.detach().clone() for name, p in runner.alg.actor.named_parameters()}
    critic_before = [p.detach().clone() for p in runner.alg.critic.parameters()]
    runner.learn(3, init_at_random_ep_len=True)
    after = dict(runner.alg.actor.named_parameters())
    assert all(torch.isfinite(p).all() for p in after.values())
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert any(not torch.equal(a, b) for a, b in zip(critic_before, runner.alg.critic.parameters()))
    assert runner.alg.actor.obs_normalizer.count > 0  # the normaliser saw the rollouts
    # 48 steps from clocks spread over [0, 300): some battles timed out long before 300 steps.
    assert env.episode_length_buf.unique().numel() > 40


def test_the_example_trains_and_scores_its_policy():
    module = run_example("rsl_rl_ppo_vs_crank.py", "--iterations", "1", "--envs", "64", "--steps-per-env", "8",
                         "--games", "2")
    result = module["main"](["--iterations", "1", "--envs", "64", "--steps-per-env", "8", "--games", "2"])
    assert result["iterations"] == 1 and result["steps"] == 512
    assert result["wins"] + result["draws"] + result["losses"] == result["games"] == 2


def drive(device: str, check_sync: bool) -> list[str]:
    """A few steps with auto-restarts (a subset of the battles each time) and the log read on the device;
    on a GPU under ``set_sync_debug_mode("error")``: any copy to the host fails. Returns the host reads
    seen on the way (:class:`HostReads`), which on the CPU stand for the GPU's syncs."""
    n = 128
    env = ArenaRslRlEnv(n, "crank", EnvConfig(max_time=8.0), device=device, seed=1)
    # On the CPU the core env lists the missiles in flight (a nonzero, free there); on a GPU it keeps the
    # dense layout, as here, so that the CPU run watches the GPU's path.
    env.battles.env.packed_missiles = False
    steps = actions(30, n, seed=2).to(device)
    env.step(steps[0])  # the first step may allocate and load kernels
    ended = torch.zeros((), device=device)
    draws = torch.zeros((), device=device)
    if check_sync:
        torch.cuda.set_sync_debug_mode("error")
    try:
        with HostReads() as reads:
            for a in steps[1:]:
                obs, rewards, dones, extras = env.step(a)
                ended += dones.sum()
                draws += extras["log"]["/arena/drawn"].nan_to_num()
    finally:
        if check_sync:
            torch.cuda.set_sync_debug_mode("default")
    assert obs.device == torch.device(device) and rewards.device == dones.device == env.episode_length_buf.device
    assert int(ended) > n and float(draws) > 0, "the test should cover restarts"
    return reads.seen


def test_a_step_reads_nothing_back_on_the_cpu_path():
    assert drive("cpu", check_sync=False) == []


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_step_never_waits_for_the_host_on_a_gpu():
    drive("cuda", check_sync=True)
