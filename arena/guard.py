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

An agent shares the process with the arena, so a call must also leave the process as it found it:
torch's default dtype and device, gradient tracking and the working directory are read before each
call and put back after it, and a change is that agent's fault (``act() changed the working
directory ...``) as much as an exception is (:class:`ProcessState`). A call that forks and whose child
comes back out of the agent's code (returns, raises, ``sys.exit``) ends that child on the spot with
``os._exit``: the arena's work goes on in one process only.

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
    of what it raised (``Type: message``), or with ``changed`` what it changed in the process
    (``changed the working directory from A to B (put back)``); ``str()`` is one line fit to print."""

    def __init__(self, agent: str, what: str, cause: str, changed: bool = False) -> None:
        self.agent, self.what, self.cause, self.changed = agent, what, cause, changed
        super().__init__(f"agent {agent!r}: {self.reason}")

    @property
    def reason(self) -> str:
        """``act() raised Type: message`` (or ``act() changed ...``), without the agent's name (for
        callers that add it)."""
        return f"{self.what}() {self.cause}" if self.changed else f"{self.what}() raised {self.cause}"

    @property
    def done(self) -> str:
        """What the agent did, for a caller that names the method itself or not at all: ``raised
        Type: message``, or ``act() changed ...`` (a change always says in which call)."""
        return self.reason if self.changed else f"raised {self.cause}"


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
    What the call changed of the process (:class:`ProcessState`) is put back; a call that returned
    normally but changed something raises :class:`AgentCodeError` with ``changed`` set. A forked child
    that comes back out of ``fn`` ends here (:meth:`ProcessState.end_forked_child`).
    """
    before = _interrupts
    state = ProcessState.take()
    try:
        result = fn(*args, **kwargs)
    except KeyboardInterrupt:
        state.end_forked_child(agent, what, 1)
        also = state.restore()
        if user_interrupted(before):
            raise
        raise AgentCodeError(agent, what, "KeyboardInterrupt (raised by the agent, not a Ctrl-C)" + also) from None
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
        state.end_forked_child(agent, what, code)
        also = state.restore()
        raise AgentCodeError(agent, what, f"SystemExit (called sys.exit({exc.code!r})){also}") from None
    except BaseException as exc:  # noqa: BLE001 - Exception, GeneratorExit, odd BaseException subclasses
        state.end_forked_child(agent, what, 1)
        also = state.restore()
        raise AgentCodeError(agent, what, first_line(exc) + also) from exc
    state.end_forked_child(agent, what, 0)
    changes = state.put_back()
    if changes:
        raise AgentCodeError(agent, what, "changed " + "; and ".join(changes), changed=True)
    return result


class ProcessState:
    """What of the process an agent call must leave as it found it, read before the call.

    torch's default dtype (an env step mixing float64 into its float32 tensors fails deep inside), its
    default device (every tensor the arena creates after it would go there), gradient tracking (the
    update of a trainer needs it on, a rollout off), the working directory (a relative ``--out``
    would be written elsewhere, or not at all) and the process itself (a forked child must not go on
    playing the league its parent plays). torch is read only when it is loaded; an agent that loads it
    is checked against torch's own defaults.
    """

    __slots__ = ("pid", "cwd", "dtype", "device", "grad")

    def __init__(self, pid: int, cwd: str | None, dtype: Any, device: Any, grad: bool | None) -> None:
        self.pid, self.cwd, self.dtype, self.device, self.grad = pid, cwd, dtype, device, grad

    @classmethod
    def take(cls) -> "ProcessState":
        torch = sys.modules.get("torch")
        try:
            cwd: str | None = os.getcwd()
        except OSError:  # the directory was removed under us: nothing to put back
            cwd = None
        if torch is None or not hasattr(torch, "get_default_device"):  # not loaded, or still loading
            return cls(os.getpid(), cwd, None, None, None)
        return cls(os.getpid(), cwd, torch.get_default_dtype(), torch.get_default_device(), torch.is_grad_enabled())

    def end_forked_child(self, agent: str, what: str, code: int) -> None:
        """In a child the agent forked, which came back out of its code: say so on stderr and end it now
        (``os._exit``: no clean-up, no flush of the parent's buffered output, which would print twice)."""
        if os.getpid() == self.pid:
            return
        try:
            os.write(2, f"arena: a process that agent {agent!r} forked in {what}() came back out of it; it is "
                        f"ended (status {code}), its parent plays on\n".encode(errors="replace"))
        except OSError:
            pass
        os._exit(code)

    def put_back(self) -> list[str]:
        """Restore what differs from this state; returns each change, said for a message."""
        changes = []
        try:
            now = os.getcwd()
        except OSError:
            now = None
        if self.cwd is not None and now != self.cwd:
            try:
                os.chdir(self.cwd)
                back = "put back"
            except OSError as exc:
                back = f"cannot be put back: {exc.strerror or exc}"
            changes.append(f"the working directory from {self.cwd} to {now or 'a removed one'} ({back})")
        torch = sys.modules.get("torch")
        if torch is None or not hasattr(torch, "get_default_device"):
            return changes
        cpu = torch.device("cpu")
        dtype = self.dtype if self.dtype is not None else torch.float32  # torch's own defaults
        device = self.device if self.device is not None else cpu
        grad = self.grad if self.grad is not None else True
        if (now_dtype := torch.get_default_dtype()) != dtype:
            changes.append(f"torch's default dtype from {dtype} to {now_dtype} (put back)")
            torch.set_default_dtype(dtype)
        if (now_device := torch.get_default_device()) != device:
            changes.append(f"torch's default device from {device} to {now_device} (put back)")
            torch.set_default_device(None if device == cpu else device)
        if torch.is_grad_enabled() != grad:
            changes.append(f"gradient tracking from {'on' if grad else 'off'} to {'off' if grad else 'on'} "
                           f"(put back)")
            torch.set_grad_enabled(grad)
        return changes

    def restore(self) -> str:
        """:meth:`put_back`, after a call that raised: the changes as a note to add to what it raised."""
        changes = self.put_back()
        return f" (it also changed {'; and '.join(changes)})" if changes else ""


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
