"""A command line read into a run: its settings, output folder and checkpoint, checked before anything runs.

:func:`prepare` reads the settings by key (``--config``, ``--set``, the options; on ``--resume``,
the checkpoint's own and a hand edit of its run's config.yaml), names the output folder, and hands
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
    RetiredSettingError,
    UnknownSettingError,
    apply,
    drop_retired,
    fixed_changes,
    given_options,
    parse_assignments,
    read_sections,
    read_settings_data,
    settings_of,
)
from arena_ppo.launch import fail
from arena_ppo.plan import RunPlan, resolve, unread_settings, value_of
from arena_ppo.train_config import RETIRED, TrainConfig, default_config

# What config.yaml records beside the settings; a --config file may hold them. The device and the
# processes are records only; the env must be the one the settings train in (:func:`check_recorded_env`).
CONFIG_EXTRAS = ("env", "device", "processes")
RUN_FILE = "config.yaml"  # a run's settings, as it last started; read again when it resumes


def given_settings(params: dict[str, Any], algorithm: str) -> tuple[dict[str, Any], list[str]]:
    """The settings this command line gives, by key: the --config file, then --set, then the options;
    and the notes to print (retired settings the file held at their old defaults)."""
    defaults = default_config(algorithm)
    given: dict[str, Any] = {}
    notes: list[str] = []
    data: Any = None
    file_values: dict[str, Any] = {}
    if params.get("config_file") is not None:
        where = f"--config {params['config_file']}"
        data = read_settings_data(params["config_file"], where)
        try:
            file_values, dropped = read_settings(data, algorithm, where)
        except RetiredSettingError as exc:
            raise ValueError(f"{where}: {exc}; remove it from the file to run without it") from None
        given.update(file_values)
        if dropped:
            notes.append(f"{where}: {', '.join(dropped)}: settings this version no longer has, each at its old "
                         f"default: running without them")
    given.update(parse_assignments(defaults, params.get("assignments") or ()))
    given.update(given_options(defaults, params))
    if algorithm == "mappo":
        given.pop("run.privileged_critic", None)  # the central critic is what makes it MAPPO
    if data is not None:
        check_recorded_env(data, (file_values, given), algorithm, where)
    return given, notes


def read_settings(data: Any, algorithm: str, where: str) -> tuple[dict[str, Any], list[str]]:
    """Checked settings by key from a mapping of sections (a ``--config`` file, a run's config.yaml, a
    checkpoint's config), and the retired settings dropped at their old defaults
    (:data:`~arena_ppo.train_config.RETIRED`); ``ValueError`` naming ``where`` and the key,
    :class:`~arena.training.settings.RetiredSettingError` for a retired one at another value."""
    if data is None:
        return {}, []
    data, dropped = drop_retired(data, RETIRED)
    return read_sections(default_config(algorithm), data, where, ignore=CONFIG_EXTRAS), dropped


def check_recorded_env(data: Any, settings: tuple[dict[str, Any], ...], algorithm: str, where: str) -> None:
    """Refuse an ``env`` section that is not the env a run of these settings trains in.

    The env section of config.yaml records the env a run trained in: the standard one, with only
    ``run.team_size`` and ``run.obs_mode`` changed. Dropping a hand-written ``env: {max_time: 10}``
    without a word would train in something the user did not ask for, so a value is accepted only
    where it is the one the run trains in, with the file's own settings or with all of ``settings``
    (a run's config.yaml given with ``--team-size`` is that run at another size).
    """
    env = data.get("env") if isinstance(data, Mapping) else None
    if env is None:
        return
    if not isinstance(env, Mapping):
        raise ValueError(f"{where}: env: expected a mapping, as a run's config.yaml records it, got "
                         f"{type(env).__name__}")
    trains = [build_config(algorithm, dict(values)).run.env_config().to_dict() for values in settings]
    for key, value in env.items():
        if key not in trains[0]:
            raise ValueError(f"{where}: env.{key}: unknown env setting; expected the EnvConfig fields a run's "
                             f"config.yaml records (arena env-info lists them)")
        if any(value == env_dict[key] for env_dict in trains):
            continue
        if key in ("team_size", "obs_mode"):
            raise ValueError(f"{where}: env.{key} is {shown(value)}, but the run's run.{key} is "
                             f"{shown(trains[-1][key])}; the env section only records the env a run trained in: set "
                             f"run.{key} (--{key.replace('_', '-')}) instead")
        raise ValueError(f"{where}: env.{key} is {shown(value)}, but a run trains in the standard env ({key} "
                         f"{shown(trains[-1][key])}) with only run.team_size and run.obs_mode changed; the env section "
                         f"only records the env a run trained in: remove env.{key}")


def build_config(algorithm: str, given: dict[str, Any], base: TrainConfig | None = None) -> TrainConfig:
    """``base`` (a resumed run's config) or the trainer's defaults, with ``given`` settings applied."""
    return apply(base if base is not None else default_config(algorithm, given), given)


def saved_config(data: Any, algorithm: str) -> tuple[TrainConfig, list[str], list[str]]:
    """The config a checkpoint holds, every value checked as a --config file's is (``ValueError``), the
    retired settings it held at their old defaults (dropped), and the settings it does not hold at all
    (missing: they take this version's defaults)."""
    values, dropped = read_settings(data, algorithm, "config")
    values.setdefault("network.fire_mask", False)  # a run saved before the trigger's mask trained without one
    cfg = build_config(algorithm, values)
    missing = [s.key for s in settings_of(cfg) if s.key not in values and not s.spec.derived]
    return cfg, dropped, missing


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
        given, notes = given_settings(params, algorithm)
    except ValueError as exc:
        raise fail(str(exc)) from None
    resume_data, branch = None, None
    edits: dict[str, tuple[Any, Any]] = {}  # a resumed run's hand edits of config.yaml
    if params.get("resume") is not None:
        resume = Path(params["resume"])
        resume_data, cfg, resume_notes, edits = resumed(resume, given, algorithm, world)
        notes += resume_notes
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
        plan = resolve(cfg, algorithm, out, rank, said_settings(given, edits, algorithm))
    except ValueError as exc:
        raise fail(str(exc)) from None
    if edits:
        notes += edits_note(Path(params["resume"]), edits, unread_settings(plan))
    return Setup(plan, resume_data, branch, [f"note: {note}" for note in notes] + list(plan.notes))


def said_settings(given: Mapping[str, Any], edits: Mapping[str, tuple[Any, Any]], algorithm: str
                  ) -> dict[str, Any]:
    """The settings the user's word changes, by key, for the plan's note on those the run never reads:
    each given at another value than the trainer's default (a run's config.yaml, given as --config,
    holds every setting, and one at its default changes nothing) and each hand edit of a resumed run's
    config.yaml."""
    defaults = default_config(algorithm, given)
    return {**{key: value for key, value in given.items() if value != value_of(defaults, key)},
            **{key: new for key, (_, new) in edits.items()}}


def resumed(resume: Path, given: dict[str, Any], algorithm: str, world: int
            ) -> tuple[dict[str, Any], TrainConfig, list[str], dict[str, tuple[Any, Any]]]:
    """A checkpoint's trainer state and config, with the edits of its run's config.yaml and the ``given``
    settings applied, the notes that say so, and the edits applied (key: the checkpoint's value, the
    file's), said by :func:`edits_note` once the plan knows which the run reads; one-line errors.

    The checkpoint holds the settings the run trained with. Its folder's config.yaml is the run's
    settings as the user sees them: where a hand edit made it differ, the edit applies (a fixed
    setting is refused), since a resume that dropped it would then rewrite the file back without a
    word. The command line wins over both. A run already at its ``run.max_steps`` is refused: it
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
        saved, dropped, missing = saved_config(data["config"], algorithm)
    except (RetiredSettingError, UnknownSettingError) as exc:  # older (or newer), not damaged
        what = str(exc) if isinstance(exc, RetiredSettingError) else (
            f"{exc}: a setting this version does not know, not a damaged one (saved by another version of the "
            f"trainer?)")
        raise fail(f"checkpoint {resume}: {what}, so this version cannot continue the run as it trained; its "
                   f"weights still play (arena play {resume} crank), and a new run can learn from them (--kickstart "
                   f"ckpt:{resume})") from None
    except ValueError as exc:
        raise fail(f"checkpoint {resume}: damaged trainer state: {exc}") from None
    if dropped:
        notes.append(f"checkpoint {resume}: {', '.join(dropped)}: settings this version no longer has, each at its "
                     f"old default: resuming without them")
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
    edits, edit_notes = run_file_edits(resume, saved, given, algorithm)
    notes += edit_notes
    edited = {key: new for key, (_, new) in edits.items()}
    changed = fixed_changes(default_config(algorithm), saved, edited)
    if changed:
        path = resume.parent / RUN_FILE
        raise fail(f"{path}: edited to change {fixed_names(changed)}, which a resumed run keeps (the checkpoint's "
                   f"tensors depend on it); undo the edit to resume, or start a new run with --config {path}")
    counters = data["counters"]
    if not isinstance(counters, dict):
        raise fail(f"checkpoint {resume}: damaged trainer state: counters: expected a dict, got "
                   f"{type(counters).__name__}")
    step = counters.get("env_steps")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise fail(f"checkpoint {resume}: damaged trainer state: counters.env_steps: expected an int >= 0, "
                   f"got {step!r}"[:300])
    check_saved_processes(resume, data, world, algorithm)
    cfg = build_config(algorithm, {**edited, **given}, saved)
    if cfg.run.max_steps <= step:
        raise fail(f"run.max_steps {cfg.run.max_steps:,} (--max-steps): the checkpoint {resume.name} is already at "
                   f"{step:,} steps, so resuming would train nothing; give a larger --max-steps to go on "
                   f"(it counts all of the run's steps, not this session's)")
    return data, cfg, notes, edits


def fixed_names(changed: list[Any]) -> str:
    return ", ".join(f"{s.key}" + (f" ({s.option})" if s.spec.cli else "") for s in changed)


def run_file_edits(resume: Path, saved: TrainConfig, given: dict[str, Any], algorithm: str
                   ) -> tuple[dict[str, tuple[Any, Any]], list[str]]:
    """The settings where the config.yaml beside ``resume`` differs from the checkpoint's (a hand edit)
    and the command line does not decide, by key: (the checkpoint's value, the file's); and the note
    naming the edits the command line overrides."""
    path = resume.parent / RUN_FILE
    if not path.is_file():
        return {}, []
    try:
        data = read_settings_data(path, str(path))
        values, _ = read_settings(data, algorithm, str(path))  # a retired one: the checkpoint's note says it
        check_recorded_env(data, (values,), algorithm, str(path))
    except ValueError as exc:
        raise fail(f"{exc} (the run's settings file, read on resume: fix or remove it)") from None
    current = {key: value_of(saved, key) for key in values}
    edits = {key: value for key, value in values.items() if value != current[key]}
    applied = {key: (current[key], value) for key, value in edits.items() if key not in given}
    notes = []
    overridden = [key for key in edits if key in given and given[key] != edits[key]]
    if overridden:
        notes.append(f"{path}: the command line wins over the edited " + ", ".join(
            f"{key} {shown(edits[key])} (now {shown(given[key])})" for key in overridden))
    return applied, notes


def edits_note(resume: Path, edits: Mapping[str, tuple[Any, Any]], unread: Mapping[str, str]) -> list[str]:
    """The line saying the hand edits of config.yaml a resumed run reads apply; an edit it does not read
    is not announced as applied (the plan's note says it is ignored)."""
    changes = ", ".join(f"{key} {shown(old)} -> {shown(new)}" for key, (old, new) in edits.items() if key not in unread)
    return [f"{resume.parent / RUN_FILE} differs from the settings of {resume.name} (edited by hand?): resuming with "
            f"{changes}"] if changes else []


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
