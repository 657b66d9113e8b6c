"""Whether TensorEnv's step runs compiled, and the compiled step itself.

``torch.compile`` turns :func:`arena.env.step.step_battles` into one graph: C++ on the CPU, Triton on a
GPU. The first step of a new shape pays for compilation (tens of seconds on a small CPU); the
compiler's on-disk cache makes later processes pay a few seconds. Arena keeps that cache under the
user's cache folder (:func:`use_compile_cache`), not torch's ``/tmp`` default, so that a machine compiles
each step once rather than once per boot. The env compiles where that pays: see
:func:`default_compile`. ``ARENA_COMPILE`` (``auto``, ``1``, ``0``) or ``TensorEnv(compile=...)``
overrides it. A machine without a C++ compiler (or a GPU without Triton) steps eagerly, and says so
once. So does a cache folder the compiler cannot use (a file, read-only, not creatable: checked before
torch is asked, whose import fails with a traceback there) or whose entries it cannot load (garbage left
by a crash or a disk fault: caught on the first compiled step); torch's own cache logging is kept to
that one line.
"""

from __future__ import annotations

import contextlib
import functools
import getpass
import logging
import os
import re
import shutil
import tempfile
import traceback
from collections.abc import Callable, Iterator
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
# Torch's loggers that report its cache (an entry it could not load, or write): their warnings and
# tracebacks would come on top of arena's one line, so they are held while a step first compiles.
CACHE_LOGGERS = ("torch._inductor.codecache", "torch._inductor.output_code",
                 "torch._functorch._aot_autograd.autograd_cache", "torch._dynamo.package")
# Torch's functions on the stack when a failure comes from reusing a cached graph, not from compiling one
# (a compiler that fails on an empty cache never passes through them).
CACHE_HIT_FRAMES = frozenset({"cache_hit_post_compile", "after_deserialization", "_lookup_graph",
                              "iterate_over_candidates"})

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


def arena_cache_folder() -> str:
    """``arena/torch-compile`` in the user's cache folder (``$XDG_CACHE_HOME``, else ``~/.cache``)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.abspath(os.path.join(base, "arena", "torch-compile"))


def torch_cache_folder() -> str:
    """Torch's default cache folder, ``torchinductor_<user>`` in the temporary folder, as
    ``torch._inductor.runtime.cache_dir_utils.default_cache_dir`` names it. Not imported from there:
    importing it imports the compiler, which makes the cache folder and fails with a traceback where
    that cannot be done, the very case to be said in one line."""
    try:
        user = getpass.getuser()
    except (KeyError, ModuleNotFoundError, OSError):
        getuid = getattr(os, "getuid", None)
        user = f"uid_{getuid()}" if callable(getuid) else "unknown_user"
    return os.path.abspath(os.path.join(tempfile.gettempdir(), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user)))


def compile_cache_folder() -> str:
    """The folder torch's compiler will keep its caches in: ``TORCHINDUCTOR_CACHE_DIR`` where it names
    another folder than torch's default, else :func:`arena_cache_folder` where that can be made, else
    torch's default. Decided without making anything, so that :func:`resolve_compile` (and through it
    ``arena env-info``) checks the folder that will really be used before torch touches it. Torch writes
    its default into the variable as soon as ``torch._dynamo`` is imported, so that value is not the
    user's choice."""
    folder = os.environ.get(CACHE_ENV_VAR)
    if folder and os.path.abspath(folder) != torch_cache_folder():
        return os.path.abspath(folder)
    ours = arena_cache_folder()
    return ours if cache_problem(ours) is None else torch_cache_folder()


def writable(folder: str) -> bool:
    """Whether this user may create files in ``folder`` (a read-only mount included)."""
    return os.access(folder, os.W_OK | os.X_OK)


def cache_problem(folder: str) -> str | None:
    """Why the compiler cannot keep its cache in ``folder`` (words that follow the folder's name), or None
    when it can: the folder, or the nearest folder above it that exists where it is still to be made, is
    a folder this user can read and write. Torch makes the folder when ``torch._dynamo`` is imported and
    writes into it at each compilation: in a folder it cannot use, the one is a traceback and the other
    torch's logging, where one line naming the folder is what the user needs."""
    folder = os.path.abspath(folder)
    there = folder
    while not os.path.lexists(there) and os.path.dirname(there) != there:
        there = os.path.dirname(there)
    if there != folder:
        if not os.path.isdir(there):
            return f"cannot be made: {there} is not a folder"
        return None if writable(there) else f"cannot be made: {there} is read-only"
    if not os.path.isdir(folder):
        return "is not a folder"
    if not writable(folder):
        return "is read-only"
    if not os.access(folder, os.R_OK):
        return "cannot be read"
    return None


def use_compile_cache() -> str | None:
    """The folder torch's compiler keeps its caches in, chosen before the first compilation of a process
    (:func:`compile_cache_folder`): arena's folder is made and written into ``TORCHINDUCTOR_CACHE_DIR``,
    since it outlives ``/tmp``. None where torch's default stands (arena's folder cannot be made)."""
    folder = compile_cache_folder()
    if folder == torch_cache_folder():
        return None
    if folder == arena_cache_folder():
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
    folder = compile_cache_folder()
    problem = cache_problem(folder)
    if problem is not None:
        reason = f"the compiler's cache folder {folder} {problem}"
        say_once(f"arena: {reason}; the env steps eagerly (set {CACHE_ENV_VAR} to a folder you can write)")
        return False, reason
    return True, ""


@functools.lru_cache(maxsize=None)
def compiled_step(plan: StepPlan) -> Callable[..., dict[str, Any]]:
    """``step_battles`` for ``plan``, compiled whole (``fullgraph``) and for fixed shapes. The cache folder
    is chosen first: importing ``torch._dynamo`` makes the one the variable names."""
    use_compile_cache()
    dynamo = torch._dynamo.config
    for name in ("recompile_limit", "cache_size_limit"):
        if getattr(dynamo, name, RECOMPILE_LIMIT) < RECOMPILE_LIMIT:
            setattr(dynamo, name, RECOMPILE_LIMIT)

    def step(world: Any, actions: Any, spawn: Any, totals: Any) -> dict[str, Any]:
        return step_battles(world, actions, spawn, totals, plan)

    return torch.compile(step, fullgraph=True, dynamic=False, options=INDUCTOR_OPTIONS)


@contextlib.contextmanager
def held_cache_logs() -> Iterator[list[str]]:
    """Hold what torch's cache loggers (:data:`CACHE_LOGGERS`) warn while it lasts: the first line of each
    message is listed for arena's own line instead of reaching the user as torch's log and traceback."""
    heard: list[str] = []

    def hold(record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        heard.append(record.getMessage().splitlines()[0] if record.getMessage() else record.levelname)
        return False

    loggers = [logging.getLogger(name) for name in CACHE_LOGGERS]
    for logger in loggers:
        logger.addFilter(hold)
    try:
        yield heard
    finally:
        for logger in loggers:
            logger.removeFilter(hold)


def error_words(exc: BaseException) -> str:
    """``Type: first line`` of a compiler's error, skipping torch's ``backend='inductor' raised:``."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip() and not line.rstrip().endswith("raised:")]
    return f"{type(exc).__name__}: {lines[0][:200]}" if lines else type(exc).__name__


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` lies in ``folder`` (or is it)."""
    try:
        return os.path.commonpath([os.path.abspath(path), os.path.abspath(folder)]) == os.path.abspath(folder)
    except ValueError:  # another drive
        return False


def from_cache(exc: BaseException, folder: str) -> bool:
    """Whether a compiler's failure comes from its cache: it was raised while torch reused a cached
    graph (:data:`CACHE_HIT_FRAMES` on the stack of any error in the chain), or is a file error on a path
    in ``folder``. A compiler that fails on an empty cache, a missing header say, is not the cache's."""
    seen: set[int] = set()
    error: BaseException | None = exc
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if any(frame.f_code.co_name in CACHE_HIT_FRAMES for frame, _ in traceback.walk_tb(error.__traceback__)):
            return True
        name = getattr(error, "filename", None)
        if isinstance(error, OSError) and isinstance(name, str) and inside(name, folder):
            return True
        error = error.__cause__ or error.__context__
    return False


class StepRunner:
    """Runs the step compiled, or eagerly when the compiler fails on this machine or on its cache (said
    once, naming the cache folder where that is the cause)."""

    def __init__(self, plan: StepPlan, compiled: bool) -> None:
        self.plan, self.compiled = plan, compiled
        self.failure = ""  # the compiler's words when it failed here
        self._fn = compiled_step(plan) if compiled else functools.partial(step_battles, plan=plan)
        self._proven = not compiled  # a compiled step that ran once has compiled

    def __call__(self, *args: Any) -> dict[str, Any]:
        if self._proven:
            return self._fn(*args)
        try:
            with held_cache_logs() as heard:
                out = self._fn(*args)
        except Exception as exc:  # the compiler's own failures: no C++ toolchain, a broken Triton, its cache
            self._fall_back(exc)
            out = self._fn(*args)
        else:
            if heard:  # torch passed over entries it could not load (or write) and compiled: it works, slower
                say_once(f"arena: the compiler's cache folder {compile_cache_folder()} could not be used "
                         f"({heard[0]}); the step compiled anew (empty the folder if this repeats)")
        self._proven = True
        return out

    def _fall_back(self, exc: Exception) -> None:
        """Step eagerly from now on, saying why once: the cache folder where the failure is the cache's."""
        folder, words = compile_cache_folder(), error_words(exc)
        if from_cache(exc, folder):
            self.failure = f"the compiler's cache folder {folder} holds entries it cannot use ({words})"
            say_once(f"arena: {self.failure}; the env steps eagerly (empty the folder to compile again)")
        else:
            self.failure = f"compiling failed: {words}"
            say_once(f"arena: compiling the env step failed ({words}); the env steps eagerly")
        self.compiled = False
        self._fn = functools.partial(step_battles, plan=self.plan)
