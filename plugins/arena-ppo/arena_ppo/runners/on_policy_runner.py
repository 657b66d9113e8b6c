"""The training loop (rsl_rl's OnPolicyRunner): collect, compute returns, update, log, save, evaluate.

The runner owns everything stateful about a run — env, opponents, counters, random generators,
output files — so that a checkpoint holds all of it and ``--resume`` continues bit for bit.

Given a process :class:`~arena.training.distributed.Group` (``--nproc N``, torchrun), the runner is
one of N identical learners: it steps ``num_envs / N`` envs with its own seed, its update is kept
equal to every other process's (:mod:`arena_ppo.distributed`), and only the main process writes
checkpoints, metrics and console lines.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

import torch

from arena.env import TensorEnv, obs_vector
from arena.env.teams import flatten_seats, side_total
from arena.loop import GameLoop, observation_config
from arena.match import AgentFailure, check_device
from arena.progress import Progress, format_stat
from arena.threads import apply_threads
from arena.training import (
    BEST_CHECKPOINT, KEPT_LABEL, BestRecord, CheckpointError, EvalResult, MetricLogger, OpponentPool, OpponentSpec,
    SelfPlayPool, StopRequest, checkpoint_name, clean_stale_temp_files, evaluate, falls_behind, keep_best,
    league_agents, league_partners, list_checkpoints, load_checkpoint, parse_opponent_specs, read_best, replaces,
    save_checkpoint, tensorboard_writer, to_plain, with_floor, write_config,
)
from arena.training.distributed import Group, Rank, process_device, rank_seed, split_count
from arena.training.opponents import Slot

from arena_ppo import distributed
from arena_ppo.agent import PPOAgent
from arena_ppo.algorithms import PPO, anneal_factor
from arena_ppo.config import RunConfig, TrainConfig
from arena_ppo.kickstart import Teacher, coefficient
from arena_ppo.modules import ObservationChange
from arena_ppo.storage import RolloutStorage, Transition

RewardFn = Callable[..., torch.Tensor]
METRIC_KEYS = ("episode_return", "episode_length", "policy_loss", "value_loss", "entropy", "approx_kl",
               "clip_fraction", "learning_rate", "win_rate")


@dataclass
class Counters:
    env_steps: int = 0
    updates: int = 0
    episodes: int = 0
    last_save: int = 0  # env_steps at the last checkpoint
    last_log: int = 0
    last_eval: int = 0
    elapsed: float = 0.0  # training wall time before this process (resumed runs)


def opponent_specs(run: RunConfig, num_envs: int | None = None) -> list[OpponentSpec]:
    """The opponents a run trains against: its ``--vs`` entries plus the ``--floor`` share of
    ``num_envs`` envs (one process's share of ``run.num_envs``)."""
    return with_floor(parse_opponent_specs(run.vs), run.floor, run.num_envs if num_envs is None else num_envs)


class OnPolicyRunner:
    """One PPO run against an opponent pool.

    Subclasses change the agent (``agent_class``, :meth:`build_agent`) and whether the rollout keeps
    active masks; the loop, checkpoints, resume, evaluation and outputs are the same.

    ``make_opponent(spec)`` builds a fixed opponent for a ``--vs`` entry; ``reward_fn`` is the
    shaping added to the env reward; ``on_checkpoint(path, step, metrics)`` observes every
    checkpoint (the ``arena_checkpoint_saved`` hook). With ``group`` the runner is one process of a
    run on several; every process must build its runner with the same config, and only the main
    one prints, shows progress and calls ``on_checkpoint``.
    """

    agent_class: type[PPOAgent] = PPOAgent
    active_masks = False  # keep whether each aircraft was alive, so dead ones add no loss (MAPPO)

    def __init__(self, cfg: TrainConfig, out_dir: Path, make_opponent: Callable[[OpponentSpec], Any],
                 reward_fn: RewardFn | None = None,
                 on_checkpoint: Callable[[str, int, dict[str, float]], None] | None = None,
                 console: Callable[[str], None] | None = print, progress: bool = True,
                 group: Group | None = None) -> None:
        run, ppo = cfg.run, cfg.ppo
        self.cfg = cfg
        self.out_dir = Path(out_dir)
        self.group = group
        self.rank = group.rank if group is not None else Rank()
        self.main = self.rank.main
        world = self.rank.world_size
        if run.num_envs % world:
            raise ValueError(f"--num-envs {run.num_envs} does not split evenly over {world} processes")
        self.local_envs = run.num_envs // world  # this process's envs; --num-envs counts all of them
        self.device = process_device(run.device, self.rank) if group is not None else check_device(run.device)
        if group is not None:
            group.use_device(self.device)
        self.reward_fn = reward_fn
        self.on_checkpoint = on_checkpoint if self.main else None
        self.console = console if self.main else None
        self.show_progress = progress and self.main
        self.make_opponent = make_opponent
        self.counters = Counters()
        self.last_metrics: dict[str, float] = {}

        apply_threads(run.threads, batch=self.local_envs, processes=self.rank.local_world_size)
        torch.manual_seed(run.seed)  # network initialization: the same on every process
        self.seed = rank_seed(run.seed, self.rank.rank)  # envs and random streams: each process its own
        self.env_config = run.env_config()
        self.seats = self.env_config.team_size  # the learner flies every seat of p1: one row per aircraft
        self.agent = self.build_agent()
        cfg.network = self.agent.network  # resolved input sizes, for config.yaml
        # --batch-size counts the samples of all processes: each takes its share of every minibatch.
        local_ppo = replace(ppo, batch_size=max(1, ppo.batch_size // world)) if world > 1 else ppo
        self.algorithm = PPO(self.agent.model, local_ppo, self.agent.value_normalizer)
        if group is not None:
            distributed.attach(group, self.agent, self.algorithm)
        if self.rank.rank:
            torch.manual_seed(self.seed)
        # Separate streams, so evaluation or a new opponent never shifts the training randomness.
        self.action_generator = torch.Generator(device=self.device)
        self.action_generator.manual_seed(self.seed + 1)
        self.shuffle_generator = torch.Generator()
        self.shuffle_generator.manual_seed(self.seed + 2)

        self.specs = opponent_specs(run, self.local_envs)
        self_play = None
        if any(s.kind in ("self", "league") for s in self.specs):
            ladder = {}
            if any(s.kind == "league" for s in self.specs):  # ladder and partners, drawn by PFSP with the checkpoints
                ladder = {name: make_opponent(OpponentSpec("agent", name))
                          for name in [*league_agents(), *league_partners()]}
            quiet = {} if self.main else {"warn": lambda text: None}  # one warning per run, not per process
            self_play = SelfPlayPool(self.out_dir, self._load_snapshot, fixed=ladder,
                                     fixed_share=run.ladder_share if ladder else None,
                                     memory=run.pfsp_memory or None, power=run.pfsp_power, **quiet)
        tenure = math.ceil((run.tenure or self.env_config.max_steps) / ppo.n_steps)  # in rollouts
        if self_play is not None and not run.handover and tenure * ppo.n_steps < self.env_config.max_steps:
            self._echo(f"warning: --no-handover with --tenure {run.tenure}: a battle longer than {tenure * ppo.n_steps} "
                       f"steps restarts before it ends, and its result is never credited (--tenure 0: the longest "
                       f"battle, {self.env_config.max_steps} steps)")
        self.pool = OpponentPool(self.specs, self.local_envs, make_opponent, self_play=self_play,
                                 snapshot=self._snapshot, self_slots=run.self_slots, team_size=self.seats,
                                 tenure=tenure, handover=run.handover)
        self.teacher = (Teacher(run.kickstart, make_opponent, self.local_envs, self.device, self.seats)
                        if run.kickstart else None)
        # An opponent (or teacher) that reads the extended observation gets it; the learner keeps its own keys.
        opponents = [slot.agent for slot in self.pool.slots] + list(self_play.fixed.values() if self_play else [])
        opponents += [self.teacher.agent] if self.teacher is not None else []
        self.env = TensorEnv(self.local_envs, self.device, seed=self.seed,
                             config=observation_config(self.env_config, opponents),
                             final_global_state=run.privileged_critic)
        rows = self.local_envs * self.seats
        model = self.agent.model
        hidden_sizes = (model.actor_hidden_size, model.critic_hidden_size) if self.agent.recurrent else None
        self.storage = RolloutStorage(ppo.n_steps, rows, self.agent.network.obs_dim,
                                      self.agent.network.critic_obs_dim if run.privileged_critic else None, self.device,
                                      active_masks=self.active_masks, hidden_sizes=hidden_sizes,
                                      teacher=self.teacher is not None)
        # The learner's recurrent state per aircraft row, carried from one rollout to the next (and saved).
        self.hidden: dict[str, torch.Tensor] = ({
            "actor": torch.zeros(rows, hidden_sizes[0], device=self.device),
            "critic": torch.zeros(rows, hidden_sizes[1], device=self.device)} if hidden_sizes else {})
        # --obs-delta: the learner's last observation per aircraft row (saved, like the hidden state).
        self.obs_change = (ObservationChange(rows, len(self.agent.obs_keys), self.device)
                           if self.agent.network.obs_delta else None)
        self.obs = self.env.reset()
        self._eval_opponents: dict[str, Any] = {}
        self._champion: tuple[int, Any] | None = None  # (step, agent): the kept weights as an opponent (--gate)
        self.best: BestRecord | None = None  # the evaluated weights kept in best.pt (--keep-best)

    def build_agent(self) -> PPOAgent:
        run = self.cfg.run
        return self.agent_class(self.device, self.env_config, network=self.cfg.network, obs_norm=run.obs_norm,
                                privileged_critic=run.privileged_critic, value_norm=self.cfg.ppo.value_norm)

    # -- opponents from this run ------------------------------------------------------------------

    def _load_snapshot(self, path: Path) -> PPOAgent:
        return self.agent_class.load(path, device=self.device, env_config=self.env_config)

    def _snapshot(self) -> PPOAgent:
        """A frozen copy of the learner as it is now (self-play before the first checkpoint)."""
        return self.agent_class.load(self.agent.checkpoint(), device=self.device, env_config=self.env_config)

    # -- collection -------------------------------------------------------------------------------

    def _seat_rows(self, value: torch.Tensor) -> torch.Tensor:
        """A per-env [N, ...] tensor repeated for each of p1's seats: [N·T, ...] (as it is in a duel)."""
        return value if self.seats == 1 else value.repeat_interleave(self.seats, 0)

    def _with_change(self, raw: torch.Tensor, commit: bool = True) -> torch.Tensor:
        """``raw`` with its change since the last step appended (``--obs-delta``), else as it is."""
        return raw if self.obs_change is None else self.obs_change.stack(raw, commit)

    def _features(self, rows: dict[str, torch.Tensor], commit: bool = True) -> torch.Tensor:
        """The learner's actor input for p1's rows: observation vector, its change, normalized, seats.

        ``commit``: the step being played, which moves the change memory and the normalizer's
        statistics; otherwise a look at the next observation (bootstrap values) that leaves both alone.
        """
        agent = self.agent
        raw = self._with_change(obs_vector(rows, agent.obs_keys), commit)
        if agent.obs_normalizer is not None:
            if commit:
                agent.obs_normalizer.update(raw)
            raw = agent.obs_normalizer(raw)
        return agent.with_seats(raw)

    def _critic_input(self, features: torch.Tensor, commit: bool = True) -> torch.Tensor:
        """The critic's input: ``features``, or with a privileged critic p1's global state (``commit``: the
        step being played, which moves the critic normalizer's statistics, as in :meth:`_features`)."""
        if not self.agent.privileged_critic:
            return features
        state = self._seat_rows(self.env.global_state("p1"))
        if commit and self.agent.critic_normalizer is not None:
            self.agent.critic_normalizer.update(state)
        return self.agent.critic_features(features, state)

    @torch.no_grad()
    def collect(self) -> dict[str, float]:
        """Fill the storage with one rollout; returns episode statistics of the episodes that ended in it."""
        agent, env, storage = self.agent, self.env, self.storage
        n, seats = env.num_envs, self.seats
        agent.train(True)
        self.restart_battles(self.pool.begin_rollout(self.shuffle_generator))
        loop = GameLoop(env, self.pool.seating(self.device))
        stat_names = ("done", "ret", "len", "win", "draw", "loss", "missiles")
        stats = {k: torch.zeros(n, device=self.device) for k in stat_names}
        recurrent = agent.recurrent
        teacher = self.teacher if self.algorithm.kickstart_coef > 0 else None
        storage.clear()
        if self.group is not None:
            distributed.track_rollout(self.group, agent)
        for _ in range(storage.n_steps):
            obs_p1 = flatten_seats(self.obs["p1"])  # [N·T] rows: every aircraft of p1
            features = self._features(obs_p1)
            critic_in = self._critic_input(features)
            if recurrent:
                actor_h, critic_h = self.hidden["actor"], self.hidden["critic"]
                out = agent.policy(features, self.action_generator, hidden=actor_h)
                value, critic_next = agent.value_step(critic_in, critic_h)
            else:
                out = agent.policy(features, self.action_generator)
                value = agent.value(critic_in)
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
            final_features = self._features(final_p1, commit=False)  # the step after features'
            final_state = (self._seat_rows(infos["final_global_state"]["p1"]) if agent.privileged_critic
                           else None)
            final_critic = agent.critic_features(final_features, final_state)
            final_value = agent.value_step(final_critic, critic_next)[0] if recurrent else agent.value(final_critic)
            storage.add(Transition(
                obs=features, critic_obs=critic_in if agent.privileged_critic else None, u=out.u, fire=out.fire,
                log_prob=out.log_prob, value=value, reward=reward, done=seat_dones,
                bootstrap=torch.where(truncated, final_value, torch.zeros_like(final_value)),
                mean=out.mean, log_std=out.log_std, fire_logit=out.fire_logit,
                active=obs_p1["alive"] > 0.5 if self.active_masks else None,
                actor_hidden=actor_h if recurrent else None, critic_hidden=critic_h if recurrent else None,
                teacher_rudder=labels[0], teacher_fire=labels[1],
            ))
            if self.obs_change is not None:
                self.obs_change.reset(seat_dones)
            if recurrent:  # a battle that restarted starts from a zero state
                keep = (~seat_dones).unsqueeze(-1).to(features.dtype)
                assert out.hidden is not None
                self.hidden = {"actor": out.hidden * keep, "critic": critic_next * keep}

            done_f = dones.float()
            winner = infos["winner"]
            episode = infos["episode"]
            stats["done"] += done_f
            stats["ret"] += side_total(episode["return"]["p1"]) / seats * done_f  # per aircraft
            stats["len"] += episode["length"] * done_f
            stats["missiles"] += side_total(episode["missiles_fired"]["p1"]) * done_f
            stats["win"] += (winner == 1).float()
            stats["loss"] += (winner == 2).float()
            stats["draw"] += (dones & (winner == 0)).float()
            self.obs = next_obs

        features = self._features(flatten_seats(self.obs["p1"]), commit=False)
        last_critic = self._critic_input(features, commit=False)
        if recurrent:
            last_values = agent.value_step(last_critic, self.hidden["critic"])[0]
        else:
            last_values = agent.value(last_critic)
        storage.compute_returns(last_values, self.cfg.ppo.gamma, self.cfg.ppo.gae_lambda)
        self.pool.check_nans()  # before the rollout is used: NaN from an opponent stops the run, as in play
        if self.group is not None:  # every process's normalizers: the same again, from all the rollouts
            distributed.merge_rollout(self.group, agent)
        self_play = self.pool.self_play if self.group is not None else None
        before = distributed.record_snapshot(self_play) if self_play is not None else None
        self.pool.record(stats["win"], stats["draw"], stats["loss"])
        if self_play is not None and before is not None:  # every process draws by the same PFSP records
            distributed.share_records(self.group, self_play, before)  # type: ignore[arg-type]
        summed = torch.stack(list(stats.values())).sum(-1)
        if self.group is not None:  # the statistics of every process's episodes
            self.group.all_reduce_(summed)
        totals = {k: float(v) for k, v in zip(stats, summed.tolist())}
        self.counters.env_steps += n * storage.n_steps * self.rank.world_size
        self.counters.episodes += int(totals["done"])
        episodes = totals["done"]
        if episodes == 0:
            nan = float("nan")
            return {"episode_return": nan, "episode_length": nan, "win_rate": nan, "draw_rate": nan,
                    "missiles_fired": nan, "episodes": 0.0}
        return {"episode_return": totals["ret"] / episodes, "episode_length": totals["len"] / episodes,
                "win_rate": totals["win"] / episodes, "draw_rate": totals["draw"] / episodes,
                "missiles_fired": totals["missiles"] / episodes, "episodes": episodes}

    def restart_battles(self, slots: list[Slot]) -> None:
        """New battles in the envs of ``slots``, whose opponent just changed: each game is played
        against one opponent. The battles abandoned were bootstrapped as truncated by the last
        rollout's returns; nothing is credited for them."""
        if not slots or self.counters.env_steps == 0:  # a fresh run's envs have not played yet
            return
        mask = torch.zeros(self.env.num_envs, dtype=torch.bool, device=self.device)
        for slot in slots:
            mask[slot.start:slot.stop] = True
        self.obs = self.env.restart_envs(torch.nonzero(mask).flatten())
        if self.teacher is not None:
            self.teacher.reset(mask)
        if self.obs_change is not None:
            self.obs_change.reset(self._seat_rows(mask))
        if self.hidden:
            keep = (~self._seat_rows(mask)).unsqueeze(-1).to(self.hidden["actor"].dtype)
            self.hidden = {k: v * keep for k, v in self.hidden.items()}

    # -- the loop ---------------------------------------------------------------------------------

    def schedule_learning_rate(self, time_used: float = 0.0) -> None:
        """The rate for the next update; ``time_used`` is the share of --max-time spent (0 without one)."""
        ppo = self.cfg.ppo
        steps_used = self.counters.env_steps / max(self.cfg.run.max_steps, 1)
        ceiling = ppo.learning_rate * anneal_factor(ppo.lr_anneal, max(steps_used, time_used))
        self.algorithm.lr_ceiling = ceiling
        if ppo.lr_schedule == "linear":
            # the whole budget as the annealed share: 1 at the start, 0 at --max-steps
            self.algorithm.set_learning_rate(min(ceiling, ppo.learning_rate * anneal_factor(1.0, steps_used)))
        elif ppo.lr_schedule == "constant":
            self.algorithm.set_learning_rate(ceiling)
        else:  # adaptive: its own rate, under the ceiling
            self.algorithm.set_learning_rate(min(ceiling, self.algorithm.learning_rate))

    def _time_used(self, start: float, max_time: float | None) -> float:
        """Share of ``max_time`` this process has used; the largest over processes, so their rates agree."""
        if max_time is None or self.cfg.ppo.lr_anneal <= 0:
            return 0.0
        used = (time.perf_counter() - start) / max(max_time, 1e-9)
        if self.group is not None:
            used = float(self.group.all_reduce_(torch.tensor([used], dtype=torch.float64), op="max")[0])
        return used

    def schedule_kickstart(self) -> None:
        """The teacher's weight for the next rollout and update (0 without a teacher, and once it has faded)."""
        run = self.cfg.run
        ppo = self.cfg.ppo
        coef = coefficient(ppo.kickstart_coef, run.kickstart_steps, self.counters.env_steps, ppo.kickstart_final)
        self.algorithm.kickstart_coef = coef if self.teacher is not None else 0.0

    def learn(self, stop: StopRequest | None = None, max_time: float | None = None) -> dict[str, float]:
        """Run updates until ``max_steps`` env steps (or ``max_time`` seconds of this process); a rollout once
        started is always finished and used. Saves a final checkpoint; returns the last metrics."""
        run = self.cfg.run
        stop = stop or StopRequest()
        self.prepare_outputs()
        self.sync_best()
        if self.group is not None:  # whatever each process initialized or loaded, they start equal
            distributed.broadcast_weights(self.group, self.agent)
        start = time.perf_counter()
        start_steps = self.counters.env_steps
        # The meter counts this session's steps, so its rate and ETA stay right on a resumed run.
        meter = Progress(max(run.max_steps - start_steps, 1), unit="steps", label=self.agent_class.name,
                         enabled=self.show_progress, time_limit=max_time)
        try:
            while self.counters.env_steps < run.max_steps:
                halt = stop.requested or (max_time is not None and time.perf_counter() - start >= max_time)
                if self.group is not None:  # one process asked (Ctrl-C, SIGTERM, its clock): all stop here
                    asked, halt = halt, self.group.any(halt)
                    if halt and not asked:
                        self._echo("stopping: another process was asked to stop, or reached --max-time")
                if halt:
                    break
                self.schedule_learning_rate(self._time_used(start, max_time))
                self.schedule_kickstart()
                t0 = time.perf_counter()
                episode_stats = self.collect()
                t1 = time.perf_counter()
                losses = self.algorithm.update(self.storage, self.shuffle_generator)
                t2 = time.perf_counter()
                self.counters.updates += 1
                steps = self.storage.n_steps * self.env.num_envs * self.rank.world_size
                wall = time.perf_counter() - start
                metrics = {"step": self.counters.env_steps, "update": self.counters.updates,
                           "time": round(self.counters.elapsed + wall, 3),
                           **{k: episode_stats[k] for k in ("episode_return", "episode_length")},
                           **{k: losses[k] for k in METRIC_KEYS[2:8]}, "fire_entropy": losses["fire_entropy"],
                           "win_rate": episode_stats["win_rate"], "draw_rate": episode_stats["draw_rate"],
                           "missiles_fired": episode_stats["missiles_fired"], "episodes": episode_stats["episodes"],
                           "sps": steps / max(t2 - t0, 1e-9), "collect_sps": steps / max(t1 - t0, 1e-9)}
                if self.teacher is not None:  # every row has the columns; NaN once the teacher is done
                    metrics["kickstart_coef"] = self.algorithm.kickstart_coef
                    metrics["kickstart_loss"] = losses.get("kickstart_loss", float("nan"))
                if len(self.specs) > 1:
                    for spec, (wins, games) in zip(self.specs, self._tallies()):
                        metrics[f"win_rate_{spec.label}"] = wins / games if games else float("nan")
                else:
                    self.pool.take_tallies()
                self.last_metrics = metrics
                if self.metrics_log is not None:
                    self.metrics_log.log(metrics, step=self.counters.env_steps)
                first = self.counters.env_steps - steps == start_steps
                if first or self.counters.env_steps - self.counters.last_log >= run.log_interval:
                    self.counters.last_log = self.counters.env_steps
                    self._console(metrics)
                meter.total = max(meter.total, self.counters.env_steps - start_steps)  # the last rollout may overshoot
                meter.update(self.counters.env_steps - start_steps, win=metrics["win_rate"], draw=metrics["draw_rate"],
                             ret=metrics["episode_return"])
                for key in METRIC_KEYS[2:8]:
                    if not math.isfinite(metrics[key]):
                        raise FloatingPointError(f"{key} is {metrics[key]} at update {self.counters.updates}; "
                                                 f"lower --learning-rate or enable --clip-value-loss")
                # Evaluate first, so that a checkpoint holds its own evaluation (metrics, the best record).
                eval_every = run.eval_interval or run.save_interval
                if run.eval_games > 0 and self.counters.env_steps - self.counters.last_eval >= eval_every:
                    self.evaluate()
                if self.counters.env_steps - self.counters.last_save >= run.save_interval:
                    self.save()
        except KeyboardInterrupt:
            if self.group is not None:
                # The processes stopped at different points of the update: there is no state to save.
                self.counters.elapsed += time.perf_counter() - start
                meter.close()
                saved = list_checkpoints(self.out_dir)
                self._echo("interrupted: the update in progress is lost; " + (
                    f"{saved[-1]} is the latest state" if saved else "no checkpoint was written"))
                raise
            self._echo("interrupted: saving the learner's weights as they are (the rollout in progress is lost)")
            self.counters.elapsed += time.perf_counter() - start
            self.save_if_new()
            meter.close()
            raise
        except AgentFailure as exc:
            # An opponent broke its contract: keep what was learned, then stop (the rollout in progress is lost).
            # With several processes the others are mid-rollout: only the last checkpoint stands.
            self.counters.elapsed += time.perf_counter() - start
            meter.close()
            exc.checkpoint = self.save_if_new() if self.group is None else None  # type: ignore[attr-defined]
            raise
        self.counters.elapsed += time.perf_counter() - start
        if run.eval_games > 0 and self.counters.updates > 0 and self.counters.last_eval != self.counters.env_steps:
            self.evaluate()  # the final weights always get a deterministic evaluation
        if self.counters.last_save != self.counters.env_steps or self.counters.updates == 0:
            self.save()
        meter.close()
        if self.metrics_log is not None:
            self.metrics_log.close()
        return self.last_metrics

    def _tallies(self) -> list[tuple[float, float]]:
        """(wins, games) against each ``--vs`` entry in the last rollout, over every process."""
        tallies = self.pool.take_tallies()
        counts = torch.tensor([[t.wins, t.games] for t in tallies], dtype=torch.float64)
        if self.group is not None:
            self.group.all_reduce_(counts)
        return [(wins, games) for wins, games in counts.tolist()]

    def evaluate(self) -> dict[str, float]:
        """Deterministic games against each fixed opponent, logged to eval.csv as win/draw/loss fractions.

        With several processes each plays its share of ``--eval-games`` (with its own seed) and the
        results are summed: evaluation takes 1/N of the time and reads the same weights everywhere.
        """
        run = self.cfg.run
        self.counters.last_eval = self.counters.env_steps
        row: dict[str, float] = {"step": self.counters.env_steps, "update": self.counters.updates}
        specs = self.eval_specs()
        opponents = []
        for spec in specs:
            if spec.label not in self._eval_opponents:
                self._eval_opponents[spec.label] = self.make_opponent(spec)
            opponents.append((spec.label, self._eval_opponents[spec.label]))
        champion = self.kept_opponent() if run.gate > 0 else None
        if champion is not None:
            opponents.append((KEPT_LABEL, champion))
        games = split_count(run.eval_games, self.rank)
        with torch.random.fork_rng(devices=[]):
            results = [evaluate(self.agent, opponent, games, env_config=self.env_config, device=self.device,
                                seed=self.seed + 10_000) if games else EvalResult(0, 0, 0, 0)
                       for _, opponent in opponents]
        if self.group is not None and opponents:
            counts = torch.tensor([[r.games, r.wins, r.draws, r.losses] for r in results], dtype=torch.float64)
            results = [EvalResult(*map(int, c)) for c in self.group.all_reduce_(counts).tolist()]
        for (label, _), result in zip(opponents, results):
            row.update(result.as_row(label))
            self._echo(f"eval vs {label} after {self.counters.env_steps:,} steps: "
                       f"{result.wins}W {result.draws}D {result.losses}L of {result.games} (deterministic)")
        self.agent.train(True)
        if run.keep_best:
            record = BestRecord.of(self.counters.env_steps, {s.label: r for s, r in zip(specs, results)})
            head_to_head = results[-1].score if champion is not None and results[-1].games else None
            kept = self.best
            self.keep_if_best(record, head_to_head)
            if run.rollback > 0:
                row["rollback"] = float(self.roll_back_if_worse(record, kept, head_to_head))
        if self.eval_log is not None:
            self.eval_log.log(row, step=self.counters.env_steps, prefix="eval/")
        self.last_metrics.update({k: v for k, v in row.items() if k.startswith("eval_")})
        return row

    def keep_if_best(self, record: BestRecord | None, head_to_head: float | None = None) -> None:
        """Write the evaluated weights to best.pt when they replace the kept ones (arena.training.best;
        ``head_to_head``: their score against them, with --gate). Every process holds the same summed
        results, so all agree; only the main one writes."""
        if record is None or not replaces(record, self.best, head_to_head, self.cfg.run.gate):
            return
        self.best = record = record.succeeding(self.best)
        if self.main:
            keep_best(self.out_dir, self.agent.checkpoint(counters=asdict(self.counters)), record)

    def roll_back_if_worse(self, record: BestRecord | None, kept: BestRecord | None,
                           head_to_head: float | None = None) -> bool:
        """Load the kept weights (and their normalizers) when ``record`` is more than ``--rollback`` below
        them, or (--gate, the ladder tied) lost to them by more than that. Every process holds the same
        summed results and reads the same best.pt, so all go back together; the optimizer, PFSP records
        and pools carry on."""
        margin = self.cfg.run.rollback
        if record is None or kept is None or not falls_behind(record, kept, head_to_head, margin, self.cfg.run.gate):
            return False
        source = self.out_dir / BEST_CHECKPOINT
        try:
            self.agent.load_weights(load_checkpoint(source))
        except (CheckpointError, ValueError) as exc:
            self._echo(f"note: --rollback: cannot read the kept weights ({exc}); training goes on from these")
            return False
        if record.worst < kept.worst - margin:
            why = (f"worst evaluation score {record.worst:.3f} (against {record.weakest()}), more than {margin:g} "
                   f"below the kept {kept.worst:.3f}")
        else:
            why = f"score {head_to_head:.3f} against the kept weights, more than {margin:g} below 0.5"
        self._echo(f"rollback: {why}: back to the weights of step {kept.step:,}")
        return True

    def kept_opponent(self) -> Any:
        """The weights in best.pt as a frozen opponent (--gate), reloaded when they change; None before
        the first evaluation kept any, or when best.pt cannot be read (that evaluation then has no duel)."""
        if self.best is None:
            return None
        if self._champion is not None and self._champion[0] == self.best.step:
            return self._champion[1]
        try:
            champion = self._load_snapshot(self.out_dir / BEST_CHECKPOINT)
        except (CheckpointError, ValueError, OSError) as exc:
            self._echo(f"note: --gate: cannot read the kept weights ({exc}); this evaluation does not play them")
            return None
        champion.train(False)
        self._champion = (self.best.step, champion)
        return champion

    def sync_best(self) -> None:
        """Make best.pt hold the kept weights of a resumed run: a branch folder, or a run whose best.pt is
        missing or from a line abandoned by resuming an older checkpoint, gets them from the checkpoint of
        that step. Without one (evaluations between checkpoints) the record starts again."""
        kept = self.out_dir / BEST_CHECKPOINT
        if self.best is None or (read_best_quietly(self.out_dir) == self.best and kept.is_file()):
            return
        source = self.out_dir / checkpoint_name(self.best.step)
        if not source.is_file():
            self._echo(f"note: no checkpoint of step {self.best.step:,} holds the best weights so far; "
                       f"{BEST_CHECKPOINT} starts again from the next evaluation")
            self.best = None
            return
        if self.main:
            keys = set(self.agent.checkpoint()) | {"counters"}  # the weights, not the trainer's state
            data = load_checkpoint(source)
            keep_best(self.out_dir, {k: v for k, v in data.items() if k in keys}, self.best)

    def eval_specs(self) -> list[OpponentSpec]:
        """Who evaluation plays: every fixed ``--vs`` opponent, and with ``--vs league`` every ladder agent."""
        fixed = [s for s in self.specs if s.kind in ("agent", "checkpoint")]
        if any(s.kind == "league" for s in self.specs):
            named = {s.target for s in fixed if s.kind == "agent"}
            fixed += [OpponentSpec("agent", name) for name in league_agents() if name not in named]
        return fixed

    # -- outputs ----------------------------------------------------------------------------------

    def prepare_outputs(self) -> None:
        """Create the output directory, config.yaml and the metric logs (the main process only)."""
        self.metrics_log: MetricLogger | None = None
        self.eval_log: MetricLogger | None = None
        if not self.main:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for path in clean_stale_temp_files(self.out_dir):  # left by a writer that was killed mid-write
            self._echo(f"removed {path.name}, an unfinished write of a process that no longer runs")
        processes = {"processes": self.rank.world_size} if self.group is not None else {}
        write_config(self.out_dir / "config.yaml", {**to_plain(self.cfg), "env": self.env_config.to_dict(),
                                                     "device": str(self.device), **processes})
        tb = tensorboard_writer(self.out_dir / "tensorboard")
        self.metrics_log = MetricLogger(self.out_dir / "metrics.csv", tensorboard=tb)
        self.eval_log = MetricLogger(self.out_dir / "eval.csv", tensorboard=tb)

    def _echo(self, text: str) -> None:
        if self.console is not None:
            self.console(text)

    def _console(self, m: dict[str, float]) -> None:
        # The episode statistics are NaN until an episode ends (the first rollouts): shown as "-".
        self._echo(f"update {m['update']:>5}  steps {m['step']:>11,}  sps {m['sps']:>7,.0f}  "
                   f"win {format_stat(m['win_rate'], '.3f')}  draw {format_stat(m['draw_rate'], '.3f')}  "
                   f"return {format_stat(m['episode_return'], '+.3f')}  "
                   f"length {format_stat(m['episode_length'], '.0f')}  "
                   f"pl {m['policy_loss']:+.4f}  vl {m['value_loss']:.4f}  ent {m['entropy']:.3f}  "
                   f"kl {m['approx_kl']:.4f}  clip {m['clip_fraction']:.3f}  lr {m['learning_rate']:.2e}")

    # -- checkpoints ------------------------------------------------------------------------------

    def state(self) -> dict[str, Any]:
        """Everything beyond the agent's weights that an exact resume needs."""
        rng = self.rng_state()
        return {"algorithm": self.algorithm.state_dict(), "counters": asdict(self.counters), "rng": rng,
                "env": self.env.state_dict(), "opponents": self.pool.state_dict(), "config": to_plain(self.cfg),
                "hidden": {k: v.clone() for k, v in self.hidden.items()},
                **({"teacher": self.teacher.state_dict()} if self.teacher is not None else {}),
                **({"obs_change": self.obs_change.state_dict()} if self.obs_change is not None else {}),
                **({"best": self.best.to_dict()} if self.best is not None else {}),
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
        so a ``--vs self`` draw sees the same checkpoints on every process."""
        self.counters.last_save = self.counters.env_steps
        path = self.out_dir / checkpoint_name(self.counters.env_steps)
        state = self.state()
        if self.group is not None:
            self.group.check_identical(distributed.state_digests(self.agent, self.algorithm),
                                       f"the learners diverged by step {self.counters.env_steps:,}")
            others = distributed.gather_rank_states(self.group, state)
            if others:
                state.update(world_size=self.rank.world_size, ranks=others)
        if self.main:
            save_checkpoint(self.agent.checkpoint(**state), path)
            if self.on_checkpoint is not None:
                self.on_checkpoint(str(path), self.counters.env_steps, dict(self.last_metrics))
        if self.group is not None:
            self.group.barrier()
        return path

    def restore(self, data: dict[str, Any]) -> None:
        """Continue from a checkpoint written by :meth:`save` (weights, optimizer, LR, normalizers,
        counters, RNG streams, env world and generator, opponents' memory).

        Each part is checked against what this runner holds before it is applied; a damaged part
        raises :class:`~arena.training.CheckpointError`-style ``ValueError`` naming its key, so a bad
        file is refused at start-up rather than crashing the run later.
        """
        from arena.training.state import check_like, check_optimizer_state

        stage = ""  # the weights' own messages name their key (model.…, obs_normalizer)
        try:
            data = distributed.rank_part(data, self.rank.rank, self.rank.world_size)  # this process's envs, streams
            self.agent.load_weights(data)
            stage = "algorithm"
            algorithm = expect_dict(data, "algorithm")
            check_optimizer_state(algorithm.get("optimizer"), self.algorithm.optimizer, "algorithm.optimizer")
            lr = algorithm.get("learning_rate")
            if isinstance(lr, bool) or not isinstance(lr, (int, float)) or not math.isfinite(lr) or lr < 0:
                raise ValueError(f"algorithm.learning_rate: expected a finite number >= 0, got {lr!r}")
            self.algorithm.load_state_dict(algorithm)
            stage = "counters"
            self.counters = counters_from(expect_dict(data, "counters"))
            metrics = data.get("metrics", {})
            stage = "metrics"
            if not isinstance(metrics, dict):
                raise ValueError(f"metrics: expected a dict, got {type(metrics).__name__}")
            self.last_metrics = {str(k): float(v) for k, v in metrics.items()}
            stage = "rng"
            rng = expect_dict(data, "rng")
            check_like(rng, self.rng_state(), "rng", extra_ok=("cuda",))
            torch.set_rng_state(rng["torch"])
            self.action_generator.set_state(rng["action"])
            self.shuffle_generator.set_state(rng["shuffle"])
            if "cuda" in rng and self.device.type == "cuda":
                torch.cuda.set_rng_state(rng["cuda"], self.device)
            stage = "env"
            env = expect_dict(data, "env")
            saved_envs = env.get("num_envs")
            if isinstance(saved_envs, int) and not isinstance(saved_envs, bool) and saved_envs != self.env.num_envs:
                raise ValueError(f"the checkpoint ran {saved_envs} envs; --num-envs is {self.env.num_envs}")
            check_like(env, self.env.state_dict(), "env")
            self.obs = self.env.load_state_dict(env)
            stage = "opponents"
            self.pool.load_state_dict(data.get("opponents"))  # type: ignore[arg-type]
            if self.hidden:
                stage = "hidden"
                hidden = expect_dict(data, "hidden")
                check_like(hidden, self.hidden, "hidden")
                self.hidden = {k: hidden[k].to(self.device) for k in self.hidden}
            if self.obs_change is not None:
                stage = "obs_change"
                change = expect_dict(data, "obs_change")
                check_like(change, self.obs_change.state_dict(), "obs_change")
                self.obs_change.load_state_dict(change)
            if self.teacher is not None:
                stage = "teacher"
                self.teacher.load_state_dict(data.get("teacher"))
            stage = "best"
            self.best = BestRecord.from_dict(data["best"]) if data.get("best") is not None else None
        except AgentFailure:
            raise
        except Exception as exc:  # noqa: BLE001 - any damage to any part: one line naming the part
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            if stage and not text.startswith(stage) and not text.startswith(("the checkpoint", "the run")):
                text = f"{stage}: {text}"
            raise ValueError(text) from exc

    def rng_state(self) -> dict[str, Any]:
        rng: dict[str, Any] = {"torch": torch.get_rng_state(), "action": self.action_generator.get_state(),
                               "shuffle": self.shuffle_generator.get_state()}
        if self.device.type == "cuda":
            rng["cuda"] = torch.cuda.get_rng_state(self.device)
        return rng


def read_best_quietly(out_dir: Path) -> BestRecord | None:
    """The record in ``out_dir``'s best.json; None when it is missing or unreadable (it is then rewritten)."""
    try:
        return read_best(out_dir)
    except ValueError:
        return None


def expect_dict(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise ValueError(f"{key}: expected a dict, got {type(value).__name__}")
    return value


def counters_from(data: dict[str, Any]) -> Counters:
    """Counters from a checkpoint: every field present, integers >= 0 (``elapsed`` a finite float)."""
    names = [f.name for f in fields(Counters)]
    unknown = sorted(str(k) for k in data if k not in names)
    if unknown:
        raise ValueError(f"counters: unknown key(s) {unknown}; expected {names}")
    values: dict[str, Any] = {}
    for name in names:
        value = data.get(name)
        if name == "elapsed":
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0
        else:
            ok = isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 1 << 62
        if not ok:
            kind = "a finite number >= 0" if name == "elapsed" else "an int >= 0"
            raise ValueError(f"counters.{name}: expected {kind}, got {value!r}"[:200])
        values[name] = value
    counters = Counters(**values)
    if max(counters.last_save, counters.last_log, counters.last_eval) > counters.env_steps:
        raise ValueError(f"counters: last_save/last_log/last_eval exceed env_steps {counters.env_steps}")
    return counters
