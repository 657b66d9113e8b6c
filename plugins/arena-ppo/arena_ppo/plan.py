"""A run decided once: :func:`resolve` checks the settings and derives every value a run is built from.

The command line (:mod:`arena_ppo.prepare`), the benchmarks and the tests all go through
:func:`resolve`, which raises one ``ValueError`` line for settings that cannot run together and
otherwise returns a frozen :class:`RunPlan` of plain data: this process's envs, device, seed and
threads, the opponents and the teacher as specs, whether the update compiles, the league's stages,
and the notes to print where a run will not do quite what was written. Nothing built from a plan
checks a setting again, and resolving writes nothing, loads nothing, seeds nothing and sets no thread
count: :func:`arena_ppo.runners.build_run` builds the opponents (once) and does the rest, in order.
An opponent's name and checkpoint file are checked here, so a typo is one line before anything starts;
a checkpoint that exists but cannot be loaded is one line from the build.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.declared_settings import shown
from arena.threads import thread_count
from arena.training import OpponentSpec, league_agents, parse_opponent_specs, with_floor
from arena.training.process_group import Rank, rank_seed
from arena_ppo.launch import fail
from arena_ppo.train_config import NO_TEACHER, RunConfig, TrainConfig

if TYPE_CHECKING:  # torch loads when a run starts, not when `arena train --help` lists the trainers
    import torch

    from arena.env import EnvConfig

EXPLOITER = "learner"  # the main exploiter's one opponent, as its plan and messages name it
EXPLOITER_SEED_OFFSET = 7_919  # the exploiter's envs and streams, apart from the learner's


@dataclass(frozen=True)
class RunPlan:
    """Everything a run is built from, resolved by :func:`resolve`; fields are this process's, and plain
    data (no agents, no functions): the processes of a run agree on it as it is.

    ``cfg`` is a private copy of the settings that nothing writes to.
    """

    algorithm: str  # ppo or mappo
    cfg: TrainConfig
    out: Path
    rank: Rank
    device: "torch.device"
    local_envs: int  # this process's envs; run.num_envs counts all of them
    env_config: "EnvConfig"
    specs: tuple[OpponentSpec, ...]  # the vs entries and the floor, split over this process's envs
    teacher: OpponentSpec | None
    tenure: int  # rollouts a drawn opponent keeps its envs
    minibatch_rows: int  # rows of one minibatch on this process (a team's step is a row per aircraft)
    threads: int  # torch threads to set; 0 keeps torch's own
    compile_update: tuple[bool, str]  # whether the update's gradient step compiles, and why not
    notes: tuple[str, ...] = ()  # lines to print before training: what runs otherwise than written

    @property
    def seats(self) -> int:
        """The learner flies every seat of p1: one row per aircraft."""
        return self.env_config.team_size

    @property
    def league(self) -> bool:
        return any(s.kind == "league" for s in self.specs)

    @property
    def seed(self) -> int:
        """This process's envs and random streams (the weights start from run.seed on every one)."""
        return rank_seed(self.cfg.run.seed, self.rank.rank)

    @property
    def warm_up_steps(self) -> int:
        """A league's warm-up against the ladder's top rung; 0 without a league."""
        return self.cfg.run.warm_up_steps if self.league else 0

    @property
    def exploiter_share(self) -> float:
        """The league's steps its main exploiter trains on; 0: none (no league, or several processes)."""
        return self.cfg.run.exploiter_share if self.league and self.rank.world_size == 1 else 0.0

    @property
    def eval_every(self) -> int:
        return self.cfg.run.eval_interval or self.cfg.run.save_interval

    def exploiter(self) -> "RunPlan":
        """The main exploiter's plan: this run's envs and update, one opponent (:data:`EXPLOITER`, the
        frozen learner its build is handed), no teacher, stage or evaluation, its own seed, on one process."""
        cfg = copy.deepcopy(self.cfg)
        cfg.run = replace(cfg.run, vs=(EXPLOITER,), floor=0.0, kickstart=NO_TEACHER, warm_up_steps=0, eval_games=0,
                          keep_best=False, seed=cfg.run.seed + EXPLOITER_SEED_OFFSET)
        return replace(self, cfg=cfg, out=self.out / "exploiter", rank=Rank(),
                       specs=(OpponentSpec("agent", EXPLOITER),), teacher=None, notes=())


def opponent_specs(run: RunConfig, num_envs: int, warm_up: bool = False) -> list[OpponentSpec]:
    """The opponents a run trains against in ``num_envs`` envs: its ``vs`` entries (``league`` as the
    ladder's top rung during the warm-up) plus the ``floor`` share."""
    specs = parse_opponent_specs(run.vs)
    if warm_up:
        specs = [replace(s, kind="agent", target=league_agents()[-1]) if s.kind == "league" else s for s in specs]
    return with_floor(specs, run.floor, num_envs)


def resolve(cfg: TrainConfig, algorithm: str = "ppo", out: Path | str = "runs/run", world: Rank | None = None,
            given: Mapping[str, Any] | None = None) -> RunPlan:
    """Check ``cfg`` as a whole and derive the run from it, for one process of ``world`` (None: a run of one
    process, started without torchrun or ``--nproc``); ``given`` (the settings the user wrote, by key)
    adds a note for each one this run never reads. Raises one ``ValueError`` line; an opponent or
    teacher whose agent or checkpoint file is missing raises the command line's error."""
    from arena.battles import shaping
    from arena.env import resolve_device
    from arena_ppo.algorithms.ppo import compile_update
    from arena_ppo.kickstart import check_teacher

    ranked = {"local_rank": world.local_rank, "local_world_size": world.local_world_size} if world else {}
    world = world or Rank()
    cfg = copy.deepcopy(cfg)
    run, ppo, size = cfg.run, cfg.ppo, world.world_size
    check_together(cfg)
    check_split(cfg, size)
    local_envs = run.num_envs // size
    specs = opponent_specs(run, local_envs)  # an OpponentSpecError is a ValueError
    teacher = check_teacher(run.teacher(), run.team_size) if run.teacher() else None
    if size > 1 and local_envs < len(specs):
        raise ValueError(f"--num-envs {run.num_envs}: {len(specs)} opponents need {len(specs)} envs in each of the "
                         f"{size} processes; give at least {len(specs) * size}")
    try:
        shaping(run.reward)
    except ValueError as exc:  # "reward: ...", said as the option that sets it
        raise ValueError(f"--{exc}") from None
    try:
        device = resolve_device(run.device, **ranked)  # one of several processes: the GPU of its local rank
    except ValueError as exc:
        raise ValueError(str(exc) if str(exc).startswith("--device") else f"--device: {exc}") from None
    threads = thread_count(run.threads, local_envs, world.local_world_size)  # a ThreadsError is a ValueError
    env_config = run.env_config()
    for spec in specs:  # fail now, not after the first rollout
        if spec.kind in ("agent", "checkpoint"):
            check_opponent(spec)
    if teacher is not None:
        check_opponent(teacher, option="--kickstart")
    plan = RunPlan(algorithm, cfg, Path(out), world, device, local_envs, env_config, tuple(specs), teacher,
                   math.ceil((run.tenure or env_config.max_steps) / ppo.n_steps),
                   max(1, ppo.batch_size // size) * run.team_size, threads, compile_update(device))
    return replace(plan, notes=tuple(run_notes(plan, given or {})))


def check_together(cfg: TrainConfig) -> None:
    """The settings that depend on each other, checked together (each alone is checked by its
    declaration): ``ValueError`` naming both, so no pair of values runs as something else."""
    net, ppo = cfg.network, cfg.ppo
    if net.log_std_min > net.log_std_max:
        raise ValueError(f"network.log_std_min {net.log_std_min:g} is above network.log_std_max "
                         f"{net.log_std_max:g}: the rudder's log-std is clamped to [min, max]; give min <= max")
    if not net.log_std_min <= net.init_log_std <= net.log_std_max:
        raise ValueError(f"network.init_log_std {net.init_log_std:g} is outside [network.log_std_min "
                         f"{net.log_std_min:g}, network.log_std_max {net.log_std_max:g}]: it would start clamped to "
                         f"the bound; give a value within them")
    if net.recurrent and ppo.n_steps % ppo.data_chunk_length:
        raise ValueError(f"ppo.data_chunk_length {ppo.data_chunk_length} must divide ppo.n_steps {ppo.n_steps}: "
                         f"the rollout is cut into whole sequences")


def check_split(cfg: TrainConfig, world: int) -> None:
    """``--num-envs`` and ``ppo.batch_size`` count all processes: each must get an equal, non-empty share."""
    envs, batch = cfg.run.num_envs, cfg.ppo.batch_size
    if envs < world:
        raise ValueError(f"--num-envs {envs}: fewer battles than the {world} processes; it counts the envs of all "
                         f"processes, each needs at least one")
    if envs % world:
        low, high = envs - envs % world, envs - envs % world + world
        raise ValueError(f"--num-envs {envs} does not split evenly over {world} processes (it counts the envs of "
                         f"all of them); give a multiple of {world}, e.g. {low if low else high} or {high}")
    if batch < world:
        raise ValueError(f"ppo.batch_size {batch}: smaller than the {world} processes; it counts the samples of all "
                         f"processes, each needs at least one")


LEAGUE_ONLY = ("run.warm_up_steps", "run.exploiter_share", "run.ladder_share")  # read by TrainingOpponents
DRAWN_ONLY = ("run.pfsp_power", "run.self_slots", "run.tenure", "run.handover")  # read by the pool's drawn slots
EVAL_ONLY = ("run.eval_interval", "run.eval_policy", "run.keep_best")  # read by the Evaluator


def unread_settings(plan: RunPlan) -> dict[str, str]:
    """The settings ``plan``'s run never reads, by key, each with why: "only X read it, and this one Y".

    Decided here, once, from the plan (its parsed opponents, teacher, processes, algorithm, network and
    schedule) as the builders read it, not from the settings' help, so a setting written for another
    kind of run is said wherever it comes from: the command line, a --config file, a resumed run's
    config.yaml.
    """
    run, ppo = plan.cfg.run, plan.cfg.ppo
    kinds, plays = {s.kind for s in plan.specs}, f"this one plays {', '.join(v.strip() for v in run.vs)}"
    rules = (
        (LEAGUE_ONLY, not plan.league, f"only runs with --vs league read it, and {plays}"),
        (DRAWN_ONLY, not kinds & {"self", "league"}, f"only runs with --vs self or --vs league read it, and {plays}"),
        (("run.exploiter_share",), plan.league and plan.rank.world_size > 1,
         f"only a league in one process reads it, and this one runs in {plan.rank.world_size}: it has no main "
         f"exploiter"),
        (("run.policy",), plan.algorithm != "mappo",
         f"only mappo reads it, and this one is {plan.algorithm}: one shared actor flies every seat"),
        (("ppo.kickstart_coef",), plan.teacher is None, "only runs with --kickstart read it, and this one has no "
                                                        "teacher"),
        (EVAL_ONLY, not run.eval_games, "only runs with --eval-games above 0 read it, and this one evaluates nothing"),
        (("ppo.data_chunk_length",), not plan.cfg.network.recurrent,
         "only recurrent runs (network.recurrent true) read it, and this one is not recurrent"),
        (("ppo.desired_kl",), ppo.lr_schedule != "adaptive",
         f"only the adaptive schedule reads it, and this one's ppo.lr_schedule is {ppo.lr_schedule}"),
    )
    return {key: why for keys, unread, why in rules if unread for key in keys}


def unread_notes(plan: RunPlan, said: Mapping[str, Any]) -> list[str]:
    """One note for each setting in ``said`` (written by the user, by key) that the run never reads.

    A league's main exploiter is said even unwritten: the league's recipe has one, and several
    processes drop it.
    """
    run = plan.cfg.run
    written = {**({"run.exploiter_share": run.exploiter_share} if plan.league and run.exploiter_share else {}),
               **said}
    return [f"note: {key} {shown(written[key])} is ignored: {why}"
            for key, why in unread_settings(plan).items() if key in written]


def value_of(cfg: TrainConfig, key: str) -> Any:
    """The run's value of ``key`` ("section.name")."""
    section, name = key.split(".")
    return getattr(getattr(cfg, section), name)


def run_notes(plan: RunPlan, given: Mapping[str, Any]) -> list[str]:
    """The lines to print before training where the run does not do quite what was written."""
    run, ppo, notes = plan.cfg.run, plan.cfg.ppo, []
    rollout = run.num_envs * ppo.n_steps
    if ppo.batch_size > rollout:
        notes.append(f"note: ppo.batch_size {ppo.batch_size:,} is more than a rollout ({run.num_envs:,} envs x "
                     f"{ppo.n_steps} steps = {rollout:,} env steps): each epoch is one minibatch of the whole rollout")
    elif plan.cfg.network.recurrent and ppo.batch_size % ppo.data_chunk_length:
        notes.append(f"note: ppo.batch_size {ppo.batch_size:,} is not a multiple of ppo.data_chunk_length "
                     f"{ppo.data_chunk_length}: a minibatch holds whole sequences of {ppo.data_chunk_length} steps, "
                     f"rounded down (at least one)")
    notes += unread_notes(plan, given)
    if plan.warm_up_steps >= run.max_steps:
        notes.append(f"warning: the league's warm-up (run.warm_up_steps {plan.warm_up_steps:,}) takes all of "
                     f"--max-steps {run.max_steps:,}: the league never opens; give more steps, or --set "
                     f"run.warm_up_steps=N")
    battle, drawn = plan.env_config.max_steps, any(s.kind in ("self", "league") for s in plan.specs)
    if drawn and not run.handover and plan.tenure * ppo.n_steps < battle:
        notes.append(f"warning: run.handover false with run.tenure {run.tenure}: a battle longer than "
                     f"{plan.tenure * ppo.n_steps} steps restarts before it ends, and its result is never credited "
                     f"(run.tenure 0: the longest battle, {battle} steps)")
    return notes


def check_opponent(spec: OpponentSpec, option: str = "--vs") -> None:
    """Refuse, as building it would, an opponent whose agent is unknown or whose checkpoint file is
    missing, without building it: the build is where opponents are made, once."""
    from arena.agents import AgentSpecError, UnknownNameError, agent_registry, check_file

    try:
        if spec.kind == "checkpoint":
            check_file(spec.target)
        else:
            agent_registry().entry(spec.target)
    except (AgentSpecError, UnknownNameError) as exc:
        raise fail(f"{option} {spec}: {exc}") from None


def opponent_factory(device: Any, env_config: Any, option: str = "--vs") -> Callable[[OpponentSpec], Any]:
    """Build fixed opponents by name or checkpoint, as `arena play` does; errors become one-line CLI errors
    naming ``option``."""
    from arena.agents import AgentSpecError, build_agent

    def make(spec: Any) -> Any:
        from arena.guard import AgentCodeError, call_agent

        try:  # "ckpt:PATH": the checkpoint names its own agent
            agent = build_agent(f"ckpt:{spec.target}" if spec.kind == "checkpoint" else spec.target, device,
                                env_config)
            call_agent(spec.label, "eval", agent.eval)
        except (AgentSpecError, AgentCodeError) as exc:
            raise fail(f"{option} {spec}: {exc}") from None
        return agent

    return make
