"""A league as it is played: who plays, where, in which env, from which starts, under which move budget.

Resolved once from the league file (:func:`arena.tournament.runner.resolve_league`), a
:class:`LeaguePlan` is the only thing :func:`~arena.tournament.executor.play`, the batch player,
the replays and a Ray task are given about the league. Tests and benchmarks make one with
:meth:`LeaguePlan.of` from a list of agents.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

    from arena.agents import Agent
    from arena.env import EnvConfig
    from arena.tournament.participants import Participant

DEFAULT_MAX_ENVS = 16384


@dataclass(frozen=True)
class LeaguePlan:
    """Everything about a league that playing any of its batches needs.

    ``agents`` are by league position (the units' ``p1``/``p2``); a Ray worker's plan holds only its
    batch's participants (None elsewhere) and the driver sends the plan with none at all. ``game_seeds``
    gives every game its own start (``game_seeds(p1, p2, game)``; None: each batch's envs draw theirs
    from the batch seed). ``time_per_move`` (seconds) bounds each act() call: a slower one forfeits.
    """

    agents: Sequence["Agent | None"]
    names: Sequence[str]
    device: "torch.device"
    env_config: "EnvConfig | None" = None
    seed: int = 0
    max_envs: int = DEFAULT_MAX_ENVS
    time_per_move: float | None = None
    game_seeds: Callable[[int, int, int], int] | None = field(default=None, compare=False)
    participants: Sequence["Participant"] = ()  # who the agents are (a league file's); a Ray worker builds from them

    @classmethod
    def of(cls, agents: Sequence["Agent"], device: "str | torch.device" = "cpu", **settings: Any) -> "LeaguePlan":
        """A plan for ``agents`` named ``#0``, ``#1``, … (unless ``names`` is given) on ``device``."""
        from arena.env import resolve_device

        names = settings.pop("names", None) or [f"#{i}" for i in range(len(agents))]
        return cls(list(agents), list(names), resolve_device(device), **settings)
