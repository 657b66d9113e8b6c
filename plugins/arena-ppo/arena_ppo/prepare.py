"""A run checked before anything is computed or written: its config, output folder, device and opponents.

:func:`prepare` turns a command line (the settings by key from ``--config``, ``--set`` and the
options; ``--resume``, ``--out``) into a :class:`Setup`, or raises one line naming what is wrong:
a setting out of range, a checkpoint that cannot be resumed as asked, a folder that already holds a
run, a missing device, an unknown opponent or teacher. Each process of a run on several makes the
same checks (``rank``), so they all refuse together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from arena.training.run_dir import ResumePlan, holds_run, plan_resume
from arena.training.settings import (
    apply,
    fixed_changes,
    given_options,
    parse_assignments,
    read_config_file,
    read_sections,
)
from arena_ppo.launch import fail
from arena_ppo.train_config import TrainConfig, default_config

# What config.yaml records beside the settings; a --config file may hold them, and they are ignored.
CONFIG_EXTRAS = ("env", "device", "processes")


def given_settings(params: dict[str, Any], algorithm: str) -> dict[str, Any]:
    """The settings this command line gives, by key: the --config file, then --set, then the options."""
    defaults = default_config(algorithm)
    given: dict[str, Any] = {}
    if params.get("config_file") is not None:
        given.update(read_config_file(defaults, params["config_file"], ignore=CONFIG_EXTRAS))
    given.update(parse_assignments(defaults, params.get("assignments") or ()))
    given.update(given_options(defaults, params))
    if algorithm == "mappo":
        given.pop("run.privileged_critic", None)  # the central critic is what makes it MAPPO
    return given


def build_config(algorithm: str, given: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """``base`` (a resumed run's config) or the trainer's defaults, with ``given`` settings applied."""
    return apply(base if base is not None else default_config(algorithm, given), given)


def saved_config(data: Any, algorithm: str) -> TrainConfig:
    """The config a checkpoint holds, every value checked as a --config file's is (``ValueError``)."""
    return build_config(algorithm, read_sections(default_config(algorithm), data, "config", ignore=CONFIG_EXTRAS))


@dataclass
class Setup:
    """A checked run, before anything is written or allocated: what :func:`prepare` returns."""

    cfg: TrainConfig
    out: Path
    device: Any
    make_opponent: Any
    reward_fn: Any
    resume_data: dict[str, Any] | None = None
    plan: ResumePlan | None = None


def prepare(params: dict[str, Any], algorithm: str, rank: Any = None) -> Setup:
    """Every check of a run that needs no compute and writes nothing; raises a one-line error.

    ``rank`` (an :class:`arena.training.process_group.Rank`) checks the run as one of several
    processes: sizes that must split over them, one GPU each, a checkpoint saved by as many.
    """
    from arena.training import OpponentSpecError, default_run_dir

    world = rank.world_size if rank is not None else 1
    try:
        given = given_settings(params, algorithm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    resume_data, plan = None, None
    if params.get("resume") is not None:
        resume = Path(params["resume"])
        resume_data, cfg = resumed(resume, given, algorithm, world)
        try:
            plan = plan_resume(resume, resume_data["counters"]["env_steps"], params.get("out"))
        except ValueError as exc:
            raise fail(str(exc)) from None
        out = plan.out
    else:
        cfg = build_config(algorithm, given)
        out = params.get("out") or default_run_dir(algorithm)
        if holds_run(out):
            # A second run here would append to the first one's metrics and play its checkpoints as `self`.
            raise fail(f"--out {out}: already holds a training run; continue it with --resume PATH, or give "
                       f"another directory")
    if cfg.network.recurrent and cfg.ppo.n_steps % cfg.ppo.data_chunk_length:
        raise fail(f"ppo.data_chunk_length {cfg.ppo.data_chunk_length} must divide ppo.n_steps {cfg.ppo.n_steps}: "
                   f"the rollout is cut into whole sequences")
    if rank is not None:
        check_split(cfg, world)

    from arena_ppo.kickstart import check_teacher
    from arena_ppo.runners import opponent_specs

    try:
        specs = opponent_specs(cfg.run, cfg.run.num_envs // world)
        teacher = cfg.run.teacher()
        teacher_spec = check_teacher(teacher, cfg.run.team_size) if teacher else None
    except OpponentSpecError as exc:
        raise fail(str(exc)) from None
    if world > 1 and cfg.run.num_envs // world < len(specs):
        raise fail(f"--num-envs {cfg.run.num_envs}: {len(specs)} opponents need {len(specs)} envs in each of the "
                   f"{world} processes; give at least {len(specs) * world}")
    reward_fn = resolve_reward(cfg.run.reward)
    try:
        from arena.env import resolve_device

        ranked = {"local_rank": rank.local_rank, "local_world_size": rank.local_world_size} if rank else {}
        device = resolve_device(cfg.run.device, **ranked)
    except ValueError as exc:
        text = str(exc)
        raise fail(text if text.startswith("--device") else f"--device: {text}") from None
    make_opponent = opponent_factory(device, cfg.run.env_config())
    for spec in specs:  # fail now, not after the first rollout
        if spec.kind in ("agent", "checkpoint"):
            make_opponent(spec)
    if teacher_spec is not None:
        opponent_factory(device, cfg.run.env_config(), option="--kickstart")(teacher_spec)
    return Setup(cfg, Path(out), device, make_opponent, reward_fn, resume_data, plan)


def resumed(resume: Path, given: dict[str, Any], algorithm: str, world: int) -> tuple[dict[str, Any], TrainConfig]:
    """A checkpoint's trainer state and config, with the ``given`` settings applied; one-line errors."""
    from arena.training import CheckpointError, load_checkpoint
    from arena_ppo.agent import FORMAT_VERSION

    try:
        data = load_checkpoint(resume, expect_agent=algorithm, max_version=FORMAT_VERSION)
    except CheckpointError as exc:
        raise fail(str(exc)) from None
    if "counters" not in data or "config" not in data:
        raise fail(f"checkpoint {resume}: holds weights only, no trainer state to resume from")
    try:
        saved = saved_config(data["config"], algorithm)
    except ValueError as exc:
        raise fail(f"checkpoint {resume}: damaged trainer state: {exc}") from None
    changed = fixed_changes(default_config(algorithm), saved, given)
    if changed:
        names = ", ".join(f"{s.key}" + (f" ({s.option})" if s.spec.cli else "") for s in changed)
        raise fail(f"--resume: cannot change {names} of a run (the checkpoint's tensors depend on it); start a new "
                   f"run instead")
    counters = data["counters"]
    if not isinstance(counters, dict):
        raise fail(f"checkpoint {resume}: damaged trainer state: counters: expected a dict, got "
                   f"{type(counters).__name__}")
    step = counters.get("env_steps")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise fail(f"checkpoint {resume}: damaged trainer state: counters.env_steps: expected an int >= 0, "
                   f"got {step!r}"[:300])
    check_saved_processes(resume, data, world, algorithm)
    return data, build_config(algorithm, given, saved)


def check_split(cfg: TrainConfig, world: int) -> None:
    """``--num-envs`` and ``ppo.batch_size`` count all processes: each must get an equal, non-empty share."""
    envs, batch = cfg.run.num_envs, cfg.ppo.batch_size
    if envs < world:
        raise fail(f"--num-envs {envs}: fewer battles than the {world} processes; it counts the envs of all "
                   f"processes, each needs at least one")
    if envs % world:
        low, high = envs - envs % world, envs - envs % world + world
        raise fail(f"--num-envs {envs} does not split evenly over {world} processes (it counts the envs of all of "
                   f"them); give a multiple of {world}, e.g. {low if low else high} or {high}")
    if batch < world:
        raise fail(f"ppo.batch_size {batch}: smaller than the {world} processes; it counts the samples of all "
                   f"processes, each needs at least one")


def check_saved_processes(resume: Path, data: dict[str, Any], world: int, algorithm: str) -> None:
    """A run resumes on as many processes as saved it: each one continues its own envs and streams."""
    saved = data.get("world_size", 1)
    if isinstance(saved, bool) or not isinstance(saved, int) or saved < 1:
        raise fail(f"checkpoint {resume}: damaged trainer state: world_size: expected an int >= 1, got {saved!r}"[:300])
    if saved == world:
        return
    if saved == 1:
        how = "in one process (without --nproc or torchrun)"
    else:
        how = (f"on {saved}: arena train {algorithm} --resume {resume} --nproc {saved}, or torchrun "
               f"--nproc-per-node {saved} -m arena train {algorithm} --resume {resume}")
    saved_by = "one process" if saved == 1 else f"{saved} processes"
    now = "one" if world == 1 else str(world)
    raise fail(f"--resume {resume}: the run was saved by {saved_by} and continues exactly only {how}, not on {now}")


def resolve_reward(name: str) -> Any:
    from arena.agents import UnknownNameError, reward_registry

    try:
        return reward_registry().get(name)
    except UnknownNameError as exc:
        raise fail(f"--reward: {exc}") from None


def opponent_factory(device: Any, env_config: Any, option: str = "--vs") -> Any:
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
