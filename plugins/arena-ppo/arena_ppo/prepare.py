"""A command line read into a run: its settings, output folder and checkpoint, checked before anything runs.

:func:`prepare` reads the settings by key (on ``--resume`` the checkpoint's own, then ``--config``,
``--set`` and the options), names the output folder, and hands
the settings to :func:`~arena_ppo.plan.resolve`, which checks them together and derives the run. It
raises one line naming what is wrong: a setting out of range, a checkpoint that cannot be resumed
as asked, a folder that already holds a run, a missing device, an unknown opponent or teacher. What
runs otherwise than the user wrote it is a note printed before training. Each process of a run on
several makes the same checks (``rank``), so they all refuse together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from arena.declared_settings import shown
from arena.training.process_group import Rank
from arena.training.run_dir import ResumePlan, holds_run, plan_resume
from arena.training.settings import (
    UnknownSettingError,
    apply,
    fixed_changes,
    given_options,
    parse_assignments,
    read_sections,
    read_settings_data,
    settings_of,
)
from arena_ppo.launch import fail
from arena_ppo.plan import RunPlan, resolve, value_of
from arena_ppo.train_config import SAVED_BEFORE, TrainConfig, default_config

# What config.yaml records beside the settings; a --config file may hold them, and they are not read:
# the env is the standard one with run.team_size and run.obs_mode, the device and processes the command's.
CONFIG_EXTRAS = ("env", "device", "processes")
RUN_FILE = "config.yaml"  # a record of a run's settings as it last started; a resume reads the checkpoint's


def given_settings(params: dict[str, Any], algorithm: str) -> dict[str, Any]:
    """The settings this command line gives, by key: the --config file, then --set, then the options."""
    defaults = default_config(algorithm)
    given: dict[str, Any] = {}
    if params.get("config_file") is not None:
        where = f"--config {params['config_file']}"
        given.update(read_settings(read_settings_data(params["config_file"], where), algorithm, where))
    given.update(parse_assignments(defaults, params.get("assignments") or ()))
    given.update(given_options(defaults, params))
    if algorithm == "mappo":
        given.pop("run.privileged_critic", None)  # the central critic is what makes it MAPPO
    return given


def read_settings(data: Any, algorithm: str, where: str) -> dict[str, Any]:
    """Checked settings by key from a mapping of sections (a ``--config`` file, a checkpoint's config);
    ``ValueError`` naming ``where`` and the key (:class:`~arena.training.settings.UnknownSettingError`
    for a setting this version does not have)."""
    if data is None:
        return {}
    return read_sections(default_config(algorithm), data, where, ignore=CONFIG_EXTRAS)


def build_config(algorithm: str, given: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """``base`` (a resumed run's config) or the trainer's defaults, with ``given`` settings applied."""
    return apply(base if base is not None else default_config(algorithm, given), given)


def saved_config(data: Any, algorithm: str) -> tuple[TrainConfig, list[str]]:
    """The config a checkpoint holds, every value checked as a --config file's is (``ValueError``), and
    the settings it does not hold at all (missing: they take this version's defaults)."""
    values = read_settings(data, algorithm, "config")
    values = {f"network.{name}": value for name, value in SAVED_BEFORE.items()} | values
    cfg = build_config(algorithm, values)
    missing = [s.key for s in settings_of(cfg) if s.key not in values and not s.spec.derived]
    return cfg, missing


@dataclass
class Setup:
    """A checked run, before anything is written or allocated: what :func:`prepare` returns."""

    plan: RunPlan
    resume_data: dict[str, Any] | None = None
    branch: ResumePlan | None = None  # where a resumed run writes, and the checkpoints a branch copies
    notes: list[str] = field(default_factory=list)  # lines the main process prints before training


def prepare(params: dict[str, Any], algorithm: str, rank: Rank | None = None) -> Setup:
    """Every check of a run that needs no compute and writes nothing; raises a one-line error.

    ``rank`` checks the run as one of several processes: sizes that must split over them, one GPU
    each, a checkpoint saved by as many.
    """
    from arena.training import default_run_dir

    world = rank.world_size if rank is not None else 1
    try:
        given = given_settings(params, algorithm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    resume_data, branch = None, None
    notes: list[str] = []
    if params.get("resume") is not None:
        resume = Path(params["resume"])
        resume_data, cfg, notes = resumed(resume, given, algorithm, world)
        try:
            branch = plan_resume(resume, resume_data["counters"]["env_steps"], params.get("out"))
        except ValueError as exc:
            raise fail(str(exc)) from None
        out = branch.out
    else:
        cfg = build_config(algorithm, given)
        out = params.get("out") or default_run_dir(algorithm)
        if holds_run(out):
            # A second run here would append to the first one's metrics and play its checkpoints as `self`.
            raise fail(f"--out {out}: already holds a training run; continue it with --resume PATH, or give "
                       f"another directory")
    try:
        plan = resolve(cfg, algorithm, out, rank, said_settings(given, algorithm))
    except ValueError as exc:
        raise fail(str(exc)) from None
    return Setup(plan, resume_data, branch, [f"note: {note}" for note in notes] + list(plan.notes))


def said_settings(given: Mapping[str, Any], algorithm: str) -> dict[str, Any]:
    """The settings the user's word changes, by key, for the plan's note on those the run never reads:
    each given at another value than the trainer's default (a run's config.yaml, given as --config,
    holds every setting, and one at its default changes nothing)."""
    defaults = default_config(algorithm, given)
    return {key: value for key, value in given.items() if value != value_of(defaults, key)}


def resumed(resume: Path, given: dict[str, Any], algorithm: str, world: int
            ) -> tuple[dict[str, Any], TrainConfig, list[str]]:
    """A checkpoint's trainer state and config with the ``given`` settings applied, and the notes to
    print; one-line errors.

    The checkpoint holds the settings the run trained with; the command line's ``--config`` and
    ``--set`` go on top, as in tyro and Hydra. The run folder's config.yaml is a record, rewritten when
    the run starts again, not an input. A checkpoint holding a setting this version does not have is
    refused with what its weights can still do. A run already at its ``run.max_steps`` is refused: it
    would train nothing and record a limit it never obeyed.
    """
    from arena.training import CheckpointError, load_checkpoint
    from arena_ppo.agent import FORMAT_VERSION

    try:
        data = load_checkpoint(resume, expect_agent=algorithm, max_version=FORMAT_VERSION)
    except CheckpointError as exc:
        raise fail(str(exc)) from None
    if "counters" not in data or "config" not in data:
        raise fail(f"checkpoint {resume}: holds weights only, no trainer state to resume from")
    notes = []
    try:
        saved, missing = saved_config(data["config"], algorithm)
    except UnknownSettingError as exc:  # older (or newer), not damaged
        raise fail(f"checkpoint {resume}: holds a setting this version does not have ({exc}; saved by another "
                   f"version of the trainer?), so this version cannot continue the run as it trained; its "
                   f"weights still play (arena play {resume} crank), and a new run can learn from them (--kickstart "
                   f"ckpt:{resume})") from None
    except ValueError as exc:
        raise fail(f"checkpoint {resume}: damaged trainer state: {exc}") from None
    defaulted = [key for key in missing if key not in given]  # a setting given now is the user's word
    if defaulted:
        values = ", ".join(f"{key} {shown(getattr(getattr(saved, key.split('.')[0]), key.split('.')[1]))}"
                           for key in defaulted[:6])
        notes.append(f"checkpoint {resume}: holds no {', '.join(defaulted[:6])}{' ...' if len(defaulted) > 6 else ''}"
                     f" (saved by another version?): resuming with this version's default{'s' * (len(defaulted) > 1)}"
                     f": {values}")
    changed = fixed_changes(default_config(algorithm), saved, given)
    if changed:
        raise fail(f"--resume: cannot change {fixed_names(changed)} of a run (the checkpoint's tensors depend on it); "
                   f"start a new run instead")
    counters = data["counters"]
    if not isinstance(counters, dict):
        raise fail(f"checkpoint {resume}: damaged trainer state: counters: expected a dict, got "
                   f"{type(counters).__name__}")
    step = counters.get("env_steps")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise fail(f"checkpoint {resume}: damaged trainer state: counters.env_steps: expected an int >= 0, "
                   f"got {step!r}"[:300])
    check_saved_processes(resume, data, world, algorithm)
    cfg = build_config(algorithm, given, saved)
    if cfg.run.max_steps <= step:
        raise fail(f"run.max_steps {cfg.run.max_steps:,} (--max-steps): the checkpoint {resume.name} is already at "
                   f"{step:,} steps, so resuming would train nothing; give a larger --max-steps to go on "
                   f"(it counts all of the run's steps, not this session's)")
    return data, cfg, notes


def fixed_names(changed: list[Any]) -> str:
    return ", ".join(f"{s.key}" + (f" ({s.option})" if s.spec.cli else "") for s in changed)


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
