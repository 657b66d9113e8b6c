"""One policy learning in its own envs: the (algorithm, env) pair that rsl_rl's runner steps.

A :class:`Learner` holds the agent, its PPO update, the league env its rollouts come from (and the
opponents and teacher inside it), its random streams and its counters. :meth:`Learner.step` is one
rollout and one update. The run's learner is one; a league's main exploiter is another, built from
the same kind of plan (:meth:`arena_ppo.plan.RunPlan.exploiter`), so the runner schedules two pairs
rather than nesting a runner in a runner.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, replace
from typing import Any

import torch

from arena.training import to_plain
from arena.training.league_env import LeagueEnv
from arena_ppo.agent import PPOAgent
from arena_ppo.algorithms import PPO
from arena_ppo.kickstart import Teacher
from arena_ppo.plan import RunPlan
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.resume import Counters, Restored, read_state, rng_state
from arena_ppo.runners.training_opponents import TrainingOpponents
from arena_ppo.storage import RolloutStorage

LOSS_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "learning_rate")


def frozen_copy(agent: PPOAgent, plan: RunPlan) -> PPOAgent:
    """A frozen copy of ``agent`` as it is now (self-play before the first checkpoint, the exploiter's target)."""
    return type(agent).load(agent.checkpoint(), device=plan.device, env_config=plan.env_config)


class Learner:
    """An agent, its update and its envs; :meth:`step` is one rollout and one update."""

    def __init__(self, plan: RunPlan, sync: ProcessSync, agent: PPOAgent, algorithm: PPO,
                 opponents: TrainingOpponents, env: LeagueEnv, teacher: Teacher | None,
                 generators: dict[str, torch.Generator]) -> None:
        self.plan, self.sync, self.agent, self.algorithm = plan, sync, agent, algorithm
        self.opponents, self.env, self.teacher, self.generators = opponents, env, teacher, generators
        self.counters = Counters()

    @property
    def device(self) -> torch.device:
        return self.plan.device

    @property
    def storage(self) -> RolloutStorage:
        """The rollout the update learns from (the algorithm's own, as in rsl_rl)."""
        return self.storage_of(self.algorithm)

    @property
    def steps_per_update(self) -> int:
        """Env steps of one rollout, over every process."""
        return self.storage.n_steps * self.env.num_envs * self.sync.world_size

    def new_stage(self) -> None:
        """New battles, and a fresh optimizer over the same rollout storage and teacher weight."""
        every = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.device)
        self.env.restart(every)
        self.algorithm.forget(every)
        self.algorithm.reset_optimizer()

    @staticmethod
    def storage_of(algorithm: PPO) -> RolloutStorage:
        assert algorithm.storage is not None
        return algorithm.storage

    def open_league(self) -> None:
        """The warm-up is over: the league's pool flies p2, in a new stage."""
        self.env.pool = self.opponents.pool
        self.new_stage()

    @torch.no_grad()
    def collect(self) -> dict[str, float]:
        """One rollout into the storage; returns statistics of the episodes that ended in it (over every
        process)."""
        env, algorithm, agent = self.env, self.algorithm, self.agent
        agent.train(True)
        restarted = env.begin_rollout(self.generators["shuffle"], played=self.counters.env_steps > 0)
        if restarted is not None:
            algorithm.forget(restarted)
        self.storage.clear()
        self.sync.begin_rollout(agent)
        obs = env.observations()
        for _ in range(self.storage.n_steps):
            obs, rewards, dones, extras = env.step(algorithm.act(obs))
            algorithm.process_env_step(rewards, dones, extras)
        algorithm.compute_returns(obs)
        env.end_rollout(self.sync.gather_objects)
        self.sync.end_rollout(agent)  # every process's normalizers: the same again, from all the rollouts
        summary = env.tally.summary(self.sync)
        self.counters.env_steps += self.steps_per_update
        self.counters.episodes += int(summary["episodes"])
        return summary

    def schedule_learning_rate(self) -> None:
        """The rate for the next update: linear falls to 0 at max_steps; adaptive keeps its own."""
        ppo = self.plan.cfg.ppo
        if ppo.lr_schedule == "linear":
            used = self.counters.env_steps / max(self.plan.cfg.run.max_steps, 1)
            self.algorithm.set_learning_rate(ppo.learning_rate * max(0.0, 1.0 - used))
        elif ppo.lr_schedule == "constant":
            self.algorithm.set_learning_rate(ppo.learning_rate)

    def step(self, start: float = 0.0) -> dict[str, float]:
        """One rollout and one update (``start``: when this session's clock began); returns the update's
        metrics, read to the host once."""
        self.schedule_learning_rate()
        t0 = time.perf_counter()
        episode_stats = self.collect()
        t1 = time.perf_counter()
        update = self.algorithm.update(generator=self.generators["shuffle"])
        losses = {key: float(value) for key, value in update.items()}  # the update's one read to the host
        t2 = time.perf_counter()
        self.counters.updates += 1
        steps = self.steps_per_update
        metrics = {"step": self.counters.env_steps, "update": self.counters.updates,
                   "time": round(self.counters.elapsed + time.perf_counter() - start, 3), **episode_stats,
                   **{k: losses[k] for k in LOSS_KEYS},
                   "sps": steps / max(t2 - t0, 1e-9), "collect_sps": steps / max(t1 - t0, 1e-9)}
        if self.teacher is not None:
            metrics["kickstart_loss"] = losses.get("kickstart_loss", float("nan"))
        return metrics

    def win_rates(self) -> dict[str, float]:
        """The win rate against each ``vs`` entry in the last rollout, over every process (none for one entry)."""
        pool = self.opponents.pool
        tallies = pool.take_tallies()
        counts = torch.tensor([[t.wins, t.games] for t in tallies], dtype=torch.float64)
        if len(pool.specs) <= 1:
            return {}
        wins_games = self.sync.sum_(counts).tolist()
        return {f"win_rate_{spec.label}": wins / games if games else float("nan")
                for spec, (wins, games) in zip(pool.specs, wins_games)}

    def state(self) -> dict[str, Any]:
        """Everything beyond the agent's weights that an exact resume of this learner needs."""
        return {"algorithm": self.algorithm.state_dict(), "counters": asdict(self.counters),
                "rng": rng_state(self.generators, self.device), "env": self.env.env.state_dict(),
                "opponents": self.opponents.state_dict(),
                "config": to_plain(replace(self.plan.cfg, network=self.agent.network)),
                "hidden": {k: v.clone() for k, v in self.algorithm.hidden.items()},
                **({"teacher": self.teacher.state_dict()} if self.teacher is not None else {})}

    def restore(self, data: dict[str, Any]) -> Restored:
        """Put a checkpoint's state back (``ValueError`` naming a damaged part); returns what the runner keeps."""
        restored = read_state(data, self)
        self.counters = restored.counters
        self.env.pool = self.opponents.pool  # a league saved past its warm-up: the league's pool
        self.env.set_obs(restored.obs)
        self.algorithm.hidden = restored.hidden or self.algorithm.hidden
        return restored


def check_finite(metrics: dict[str, float]) -> None:
    """Stop a run whose losses diverged, with a line that says what to change."""
    for key in LOSS_KEYS[:5]:
        if not math.isfinite(metrics[key]):
            raise FloatingPointError(f"{key} is {metrics[key]} at update {metrics['update']:.0f}; "
                                     f"lower --learning-rate or set ppo.clip_value_loss=true")
