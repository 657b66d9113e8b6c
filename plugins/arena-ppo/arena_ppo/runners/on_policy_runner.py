"""The training loop (rsl_rl's OnPolicyRunner): collect, compute returns, update, log, save.

Every part of a run is built from one :class:`~arena_ppo.runners.context.RunContext` (the config,
the output folder, the device, the seeds and random streams, the processes' sync object, the
opponent factory, the reward, the console), made once before any compute. The runner owns everything
stateful about a run — env, opponents, counters, random generators, output files — so that a
checkpoint holds all of it and ``--resume`` continues bit for bit (:mod:`~arena_ppo.runners.resume`).
The runner consumes a :class:`~arena.training.league_env.LeagueEnv`, as rsl_rl's consumes a VecEnv, and the
PPO algorithm builds its own transitions (``act``, ``process_env_step``). Evaluation and the best weights kept are the
:class:`~arena_ppo.runners.evaluator.Evaluator`'s, the opponents (and a league's warm-up)
:class:`~arena_ppo.runners.training_opponents.TrainingOpponents`', the logs
:class:`~arena_ppo.runners.outputs.RunOutputs`'. When a league's warm-up ends, the update starts
again with a fresh optimizer, as a new stage.

Given a :class:`~arena_ppo.process_sync.GroupSync` (``--nproc N``, torchrun), the runner is one of N
identical learners: it steps ``num_envs / N`` envs with its own seed, its update is kept
equal to every other process's, and only the main process writes checkpoints, metrics and console
lines. All of that goes through one :class:`~arena_ppo.process_sync.ProcessSync`, a no-op for a run
of one process, so nothing here branches on how many processes there are.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import torch

from arena.env import EnvConfig, TensorEnv
from arena.loop import observation_config
from arena.match import AgentFailure
from arena.progress import Progress
from arena.training import (
    OpponentPool,
    OpponentSpec,
    StopRequest,
    checkpoint_name,
    list_checkpoints,
    save_checkpoint,
    to_plain,
)
from arena.training.league_env import LeagueEnv
from arena_ppo.agent import PPOAgent
from arena_ppo.algorithms import PPO
from arena_ppo.kickstart import Teacher
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.context import RewardFn, RunContext
from arena_ppo.runners.evaluator import Evaluator
from arena_ppo.runners.exploiter import MainExploiter
from arena_ppo.runners.resume import Counters, read_state, rng_state
from arena_ppo.runners.training_opponents import TrainingOpponents
from arena_ppo.storage import RolloutStorage
from arena_ppo.train_config import TrainConfig

if TYPE_CHECKING:
    from arena_ppo.modules import RecurrentActorCritic

LOSS_KEYS = ("policy_loss", "value_loss", "entropy", "approx_kl", "clip_fraction", "learning_rate")


class OnPolicyRunner:
    """One PPO run against an opponent pool.

    Subclasses change the agent (``agent_class``, :meth:`build_agent`) and whether the rollout keeps
    active masks; the loop, checkpoints, resume, evaluation and outputs are the same.

    ``make_opponent(spec)`` builds a fixed opponent for a ``vs`` entry; ``reward_fn`` is the
    shaping added to the env reward; ``on_checkpoint(path, step, metrics)`` observes every
    checkpoint (the ``arena_checkpoint_saved`` hook). With a ``sync`` over several processes the runner
    is one of them; every process must build its runner with the same config, and only the main
    one prints, shows progress and calls ``on_checkpoint``.
    """

    agent_class: type[PPOAgent] = PPOAgent
    active_masks = False  # keep whether each aircraft was alive, so dead ones add no loss (MAPPO)

    def __init__(self, cfg: TrainConfig, out_dir: Path, make_opponent: Callable[[OpponentSpec], Any],
                 reward_fn: RewardFn | None = None,
                 on_checkpoint: Callable[[str, int, dict[str, float]], None] | None = None,
                 console: Callable[[str], None] | None = print, progress: bool = True,
                 sync: ProcessSync | None = None) -> None:
        ctx = RunContext.create(cfg, out_dir, make_opponent, reward_fn, on_checkpoint, console, progress, sync)
        self.ctx, self.cfg, self.sync, self.device = ctx, ctx.cfg, ctx.sync, ctx.device
        self.outputs, self.counters = ctx.outputs, Counters()
        self.last_metrics: dict[str, float] = {}
        self._unlogged: dict[str, float] | None = None  # an update whose metrics row is not yet written
        self.agent = self.build_agent()
        self.config = replace(ctx.cfg, network=self.agent.network)  # with the resolved input sizes: config.yaml
        self.algorithm = self.build_algorithm()
        ctx.seed_streams()
        self.opponents = TrainingOpponents(ctx, self._load_snapshot, self.frozen_copy)
        teacher = ctx.cfg.run.teacher()
        self.teacher = Teacher(teacher, ctx.make_opponent, ctx.local_envs, self.device, ctx.seats) if teacher else None
        self.algorithm.kickstart_coef = ctx.cfg.ppo.kickstart_coef if self.teacher is not None else 0.0
        self.env = LeagueEnv(self.build_env(), self.pool, self.agent.obs_keys, reward_fn=ctx.reward_fn,
                             teacher=self.teacher, global_state=ctx.cfg.run.privileged_critic)
        self.algorithm.init_storage(self.build_storage())
        self.algorithm.init_acting(self.agent, ctx.generators["action"], self.active_masks)
        run = ctx.cfg.run
        self.exploiter = self.build_exploiter()
        self.evaluator = Evaluator(self.opponents.specs, ctx.make_opponent, ctx.env_config, self.device, ctx.seed,
                                   run.eval_games, ctx.out_dir, ctx.sync, keep=run.keep_best, echo=ctx.echo,
                                   policy=run.eval_policy)

    @property
    def out_dir(self) -> Path:
        return self.ctx.out_dir

    @property
    def env_config(self) -> EnvConfig:
        return self.ctx.env_config

    @property
    def generators(self) -> dict[str, torch.Generator]:
        return self.ctx.generators

    @property
    def compiles_update(self) -> bool:
        """Whether a new update compiles its step: as the run decided, unless the compiler already failed."""
        current = getattr(self, "algorithm", None)
        return self.ctx.compile_update[0] and (current is None or current.compiled)

    @property
    def storage(self) -> RolloutStorage:
        """The rollout the update learns from (the algorithm's own, as in rsl_rl)."""
        return self.storage_of(self.algorithm)

    @staticmethod
    def storage_of(algorithm: PPO) -> RolloutStorage:
        assert algorithm.storage is not None
        return algorithm.storage

    @property
    def hidden_sizes(self) -> tuple[int, int] | None:
        """A recurrent learner's (actor, critic) hidden widths; None for a feed-forward one."""
        if not self.agent.recurrent:
            return None
        model = cast("RecurrentActorCritic", self.agent.model)
        return model.actor_hidden_size, model.critic_hidden_size

    def build_agent(self) -> PPOAgent:
        run = self.cfg.run
        return self.agent_class(self.device, self.env_config, network=self.cfg.network, obs_norm=run.obs_norm,
                                privileged_critic=run.privileged_critic, value_norm=self.cfg.ppo.value_norm)

    def build_env(self) -> TensorEnv:
        """This process's envs; an opponent (or teacher) that reads the extended observation gets it, the
        learner keeps its own keys."""
        players = self.opponents.agents() + ([self.teacher.agent] if self.teacher is not None else [])
        return TensorEnv(self.ctx.local_envs, self.device, seed=self.ctx.seed,
                         config=observation_config(self.env_config, players),
                         final_global_state="p1" if self.cfg.run.privileged_critic else False)

    def build_storage(self) -> RolloutStorage:
        net, run = self.agent.network, self.cfg.run
        return RolloutStorage(self.cfg.ppo.n_steps, self.ctx.local_envs * self.ctx.seats, net.obs_dim,
                              net.critic_obs_dim if run.privileged_critic else None, self.device,
                              active_masks=self.active_masks, hidden_sizes=self.hidden_sizes,
                              teacher=self.teacher is not None)

    def build_algorithm(self) -> PPO:
        """The update, with a fresh optimizer.

        ppo.batch_size counts env steps of all processes: each process takes its share, and a step
        brings one row per aircraft of the team. So a rollout makes as many minibatches at 4 v 4 as in
        the duel; counted in rows, a team took team-size times the duel's optimizer steps per update
        (docs/experiments/2026-11-26-mappo-late-slide.md).
        """
        ppo = self.cfg.ppo
        rows = max(1, ppo.batch_size // self.sync.world_size) * self.ctx.seats
        algorithm = PPO(self.agent.model, replace(ppo, batch_size=rows) if rows != ppo.batch_size else ppo,
                        self.agent.value_normalizer, sync=self.sync, compiled=self.compiles_update)
        self.sync.attach(self.agent)
        return algorithm

    def build_exploiter(self) -> MainExploiter | None:
        """A league's main exploiter (run.exploiter_share of the league stage's steps), on one process."""
        share = self.cfg.run.exploiter_share
        if not share or not any(s.kind == "league" for s in self.opponents.specs):
            return None
        if self.sync.several:
            self._echo(f"note: run.exploiter_share {share:g} is ignored on {self.sync.world_size} processes: the "
                       f"main exploiter trains on one; this league has none")
            return None
        exploiter = MainExploiter(self, share)
        if self.opponents.league_open:
            exploiter.start(self.counters.env_steps)
        return exploiter

    def new_stage(self) -> None:
        """New battles, and a fresh optimizer over the same rollout storage and teacher weight."""
        every = torch.ones(self.env.num_envs, dtype=torch.bool, device=self.device)
        self.env.restart(every)
        self.algorithm.forget(every)
        old = self.algorithm
        self.algorithm = self.build_algorithm()
        self.algorithm.kickstart_coef = old.kickstart_coef
        self.algorithm.init_storage(self.storage_of(old))
        self.algorithm.init_acting(self.agent, self.generators["action"], self.active_masks, old.hidden)

    def open_league(self) -> None:
        """The warm-up is over and the league's pool is in: a new stage, and the exploiter starts."""
        self.env.pool = self.pool
        self.new_stage()
        self._echo(f"warm-up done after {self.counters.env_steps:,} steps: the league opens")
        if self.exploiter is not None:
            self.exploiter.start(self.counters.env_steps)

    @property
    def pool(self) -> OpponentPool:
        return self.opponents.pool

    # -- opponents from this run ------------------------------------------------------------------

    def _load_snapshot(self, path: Path) -> PPOAgent:
        return self.agent_class.load(path, device=self.device, env_config=self.env_config)

    def frozen_copy(self) -> PPOAgent:
        """A frozen copy of the learner as it is now (self-play before the first checkpoint, a league's exploiter)."""
        return self.agent_class.load(self.agent.checkpoint(), device=self.device, env_config=self.env_config)

    # -- collection -------------------------------------------------------------------------------

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

    # -- the loop ---------------------------------------------------------------------------------

    def schedule_learning_rate(self) -> None:
        """The rate for the next update: linear falls to 0 at max_steps; adaptive keeps its own."""
        ppo = self.cfg.ppo
        if ppo.lr_schedule == "linear":
            used = self.counters.env_steps / max(self.cfg.run.max_steps, 1)
            self.algorithm.set_learning_rate(ppo.learning_rate * max(0.0, 1.0 - used))
        elif ppo.lr_schedule == "constant":
            self.algorithm.set_learning_rate(ppo.learning_rate)

    def learn(self, stop: StopRequest | None = None, max_time: float | None = None) -> dict[str, float]:
        """Run updates until ``max_steps`` env steps (or ``max_time`` seconds of this process); a rollout once
        started is always finished and used. Saves a final checkpoint; returns the last metrics."""
        run = self.cfg.run
        stop = stop or StopRequest()
        self.outputs.open({**to_plain(self.config), "env": self.env_config.to_dict(), "device": str(self.device),
                           **({"processes": self.sync.world_size} if self.sync.several else {})})
        self.evaluator.sync(set(self.agent.checkpoint()) | {"counters"})
        self.sync.broadcast_weights(self.agent)  # whatever each process initialized or loaded, they start equal
        start = time.perf_counter()
        start_steps, start_updates = self.counters.env_steps, self.counters.updates
        # The meter counts this session's steps, so its rate and ETA stay right on a resumed run. Off a
        # terminal it prints nothing: the update lines carry its ETA, one line a moment in a log.
        meter = Progress(max(run.max_steps - start_steps, 1), unit="steps", label=self.agent_class.name,
                         enabled=self.ctx.progress, time_limit=max_time, plain=False)
        self.outputs.meter = meter
        try:
            while self.counters.env_steps < run.max_steps:
                asked = stop.requested or (max_time is not None and time.perf_counter() - start >= max_time)
                halt = self.sync.any(asked)  # one process asked (Ctrl-C, SIGTERM, its clock): all stop here
                if halt and not asked:
                    self._echo("stopping: another process was asked to stop, or reached --max-time")
                if halt:
                    break
                if self.opponents.opens_league(self.counters.env_steps):
                    self.open_league()
                self.schedule_learning_rate()
                metrics = self.step(start)
                meter.total = max(meter.total, self.counters.env_steps - start_steps)  # the last rollout may overshoot
                meter.update(self.counters.env_steps - start_steps, win=metrics["win_rate"], draw=metrics["draw_rate"],
                             ret=metrics["episode_return"])
                first = self.counters.updates == start_updates + 1
                if first or self.counters.env_steps - self.counters.last_log >= run.log_interval:
                    self.counters.last_log = self.counters.env_steps
                    self.outputs.update_line(metrics, run.max_steps, meter.eta())
                # Evaluate first, so that a checkpoint holds its own evaluation (metrics, the best record).
                eval_every = run.eval_interval or run.save_interval
                if run.eval_games > 0 and self.counters.env_steps - self.counters.last_eval >= eval_every:
                    self.evaluate()
                if self.counters.env_steps - self.counters.last_save >= run.save_interval:
                    self.save()
        except KeyboardInterrupt:
            self.counters.elapsed += time.perf_counter() - start
            meter.close()
            if self.sync.saves_midway:
                self._echo("interrupted: saving the learner's weights as they are (the rollout in progress is lost)")
                if self._unlogged is not None:  # the learner's update is done and saved below: so is its row
                    self.last_metrics, self._unlogged = self._unlogged, None
                    self.outputs.log_update(self.last_metrics, self.counters.env_steps)
                self.save_if_new()
            else:  # the processes stopped at different points of the update: there is no state to save
                saved = list_checkpoints(self.out_dir)
                self._echo("interrupted: the update in progress is lost; " + (
                    f"{saved[-1]} is the latest state" if saved else "no checkpoint was written"))
            raise
        except AgentFailure as exc:
            # An opponent broke its contract: keep what was learned, then stop (the rollout in progress is lost).
            # With several processes the others are mid-rollout: only the last checkpoint stands.
            self.counters.elapsed += time.perf_counter() - start
            meter.close()
            exc.checkpoint = self.save_if_new() if self.sync.saves_midway else None  # type: ignore[attr-defined]
            raise
        self.counters.elapsed += time.perf_counter() - start
        if run.eval_games > 0 and self.counters.updates > 0 and self.counters.last_eval != self.counters.env_steps:
            self.evaluate()  # the final weights are always evaluated
        if self.counters.last_save != self.counters.env_steps or self.counters.updates == 0:
            self.save()
        meter.close()
        self.outputs.close()
        return self.last_metrics

    def step(self, start: float = 0.0) -> dict[str, float]:
        """One rollout and one update (``start``: when this session's clock began); returns the update's
        metrics, read to the host once, logged, and checked for a loss that diverged."""
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
        if self.exploiter is not None:
            self._unlogged = metrics  # a second Ctrl-C in the exploiter's turn still writes the update's row
            metrics.update(self.exploiter.turn(self.counters.env_steps))
        tallies = self._tallies()
        if len(self.pool.specs) > 1:
            for spec, (wins, games) in zip(self.pool.specs, tallies):
                metrics[f"win_rate_{spec.label}"] = wins / games if games else float("nan")
        self.last_metrics, self._unlogged = metrics, None
        self.outputs.log_update(metrics, self.counters.env_steps)
        for key in LOSS_KEYS[:5]:
            if not math.isfinite(metrics[key]):
                raise FloatingPointError(f"{key} is {metrics[key]} at update {self.counters.updates}; "
                                         f"lower --learning-rate or set ppo.clip_value_loss=true")
        return metrics

    def _tallies(self) -> list[tuple[float, float]]:
        """(wins, games) against each ``vs`` entry in the last rollout, over every process."""
        tallies = self.pool.take_tallies()
        counts = torch.tensor([[t.wins, t.games] for t in tallies], dtype=torch.float64)
        if len(self.pool.specs) > 1:
            self.sync.sum_(counts)
        return [(wins, games) for wins, games in counts.tolist()]

    def evaluate(self) -> dict[str, float]:
        """Games against each reference, playing by run.eval_policy (eval.csv), then keep the weights if best."""
        step = self.counters.env_steps
        self.counters.last_eval = step
        results, record = self.evaluator.play(self.agent, step)
        row: dict[str, float] = {"step": step, "update": self.counters.updates, **results}
        self.evaluator.offer(record, lambda: self.agent.checkpoint(counters=asdict(self.counters)))
        self.outputs.log_evaluation(row, step)
        self.last_metrics.update({k: v for k, v in row.items() if k.startswith("eval_")})
        return row

    @property
    def best(self) -> Any:
        """The record of the weights kept in best.pt (None before any evaluation kept some)."""
        return self.evaluator.best

    @property
    def steps_per_update(self) -> int:
        """Env steps of one rollout, over every process."""
        return self.storage.n_steps * self.env.num_envs * self.sync.world_size

    # -- outputs ----------------------------------------------------------------------------------

    def _echo(self, text: str) -> None:
        self.ctx.echo(text)

    # -- checkpoints ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything beyond the agent's weights that an exact resume needs."""
        best = self.evaluator.best
        return {"algorithm": self.algorithm.state_dict(), "counters": asdict(self.counters),
                "rng": rng_state(self.generators, self.device), "env": self.env.env.state_dict(),
                "opponents": self.opponents.state_dict(), "config": to_plain(self.config),
                "hidden": {k: v.clone() for k, v in self.algorithm.hidden.items()},
                **({"teacher": self.teacher.state_dict()} if self.teacher is not None else {}),
                **({"exploiter": self.exploiter.state_dict()} if self.exploiter is not None else {}),
                **({"best": best.to_dict()} if best is not None else {}),
                "metrics": {k: float(v) for k, v in self.last_metrics.items()}}

    def save_if_new(self) -> Path:
        """Save unless the latest checkpoint already holds this step: rewriting it mid-rollout would
        replace an exactly-resumable checkpoint with one whose env state is halfway through a rollout."""
        path = self.out_dir / checkpoint_name(self.counters.env_steps)
        if self.counters.last_save == self.counters.env_steps and path.exists():
            return path
        return self.save()

    def save(self) -> Path:
        """Write a checkpoint. With several processes every one takes part: they first check that their
        weights, normalizers and optimizers are still bit-identical, the main process gathers the
        others' own state (envs, random streams, opponents) into the file, and all wait until it exists,
        so a ``self`` draw sees the same checkpoints on every process."""
        self.counters.last_save = self.counters.env_steps
        path = self.out_dir / checkpoint_name(self.counters.env_steps)
        state = self.state()
        state = self.sync.checkpoint_state(self.agent, self.algorithm, state, self.counters.env_steps)
        if self.sync.main:
            save_checkpoint(self.agent.checkpoint(**state), path)
            if self.ctx.on_checkpoint is not None:
                self.ctx.on_checkpoint(str(path), self.counters.env_steps, dict(self.last_metrics))
        self.sync.saved()
        return path

    def restore(self, data: dict[str, Any]) -> None:
        """Continue from a checkpoint written by :meth:`save`; ``ValueError`` naming a damaged part."""
        data = self.sync.rank_part(data)  # this process's envs, streams
        if self.exploiter is not None and "exploiter" in data:  # first: the learner's global stream is read last
            self.exploiter.load_state_dict(data["exploiter"])
        restored = read_state(data, agent=self.agent, algorithm=self.algorithm, env=self.env.env,
                              generators=self.generators, opponents=self.opponents, hidden=self.algorithm.hidden,
                              teacher=self.teacher, device=self.device)
        self.counters, self.last_metrics = restored.counters, restored.metrics
        self.env.pool = self.pool  # a league saved past its warm-up: the league's pool
        self.env.set_obs(restored.obs)
        if self.exploiter is not None and "exploiter" not in data and self.opponents.league_open:
            self.exploiter.start(self.counters.env_steps)  # a league saved before exploiters: one starts now
        self.algorithm.hidden = restored.hidden or self.algorithm.hidden
        self.evaluator.best = restored.best
