"""A compiler cache folder that cannot be used: the env steps eagerly and says so in one line naming it.

None of these compiles (a compilation takes 20-60 s on a 2-core CPU): the compiler is replaced by a
stand-in that fails the test if it is asked to compile where the folder is checked first, or that fails
(or logs) as torch does on a warm cache whose entries are garbage. The subprocess case runs the real
torch, whose import alone fails on a cache folder that is a file.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from click.testing import CliRunner

import arena.env.compiled as compiled
from arena.cli import main
from arena.env import TensorEnv
from arena.env.step import StepPlan, step_battles

FIX = "set TORCHINDUCTOR_CACHE_DIR to a folder you can write"
N = 16


def act(gen: torch.Generator) -> dict[str, torch.Tensor]:
    return {"rudder": torch.rand(N, generator=gen) * 2 - 1, "throttle": torch.ones(N),
            "fire": torch.rand(N, generator=gen) < 0.2}


def assert_steps_as_eager(env: TensorEnv, packed: bool, steps: int = 20) -> None:
    """``env`` flies the eager env's battles exactly: the fallback is the eager step, not something else."""
    reference = TensorEnv(N, seed=3, compile=False, packed_missiles=packed)
    env.reset()
    reference.reset()
    gen_a, gen_b = torch.Generator().manual_seed(4), torch.Generator().manual_seed(4)
    for _ in range(steps):
        obs, rew, done, _ = env.step(act(gen_a), act(gen_a))
        want, rew_want, done_want, _ = reference.step(act(gen_b), act(gen_b))
        assert torch.equal(done, done_want) and torch.equal(rew["p1"], rew_want["p1"])
        for key in obs["p1"]:
            assert torch.equal(obs["p1"][key], want["p1"][key]), key


@pytest.fixture
def compiler(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A machine with a C++ compiler (whether or not this one has), nothing said yet, and ``ARENA_COMPILE``
    unset: the cache is what is under test."""
    monkeypatch.setattr(compiled, "missing_compiler", lambda device: None)
    monkeypatch.setattr(compiled, "_said", set())
    monkeypatch.delenv("ARENA_COMPILE", raising=False)
    yield


def never_compiles(plan: StepPlan) -> Callable[..., dict[str, Any]]:
    raise AssertionError("the compiler was asked to compile with a cache folder it cannot use")


def read_only(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``folder`` without write permission. Root writes there all the same, so under root the probe reads
    the permission bits instead, as it would answer for any other user."""
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    if os.access(folder, os.W_OK):
        monkeypatch.setattr(compiled, "writable", lambda path: bool(os.stat(path).st_mode & stat.S_IWUSR))


@pytest.mark.parametrize("case", ["a file", "under a file", "read-only", "under a read-only folder"])
def test_a_cache_folder_it_cannot_use_steps_eagerly_with_one_line(case: str, tmp_path: Path, compiler: None,
                                                                  monkeypatch: pytest.MonkeyPatch,
                                                                  caplog: pytest.LogCaptureFixture) -> None:
    (tmp_path / "file").write_text("")
    (tmp_path / "ro").mkdir()
    folder, why = {
        "a file": (tmp_path / "file", "is not a folder"),
        "under a file": (tmp_path / "file" / "cache", f"cannot be made: {tmp_path / 'file'} is not a folder"),
        "read-only": (tmp_path / "ro", "is read-only"),
        "under a read-only folder": (tmp_path / "ro" / "a" / "cache",
                                     f"cannot be made: {tmp_path / 'ro'} is read-only"),
    }[case]
    if "read-only" in case:
        read_only(tmp_path / "ro", monkeypatch)
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder))
    monkeypatch.setattr(compiled, "compiled_step", never_compiles)
    try:
        with caplog.at_level(logging.WARNING, logger="arena.env.compiled"):
            env = TensorEnv(N, seed=3, compile=True)
            TensorEnv(N, seed=3, compile=True)  # said once a process
            assert_steps_as_eager(env, packed=True)  # decided before the env was built: the CPU's eager layout
    finally:
        (tmp_path / "ro").chmod(stat.S_IRWXU)
    assert not env.compiled and env.step_path == f"eager (the compiler's cache folder {folder} {why})"
    assert [r.getMessage() for r in caplog.records] == [
        f"arena: the compiler's cache folder {folder} {why}; the env steps eagerly ({FIX})"]


class BackendCompilerFailed(RuntimeError):
    """As torch wraps what its backend raised."""


class Heard(logging.Handler):
    """What reaches a logger's own handlers: nothing of torch's cache logging should."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def torch_logs() -> Iterator[Heard]:
    heard = Heard()
    loggers = [logging.getLogger(name) for name in ("torch._inductor.codecache", "torch._inductor.output_code")]
    for logger in loggers:
        logger.addHandler(heard)
    yield heard
    for logger in loggers:
        logger.removeHandler(heard)


def test_a_warm_cache_whose_entries_are_garbage_steps_eagerly_naming_the_folder(
        tmp_path: Path, compiler: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        torch_logs: Heard) -> None:
    """Torch fails to reuse a cached graph whose module is garbage: the error comes through its function
    for a cache hit (as on torch 2.13 with random bytes in the cache's .py files), and it logs first."""
    folder = tmp_path / "cache"
    folder.mkdir()
    module = folder / "jg" / "cjg.py"

    def cache_hit_post_compile() -> None:  # torch's name: the failure comes from reusing the cache
        logging.getLogger("torch._inductor.output_code").error("Failed to load artifact: %s", module)
        try:
            b"\xf5".decode()
        except UnicodeDecodeError as exc:
            raise RuntimeError(f"Failed to import {module}\nUnicodeDecodeError: {exc}") from exc

    def garbage(plan: StepPlan) -> Callable[..., dict[str, Any]]:
        def step(*args: Any) -> dict[str, Any]:
            try:
                cache_hit_post_compile()
            except RuntimeError as exc:
                raise BackendCompilerFailed(f"backend='inductor' raised:\n{type(exc).__name__}: {exc}") from exc
            raise AssertionError("unreachable")
        return step

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(folder))
    monkeypatch.setattr(compiled, "compiled_step", garbage)
    with caplog.at_level(logging.WARNING, logger="arena.env.compiled"):
        env = TensorEnv(N, seed=3, compile=True)
        assert_steps_as_eager(env, packed=False)  # the dense layout a compiled env was built with
    cause = f"BackendCompilerFailed: RuntimeError: Failed to import {module}"
    assert env.step_path == f"eager (the compiler's cache folder {folder} holds entries it cannot use ({cause}))"
    assert [r.getMessage() for r in caplog.records] == [
        f"arena: the compiler's cache folder {folder} holds entries it cannot use ({cause}); the env steps "
        "eagerly (empty the folder to compile again)"]
    assert torch_logs.messages == []


def test_entries_torch_passes_over_are_one_line_and_the_step_stays_compiled(
        tmp_path: Path, compiler: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
        torch_logs: Heard) -> None:
    """A cached graph that does not unpickle: torch logs a traceback as it compiles (the first call),
    compiles anew and the step works."""
    def recompiles(plan: StepPlan) -> Callable[..., dict[str, Any]]:
        calls: list[None] = []

        def step(world: Any, actions: Any, spawn: Any, totals: Any) -> dict[str, Any]:
            if not calls:
                try:
                    raise ValueError("invalid load key, '\\xe3'.")
                except ValueError:
                    logging.getLogger("torch._inductor.codecache").warning(
                        "fx graph cache unable to load compiled graph", exc_info=True)
            calls.append(None)
            return step_battles(world, actions, spawn, totals, plan)
        return step

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiled, "compiled_step", recompiles)
    with caplog.at_level(logging.WARNING, logger="arena.env.compiled"):
        env = TensorEnv(N, seed=3, compile=True)
        assert_steps_as_eager(env, packed=False, steps=3)
    assert env.step_path == "compiled"
    assert [r.getMessage() for r in caplog.records] == [
        f"arena: the compiler's cache folder {tmp_path} could not be used (fx graph cache unable to load "
        "compiled graph); the step compiled anew (empty the folder if this repeats)"]
    assert torch_logs.messages == []


def test_a_compiler_failing_on_its_own_is_not_blamed_on_the_cache(tmp_path: Path) -> None:
    """A failure on an empty cache names no folder; a file error inside the folder is the folder's."""
    try:
        raise BackendCompilerFailed("backend='inductor' raised:\nCppCompileError: C++ compile error\n\ng++ ...")
    except BackendCompilerFailed as exc:
        own = exc
    assert not compiled.from_cache(own, str(tmp_path))
    assert compiled.error_words(own) == "BackendCompilerFailed: CppCompileError: C++ compile error"
    denied = PermissionError(13, "Permission denied", str(tmp_path / "locks" / "c.lock"))
    assert compiled.from_cache(denied, str(tmp_path))
    assert not compiled.from_cache(PermissionError(13, "Permission denied", "/elsewhere"), str(tmp_path))


def test_env_info_says_eager_and_why(tmp_path: Path, compiler: None, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("ARENA_COMPILE", "1")
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "file"))
    result = CliRunner().invoke(main, ["env-info", "--json", "--device", "cpu"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["step"] == {
        "num_envs": 16384, "compiled": False,
        "path": f"eager (the compiler's cache folder {tmp_path / 'file'} is not a folder)"}
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path))  # a folder it can use
    result = CliRunner().invoke(main, ["env-info", "--device", "cpu"])
    assert "step (16,384 envs): compiled" in result.stdout


SCRIPT = """
import torch
from arena.env import TensorEnv
env = TensorEnv(8, seed=0, compile=True)
env.reset()
a = {"rudder": torch.zeros(8), "throttle": torch.ones(8), "fire": torch.ones(8, dtype=torch.bool)}
env.step(a, a)
print(env.step_path)
"""


@pytest.mark.skipif(compiled.missing_compiler(torch.device("cpu")) is not None, reason="no C++ compiler here")
def test_a_file_as_the_cache_folder_is_one_line_in_a_fresh_process(tmp_path: Path) -> None:
    """The real torch: importing its compiler makes the folder, and raises where that is a file. Arena
    checks the folder without importing it, and never compiles."""
    (tmp_path / "file").write_text("")
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "file")}
    env.pop("ARENA_COMPILE", None)
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    line = f"arena: the compiler's cache folder {tmp_path / 'file'} is not a folder; the env steps eagerly ({FIX})"
    assert done.stderr.strip() == line
    assert done.stdout.strip() == f"eager (the compiler's cache folder {tmp_path / 'file'} is not a folder)"


def test_arena_finds_torchs_default_folder_cache_loggers_and_cache_hit_functions() -> None:
    """What arena reads off torch without importing it (its default folder) or by name (its loggers, its
    functions on the stack of a cache hit) still matches torch: a rename would lose the one line."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    assert compiled.torch_cache_folder() == os.path.abspath(default_cache_dir())
    functions: set[str] = set()
    for name in ("torch._inductor.codecache", "torch._inductor.output_code"):
        for value in vars(importlib.import_module(name)).values():
            if isinstance(value, type):
                functions.update(vars(value))
    assert compiled.CACHE_HIT_FRAMES <= functions
    for name in compiled.CACHE_LOGGERS:
        importlib.import_module(name)
