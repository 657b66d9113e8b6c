"""Collecting a rollout: the learner (sampling) against an opponent pool, into the rollout storage.

One step of a rollout is :func:`rollout_step`, a function of tensors in the manner of the env's own
step: the learner acts, the opponents act, the env steps, the reward is shaped, and the transition
comes back with the next observation and recurrent state. It keeps nothing between calls; what
carries from one step (and one rollout) to the next, the observation and the learner's hidden state,
is :class:`Rollouts`' own, and is saved with a checkpoint. The loop calls the step ``n_steps`` times
and speaks to the opponent pool twice a rollout: when it starts (the draw, and who flies p2) and when
it ends (NaN check and the games to credit).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import torch

from arena.env import TensorEnv
from arena.env.teams import flatten_seats, seat_rows
from arena.loop import GameLoop
from arena.training import OpponentPool, Slot
from arena_ppo.agent import PPOAgent
from arena_ppo.algorithms import PPO
from arena_ppo.kickstart import Teacher
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.episodes import EpisodeTally
from arena_ppo.storage import Transition

RewardFn = Callable[..., torch.Tensor]
Hidden = dict[str, torch.Tensor]  # a recurrent learner's "actor" and "critic" state per aircraft row ({} otherwise)


@dataclass(frozen=True)
class StepParts:
    """What every step of one rollout is made of: the learner, the game it plays and how it is rewarded."""

    agent: PPOAgent
    loop: GameLoop  # the env, with the opponent pool's seating flying p2
    seats: int
    generator: torch.Generator  # the learner's action stream
    reward_fn: RewardFn | None = None
    teacher: Teacher | None = None
    active_masks: bool = False  # keep whether each aircraft was alive, so dead ones add no loss (MAPPO)

    def global_state(self, state: torch.Tensor | None = None) -> torch.Tensor | None:
        """p1's global state (now, or ``state``) per aircraft row, for a privileged critic; None otherwise."""
        if not self.agent.privileged_critic:
            return None
        return seat_rows(self.loop.env.global_state("p1") if state is None else state, self.seats)


class Step(NamedTuple):
    """What one rollout step returns."""

    transition: Transition
    next_obs: dict[str, Any]
    hidden: Hidden
    dones: torch.Tensor  # [N] per env
    infos: dict[str, Any]


def rollout_step(parts: StepParts, obs: dict[str, Any], hidden: Hidden) -> Step:
    """One step of every env: the learner samples on p1's rows, the pool acts for p2, the env steps, and
    the transition to store is made (the shaped reward, and the value of the final observation where a
    battle was cut off by the time limit, which the returns bootstrap from)."""
    agent, seats = parts.agent, parts.seats
    n = parts.loop.env.num_envs
    obs_p1 = flatten_seats(obs["p1"])  # [N·T] rows: every aircraft of p1
    features = agent.training_input(obs_p1)
    critic_in = agent.critic_input(features, parts.global_state())
    actor_h, critic_h = hidden.get("actor"), hidden.get("critic")
    out = agent.policy(features, parts.generator, hidden=actor_h)
    value, critic_next = agent.values(critic_in, critic_h)
    labels = parts.teacher.label(obs["p1"]) if parts.teacher is not None else (None, None)
    rudder, fire = out.rudder, out.fire > 0.5
    if seats > 1:
        rudder, fire = rudder.view(n, seats), fire.view(n, seats)
    action = {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}
    turn = parts.loop.step(obs, given={"p1": action})
    dones, infos = turn.dones, turn.infos
    if parts.teacher is not None:
        parts.teacher.reset(dones)

    env_reward = turn.rewards["p1"].reshape(-1)
    seat_dones = seat_rows(dones, seats)
    final_p1 = flatten_seats(infos["final_obs"]["p1"])  # = next obs where the episode goes on
    reward = env_reward
    if parts.reward_fn is not None:
        reward = reward + parts.reward_fn(obs_p1, final_p1, env_reward, seat_dones, infos)
    truncated = seat_rows(infos["truncated"], seats)
    final_features = agent.training_input(final_p1, commit=False)  # the step after features'
    final_state = parts.global_state(infos["final_global_state"]["p1"]) if agent.privileged_critic else None
    final_value = agent.values(agent.critic_input(final_features, final_state, commit=False), critic_next)[0]
    transition = Transition(
        obs=features, critic_obs=critic_in if agent.privileged_critic else None, u=out.u, fire=out.fire,
        log_prob=out.log_prob, value=value, reward=reward, done=seat_dones,
        bootstrap=torch.where(truncated, final_value, torch.zeros_like(final_value)),
        mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit,
        active=obs_p1["alive"] > 0.5 if parts.active_masks else None,
        actor_hidden=actor_h, critic_hidden=critic_h,
        teacher_rudder=labels[0], teacher_fire=labels[1],
    )
    if agent.recurrent:  # a battle that restarted starts from a zero state
        keep = (~seat_dones).unsqueeze(-1).to(features.dtype)
        assert out.hidden is not None and critic_next is not None
        hidden = {"actor": out.hidden * keep, "critic": critic_next * keep}
    return Step(transition, turn.next_obs, hidden, dones, infos)


class Rollouts:
    """Fills the update's storage with the learner's rollouts in ``env``, one :meth:`collect` at a time, and keeps
    what carries from one rollout to the next: the current observation and a recurrent learner's hidden
    state per aircraft row."""

    def __init__(self, agent: PPOAgent, env: TensorEnv, *, seats: int, generators: dict[str, torch.Generator],
                 sync: ProcessSync, reward_fn: RewardFn | None = None, teacher: Teacher | None = None,
                 active_masks: bool = False, hidden_sizes: tuple[int, int] | None = None) -> None:
        self.agent, self.env, self.seats = agent, env, seats
        self.generators, self.sync = generators, sync
        self.reward_fn, self.teacher, self.active_masks = reward_fn, teacher, active_masks
        rows = env.num_envs * seats
        self.hidden: Hidden = ({"actor": torch.zeros(rows, hidden_sizes[0], device=env.device),
                                "critic": torch.zeros(rows, hidden_sizes[1], device=env.device)}
                               if hidden_sizes else {})
        self.obs: dict[str, Any] = env.reset()

    @torch.no_grad()
    def collect(self, pool: OpponentPool, algorithm: PPO, played: bool = True) -> dict[str, float]:
        """Fill ``algorithm``'s storage with one rollout against ``pool``; returns statistics of the episodes
        that ended in it (over every process). ``played``: the envs have played before (not a fresh run's)."""
        agent, env, storage = self.agent, self.env, algorithm.storage
        assert storage is not None
        agent.train(True)
        slots, seating = pool.start_rollout(self.generators["shuffle"], env.device)
        if played:
            self.restart_battles(slots)
        parts = StepParts(agent, GameLoop(env, seating), self.seats, self.generators["action"], self.reward_fn,
                          self.teacher, self.active_masks)
        tally = EpisodeTally(env.num_envs, self.seats, env.device)
        storage.clear()
        self.sync.begin_rollout(agent)
        for _ in range(storage.n_steps):
            step = rollout_step(parts, self.obs, self.hidden)
            algorithm.store(step.transition)
            tally.add(step.dones, step.infos)
            self.obs, self.hidden = step.next_obs, step.hidden

        features = agent.training_input(flatten_seats(self.obs["p1"]), commit=False)
        last_values = agent.values(agent.critic_input(features, parts.global_state(), commit=False),
                                   self.hidden.get("critic"))[0]
        algorithm.compute_returns(last_values)
        if self.teacher is not None:
            self.teacher.check_nans()
        pool.end_rollout(tally.sums["win"], tally.sums["draw"], tally.sums["loss"], self.sync.gather_objects)
        self.sync.end_rollout(agent)  # every process's normalizers: the same again, from all the rollouts
        return tally.summary(self.sync)

    def restart_battles(self, slots: list[Slot]) -> None:
        """New battles in the envs of ``slots``, whose opponent just changed: each game is played
        against one opponent. The battles abandoned were bootstrapped as truncated by the last
        rollout's returns; nothing is credited for them."""
        if not slots:
            return
        mask = torch.zeros(self.env.num_envs, dtype=torch.bool, device=self.env.device)
        for slot in slots:
            mask[slot.start:slot.stop] = True
        self.obs = self.env.restart_envs(torch.nonzero(mask).flatten())
        if self.teacher is not None:
            self.teacher.reset(mask)
        if self.hidden:
            keep = (~seat_rows(mask, self.seats)).unsqueeze(-1).to(self.hidden["actor"].dtype)
            self.hidden = {k: v * keep for k, v in self.hidden.items()}

    def restart_all(self) -> None:
        """New battles everywhere (a new stage of the run), with nothing carried over."""
        self.restart_battles([Slot(0, 0, self.env.num_envs)])
