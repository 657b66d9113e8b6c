"""The step as one static graph: it compiles whole, and the compiled step flies eager's battles."""

from __future__ import annotations

import logging
import os

import pytest
import torch

import arena.env.compiled as compiled
from arena.env import EnvConfig, TensorEnv
from arena.env.compiled import CompileSettingError, StepRunner, compile_setting, missing_compiler
from arena.env.observations import PLAYERS
from arena.env.step import StepPlan, step_battles


def pursue(obs: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Noisy pursuit that fires when the enemy is ahead: launches, hits and restarts within 100 steps."""
    noise = torch.rand(obs["x"].shape, generator=gen) * 0.6 - 0.3
    ahead = obs["enemy_relative_angle"].abs() < 0.1
    fire = ahead & (obs["enemy_distance"] < 0.3) & (torch.rand(obs["x"].shape, generator=gen) < 0.3)
    return {"rudder": obs["enemy_relative_angle"] * 4.0 + noise, "throttle": torch.ones_like(noise), "fire": fire}


def step_inputs(env: TensorEnv, gen: torch.Generator) -> tuple:
    obs = env.reset()
    actions = (pursue(obs["p1"], gen), pursue(obs["p2"], gen))
    spawn = (torch.rand(env.num_envs, 8, generator=gen),
             torch.rand(env.num_envs, 2, env.team_size - 1, generator=gen) if env.team_size > 1 else None)
    totals = (env._ep_return, env._ep_missiles, env._ep_kills)
    return env.state.as_tuple(), actions, spawn, totals


@pytest.mark.parametrize("team_size,obs_mode,extras", [(1, "default", False), (1, "extended", True),
                                                       (2, "extended", True), (8, "default", False)])
def test_the_static_step_is_one_graph(team_size: int, obs_mode: str, extras: bool) -> None:
    # fullgraph: any graph break (a data-dependent shape, a host sync, an unsupported call) raises here.
    # The "eager" backend only traces, so this costs seconds, not a compilation.
    cfg = EnvConfig(team_size=team_size, obs_mode=obs_mode)  # type: ignore[arg-type]
    env = TensorEnv(6, seed=1, config=cfg, compile=False, packed_missiles=False)
    plan = StepPlan(cfg, packed=False, final_global_state=PLAYERS if extras else (), keep_world=extras)
    args = step_inputs(env, torch.Generator().manual_seed(0))
    torch._dynamo.reset()
    traced = torch.compile(step_battles, backend="eager", fullgraph=True, dynamic=False)
    out = traced(*args, plan)
    want = step_battles(*args, plan)
    for key in ("reward", "dones", "winner"):
        assert torch.equal(out[key], want[key]), key


def close(a: torch.Tensor, b: torch.Tensor) -> bool:
    return torch.allclose(a.float(), b.float(), rtol=1e-4, atol=1e-4)


NO_COMPILER = missing_compiler(torch.device("cpu"))


@pytest.mark.skipif(NO_COMPILER is not None, reason=f"{NO_COMPILER}: the env steps eagerly here")
@pytest.mark.parametrize("team_size", [1, 2])
def test_compiled_step_flies_the_eager_battles_for_100_steps(team_size: int) -> None:
    """Step by step, the compiled env's observations, rewards and dones equal eager's within float tolerance.
    Skipped, naming why, where the compiler fails and the env falls back to eager."""
    cfg = EnvConfig(team_size=team_size, max_time=60.0)
    n = 32
    eager = TensorEnv(n, seed=5, config=cfg, compile=False)
    fast = TensorEnv(n, seed=5, config=cfg, compile=True)
    assert fast.step_path == "compiled" and not fast.packed_missiles
    obs_e, obs_c = eager.reset(), fast.reset()
    gen_e, gen_c = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    launched = restarted = 0
    for _ in range(100):
        obs_e, rew_e, done_e, info_e = eager.step(pursue(obs_e["p1"], gen_e), pursue(obs_e["p2"], gen_e))
        obs_c, rew_c, done_c, info_c = fast.step(pursue(obs_c["p1"], gen_c), pursue(obs_c["p2"], gen_c))
        if fast.step_path != "compiled":  # the product's fallback: inductor failed on this machine
            pytest.skip(f"the compiler cannot run here, the env fell back to {fast.step_path}")
        assert torch.equal(done_e, done_c) and torch.equal(info_e["winner"], info_c["winner"])
        for p in ("p1", "p2"):
            assert close(rew_e[p], rew_c[p])
            assert close(info_e["kills"][p], info_c["kills"][p])
            for key in obs_e[p]:
                assert close(obs_e[p][key], obs_c[p][key]), (p, key)
                assert close(info_e["final_obs"][p][key], info_c["final_obs"][p][key]), (p, key)
        launched += int(info_e["episode"]["missiles_fired"]["p1"].sum())
        restarted += int(done_e.sum())
    assert launched > 0 and restarted > 0  # launches, hits and auto-resets were all compared


def test_without_a_cpp_compiler_the_env_steps_eagerly_and_says_so(monkeypatch: pytest.MonkeyPatch,
                                                                   caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(compiled.shutil, "which", lambda name: None)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(compiled, "_said", set())
    with caplog.at_level(logging.WARNING, logger="arena.env.compiled"):
        env = TensorEnv(8, seed=0, compile=True)
        TensorEnv(8, seed=0, compile=True)
    assert not env.compiled and env.packed_missiles
    assert env.step_path.startswith("eager (no C++ compiler found")
    assert [r.getMessage() for r in caplog.records] == ["arena: no C++ compiler found (g++, clang++, c++); "
                                                        "the env steps eagerly"]


def test_a_compiler_that_fails_falls_back_to_eager_with_one_line(monkeypatch: pytest.MonkeyPatch,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    def broken(plan: StepPlan):
        def step(*args):
            raise RuntimeError("CppCompileError: cannot find <omp.h>\nmore detail")
        return step

    monkeypatch.setattr(compiled, "missing_compiler", lambda device: None)  # a compiler is there, and fails
    monkeypatch.setattr(compiled, "compiled_step", broken)
    monkeypatch.setattr(compiled, "_said", set())
    env = TensorEnv(16, seed=3, compile=True)
    reference = TensorEnv(16, seed=3, compile=False, packed_missiles=False)
    env.reset()
    reference.reset()
    act = {"rudder": torch.zeros(16), "throttle": torch.ones(16), "fire": torch.ones(16, dtype=torch.bool)}
    with caplog.at_level(logging.WARNING, logger="arena.env.compiled"):
        for _ in range(3):
            obs, _, _, _ = env.step(act, act)
            want, _, _, _ = reference.step(act, act)
    assert torch.equal(obs["p1"]["x"], want["p1"]["x"])
    assert env.step_path == "eager (compiling failed: RuntimeError: CppCompileError: cannot find <omp.h>)"
    assert [r.getMessage() for r in caplog.records] == [
        "arena: compiling the env step failed (RuntimeError: CppCompileError: cannot find <omp.h>); "
        "the env steps eagerly"]


def test_arena_compile_chooses_and_a_bad_value_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ARENA_COMPILE", "0")
    assert compile_setting() is False
    assert TensorEnv(8, compile=None).step_path == "eager (compile off)"
    monkeypatch.setenv("ARENA_COMPILE", "auto")
    assert compile_setting() is None
    assert TensorEnv(8).step_path.startswith("eager (auto")  # the CPU steps eagerly by default
    monkeypatch.setenv("ARENA_COMPILE", "fast")
    with pytest.raises(CompileSettingError, match="ARENA_COMPILE='fast': expected auto, 1/on/true/yes or "
                                                  "0/off/false/no"):
        TensorEnv(8)


@pytest.mark.parametrize("word, path", [("no", "eager (compile off)"), ("OFF", "eager (compile off)"),
                                        ("0", "eager (compile off)"), ("auto", "eager (auto")])
def test_compile_takes_the_words_arena_compile_takes(monkeypatch: pytest.MonkeyPatch, word: str, path: str) -> None:
    monkeypatch.delenv("ARENA_COMPILE", raising=False)
    assert TensorEnv(8, compile=word).step_path.startswith(path)  # "no" is not a true string here
    monkeypatch.setattr(compiled, "missing_compiler", lambda device: None)
    assert TensorEnv(8, compile="yes").compiled  # the words for on compile, as True does


@pytest.mark.parametrize("value", ["nope", "", 1, 0.0, [True]])
def test_compile_refuses_anything_but_a_bool_none_or_those_words(value: object) -> None:
    with pytest.raises(CompileSettingError, match=r"^compile: expected True, False, None or one of auto, "
                                                  r"1/on/true/yes or 0/off/false/no, got "):
        TensorEnv(8, compile=value)  # type: ignore[arg-type]


def test_a_compiled_step_refuses_the_packed_layout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compiled, "missing_compiler", lambda device: None)  # refused before anything compiles
    with pytest.raises(ValueError, match="packed_missiles"):
        TensorEnv(8, compile=True, packed_missiles=True)


def test_an_eager_runner_never_compiles() -> None:
    runner = StepRunner(StepPlan(EnvConfig(), packed=True), compiled=False)
    assert not runner.compiled


def test_auto_compiles_large_batches_on_a_gpu_and_never_on_the_cpu() -> None:
    assert compiled.default_compile(torch.device("cuda"), compiled.MIN_ENVS)
    assert not compiled.default_compile(torch.device("cuda"), compiled.MIN_ENVS - 1)
    assert not compiled.default_compile(torch.device("cpu"), 1 << 20)


def test_the_compiler_cache_lives_in_the_users_cache_folder(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """Torch's default, /tmp, is emptied at boot: a machine would compile each step again."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    from arena.env.compiled import CACHE_ENV_VAR, use_compile_cache

    monkeypatch.delenv(CACHE_ENV_VAR, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    folder = tmp_path / "cache" / "arena" / "torch-compile"
    assert use_compile_cache() == str(folder) == os.environ[CACHE_ENV_VAR] and folder.is_dir()
    monkeypatch.setenv(CACHE_ENV_VAR, str(tmp_path / "mine"))  # the user's choice stands
    assert use_compile_cache() == str(tmp_path / "mine")
    monkeypatch.setenv(CACHE_ENV_VAR, default_cache_dir())  # what importing torch._dynamo writes there
    assert use_compile_cache() == str(folder)
    monkeypatch.delenv(CACHE_ENV_VAR)
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # cannot hold a folder: torch's default
    assert use_compile_cache() is None and CACHE_ENV_VAR not in os.environ
