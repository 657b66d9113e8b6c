"""The env on a CUDA device: the same starts as on the CPU, the same physics up to float32 rounding,
and a step that never waits for the host (the GPU path's reason to exist). Skipped without CUDA."""

from __future__ import annotations

import pytest
import torch

from arena.env import EnvConfig, TensorEnv
from arena.env.spawn import seeded_spawn, seeded_uniforms

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

AIRCRAFT = ("x", "y", "heading", "speed", "alive", "missiles_left")
SEEDS = torch.arange(-300, 300, dtype=torch.int64) * 0x5DEECE66D + 11


def scripted_actions(steps: int, shape: tuple[int, ...], seed: int) -> list[dict[str, dict[str, torch.Tensor]]]:
    """Open-loop actions drawn on the CPU, so both devices fly exactly the same orders."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        out.append({p: {"rudder": torch.rand(shape, generator=g) * 2 - 1,
                        "throttle": torch.rand(shape, generator=g),
                        "fire": torch.rand(shape, generator=g) < 0.1} for p in ("p1", "p2")})
    return out


def on(action: dict[str, torch.Tensor], device: str) -> dict[str, torch.Tensor]:
    return {k: v.to(device) for k, v in action.items()}


def test_seeded_uniforms_are_bit_identical_on_the_gpu():
    assert torch.equal(seeded_uniforms(SEEDS, 12), seeded_uniforms(SEEDS.cuda(), 12).cpu())


@pytest.mark.parametrize("team_size", [1, 3])
def test_seeded_starts_match_the_cpu(team_size):
    cfg = EnvConfig(team_size=team_size)
    cpu, gpu = seeded_spawn(cfg, SEEDS, torch.device("cpu")), seeded_spawn(cfg, SEEDS, torch.device("cuda"))
    for name in AIRCRAFT:
        a, b = getattr(cpu, name), getattr(gpu, name).cpu()
        assert a.shape == b.shape, name
        assert torch.allclose(a.float(), b.float(), rtol=1e-6, atol=1e-3), name  # m, rad, m/s


@pytest.mark.parametrize("team_size", [1, 2])
def test_gpu_physics_follows_the_cpu(team_size):
    """60 steps of the same orders from the same starts: the same battles end, and aircraft stay within
    a metre of their CPU twins (float32 rounding differs between devices, then the two drift apart)."""
    n, steps = 600, 60
    cfg = EnvConfig(team_size=team_size)
    shape = (n,) if team_size == 1 else (n, team_size)
    envs = {d: TensorEnv(n, device=d, config=cfg) for d in ("cpu", "cuda")}
    for d, env in envs.items():
        env.reset(game_seeds=SEEDS.to(d))
    diverged_dones = 0
    for action in scripted_actions(steps, shape, seed=team_size):
        out = {d: env.step(on(action["p1"], d), on(action["p2"], d)) for d, env in envs.items()}
        diverged_dones += int((out["cpu"][2] != out["cuda"][2].cpu()).sum())
        for name in ("x", "y"):
            a, b = getattr(envs["cpu"].state, name), getattr(envs["cuda"].state, name).cpu()
            same = out["cpu"][2] == out["cuda"][2].cpu()  # a battle that ended on one device only is counted above
            rows = same.unsqueeze(-1) if a.dim() > same.dim() else same
            assert ((a - b).abs() * rows).max() < 1.0, name
    assert diverged_dones <= n * steps // 1000, f"{diverged_dones} battles ended on one device only"


@pytest.mark.parametrize("team_size", [1, 2])
def test_a_step_never_waits_for_the_host(team_size):
    """Firing, hits, auto-resets and episode statistics included: 150 steps cover many ends of battle."""
    n = 256
    env = TensorEnv(n, device="cuda", config=EnvConfig(team_size=team_size, max_time=60.0))
    env.reset(seed=1)
    actions = scripted_actions(150, (n,) if team_size == 1 else (n, team_size), seed=7)
    gpu = [{p: on(a[p], "cuda") for p in a} for a in actions]
    env.step(gpu[0]["p1"], gpu[0]["p2"])  # the first step may allocate and load kernels
    ended = torch.zeros((), device="cuda")
    torch.cuda.set_sync_debug_mode("error")
    try:
        for a in gpu[1:]:
            _, _, dones, _ = env.step(a["p1"], a["p2"])
            ended += dones.sum()
    finally:
        torch.cuda.set_sync_debug_mode("default")
    assert int(ended) > n, "the test should cover auto-resets"


@pytest.mark.parametrize("team_size", [1, 2])
def test_the_compiled_gpu_step_follows_the_eager_one_and_never_waits(team_size):
    """The step compiled with Triton: the same battles as eager on the GPU within float tolerance, and,
    once compiled, no host synchronisation either."""
    pytest.importorskip("triton")
    n, steps = 512, 60
    cfg = EnvConfig(team_size=team_size, max_time=40.0)
    shape = (n,) if team_size == 1 else (n, team_size)
    eager = TensorEnv(n, device="cuda", config=cfg, compile=False)
    fast = TensorEnv(n, device="cuda", config=cfg, compile=True)
    for env in (eager, fast):
        env.reset(game_seeds=SEEDS[:n].cuda())
    actions = [{p: on(a[p], "cuda") for p in a} for a in scripted_actions(steps, shape, seed=3)]
    fast.step(actions[0]["p1"], actions[0]["p2"])  # compiles
    eager.step(actions[0]["p1"], actions[0]["p2"])
    assert fast.step_path == "compiled"
    ended = 0
    for a in actions[1:]:
        torch.cuda.set_sync_debug_mode("error")
        try:
            obs_c, _, done_c, _ = fast.step(a["p1"], a["p2"])
        finally:
            torch.cuda.set_sync_debug_mode("default")
        obs_e, _, done_e, _ = eager.step(a["p1"], a["p2"])
        assert torch.equal(done_c, done_e)
        for key in ("x", "y", "enemy_distance"):
            assert torch.allclose(obs_c["p1"][key], obs_e["p1"][key], atol=1e-4), key
        ended += int(done_e.sum())
    assert ended > 0
