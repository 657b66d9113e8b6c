"""Running someone else's code — an agent's ``act``/``reset``/``eval``/``create`` — without letting it
take the host down.

An agent is third-party code. Whatever it raises must become that agent's fault, named, on one line:
an ``Exception``, but also ``sys.exit()`` (``SystemExit``, which would otherwise end ``arena play`` or a
whole league with nothing recorded) and a ``KeyboardInterrupt`` the agent raised itself (which would
otherwise look like the user's Ctrl-C). A real Ctrl-C must still stop everything, so the two are told
apart by counting SIGINTs: the command line installs :func:`install_sigint_counter` at start-up, and
:class:`arena.training.interrupt.StopRequest` calls :func:`note_interrupt` from its own handler. A
``KeyboardInterrupt`` that arrives while no SIGINT was counted since the call began is the agent's.
Where nothing counts SIGINTs (arena used as a library), a ``KeyboardInterrupt`` is re-raised as is:
without a count there is no telling, and swallowing a user's Ctrl-C is worse.

Using it (the tournament executor can adopt it the same way)::

    from arena.guard import AgentCodeError, call_agent

    try:
        action = call_agent(name, "act", agent.act, observation)
    except AgentCodeError as exc:      # exc.agent, exc.what, exc.cause: one line each
        forfeit(k, exc.reason)         # e.g. "act() raised RuntimeError: boom"

A handler that turns another signal into ``KeyboardInterrupt`` (the tournament's SIGTERM) should call
:func:`note_interrupt` before raising, so that the guard treats it as the user's.

A call that never returns cannot be stopped from the same process: Python has no way to kill a thread.
:class:`Watchdog` runs calls on a daemon worker thread and stops waiting after a deadline; the caller
then abandons the call (and must never call that agent again), and a late answer is dropped. What
no thread can contain — ``os._exit``, a crash in native code, a call that holds the GIL in C code —
needs the agent in a process of its own (docs/plugins.md, *What the arena contains*).
"""

from __future__ import annotations

import os
import queue
import signal
import sys
import threading
import weakref
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_interrupts = 0  # SIGINTs (and signals turned into KeyboardInterrupt) noted since start-up
_watchers = 0  # handlers currently counting; 0 means "cannot tell a real Ctrl-C from an agent's"
_abandoned = 0  # agent calls given up on in this process, whose threads may still be running
_native_threads = False  # a library started threads of its own that may abort the interpreter's shutdown


class AgentCodeError(RuntimeError):
    """An agent's own code failed. ``agent`` names it, ``what`` is the method, ``cause`` the first line
    of what it raised (``Type: message``); ``str()`` is one line fit to print."""

    def __init__(self, agent: str, what: str, cause: str) -> None:
        self.agent, self.what, self.cause = agent, what, cause
        super().__init__(f"agent {agent!r}: {self.reason}")

    @property
    def reason(self) -> str:
        """``act() raised Type: message``, without the agent's name (for callers that add it)."""
        return f"{self.what}() raised {self.cause}"


def note_interrupt() -> None:
    """Count one user interrupt. Call it from any signal handler that raises ``KeyboardInterrupt``."""
    global _interrupts
    _interrupts += 1


def interrupt_count() -> int:
    return _interrupts


def counting() -> bool:
    """Whether a handler is counting SIGINTs, so an agent's own ``KeyboardInterrupt`` can be recognised."""
    return _watchers > 0


def watch() -> None:
    """A handler that calls :func:`note_interrupt` is now installed (pair with :func:`unwatch`)."""
    global _watchers
    _watchers += 1


def unwatch() -> None:
    global _watchers
    _watchers = max(0, _watchers - 1)


def _count_and_raise(signum: int, frame: FrameType | None) -> None:
    note_interrupt()
    raise KeyboardInterrupt


def install_sigint_counter() -> Callable[[], None]:
    """Install the CLI's SIGINT handler: Python's default behaviour (``KeyboardInterrupt``) plus a count.

    Returns a function that puts the previous handler back. Outside the main thread (where signal
    handlers cannot be set) it installs nothing, and agents' ``KeyboardInterrupt`` is re-raised as is.
    """
    if threading.current_thread() is not threading.main_thread():
        return lambda: None
    previous = signal.signal(signal.SIGINT, _count_and_raise)
    watch()

    def restore() -> None:
        signal.signal(signal.SIGINT, previous)
        unwatch()

    return restore


def user_interrupted(since: int) -> bool:
    """Whether a ``KeyboardInterrupt`` caught now is the user's: a SIGINT was counted after ``since``
    (an :func:`interrupt_count` taken before the call), or nothing counts them."""
    return not counting() or _interrupts != since


def head(text: str) -> str:
    """The first line of a possibly multi-line message ("" for an empty one): errors print on one line."""
    lines = text.strip().splitlines()
    return lines[0] if lines else ""


def first_line(exc: BaseException) -> str:
    """``Type: first line of the message``, for reporting an exception raised by someone else's code."""
    text = head(str(exc))
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def call_agent(agent: str, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)``, agent code, and turn anything it raises into :class:`AgentCodeError`.

    ``agent`` is the name to blame and ``what`` the method (``"act"``, ``"reset"``, ``"eval"``,
    ``"create"``). A ``KeyboardInterrupt`` from the user (see :func:`user_interrupted`) passes through.
    """
    before = _interrupts
    try:
        return fn(*args, **kwargs)
    except KeyboardInterrupt:
        if user_interrupted(before):
            raise
        raise AgentCodeError(agent, what, "KeyboardInterrupt (raised by the agent, not a Ctrl-C)") from None
    except SystemExit as exc:
        raise AgentCodeError(agent, what, f"SystemExit (called sys.exit({exc.code!r}))") from None
    except BaseException as exc:  # noqa: BLE001 - Exception, GeneratorExit, odd BaseException subclasses
        raise AgentCodeError(agent, what, first_line(exc)) from exc


class CallTimedOut(Exception):
    """A call did not return within ``waited`` seconds. It may still be running in its abandoned
    daemon thread; whatever it returns or raises from now on is dropped."""

    def __init__(self, waited: float) -> None:
        self.waited = waited
        super().__init__(f"no return within {waited:.3g} s")


class _Job:
    """One call handed to the worker, and its outcome (written by the worker before ``done`` is set)."""

    __slots__ = ("fn", "done", "value", "error")

    def __init__(self, fn: Callable[[], Any]) -> None:
        self.fn = fn
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


def _serve(jobs: "queue.SimpleQueue[_Job | None]") -> None:
    """The worker: run jobs until told to stop (None). It holds no reference to its Watchdog, so a
    Watchdog nobody uses any more is collected, and its finalizer stops the worker."""
    while True:
        job = jobs.get()
        if job is None:
            return
        try:
            job.value = job.fn()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which re-raises it
            job.error = exc
        job.done.set()
        job = None  # drop the outcome while idle: an abandoned job's late answer is not kept alive here


class Watchdog:
    """Run calls on a daemon worker thread and wait for each at most a given time.

    The worker is started on the first call and reused: handing a call over costs tens of
    microseconds, where starting a thread per call costs hundreds. A call that misses its deadline
    is abandoned together with its worker (the next call starts a fresh one): its late outcome goes
    to a job nobody reads, so it cannot reach a later result. The worker is a daemon thread and
    never keeps the process from exiting.
    """

    def __init__(self, name: str = "arena-watchdog") -> None:
        self.name = name
        self._jobs: "queue.SimpleQueue[_Job | None] | None" = None
        self._stop: Callable[[], Any] | None = None
        self.abandoned = 0  # calls given up on so far

    def call(self, timeout: float, fn: Callable[[], T]) -> T:
        """``fn()`` on the worker thread: its value, or what it raised (re-raised here).

        Raises :class:`CallTimedOut` when it has not returned after ``timeout`` seconds. Thread-local
        state (torch's grad mode, the current CUDA device) is the worker's own: ``fn`` sets what it needs.
        """
        if self._jobs is None:
            self._start()
        assert self._jobs is not None
        job = _Job(fn)
        self._jobs.put(job)
        finished = False
        try:
            finished = job.done.wait(timeout)
        finally:
            if not finished:  # timed out, or the wait itself was interrupted (Ctrl-C)
                self._abandon()
        if not finished:
            raise CallTimedOut(timeout)
        if job.error is not None:
            raise job.error
        return job.value

    def close(self) -> None:
        """Stop the idle worker now (it also stops when the Watchdog is collected)."""
        if self._stop is not None:
            self._stop()
        self._jobs, self._stop = None, None

    def _start(self) -> None:
        jobs: "queue.SimpleQueue[_Job | None]" = queue.SimpleQueue()
        threading.Thread(target=_serve, args=(jobs,), name=self.name, daemon=True).start()
        self._jobs = jobs
        self._stop = weakref.finalize(self, jobs.put, None)

    def _abandon(self) -> None:
        """Leave the busy worker to its call: it stops once the call returns, if it ever does."""
        global _abandoned
        self.abandoned += 1
        _abandoned += 1
        self.close()


def calls_abandoned() -> int:
    """Agent calls this process gave up on (:class:`Watchdog`); their threads may still be running."""
    return _abandoned


def note_native_threads() -> None:
    """Say that this process runs native threads that may still be busy at exit (torch.distributed's
    gloo): the command line then ends it with :func:`end_process`, as after an abandoned call."""
    global _native_threads
    _native_threads = True


def skips_shutdown() -> bool:
    """Whether this process should end without the interpreter's shutdown (see :func:`end_process`)."""
    return _abandoned > 0 or _native_threads


def end_process(code: int) -> None:
    """Exit now with ``code``, skipping the interpreter's shutdown.

    A thread left in an abandoned agent call, or one of gloo's, may be inside native code when the
    interpreter shuts down; it is then unwound from under that code and the process aborts (status
    134, "terminate called without an active exception") after its work was done. Everything is saved
    and closed by the time a command returns, so such a process ends here instead, with its own status.
    """
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: nothing more can be said on it
            pass
    os._exit(code)
