"""``arena train ppo`` and ``arena train mappo``: the command line of the PPO trainer.

The settings and their options come from :mod:`arena_ppo.train_config` (declared once there); this module
adds the switches of a run (``--config``, ``--set``, ``--resume``, ``--out``, ``--max-time``,
``--nproc``, ``--progress``), checks everything that can be wrong before any compute starts, and hands
the run to the runner. It imports neither torch nor the runner at import time: ``arena train --help``
lists trainers without loading them.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar

import click

from arena.errors import is_out_of_memory
from arena.folder_lock import FolderLock
from arena.guard import head
from arena.training.run_dir import check_writable, lock_run
from arena.training.settings import click_options
from arena_ppo.launch import Agreement, fail, replay_options
from arena_ppo.prepare import prepare
from arena_ppo.train_config import default_config

MAX_NPROC = 1024  # processes started on this machine by --nproc


class FiniteFloat(click.FloatRange):
    """click's FloatRange, refusing NaN (a range check lets NaN through: it compares false)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if result != result:
            self.fail(f"{value!r} is not a number", param, ctx)
        return result

HELP = """Train a PPO agent against an opponent pool.

\b
  arena train ppo --vs crank
  arena train ppo --vs league                       # the ladder, a warm-up, its past, an exploiter
  arena train ppo --vs crank=3 --vs self --set ppo.entropy_coef=0.003
  arena train ppo --config runs/ppo-20250101-120000/config.yaml --seed 1
  arena train ppo --resume runs/ppo-20250101-120000/ckpt_004194304.pt --max-steps 40000000
  arena train ppo --vs crank --nproc 2

Every setting (docs/training.md lists them) can be given in a --config YAML file, as a run's
config.yaml holds them, or one at a time with --set SECTION.NAME=VALUE; the options below are the
ones people change, and win over both. Writes checkpoints, best.pt, metrics.csv, eval.csv and
config.yaml to --out. Ctrl-C finishes the current update, saves and stops; --resume continues
exactly where a checkpoint left off.
"""

MAPPO_HELP = """Train a MAPPO team (central critic, ValueNorm) against an opponent pool, 2 v 2 by default.

\b
  arena train mappo --vs crank
  arena train mappo --team-size 4 --vs crank --policy separated
  arena train mappo --resume runs/mappo-20250101-120000/ckpt_004194304.pt

Each aircraft's actor reads its own observation and its seat; the critic reads the side's global
state; dead aircraft add no loss. Takes the settings and switches of `arena train ppo` and writes
what it writes; the checkpoints play at their team size in `arena play` and tournaments.
"""


def run_switches(func: Any) -> Any:
    """The options of a run that are not settings."""
    switches = [
        click.option("--config", "config_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     metavar="FILE", help="Settings from a YAML file of sections (run, ppo, network), as a run's "
                                          "config.yaml holds them."),
        click.option("--set", "assignments", multiple=True, metavar="SECTION.NAME=VALUE",
                     help="One setting, repeatable, e.g. --set ppo.clip_epsilon=0.1 (over --config)."),
        click.option("--max-time", type=FiniteFloat(0, 1e9, min_open=True), default=None, metavar="SECONDS",
                     help="Also stop after this many seconds of training (checked between updates)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Output directory [default: runs/<trainer>-<time>, or the checkpoint's with --resume]."),
        click.option("--resume", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Continue from a checkpoint of this trainer (settings given now override its own)."),
        click.option("--nproc", type=click.IntRange(1, MAX_NPROC), default=None,
                     help="Train on N processes of this machine, as torchrun --nproc-per-node N would; see "
                          "docs/scaling.md."),
        click.option("--progress/--no-progress", default=True, show_default=True, help="Progress display."),
    ]
    for opt in reversed(switches):
        func = opt(func)
    return func


class PPOTrainer:
    """Trainer plugin entry: ``arena train ppo``."""

    name: ClassVar[str] = "ppo"
    aliases: ClassVar[tuple[str, ...]] = ()
    help: ClassVar[str] = "Train a PPO agent against opponents (agents, checkpoints, self-play, the league)."
    long_help: ClassVar[str] = HELP

    @classmethod
    def command(cls) -> click.Command:
        algorithm = cls.name

        @click.pass_context
        def train_command(ctx: click.Context, **params: Any) -> None:
            run_training(ctx, params, algorithm)

        func: Any = run_switches(train_command)
        for opt in reversed(click_options(default_config(algorithm), algorithm)):
            func = opt(func)
        return click.command(cls.name, help=cls.long_help, short_help=cls.help,
                             context_settings={"max_content_width": 110})(func)


class MAPPOTrainer(PPOTrainer):
    """Trainer plugin entry: ``arena train mappo``."""

    name: ClassVar[str] = "mappo"
    help: ClassVar[str] = "Train a MAPPO team (central critic, shared or per-seat actors) for team battles."
    long_help: ClassVar[str] = MAPPO_HELP


def run_training(ctx: click.Context, params: dict[str, Any], algorithm: str = "ppo") -> dict[str, float]:
    """Validate everything that can be wrong before any compute starts, then run.

    Three ways in: a plain process; ``--nproc N``, which checks the run here and starts N processes
    (:mod:`arena.training.launcher`); and a process started by torchrun (or by ``--nproc``), which
    joins the others and trains as one of them.
    """
    from arena.training.process_group import DistributedError, PeerFailure, rank_from_env
    from arena_ppo.launch import GroupAgreement

    try:
        rank = rank_from_env()
    except DistributedError as exc:
        raise fail(str(exc)) from None
    nproc = params.get("nproc")
    if nproc is not None:
        if rank is not None:
            raise fail(f"--nproc {nproc}: this process already runs as {rank} under torchrun, which started the "
                       f"processes; leave out --nproc (or start it without torchrun)")
        return launch_training(ctx, params, algorithm, nproc)
    if rank is None:
        return train(params, algorithm)
    agreement = GroupAgreement.join(rank)
    try:
        result = train(params, algorithm, agreement)
    except PeerFailure as exc:  # a process ended while the others were setting up
        agreement.close(wait=False)
        raise agreement.everyone(f"training did not start: {exc}") from None
    except BaseException:  # a process that exits among the others can abort at shutdown
        agreement.close(wait=False)  # the others may be anywhere: waiting for them could hang
        raise
    agreement.close()
    return result


def launch_training(ctx: click.Context, params: dict[str, Any], algorithm: str, nproc: int) -> dict[str, float]:
    """``arena train ALGORITHM … --nproc N``: check the run as N processes would, then start them."""
    from arena.training.launcher import launch
    from arena.training.process_group import Rank

    setup = prepare(params, algorithm, Rank(0, nproc, 0, nproc))
    if setup.branch is not None and setup.branch.note:
        click.echo(f"note: {setup.branch.note}", err=True)
    args = ["train", algorithm, *replay_options(ctx, {"nproc"}, {"out": setup.plan.out})]
    del setup  # the processes load the checkpoint and opponents themselves
    result = launch(args, nproc)
    if result.message:
        raise fail(result.message, result.status)
    if result.status:
        raise click.exceptions.Exit(result.status)
    return {}


def train(params: dict[str, Any], algorithm: str, agreement: Agreement | None = None) -> dict[str, float]:
    """Check, build, resume and run the training loop in this process (one of several with ``agreement``).

    With several processes every set-up step that can fail is agreed on (:meth:`Agreement.agreed`): all
    processes go on, or all stop with one line from the main process. Only the main process creates the
    output directory and prints. What stops a run once it has started ends in one line too:
    :func:`stopped` holds the table.
    """
    from arena.training import StopRequest

    agreement = agreement or Agreement()
    ranked = agreement.rank if agreement.several else None
    setup = agreement.agreed(lambda: prepare(params, algorithm, ranked))
    # the main process named the output (its clock, its branch); all write there
    out, setup.branch = agreement.share((setup.plan.out, setup.branch))
    setup.plan = replace(setup.plan, out=out)
    runner, lock = set_up(setup, params, agreement)
    with lock:
        if agreement.main:
            if setup.branch is not None and setup.branch.note:
                click.echo(f"note: {setup.branch.note}", err=True)
            for note in setup.notes:  # what of the settings is not as given: edits applied, limits met
                click.echo(note, err=True)
            click.echo(describe_run(runner))
        with StopRequest.for_processes(ranked) as stop:
            try:
                metrics = runner.learn(stop, max_time=params.get("max_time"))
            except KeyboardInterrupt:
                raise click.exceptions.Exit(130) from None
            except Exception as exc:  # noqa: BLE001 - looked up in the table; anything else goes on up
                raise stopped(exc, agreement, out) from None
        if agreement.main:
            click.echo(describe_end(runner))
    if stop.exit_status is not None:  # saved and said: the process still ends as the signal asked
        raise click.exceptions.Exit(stop.exit_status)
    return metrics


def set_up(setup: Any, params: dict[str, Any],
           agreement: Agreement) -> tuple[Any, FolderLock | nullcontext[None]]:
    """The set-up steps, in order, each agreed on by every process: the output folder (and a branch's
    checkpoints) with the run's lock held by the main process, the runner, and the state resumed into
    it. A step that fails undoes what the first one created and stops every process with one line.
    Returns the runner and the lock, which the caller holds while the run writes."""
    from arena_ppo.runners import build_run

    plan, branch = setup.plan, setup.branch
    lock: FolderLock | nullcontext[None] = nullcontext()

    def create_outputs() -> bool:
        nonlocal lock
        try:
            check_writable(plan.out)
            lock = lock_run(plan.out)
        except ValueError as exc:
            raise fail(str(exc)) from None
        return branch.materialize() if branch is not None else False  # a branch's self-play pool needs them

    def build() -> Any:
        try:
            return build_run(plan, agreement.sync, console=click.echo, progress=params.get("progress", True),
                             on_checkpoint=announce_checkpoint)
        except ValueError as exc:
            raise fail(str(exc)) from None
        except (MemoryError, RuntimeError) as exc:
            if not is_out_of_memory(exc):
                raise
            raise fail(f"--num-envs {plan.cfg.run.num_envs:,} x ppo.n_steps {plan.cfg.ppo.n_steps:,}: not enough "
                       f"memory on {plan.device}; use fewer envs or steps per update") from None

    def restore(runner: Any) -> None:
        try:
            runner.restore(setup.resume_data)
        except Exception as exc:  # noqa: BLE001 - a damaged part of the trainer state: one line naming it
            text = head(str(exc)) or type(exc).__name__
            raise fail(f"checkpoint {params['resume']}: cannot resume: {text}") from None

    created = False
    try:
        created = agreement.agreed(create_outputs if agreement.main else (lambda: False))
        runner = agreement.agreed(build)
        if setup.resume_data is not None:
            agreement.agreed(lambda: restore(runner))
    except BaseException:
        lock.__exit__(None, None, None)
        if agreement.main and branch is not None:
            branch.undo(created)
        raise
    return runner, lock


def stopped(exc: Exception, agreement: Agreement, out: Path) -> click.ClickException | click.exceptions.Exit:
    """The one line a run that stopped on ``exc`` ends with; ``exc`` itself when the table has no row for it.

    Each row: the exception, whether every process meets it at the same point (then the main process
    says it and the others leave quietly), and the message, which says what of the run is kept.
    """
    from arena.match import AgentFailure
    from arena.training.process_group import DivergenceError, PeerFailure

    intact = f"the last checkpoint in {out} is intact"

    def opponent(exc: Any) -> str:
        saved = getattr(exc, "checkpoint", None)
        kept = f"; what was learned is saved in {saved}" if saved else (f"; {intact}" if agreement.several else "")
        blamed = "opponent " if getattr(exc, "kind", "agent") == "agent" else ""  # a reward says "reward 'x'" itself
        return f"training stopped: {blamed}{exc}{kept}"

    table: tuple[tuple[type[Exception], bool, Callable[[Any], str]], ...] = (
        (FloatingPointError, True, lambda e: f"training diverged: {e}"),  # every process reads the same losses
        (DivergenceError, True, lambda e: f"{e}; nothing was saved at this step, {intact} (a bug: please report it)"),
        (PeerFailure, True, lambda e: f"training stopped: {e}; {intact}"),
        (AgentFailure, False, opponent),
        (OSError, False, lambda e: f"cannot write to {e.filename or out}: {e.strerror or e}; {intact}"),
    )
    for kind, everywhere, message in table:
        if isinstance(exc, kind):
            if everywhere:
                return agreement.everyone(message(exc))
            return fail(message(exc) + agreement.suffix)
    raise exc


def describe_run(runner: Any) -> str:
    """The start-up line: what trains, where, against whom, taught by whom, how big an update is."""
    from arena.training import describe_split

    plan, learner = runner.plan, runner.learner
    run, algorithm, world = plan.cfg.run, plan.algorithm, plan.rank.world_size
    size = run.team_size
    if algorithm == "mappo":
        teams = f"{size}-v-{size}, {run.policy} policy, central critic, "
    else:
        teams = f"{size}-v-{size} (one policy flies every seat), " if size > 1 else ""
    if not runner.sync.several:
        where, envs = f"{plan.device}", f"{run.num_envs} envs"
    else:
        gpus = ", one GPU each" if plan.device.type == "cuda" and world > 1 else ""
        where = f"{world} process{'es' if world > 1 else ''} ({plan.device.type}{gpus})"
        envs = f"{run.num_envs} envs ({plan.local_envs} per process)"
    split = describe_split(learner.opponents.pool) + (" per process" if world > 1 else "")
    taught = f"; taught by {plan.teacher.label} (weight {plan.cfg.ppo.kickstart_coef:g})" if plan.teacher else ""
    if plan.warm_up_steps and not learner.opponents.league_open:
        taught += f"; the league after {plan.warm_up_steps:,} steps against {learner.opponents.warm_up_opponent} alone"
    if plan.league:
        taught += (f"; the league draws the ladder {run.ladder_share:.0%} of the time, the run's past "
                   f"{'and its exploiters ' if plan.exploiter_share else ''}the rest")
    if plan.exploiter_share:
        taught += (f"; a main exploiter trains against the learner on {plan.exploiter_share:.0%} of the league's "
                   f"steps (the learner on {1 - plan.exploiter_share:.0%})")
    compiled, why = plan.compile_update
    update = "compiled" if compiled else f"eager ({why})"
    step = learner.env.env.step_path
    paths = f"env step and update {step}" if step == update else f"env step {step}, update {update}"
    ppo = plan.cfg.ppo
    return (f"training {algorithm} on {where}, {teams}vs {split}; reward {run.reward}{taught}; "
            f"{envs} x {ppo.n_steps} steps per update in minibatches of {ppo.batch_size:,} over {ppo.n_epochs} "
            f"epochs, learning rate {ppo.learning_rate:g}, {paths}; output {plan.out}")


def describe_end(runner: Any) -> str:
    """The closing lines: steps and updates done, and the weights kept in best.pt."""
    from arena.training import BEST_CHECKPOINT

    counters, out = runner.learner.counters, runner.plan.out
    text = f"done: {counters.env_steps:,} steps, {counters.updates} updates; checkpoints in {out}"
    best = runner.evaluator.best
    if best is not None:
        rated = f"{best.rating.describe()} against the references, " if best.rating is not None else ""
        if best.aim is not None:
            rated = f"score {best.aim:.3f} against the opponents it trained against, {rated}"
        text += (f"\nbest: {out / BEST_CHECKPOINT}, the weights of step {best.step:,} ({rated}playing "
                 f"{best.policy or 'deterministic'}; worst score {best.worst:.3f}, against {best.weakest()})")
    return text


def announce_checkpoint(path: str, step: int, metrics: dict[str, float]) -> None:
    """Tell ``arena_checkpoint_saved`` observers; one that raises is reported, training goes on."""
    from arena.plugins import get_host

    try:
        get_host().hook.arena_checkpoint_saved(path=path, step=step, metrics=metrics)
    except Exception as exc:  # noqa: BLE001 - an observer's bug must not end a training run
        click.echo(f"warning: an arena_checkpoint_saved observer raised {type(exc).__name__}: {exc}", err=True)
