"""Collecting a rollout: the learner (sampling) against an opponent pool, into the rollout storage.

A :class:`Rollouts` is handed the learner, the env, the storage and what else a step needs (the
teacher, the reward shaping, the random stream, the process group), and keeps what carries from one
rollout to the next: the current observation and a recurrent learner's hidden state per aircraft row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from arena.env import TensorEnv
from arena.env.teams import flatten_seats
from arena.loop import GameLoop
from arena.training import OpponentPool
from arena.training.distributed import Group
from arena.training.opponents import Slot
from arena_ppo import distributed
from arena_ppo.agent import PPOAgent
from arena_ppo.kickstart import Teacher
from arena_ppo.runners.episodes import EpisodeTally
from arena_ppo.storage import RolloutStorage, Transition

RewardFn = Callable[..., torch.Tensor]


class Rollouts:
    """Fills ``storage`` with the learner's rollouts in ``env``, one :meth:`collect` at a time."""

    def __init__(self, agent: PPOAgent, env: TensorEnv, storage: RolloutStorage, seats: int,
                 generators: dict[str, torch.Generator], gamma: float, gae_lambda: float,
                 reward_fn: RewardFn | None = None, teacher: Teacher | None = None, active_masks: bool = False,
                 group: Group | None = None, hidden_sizes: tuple[int, int] | None = None) -> None:
        self.agent, self.env, self.storage, self.seats = agent, env, storage, seats
        self.generators, self.gamma, self.gae_lambda = generators, gamma, gae_lambda
        self.reward_fn, self.teacher, self.active_masks, self.group = reward_fn, teacher, active_masks, group
        self.device = env.device
        rows = env.num_envs * seats
        # The learner's recurrent state per aircraft row, carried from one rollout to the next (and saved).
        self.hidden: dict[str, torch.Tensor] = ({
            "actor": torch.zeros(rows, hidden_sizes[0], device=self.device),
            "critic": torch.zeros(rows, hidden_sizes[1], device=self.device)} if hidden_sizes else {})
        self.obs: dict[str, Any] = env.reset()

    def _seat_rows(self, value: torch.Tensor) -> torch.Tensor:
        """A per-env [N, ...] tensor repeated for each of p1's seats: [N·T, ...] (as it is in a duel)."""
        return value if self.seats == 1 else value.repeat_interleave(self.seats, 0)

    def _global_state(self, state: torch.Tensor | None = None) -> torch.Tensor | None:
        """p1's global state (now, or ``state``) per aircraft row, for a privileged critic; None otherwise."""
        if not self.agent.privileged_critic:
            return None
        return self._seat_rows(self.env.global_state("p1") if state is None else state)

    @torch.no_grad()
    def collect(self, pool: OpponentPool, played: bool = True) -> dict[str, float]:
        """Fill the storage with one rollout against ``pool``; returns statistics of the episodes that ended
        in it (over every process). ``played``: the envs have played before (not a fresh run's)."""
        agent, env, storage = self.agent, self.env, self.storage
        n, seats = env.num_envs, self.seats
        agent.train(True)
        slots = pool.begin_rollout(self.generators["shuffle"])
        if played:
            self.restart_battles(slots)
        loop = GameLoop(env, pool.seating(self.device))
        tally = EpisodeTally(n, seats, self.device)
        recurrent = agent.recurrent
        teacher = self.teacher
        storage.clear()
        if self.group is not None:
            distributed.track_rollout(self.group, agent)
        for _ in range(storage.n_steps):
            obs_p1 = flatten_seats(self.obs["p1"])  # [N·T] rows: every aircraft of p1
            features = agent.training_input(obs_p1)
            critic_in = agent.critic_input(features, self._global_state())
            actor_h, critic_h = self.hidden.get("actor"), self.hidden.get("critic")
            out = agent.policy(features, self.generators["action"], hidden=actor_h)
            value, critic_next = agent.values(critic_in, critic_h)
            labels = teacher.label(self.obs["p1"]) if teacher is not None else (None, None)
            rudder, fire = out.rudder, out.fire > 0.5
            if seats > 1:
                rudder, fire = rudder.view(n, seats), fire.view(n, seats)
            action = {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}
            turn = loop.step(self.obs, given={"p1": action})
            next_obs, dones, infos = turn.next_obs, turn.dones, turn.infos
            if teacher is not None:
                teacher.reset(dones)

            env_reward = turn.rewards["p1"].reshape(-1)
            seat_dones = self._seat_rows(dones)
            final_p1 = flatten_seats(infos["final_obs"]["p1"])  # = next obs where the episode goes on
            reward = env_reward
            if self.reward_fn is not None:
                reward = reward + self.reward_fn(obs_p1, final_p1, env_reward, seat_dones, infos)
            truncated = self._seat_rows(infos["truncated"])
            final_features = agent.training_input(final_p1, commit=False)  # the step after features'
            final_state = self._global_state(infos["final_global_state"]["p1"]) if agent.privileged_critic else None
            final_value = agent.values(agent.critic_input(final_features, final_state, commit=False), critic_next)[0]
            storage.add(Transition(
                obs=features, critic_obs=critic_in if agent.privileged_critic else None, u=out.u, fire=out.fire,
                log_prob=out.log_prob, value=value, reward=reward, done=seat_dones,
                bootstrap=torch.where(truncated, final_value, torch.zeros_like(final_value)),
                mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit,
                active=obs_p1["alive"] > 0.5 if self.active_masks else None,
                actor_hidden=actor_h, critic_hidden=critic_h,
                teacher_rudder=labels[0], teacher_fire=labels[1],
            ))
            if recurrent:  # a battle that restarted starts from a zero state
                keep = (~seat_dones).unsqueeze(-1).to(features.dtype)
                assert out.hidden is not None and critic_next is not None
                self.hidden = {"actor": out.hidden * keep, "critic": critic_next * keep}

            tally.add(dones, infos)
            self.obs = next_obs

        features = agent.training_input(flatten_seats(self.obs["p1"]), commit=False)
        last_values = agent.values(agent.critic_input(features, self._global_state(), commit=False),
                                   self.hidden.get("critic"))[0]
        storage.compute_returns(last_values, self.gamma, self.gae_lambda)
        pool.check_nans()  # before the rollout is used: NaN from an opponent stops the run, as in play
        if self.group is not None:  # every process's normalizers: the same again, from all the rollouts
            distributed.merge_rollout(self.group, agent)
        self_play = pool.self_play if self.group is not None else None
        before = distributed.record_snapshot(self_play) if self_play is not None else None
        pool.record(tally.sums["win"], tally.sums["draw"], tally.sums["loss"])
        if self_play is not None and before is not None:  # every process draws by the same PFSP records
            distributed.share_records(self.group, self_play, before)  # type: ignore[arg-type]
        return tally.summary(self.group)

    def restart_battles(self, slots: list[Slot]) -> None:
        """New battles in the envs of ``slots``, whose opponent just changed: each game is played
        against one opponent. The battles abandoned were bootstrapped as truncated by the last
        rollout's returns; nothing is credited for them."""
        if not slots:
            return
        mask = torch.zeros(self.env.num_envs, dtype=torch.bool, device=self.device)
        for slot in slots:
            mask[slot.start:slot.stop] = True
        self.obs = self.env.restart_envs(torch.nonzero(mask).flatten())
        if self.teacher is not None:
            self.teacher.reset(mask)
        if self.hidden:
            keep = (~self._seat_rows(mask)).unsqueeze(-1).to(self.hidden["actor"].dtype)
            self.hidden = {k: v * keep for k, v in self.hidden.items()}

    def restart_all(self) -> None:
        """New battles everywhere (a new stage of the run), with nothing carried over."""
        self.restart_battles([Slot(0, 0, self.env.num_envs)])
