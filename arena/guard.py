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
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

T = TypeVar("T")

_interrupts = 0  # SIGINTs (and signals turned into KeyboardInterrupt) noted since start-up
_watchers = 0  # handlers currently counting; 0 means "cannot tell a real Ctrl-C from an agent's"


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


def call_agent(agent: str, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """Run ``fn(*args, **kwargs)``, agent code, and turn anything it raises into :class:`AgentCodeError`.

    ``agent`` is the name to blame and ``what`` the method (``"act"``, ``"reset"``, ``"eval"``,
    ``"create"``). A ``KeyboardInterrupt`` from the user (see :func:`user_interrupted`) passes through.
    """
    from arena.agents import first_line

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
