"""The training loop (rsl_rl's OnPolicyRunner): step the learner, then what the schedule says is due.

A run is built from its :class:`~arena_ppo.plan.RunPlan` by :func:`~arena_ppo.runners.build_run`.
After each update of its :class:`~arena_ppo.runners.learner.Learner`, one schedule runs in order: a
league's main exploiter takes its turn, the metrics row is logged, then the console line, the
evaluation and the checkpoint come when their intervals have passed (so a checkpoint holds its own
evaluation). All state is in the learner, the exploiter and the evaluator: a checkpoint holds it,
and ``--resume`` continues bit for bit. On several processes (``--nproc N``, torchrun) the runner is
one of N identical learners; only the main process writes, and what they must agree on goes through
one :class:`~arena_ppo.process_sync.ProcessSync`, a no-op for one process.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from arena.match import AgentFailure
from arena.progress import Progress
from arena.training import StopRequest, checkpoint_name, list_checkpoints, save_checkpoint, to_plain
from arena_ppo.plan import RunPlan
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.evaluator import Evaluator
from arena_ppo.runners.exploiter import MainExploiter
from arena_ppo.runners.learner import Learner, check_finite
from arena_ppo.runners.outputs import RunOutputs

CheckpointObserver = Callable[[str, int, dict[str, float]], None]


class OnPolicyRunner:
    """One run: its learner (and a league's exploiter) stepped on one schedule, evaluated and saved."""

    def __init__(self, plan: RunPlan, learner: Learner, evaluator: Evaluator, outputs: RunOutputs,
                 sync: ProcessSync, exploiter: MainExploiter | None = None, progress: bool = True,
                 on_checkpoint: CheckpointObserver | None = None) -> None:
        self.plan, self.learner, self.evaluator, self.outputs = plan, learner, evaluator, outputs
        self.sync, self.exploiter, self.progress, self.on_checkpoint = sync, exploiter, progress, on_checkpoint
        self.last_metrics: dict[str, float] = {}
        self._unlogged: dict[str, float] | None = None  # an update whose metrics row is not yet written
        self.signalled = False  # a signal (on any process) asked the run to stop: save, evaluate nothing more

    def learn(self, stop: StopRequest | None = None, max_time: float | None = None) -> dict[str, float]:
        """Run updates until ``max_steps`` env steps (or ``max_time`` seconds of this process); a rollout once
        started is always finished and used. Saves a final checkpoint; returns the last metrics."""
        run, learner, stop = self.plan.cfg.run, self.learner, stop or StopRequest()
        config = replace(self.plan.cfg, network=learner.agent.network)  # with the resolved input sizes
        self.outputs.open({**to_plain(config), "env": self.plan.env_config.to_dict(), "device": str(self.plan.device),
                           **({"processes": self.sync.world_size} if self.sync.several else {})})
        self.evaluator.sync(set(learner.agent.checkpoint()) | {"counters"})
        self.sync.broadcast_weights(learner.agent)  # whatever each process initialized or loaded, they start equal
        counters = learner.counters
        start, begun, first = time.perf_counter(), counters.env_steps, counters.updates + 1
        # This session's steps (a resumed run's rate and ETA stay right); off a terminal the update lines carry it.
        meter = Progress(max(run.max_steps - begun, 1), unit="steps", label=self.plan.algorithm,
                         enabled=self.progress, time_limit=max_time, plain=False)
        self.outputs.meter = meter
        try:
            while counters.env_steps < run.max_steps and not self.halts(stop, start, max_time):
                if learner.opponents.opens_league(counters.env_steps):
                    self.open_league()
                self._unlogged = metrics = learner.step(start)
                meter.total = max(meter.total, counters.env_steps - begun)  # the last rollout may overshoot
                meter.update(counters.env_steps - begun, win=metrics["win_rate"], draw=metrics["draw_rate"],
                             ret=metrics["episode_return"])
                # The schedule, in order: the exploiter's turn, the row, then what is due (the first update
                # of a session always gets its console line; a checkpoint holds its own evaluation).
                if self.exploiter is not None:
                    self.exploiter_turn()
                self.log_update()
                if counters.updates == first or counters.env_steps - counters.last_log >= run.log_interval:
                    self.console_line(meter)
                if run.eval_games > 0 and counters.env_steps - counters.last_eval >= self.plan.eval_every:
                    self.evaluate()
                if counters.env_steps - counters.last_save >= run.save_interval:
                    self.save()
        except (KeyboardInterrupt, AgentFailure) as exc:
            counters.elapsed += time.perf_counter() - start
            meter.close()
            self.keep_what_was_learned(exc)
            raise
        counters.elapsed += time.perf_counter() - start
        # The final weights are evaluated, unless a signal asked to stop: then only the save is due.
        if (run.eval_games > 0 and counters.updates > 0 and counters.last_eval != counters.env_steps
                and not self.signalled):
            self.evaluate(scheduled=False)
        if counters.last_save != counters.env_steps or counters.updates == 0:
            self.save(scheduled=counters.updates == 0)
        meter.close()
        self.outputs.close()
        return self.last_metrics

    def halts(self, stop: StopRequest, start: float, max_time: float | None) -> bool:
        """Whether this process was asked to stop (Ctrl-C, SIGTERM, its clock) or another one was: all stop."""
        asked = stop.requested or (max_time is not None and time.perf_counter() - start >= max_time)
        halt = self.sync.any(asked)
        if halt:  # every process is here together: whether a signal asked is agreed as well
            self.signalled = self.sync.any(stop.signum is not None)
            if not asked:
                self.outputs.echo("stopping: another process was asked to stop, or reached --max-time")
        return halt

    def keep_what_was_learned(self, exc: BaseException) -> None:
        """Save the learner as it is after Ctrl-C, or an opponent that broke its contract (the rollout in
        progress is lost); with several processes stopped at different points, only the last checkpoint stands."""
        if isinstance(exc, AgentFailure):
            exc.checkpoint = self.save_if_new() if self.sync.saves_midway else None  # type: ignore[attr-defined]
        elif self.sync.saves_midway:
            self.outputs.echo("interrupted: saving the learner's weights as they are (the rollout in progress is lost)")
            if self._unlogged is not None:  # the learner's update is done and saved below: so is its row
                self.last_metrics, self._unlogged = self._unlogged, None
                self.outputs.log_update(self.last_metrics, self.learner.counters.env_steps)
            self.save_if_new()
        else:
            saved = list_checkpoints(self.plan.out)
            self.outputs.echo("interrupted: the update in progress is lost; " + (
                f"{saved[-1]} is the latest state" if saved else "no checkpoint was written"))

    def open_league(self) -> None:
        """The warm-up is over and the league's pool is in: a new stage, and the exploiter starts."""
        self.learner.open_league()
        self.outputs.echo(f"warm-up done after {self.learner.counters.env_steps:,} steps: the league opens")
        if self.exploiter is not None:
            self.exploiter.start(self.learner.counters.env_steps)

    def exploiter_turn(self) -> None:
        """A league's exploiter trains until it has its share (a Ctrl-C in its turn still logs the learner's row)."""
        assert self.exploiter is not None and self._unlogged is not None
        self._unlogged.update(self.exploiter.turn(self.learner.counters.env_steps))

    def log_update(self) -> None:
        """The update's row of metrics.csv, with its win rate against each opponent; then a loss that
        diverged stops the run."""
        assert self._unlogged is not None
        metrics = self._unlogged
        metrics.update(self.learner.win_rates())
        self.last_metrics, self._unlogged = metrics, None
        self.outputs.log_update(metrics, self.learner.counters.env_steps)
        check_finite(metrics)

    def console_line(self, meter: Progress) -> None:
        counters = self.learner.counters
        counters.last_log = counters.env_steps
        self.outputs.update_line(self.last_metrics, self.plan.cfg.run.max_steps, meter.eta())

    def evaluate(self, scheduled: bool = True) -> dict[str, float]:
        """Games against each reference, playing by run.eval_policy (eval.csv), then keep the weights if best.
        An evaluation off the schedule (the final weights) leaves the schedule as it was."""
        counters, agent = self.learner.counters, self.learner.agent
        step = counters.env_steps
        if scheduled:
            counters.last_eval = step
        results, record = self.evaluator.play(agent, step)
        row: dict[str, float] = {"step": step, "update": counters.updates, **results}
        self.evaluator.offer(record, lambda: agent.checkpoint(counters=asdict(counters)))
        self.outputs.log_evaluation(row, step)
        self.last_metrics.update({k: v for k, v in row.items() if k.startswith("eval_")})
        return row

    def state(self) -> dict[str, Any]:
        """Everything beyond the agent's weights that an exact resume needs."""
        best = self.evaluator.best
        return {**self.learner.state(),
                **({"exploiter": self.exploiter.state_dict()} if self.exploiter is not None else {}),
                **({"best": best.to_dict()} if best is not None else {}),
                "metrics": {k: float(v) for k, v in self.last_metrics.items()}}

    def save_if_new(self) -> Path:
        """Save unless the latest checkpoint already holds this step: rewriting it mid-rollout would
        replace an exactly-resumable checkpoint with one whose env state is halfway through a rollout."""
        counters = self.learner.counters
        path = self.plan.out / checkpoint_name(counters.env_steps)
        if counters.last_save == counters.env_steps and path.exists():
            return path
        return self.save(scheduled=False)

    def save(self, scheduled: bool = True) -> Path:
        """Write a checkpoint. With several processes every one takes part: they first check that their
        weights, normalizers and optimizers are still bit-identical, the main process gathers the
        others' own state (envs, random streams, opponents) into the file, and all wait until it exists,
        so a ``self`` draw sees the same checkpoints on every process.

        A checkpoint off the schedule (the run stopped, or reached its budget, between two saves) leaves
        the schedule as it was and never joins the run's self-play pool, so a run resumed from it saves,
        draws and learns at the same steps as the run that never stopped."""
        learner, counters = self.learner, self.learner.counters
        if scheduled:
            counters.last_save = counters.env_steps
        path = self.plan.out / checkpoint_name(counters.env_steps)
        if not scheduled:
            learner.opponents.hold_out(path.name)
        state = self.sync.checkpoint_state(learner.agent, learner.algorithm, self.state(), counters.env_steps)
        if self.sync.main:
            save_checkpoint(learner.agent.checkpoint(**state), path)
            if self.on_checkpoint is not None:
                self.on_checkpoint(str(path), counters.env_steps, dict(self.last_metrics))
        self.sync.saved()
        return path

    def restore(self, data: dict[str, Any]) -> None:
        """Continue from a checkpoint written by :meth:`save`; ``ValueError`` naming a damaged part."""
        data = self.sync.rank_part(data)  # this process's envs, streams
        if self.exploiter is not None and "exploiter" in data:  # first: the learner's global stream is read last
            self.exploiter.load_state_dict(data["exploiter"])
        restored = self.learner.restore(data)
        self.last_metrics, self.evaluator.best = restored.metrics, restored.best
        if self.exploiter is not None and "exploiter" not in data and self.learner.opponents.league_open:
            self.exploiter.start(self.learner.counters.env_steps)  # a league saved before exploiters: one starts now
