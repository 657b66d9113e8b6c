"""Whether TensorEnv's step runs compiled, and the compiled step itself.

``torch.compile`` turns :func:`arena.env.step.step_battles` into one graph: C++ on the CPU, Triton on a
GPU. The first step of a new shape pays for compilation (tens of seconds on a small CPU); the
compiler's on-disk cache makes later processes pay a few seconds. Arena keeps that cache under the
user's cache folder (:func:`use_compile_cache`), not torch's ``/tmp`` default, so that a machine compiles
each step once rather than once per boot. The env compiles where that pays: see
:func:`default_compile`. ``ARENA_COMPILE`` (``auto``, ``1``, ``0``) or ``TensorEnv(compile=...)``
overrides it. A machine without a C++ compiler (or a GPU without Triton) steps eagerly, and says so
once.
"""

from __future__ import annotations

import functools
import logging
import os
import shutil
from collections.abc import Callable
from typing import Any

import torch

from arena.env.step import StepPlan, step_battles

ENV_VAR = "ARENA_COMPILE"
MIN_ENVS = 1024  # below this a step is cheap either way and compilation would not pay back in a short run
# The duel's aircraft axis is 2 wide: vectorizing it with masked tails costs more than plain loops
# (40 -> 22 ms a step at 16,384 envs on one thread; docs/experiments/2026-11-25-compiled-env-step.md).
INDUCTOR_OPTIONS: dict[str, str | int | bool | Callable[..., Any]] = {"cpp.enable_loop_tail_vec": False}
RECOMPILE_LIMIT = 64  # compiled graphs kept per process: one per (team size, batch size, plan)
CACHE_ENV_VAR = "TORCHINDUCTOR_CACHE_DIR"  # torch's compiler reads its cache folder from it at each use

log = logging.getLogger(__name__)
_said: set[str] = set()


WORDS: dict[str, bool | None] = {"auto": None, "1": True, "on": True, "true": True, "yes": True,
                                 "0": False, "off": False, "false": False, "no": False}
WORDS_TEXT = "auto, 1/on/true/yes or 0/off/false/no"


class CompileSettingError(ValueError):
    """``ARENA_COMPILE`` or ``compile=`` holds something other than a yes, a no or auto."""


def compile_choice(value: object, what: str = "compile") -> bool | None:
    """``TensorEnv(compile=...)`` as True, False or None (auto): a bool, None, or one of the words
    ``ARENA_COMPILE`` takes (any case). Anything else, a truthy string such as ``"no"`` included, is
    refused naming ``what``: ``compile="no"`` must not compile because a non-empty string is true."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in WORDS:
        return WORDS[value.strip().lower()]
    raise CompileSettingError(f"{what}: expected True, False, None or one of {WORDS_TEXT}, got {value!r:.60}")


def compile_setting() -> bool | None:
    """``ARENA_COMPILE``: True (always), False (never) or None (auto, the default; also when unset)."""
    text = os.environ.get(ENV_VAR, "").strip().lower()
    if text in ("", "auto"):
        return None
    if text in WORDS:
        return WORDS[text]
    raise CompileSettingError(f"{ENV_VAR}={text!r}: expected {WORDS_TEXT}")


def default_compile(device: torch.device, num_envs: int) -> bool:
    """Auto: compile on a GPU for batches of ``MIN_ENVS`` or more, where the eager step is bound by
    launching its hundreds of kernels, which compilation fuses. The CPU steps eagerly: there the packed
    layout integrates only the missiles in flight, which the static graph cannot (docs/performance.md
    has the figures)."""
    return device.type == "cuda" and num_envs >= MIN_ENVS


def missing_compiler(device: torch.device) -> str | None:
    """Why this machine cannot compile the step for ``device``, or None when it can."""
    if device.type == "cpu":
        wanted = [os.environ["CXX"]] if os.environ.get("CXX") else ["g++", "clang++", "c++"]
        if not any(shutil.which(name) for name in wanted):
            return f"no C++ compiler found ({', '.join(wanted)})"
        return None
    if device.type == "cuda":
        try:
            import triton  # type: ignore[import-not-found]  # noqa: F401
        except ImportError:
            return "Triton is not installed"
        return None
    return f"no compiler backend for device type {device.type!r}"


def use_compile_cache() -> str | None:
    """The folder torch's compiler keeps its caches in, chosen before the first compilation of a process:
    ``TORCHINDUCTOR_CACHE_DIR`` where it names another folder than torch's default, else
    ``arena/torch-compile`` in the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``), which
    outlives ``/tmp``. None (torch's default) where that folder cannot be made. Torch writes its default
    into the variable as soon as ``torch._dynamo`` is imported, so that value is not the user's choice."""
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    folder = os.environ.get(CACHE_ENV_VAR)
    if folder and os.path.abspath(folder) != os.path.abspath(default_cache_dir()):
        return folder
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "arena", "torch-compile")
    try:
        os.makedirs(folder, exist_ok=True)
    except OSError:
        return None
    os.environ[CACHE_ENV_VAR] = folder
    return folder


def say_once(message: str) -> None:
    """One warning line per distinct message and process."""
    if message not in _said:
        _said.add(message)
        log.warning(message)


def resolve_compile(choice: bool | str | None, device: torch.device, num_envs: int) -> tuple[bool, str]:
    """Whether an env compiles its step, and why not when it does not (empty when it does). ``choice`` is
    read by :func:`compile_choice`."""
    choice = compile_choice(choice)
    if choice is None:
        choice = compile_setting()
    if choice is None and not default_compile(device, num_envs):
        if device.type == "cuda":
            return False, f"auto: eager below {MIN_ENVS} envs; ARENA_COMPILE=1 compiles"
        return False, f"auto: eager on the {device.type.upper()}; ARENA_COMPILE=1 compiles"
    if choice is False:
        return False, "compile off"
    problem = missing_compiler(device)
    if problem is not None:
        say_once(f"arena: {problem}; the env steps eagerly")
        return False, problem
    return True, ""


@functools.lru_cache(maxsize=None)
def compiled_step(plan: StepPlan) -> Callable[..., dict[str, Any]]:
    """``step_battles`` for ``plan``, compiled whole (``fullgraph``) and for fixed shapes."""
    dynamo = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if getattr(dynamo, name, RECOMPILE_LIMIT) < RECOMPILE_LIMIT:
            setattr(dynamo, name, RECOMPILE_LIMIT)
    use_compile_cache()

    def step(world: Any, actions: Any, spawn: Any, totals: Any) -> dict[str, Any]:
        return step_battles(world, actions, spawn, totals, plan)

    return torch.compile(step, fullgraph=True, dynamic=False, options=INDUCTOR_OPTIONS)


class StepRunner:
    """Runs the step compiled, or eagerly when the compiler fails on this machine (said once)."""

    def __init__(self, plan: StepPlan, compiled: bool) -> None:
        self.plan, self.compiled = plan, compiled
        self.failure = ""  # the compiler's words when it failed here
        self._fn = compiled_step(plan) if compiled else functools.partial(step_battles, plan=plan)
        self._proven = not compiled  # a compiled step that ran once has compiled

    def __call__(self, *args: Any) -> dict[str, Any]:
        if self._proven:
            return self._fn(*args)
        try:
            out = self._fn(*args)
        except Exception as exc:  # the compiler's own failures: no C++ toolchain, a broken Triton, ...
            first = str(exc).splitlines()[0][:200] if str(exc) else ""
            self.failure = f"compiling failed: {type(exc).__name__}: {first}"
            say_once(f"arena: compiling the env step failed ({type(exc).__name__}: {first}); the env steps eagerly")
            self.compiled = False
            self._fn = functools.partial(step_battles, plan=self.plan)
            out = self._fn(*args)
        self._proven = True
        return out
