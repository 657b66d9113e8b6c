"""Calling an agent's code and blaming it by name: where an agent's fault becomes an :class:`AgentFailure`.

Every call into an agent (``act``, ``reset``, ``eval``, ``keep_rows``) goes through :func:`checked_act`
or :func:`checked_call`, which catch whatever it raises (``sys.exit`` included, :mod:`arena.guard`) or
changes of the process (its working directory, torch's defaults), and check what it returns, so the
caller gets a failure naming the agent and its role, never a traceback from inside a plugin. A move
that never returns (under a move limit, :func:`timed_move`) gets its agent abandoned (:func:`abandon`):
that instance is never called again in this process.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import torch

    from arena.env.actions import CleanAction
    from arena.guard import Watchdog


class Caller(Protocol):
    """Who a call is blamed on, and its own random stream (:class:`arena.parties.Controller`)."""

    agent: Any
    name: str
    role: str
    rng_seed: int | None
    rng_state: Any

# With a move limit, a move is deemed hung (and its agent abandoned) once it has run for the limit plus
# a grace of max(HANG_GRACE_MIN_S, limit): a move that merely ran over is measured and forfeited, and
# its agent plays its next batch. The first move of a seating may pay one-time costs (CUDA kernels,
# compilation) and is not timed, only bounded: max(FIRST_MOVE_MIN_S, FIRST_MOVE_FACTOR × limit).
HANG_GRACE_MIN_S = 1.0
FIRST_MOVE_MIN_S = 60.0
FIRST_MOVE_FACTOR = 100.0

# Agents whose act() never returned, by id (kept alive, so the id is not reused). The same instance
# serves every batch of a league, and calling it while its earlier call still runs in another thread
# would race with that call: it is never called again.
_abandoned: dict[int, Any] = {}


def abandon(agent: Any) -> None:
    """Never call ``agent`` again: one of its calls is still running in an abandoned thread."""
    _abandoned[id(agent)] = agent


def abandoned(agent: Any) -> bool:
    """Whether ``agent`` was abandoned after a call that never returned."""
    return _abandoned.get(id(agent)) is agent


def hang_bound(move_limit: float, first: bool) -> float:
    """Seconds to wait for one move before abandoning it (see HANG_GRACE_MIN_S and FIRST_MOVE_MIN_S)."""
    if first:
        return max(FIRST_MOVE_MIN_S, FIRST_MOVE_FACTOR * move_limit)
    return move_limit + max(HANG_GRACE_MIN_S, move_limit)


class AgentFailure(RuntimeError):
    """An agent raised (anything, ``sys.exit`` included), or returned a malformed action or NaNs. Names
    the agent and its role, so a tournament can score the forfeit and a user knows whose fault it was.

    When several agents fail in the same step, ``failures`` holds each (agent, role, reason) and the
    game has no result for anyone: the one checked first is not the only one to blame. ``agent``,
    ``role`` and ``reason`` are the first failure's; ``index`` is the failing controller's position
    in its seating (None where the failure came from elsewhere). ``kind`` says what the blamed code is:
    an ``"agent"``, or another plugin called like one (a ``"reward"`` function,
    :class:`arena.battles.Shaping`).
    """

    def __init__(self, agent: str, role: str, reason: str,
                 others: "Sequence[tuple[str, str, str]]" = (), index: int | None = None, kind: str = "agent") -> None:
        self.agent, self.role, self.reason, self.index, self.kind = agent, role, reason, index, kind
        self.failures: tuple[tuple[str, str, str], ...] = ((agent, role, reason), *others)
        if others:
            parts = "; ".join(f"agent {a!r} ({r}) {why}" for a, r, why in self.failures)
            super().__init__(f"no result: {len(self.failures)} agents failed in the same step: {parts}")
        else:
            super().__init__(f"{kind} {agent!r} ({role}) {reason}")

    @property
    def no_result(self) -> bool:
        """Several agents failed at once: a draw/no-result for all of them, not a win for anyone."""
        return len(self.failures) > 1

    @classmethod
    def combine(cls, failures: "Sequence[AgentFailure]") -> "AgentFailure":
        """One failure standing for all those of one step."""
        flat = [f for failure in failures for f in failure.failures]
        return cls(*flat[0], others=flat[1:])


def raise_failures(failures: "Sequence[AgentFailure]") -> None:
    """Raise the failures of one step together (nothing when there are none)."""
    if failures:
        raise AgentFailure.combine(failures)


def checked_act(agent: Any, obs: dict[str, "torch.Tensor"], name: str, role: str, num_envs: int,
                device: "torch.device", raise_now: bool = True, team_size: int = 1) -> "CleanAction | AgentFailure":
    """Call ``agent.act`` and validate what comes back, blaming the agent by name for any fault.

    With ``raise_now=False`` the failure is returned instead of raised, so that the caller can see
    whether another agent failed in the same step before deciding who is to blame.
    """
    from arena.env import check_action
    from arena.guard import AgentCodeError, call_agent

    try:
        action = call_agent(name, "act", agent.act, obs)
        return check_action(action, num_envs, device, who="action", team_size=team_size)
    except AgentCodeError as exc:
        failure = AgentFailure(name, role, exc.done)
    except ValueError as exc:
        failure = AgentFailure(name, role, f"returned a malformed action: {exc}")
    if raise_now:
        raise failure
    return failure


def checked_call(fn: Any, name: str, role: str, what: str, *args: Any) -> AgentFailure | None:
    """Run one of the agent's methods (``eval``, ``reset``, ``train``); its failure, or None."""
    from arena.guard import AgentCodeError, call_agent

    try:
        call_agent(name, what, fn, *args)
    except AgentCodeError as exc:
        return AgentFailure(name, role, exc.reason)
    return None


def on_own_stream(c: Caller, device: "torch.device", call: Callable[[], Any]) -> Any:
    """``call()`` with torch's global generator (CPU, and ``device`` when it is a GPU) switched to ``c``'s own
    stream (none: the global one), so an agent's draws do not depend on which agents drew before it."""
    if c.rng_seed is None:
        return call()
    import torch

    cuda = device.type == "cuda"
    outer_cpu = torch.get_rng_state()
    outer_cuda = torch.cuda.get_rng_state(device) if cuda else None
    if c.rng_state is None:
        torch.manual_seed(c.rng_seed)
    else:
        torch.set_rng_state(c.rng_state[0])
        if cuda:
            torch.cuda.set_rng_state(c.rng_state[1], device)
    try:
        return call()
    finally:
        c.rng_state = (torch.get_rng_state(), torch.cuda.get_rng_state(device) if cuda else None)
        torch.set_rng_state(outer_cpu)
        if outer_cuda is not None:
            torch.cuda.set_rng_state(outer_cuda, device)


def timed_move(c: Caller, battles: int, move: Callable[[], "CleanAction | AgentFailure"], limit: float,
               first: bool, device: "torch.device", watchdog: "Watchdog") -> "CleanAction | AgentFailure":
    """``move()`` (``c``'s act on ``battles`` battles) on the watchdog's thread, against the move limit.

    A move over the limit is a failure, measured; one still running at :func:`hang_bound` is a failure
    too, and its agent is abandoned, since the thread running it cannot be stopped. The ``first`` move is
    not timed, only bounded. On a GPU the clock includes a synchronize before the move (others' queued
    work is not this agent's) and after it (its own is).
    """
    import torch

    from arena.guard import CallTimedOut

    # grad mode and the current CUDA device are per thread: the worker plays under the caller's
    grad, inference = torch.is_grad_enabled(), torch.is_inference_mode_enabled()
    place = torch.cuda.device(device) if device.type == "cuda" else nullcontext()  # a new thread starts on GPU 0

    def run() -> tuple["CleanAction | AgentFailure", float]:
        with torch.inference_mode() if inference else nullcontext(), torch.set_grad_enabled(grad), place:
            t0 = time.perf_counter()
            result = move()
            if not isinstance(result, AgentFailure):
                _synchronize(device)
            return result, time.perf_counter() - t0

    bound = hang_bound(limit, first)
    _synchronize(device)
    try:
        result, took = on_own_stream(c, device, lambda: watchdog.call(bound, run))
    except CallTimedOut:
        abandon(c.agent)
        which = "its first move" if first else "a move"
        return AgentFailure(c.name, c.role, f"ran out of time: {which} on {battles} battles did not return "
                            f"within {bound:g} s, so it is abandoned and not called again (time_per_move {limit:g} s)")
    if isinstance(result, AgentFailure) or first or took <= limit:
        return result
    return AgentFailure(c.name, c.role, f"ran out of time: one move took {took:.3g} s on {battles} battles "
                        f"(time_per_move {limit:g} s)")


def _synchronize(device: "torch.device") -> None:
    if device.type == "cuda":
        import torch

        torch.cuda.synchronize(device)
