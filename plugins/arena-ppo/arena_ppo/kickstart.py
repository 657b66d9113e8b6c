"""Kickstarting (Schmitt et al., 2018): a teacher's actions as an extra loss on the learner.

The teacher flies no battle. At every rollout step it reads the learner's own observation and says
what it would do; the update adds ``ppo.kickstart_coef · (squared error of the rudder + cross-entropy
of the trigger)`` against those labels, on the states the learner itself visits (as DAgger labels
them). The weight holds for the whole run: it keeps the learner near the teacher's doctrine for good,
as AlphaStar kept its agents near their supervised policy, while the reward decides what it does
better (fading it out lost what it taught: docs/experiments/).

Any agent that can be an opponent can teach: a scripted doctrine (``ace``) or a checkpoint
(``ckpt:PATH``). A scripted teacher keeps its per-env memory as if its orders had been obeyed: it
is labelling, not flying.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arena.agent_calls import checked_act, checked_call
from arena.match import AgentFailure
from arena.training import (
    OpponentSpec,
    OpponentSpecError,
    capture_agent_memory,
    parse_opponent_specs,
    restore_agent_memory,
)

TEACHER_ROLE = "the kickstart teacher"


def teacher_spec(text: str) -> OpponentSpec:
    """The ``--kickstart`` value as an opponent spec: an agent name or ``ckpt:PATH``, nothing drawn."""
    spec = parse_opponent_specs([text])[0]
    if spec.kind not in ("agent", "checkpoint"):
        raise OpponentSpecError(f"--kickstart {text}: expected an agent name or ckpt:PATH, not a pool "
                                f"({spec.kind} draws its opponents; a teacher is one fixed agent)")
    return spec


def check_teacher(text: str, team_size: int) -> OpponentSpec:
    """The teacher's spec, refused where kickstarting cannot label (team battles)."""
    if team_size != 1:
        raise OpponentSpecError(f"--kickstart labels duels only: --team-size is {team_size}, use 1")
    return teacher_spec(text)


class Teacher:
    """The teacher agent and its labels: what it would do in each of the learner's envs."""

    def __init__(self, spec: OpponentSpec, make_agent: Callable[[OpponentSpec], Any], device: torch.device) -> None:
        """``spec``: the plan's teacher, checked by :func:`check_teacher`; it labels as many envs as it is shown."""
        self.spec = spec
        self.name = self.spec.label
        self.agent = make_agent(self.spec)  # in eval mode, as an opponent is
        self.device = device
        self.nan_envs: torch.Tensor | None = None  # [N] labelled NaN since the last check

    def label(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """(rudder in [-1, 1], fire in {0., 1.}), each [N], for p1's observation ``obs`` of N envs. NaN
        labels are noted on the device and refused by :meth:`check_nans` before the rollout is used."""
        envs = next(iter(obs.values())).shape[0]
        action = checked_act(self.agent, obs, self.name, TEACHER_ROLE, envs, self.device)
        assert not isinstance(action, AgentFailure)
        nan = action.nan_count > 0
        self.nan_envs = nan if self.nan_envs is None else self.nan_envs | nan
        return action.rudder, action.fire.float()

    def check_nans(self) -> None:
        """Refuse a teacher that labelled NaN since the last call (one host read, once a rollout): a NaN
        label would teach nothing but NaN."""
        count = 0 if self.nan_envs is None else int(self.nan_envs.sum())
        self.nan_envs = None
        if count:
            raise AgentFailure(self.name, TEACHER_ROLE, f"returned NaN in {count} env(s)")

    def reset(self, dones: torch.Tensor) -> None:
        """Battles that ended start afresh for the teacher too (every step: a mask with none set changes
        nothing, and asking whether any is set would wait for the device)."""
        reset = getattr(self.agent, "reset", None)
        if callable(reset):
            failure = checked_call(reset, self.name, TEACHER_ROLE, "reset", dones)
            if failure is not None:
                raise failure

    def state_dict(self) -> dict[str, Any]:
        """The teacher's per-env memory, as an opponent's is kept, for an exact resume."""
        return {"name": self.name, "memory": capture_agent_memory(self.agent)}

    def load_state_dict(self, state: dict[str, Any] | None) -> None:
        """Put the memory back. A checkpoint of a run that had no teacher, or another one (``--kickstart``
        changed on resume), has none for this one: it starts fresh."""
        if isinstance(state, dict) and state.get("name") == self.name and isinstance(state.get("memory"), dict):
            restore_agent_memory(self.agent, state["memory"])
