"""A league as an env: the learner's side of a batch of battles whose p2 an opponent pool flies.

rsl_rl's runner consumes a ``VecEnv``: ``step(actions)`` returns observations, rewards, dones and
extras, and the algorithm builds its transitions from them. :class:`LeagueEnv` is that env for a
training league. It owns everything about who the learner plays: the pool's draw at each rollout (and
the restart of the battles whose opponent changed, so that each game has one opponent), the reward
shaping, the tally of the games that end and their credit to PFSP, and a teacher's labels of the
learner's observations. Its batch is one row per aircraft of p1, as a shared policy reads it: a duel's
``[N, ...]``, a team battle's ``[N·T, ...]``, in :func:`arena.env.teams.flatten_seats` order.

A rollout is :meth:`begin_rollout`, ``n`` :meth:`step` calls and :meth:`end_rollout`: the pool draws
and credits once a rollout, not once a step.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import torch

from arena.battles import LearnerSide
from arena.env import TensorEnv
from arena.env.teams import seat_rows
from arena.loop import Seating
from arena.training.episodes import EpisodeTally
from arena.training.opponents import OpponentPool
from arena.training.pfsp import GatherObjects

Obs = dict[str, torch.Tensor]  # "policy": [rows, K] observation vectors; "critic": [rows, S] global states


class Labeller(Protocol):
    """A teacher: what it would do in each of the learner's envs (kickstarting)."""

    def label(self, obs: dict[str, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]: ...

    def reset(self, dones: torch.Tensor) -> None: ...

    def check_nans(self) -> None: ...


class LeagueEnv:
    """``env``'s battles, p1 flown by the caller one row per aircraft, p2 by ``pool``.

    ``keys`` are the observation features the learner reads, in order. ``reward_fn`` (a reward's name
    or a function) is added to p1's env reward (:class:`~arena.battles.LearnerBattles`' signature).
    With ``global_state`` the observations carry p1's global state per row for a privileged critic
    (``"critic"``). A ``teacher`` labels every observation the learner acts on; its labels come back in
    the extras.
    """

    def __init__(self, env: TensorEnv, pool: OpponentPool, keys: tuple[str, ...], *,
                 reward_fn: str | Callable[..., torch.Tensor] | None = None, teacher: Labeller | None = None,
                 global_state: bool = False) -> None:
        self.pool, self.teacher = pool, teacher
        self.seats = pool.team_size
        nobody = torch.full((2, env.num_envs), -1, dtype=torch.long)  # p2 is seated by the first rollout's draw
        self.side = LearnerSide(env, Seating([], nobody, self.seats, env.device), self.seats, keys, reward_fn,
                                global_state)
        self.side.obs = env.reset()
        self.env, self.num_envs, self.device = env, env.num_envs, env.device
        self.tally = EpisodeTally(env.num_envs, self.seats, env.device)

    @property
    def rows(self) -> int:
        """The batch: one row per aircraft of p1."""
        return self.num_envs * self.seats

    def observations(self, obs: dict[str, dict[str, torch.Tensor]] | None = None,
                     state: torch.Tensor | None = None) -> Obs:
        """The learner's rows of ``obs`` (now, when None), with p1's global ``state`` for a privileged critic."""
        side = self.side
        if obs is None:
            assert side.obs is not None
            obs = side.obs
        out = {"policy": side.vector(obs["p1"]).reshape(self.rows, -1)}
        if side.global_state:
            out["critic"] = seat_rows(self.env.global_state("p1") if state is None else state, self.seats)
        return out

    def set_obs(self, obs: dict[str, dict[str, torch.Tensor]]) -> None:
        """The battles' observation after the env's state was loaded (a resumed run)."""
        self.side.obs = obs

    # -- a rollout ----------------------------------------------------------------------------------

    def begin_rollout(self, generator: torch.Generator, played: bool = True) -> torch.Tensor | None:
        """The pool's draw, and who flies p2 for the whole rollout. ``played``: the battles have been
        played (not a fresh run's): those of a changed opponent start over. Returns the ``[N]`` mask of
        the battles restarted, for the learner to forget (None: none)."""
        slots, seating = self.pool.start_rollout(generator, self.device)
        self.side.reseat(seating)
        self.tally = EpisodeTally(self.num_envs, self.seats, self.device)
        if not played or not slots:
            return None
        mask = torch.zeros(self.num_envs, dtype=torch.bool, device=self.device)
        for slot in slots:
            mask[slot.start:slot.stop] = True
        self.restart(mask)
        return mask

    def restart(self, mask: torch.Tensor) -> None:
        """New battles in the envs of the ``[N]`` bool ``mask``, forgotten by their opponents and the teacher:
        abandoned ones were bootstrapped as truncated by the last rollout's returns; nothing is credited for them."""
        self.side.restart(mask)
        if self.teacher is not None:
            self.teacher.reset(mask)

    def step(self, actions: torch.Tensor) -> tuple[Obs, torch.Tensor, torch.Tensor, dict[str, Any]]:
        """Step ``[rows, 3]`` actions (rudder, throttle, fire > 0); finished battles restart at once.

        Returns the observations after the step, the shaped rewards and dones per row, and extras:
        ``final_obs`` (the observations before a restart, as :meth:`observations` gives them),
        ``truncated`` per row (cut off by the time limit: the learner bootstraps those), and the
        teacher's labels of the observation acted on (``teacher``: rudder, fire).
        """
        side = self.side
        extras: dict[str, Any] = {}
        if self.teacher is not None:
            assert side.obs is not None
            extras["teacher"] = self.teacher.label(side.obs["p1"])
        shaped = actions.view(self.num_envs, self.seats, 3) if self.seats > 1 else actions
        turn, reward = side.play(shaped)
        dones, infos = turn.dones, turn.infos
        if self.teacher is not None:
            self.teacher.reset(dones)
        self.tally.add(dones, infos)
        extras["final_obs"] = self.observations(infos["final_obs"], infos.get("final_global_state", {}).get("p1"))
        extras["truncated"] = seat_rows(infos["truncated"], self.seats)
        return self.observations(turn.next_obs), reward.reshape(-1), seat_rows(dones, self.seats), extras

    def end_rollout(self, gather: GatherObjects | None = None) -> None:
        """Refuse a reward function that returned NaN or a value out of bounds (read once a rollout, before the
        rollout is learned from), a teacher or opponent that returned NaN, then credit the games that ended
        to the pool (``gather``: pool every process's PFSP records)."""
        self.side.check_rewards()
        if self.teacher is not None:
            self.teacher.check_nans()
        sums = self.tally.sums
        self.pool.end_rollout(sums["win"], sums["draw"], sums["loss"], gather)
