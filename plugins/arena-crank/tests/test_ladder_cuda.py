"""CrankAgent and the ladder on a CUDA device: the agent contract there, and the same orders as on the
CPU for the same observations. Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from arena.agents import build_agent
from arena.env import TensorEnv
from arena.loop import observation_config
from arena.testing import check_agent

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

SCRIPTED = ("crank", "sniper", "salvo", "defender", "ace")


@pytest.mark.parametrize("name", SCRIPTED)
def test_contract_on_the_gpu(name):
    check_agent(type(build_agent(name)), device="cuda", steps=40)


@pytest.mark.parametrize("name", SCRIPTED)
def test_the_gpu_twin_gives_the_same_orders(name):
    """Both copies read the CPU env's observations for 120 steps; their memories must stay in step."""
    n = 512
    cpu_agent = build_agent(name)
    cfg = observation_config(None, [cpu_agent])
    cpu_agent = build_agent(name, env_config=cfg)
    gpu_agent = build_agent(name, device="cuda", env_config=cfg)
    env = TensorEnv(n, seed=3, config=cfg)
    obs = env.reset()
    other = build_agent("crank", env_config=cfg)
    fire_disagree, rudder_disagree = 0, 0
    with torch.no_grad():
        for _ in range(120):
            mine = cpu_agent.act(obs["p1"])
            twin = gpu_agent.act({k: v.cuda() for k, v in obs["p1"].items()})
            rudder_disagree += int(((mine["rudder"] - twin["rudder"].cpu()).abs() > 1e-3).sum())
            fire_disagree += int((mine["fire"].bool() != twin["fire"].cpu().bool()).sum())
            obs, _, dones, _ = env.step(mine, other.act(obs["p2"]))
            cpu_agent.reset(dones)
            gpu_agent.reset(dones.cuda())
            other.reset(dones)
    # Thresholds (launch ranges, warning angles) may fall either side of a float32 rounding, rarely.
    for what, count in (("fire", fire_disagree), ("rudder", rudder_disagree)):
        assert count <= n * 120 // 1000, f"{name}: {what} differs in {count} of {n * 120} orders"
