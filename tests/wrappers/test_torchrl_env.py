"""ArenaTorchRLEnv: TorchRL's specs and conventions, restarts without a host sync, seeding, the PPO example."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("torchrl", reason="the torchrl extra (pip install -e '.[torchrl]')")
from tensordict import TensorDict  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from arena.env import EnvConfig  # noqa: E402
from arena.wrappers.torchrl_env import ArenaTorchRLEnv  # noqa: E402
from host_reads import HostReads  # noqa: E402

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("kwargs, keys", [
    ({}, ["observation", "action", ("next", "reward")]),
    ({"global_state": True}, ["observation", "state", "action"]),
    ({"opponent": ["crank", "placeholder"]}, ["observation", "action"]),
    ({"env_config": EnvConfig(team_size=2)}, [("agents", "observation"), ("agents", "action"), "state",
                                              ("next", "agents", "reward")]),
    ({"multi_agent": True}, [("agents", "observation"), ("agents", "action")]),
])
def test_specs_pass_torchrls_check_and_a_long_rollout_runs(kwargs, keys):
    env = ArenaTorchRLEnv(6, **kwargs)
    check_env_specs(env, seed=1)
    data = env.rollout(320, break_when_any_done=False)  # past the time limit: every battle ends once
    assert data.shape == (6, 320)
    assert all(key in data.keys(True, True) for key in keys)
    assert data["next", "done"].any(-2).all()
    t = 2 if "env_config" in kwargs else 1
    if env.multi_agent:
        assert env.group_map == {"agents": [f"p1_{i}" for i in range(t)]}
        assert data["agents", "observation"].shape[-2:] == (t, len(env.battles.keys))
        assert data["next", "agents", "reward"].shape == (6, 320, t, 1)
    else:
        assert data["next", "reward"].shape == data["next", "done"].shape == (6, 320, 1)


def test_next_holds_the_last_observation_and_the_reset_hands_over_the_restarted_one():
    env = ArenaTorchRLEnv(8, global_state=True)
    td = env.reset()
    for _ in range(400):
        td.set("action", torch.zeros(8, 3))
        stepped, td = env.step_and_maybe_reset(td)
        done = stepped["next", "done"].squeeze(-1)
        battles = env.battles
        current = battles.vector(battles.obs["p1"])
        if done.any():
            break
    else:
        pytest.fail("no battle ended in 400 steps")
    # Where a battle ended, "next" holds its last observation and state, the root its restarted one.
    assert not torch.equal(stepped["next", "observation"][done], current[done])
    assert torch.equal(td["observation"], current)
    assert torch.equal(td["state"], battles.env.global_state("p1"))
    assert not td["done"].any() and not td["truncated"].any()
    assert torch.equal(stepped["next", "observation"][~done], current[~done])
    # A "_reset" of the battles that just ended does not restart them a second time.
    again = env.reset(stepped["next"].clone().set("_reset", done.unsqueeze(-1)))
    assert torch.equal(again["observation"], current)


def test_a_partial_reset_restarts_only_the_running_battles_it_names():
    env = ArenaTorchRLEnv(6)
    td = env.reset()
    for _ in range(10):
        td.set("action", torch.zeros(6, 3))
        _, td = env.step_and_maybe_reset(td)
    moved = td["observation"].clone()
    mask = torch.tensor([False, True, False, False, True, False])
    out = env.reset(td.clone().set("_reset", mask.unsqueeze(-1)))
    assert torch.equal(out["observation"][~mask], moved[~mask])
    assert not torch.equal(out["observation"][mask], moved[mask])
    assert torch.equal(out["observation"], env.battles.vector(env.battles.obs["p1"]))
    assert not out["done"].any()


def rollout(seed: int) -> TensorDict:
    env = ArenaTorchRLEnv(4, ["crank", "placeholder", "placeholder"])  # placeholder draws from its own stream
    env.set_seed(seed)
    torch.manual_seed(0)
    return env.rollout(60, break_when_any_done=False)


@pytest.mark.parametrize("mask, got", [
    (torch.ones(4, 1), r"a tensor of dtype torch.float32 and shape \[4, 1\]"),
    (torch.ones(4, 2, dtype=torch.bool), r"a tensor of dtype torch.bool and shape \[4, 2\]"),
    (torch.ones(4, 1, dtype=torch.bool, device="meta"), r"a tensor on the meta device \(it holds no values\)"),
])
def test_a_reset_mask_that_is_not_one_bool_a_battle_is_refused_by_name(mask, got):
    env = ArenaTorchRLEnv(4)
    env.reset()
    with pytest.raises(ValueError, match=r"^ArenaTorchRLEnv.reset: expected '_reset' to be a bool tensor of shape "
                                         rf"\[4, 1\] or \[4\] \(the battles to restart\), got {got}$"):
        env.reset(TensorDict({"_reset": mask}, batch_size=[4]))
    with pytest.raises(ValueError, match=r"^ArenaTorchRLEnv.step 'action': .* got a tensor on the meta device"):
        env.step(TensorDict({"action": torch.zeros(4, 3, device="meta")}, batch_size=[4]))
    assert env.reset(TensorDict({"_reset": torch.tensor([[True], [False], [False], [True]])},
                                batch_size=[4]))["observation"].shape == (4, 10)


def test_the_same_seed_gives_the_same_rollout():
    a, b, c = rollout(7), rollout(7), rollout(8)
    assert (a == b).all()
    assert not torch.equal(a["next", "observation"], c["next", "observation"])


def test_mistakes_get_one_clear_line():
    env = ArenaTorchRLEnv(4)
    td = env.reset().set("action", torch.zeros(4, 2))
    with pytest.raises(ValueError, match=r"ArenaTorchRLEnv.step 'action': expected .* shape \(4, 3\), got Tensor "
                                         r"of dtype torch.float32 and shape \(4, 2\)"):
        env.step(td)
    with pytest.raises(ValueError, match=r"multi_agent=False flies one aircraft a side, but "
                                         r"env_config.team_size=2; expected multi_agent=True or None"):
        ArenaTorchRLEnv(4, env_config=EnvConfig(team_size=2), multi_agent=False)
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        ArenaTorchRLEnv(4, "nope")
    with pytest.raises(ValueError, match="seed: expected"):
        env.set_seed(-1)


def test_a_grouped_action_on_the_meta_device_or_a_dict_for_env_config_is_one_line_naming_it():
    env = ArenaTorchRLEnv(4, env_config=EnvConfig(team_size=2))
    env.reset()
    action = TensorDict({"action": torch.zeros(4, 2, 3, device="meta")}, batch_size=[4, 2])
    with pytest.raises(ValueError, match=r"^ArenaTorchRLEnv.step \('agents', 'action'\): expected an array of real "
                                         r"numbers \(bool, int or float\) of shape \(4, 2, 3\), got a tensor on the "
                                         r"meta device \(it holds no values\)$"):
        env.step(TensorDict({"agents": action}, batch_size=[4]))
    with pytest.raises(ValueError, match=r"^env_config: expected an arena.env.EnvConfig or None, got dict "
                                         r"\{'team_size': 2\}; EnvConfig.from_dict\(...\) builds one from a mapping$"):
        ArenaTorchRLEnv(4, env_config={"team_size": 2})


def short_battles(device: str) -> ArenaTorchRLEnv:
    env = ArenaTorchRLEnv(8, "crank", EnvConfig(max_time=5.0), device=device, global_state=True)
    # On the CPU the core env lists the missiles in flight (a nonzero, free there); on a GPU it keeps
    # the dense layout, as here, so that the CPU run watches the GPU's path.
    env.battles.env.packed_missiles = False
    env.reset()  # built and reset once outside: only the step path is watched
    return env


def steps_and_a_partial_reset(env: ArenaTorchRLEnv) -> list[torch.Tensor]:
    """Steps through TorchRL's step_and_maybe_reset (with a 5-step time limit every battle ends and
    restarts in them), then a reset of one battle; returns the done flags for the caller to check."""
    td = env.reset()
    actions = torch.rand(8, 8, 3, device=env.device) * 2 - 1
    mask = torch.zeros(8, 1, dtype=torch.bool, device=env.device)
    mask[2] = True
    dones = []
    for t in range(8):
        td.set("action", actions[t])
        stepped, td = env.step_and_maybe_reset(td)
        dones.append(stepped["next", "done"])
    env.reset(td.set("_reset", mask))
    return dones


def test_the_step_path_reads_nothing_back_to_the_host():
    env = short_battles("cpu")
    with HostReads() as reads:
        dones = steps_and_a_partial_reset(env)
    assert reads.seen == []
    assert torch.stack(dones).any(0).all()  # every battle ended (and restarted) on the way
    with HostReads() as reads:
        bool(dones[0].any())
        dones[0][dones[0]]
    assert [r.split(" at ")[0] for r in reads.seen] == ["host read: _local_scalar_dense.default",
                                                        "host read: index.Tensor"]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_the_step_path_never_syncs_with_the_gpu():
    env = short_battles("cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        dones = steps_and_a_partial_reset(env)
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert torch.stack(dones).any(0).all()


def run_example(name: str, *args: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module, module.main(list(args))


def test_the_ppo_example_trains_through_torchrls_parts(monkeypatch):
    """TorchRL's Collector, GAE and ClipPPOLoss train the example's actor on ArenaTorchRLEnv: every rollout is
    counted, the weights move and stay finite, and the policy is scored. Beating crank takes the example
    minutes (docs/interfaces.md has its five-minute figures), not a test's seconds: at 491,520 steps it
    won or drew 4 of 20 deterministic games in 1 of 10 runs (5 seeds, 2 CPU kernels), so no score is asked."""
    spec = importlib.util.spec_from_file_location("torchrl_example", EXAMPLES / "torchrl_ppo_vs_crank.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    torch.manual_seed(0)
    untrained, _, _ = module.build(ArenaTorchRLEnv(1))
    before = module.score(untrained, "crank", 10, 0)
    assert before["wins"] + before["draws"] == 0  # flying straight and holding fire loses every game
    scored = []
    monkeypatch.setattr(module, "score", lambda actor, *args: scored.append(actor) or {"games": 0, "wins": 0,
                                                                                        "draws": 0, "losses": 0})
    trained = module.main(["--envs", "256", "--steps", "32", "--batch-size", "2048", "--frames", str(256 * 32 * 4),
                           "--games", "0", "--seed", "0"])
    assert trained["steps"] == 256 * 32 * 4 and len(trained["rewards"]) == 4
    assert all(math.isfinite(r) for r in trained["rewards"])
    (actor,) = scored
    moved = [not torch.equal(a, b) for a, b in zip(actor.parameters(), untrained.parameters())]
    assert all(moved) and all(bool(torch.isfinite(p).all()) for p in actor.parameters())
