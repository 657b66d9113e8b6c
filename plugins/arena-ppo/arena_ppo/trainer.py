"""``arena train ppo``: the command line of the PPO trainer.

Flags keep the names and meanings of the baseline PPO design's flags. This module imports neither torch nor the
runner at import time: ``arena train --help`` lists trainers without loading them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, ClassVar

import click

from arena.threads import HELP as THREADS_HELP
from arena.threads import MAX_THREADS

from arena_ppo.config import LR_SCHEDULES, NetworkConfig, PPOConfig, RunConfig, TrainConfig
from arena_ppo.mappo_agent import POLICIES

# CLI parameter -> (config section, field). Anything not listed is a run-only switch.
PARAMS: dict[str, tuple[str, str]] = {
    **{f.name: ("ppo", f.name) for f in fields(PPOConfig)},
    **{f.name: ("run", f.name) for f in fields(RunConfig)},
    "layer_norm": ("network", "input_layer_norm"),
    "init_fire_logit": ("network", "init_fire_logit"),
    "init_log_std": ("network", "init_log_std"),
    "recurrent": ("network", "recurrent"),
    "obs_delta": ("network", "obs_delta"),
}
# Settings a resumed run cannot change: the checkpoint's tensors are shaped by them.
FIXED_ON_RESUME = ("num_envs", "obs_mode", "obs_norm", "privileged_critic", "value_norm", "layer_norm", "self_slots",
                   "floor", "team_size", "policy", "recurrent", "obs_delta")
# What a run saved before a setting existed did: resuming it must not change its course.
SAVED_BEFORE = {"run": {"floor": 0.0, "ladder_share": None, "tenure": 1, "handover": True}}
MAX_ENVS = 1 << 24  # battles stepped at once: ~16.7 M, already tens of GB of env state and rollout
MAX_STEPS = 1 << 60  # environment steps (and intervals): far beyond any run, still exact in int64 counters
MAX_SEED = (1 << 62) - 1  # seeds feed 64-bit torch generators with small offsets added
MAX_NPROC = 1024  # processes started on this machine by --nproc


class FiniteFloat(click.FloatRange):
    """click's FloatRange, refusing NaN and infinities (a range check lets NaN through: it compares false)."""

    name = "float"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        result = super().convert(value, param, ctx)
        if not math.isfinite(result):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return result


def _options(func: Any, algorithm: str = "ppo") -> Any:
    """The options of ``arena train ppo`` (or of ``arena train mappo``: team defaults, --policy, no
    --privileged-critic since MAPPO's critic always reads the global state)."""
    P, R, N = PPOConfig(), RunConfig(), NetworkConfig()
    mappo = algorithm == "mappo"
    opts = [
        click.option("--vs", "vs", multiple=True, metavar="NAME[=WEIGHT]",
                     help="Opponent, repeatable: an agent name (crank, placeholder), ckpt:PATH, self "
                          "(this run's past checkpoints, prioritized fictitious self-play) or league (the ladder of "
                          "scripted opponents and the run's checkpoints, by the same priority). Envs are split by "
                          "weight. "
                          f"[default: {' '.join(R.vs)}]"),
        click.option("--floor", type=FiniteFloat(0.0, 0.9), default=R.floor, show_default=True,
                     help="Share of the envs that play the random placeholder (the league's floor) besides "
                          "--vs, so the policy also learns to beat an opponent that does not come at it. 0: off."),
        click.option("--reward", default=R.reward, show_default=True,
                     help="Reward shaping added to the env reward (a name from arena_rewards)."),
        click.option("--num-envs", type=click.IntRange(1, MAX_ENVS), default=R.num_envs, show_default=True,
                     help="Battles stepped at once, over all processes: each of N processes steps num_envs/N."),
        click.option("--max-steps", type=click.IntRange(1, MAX_STEPS), default=R.max_steps, show_default=True,
                     help="Environment steps over all envs (of all processes); a rollout once started is finished."),
        click.option("--max-time", type=FiniteFloat(0, min_open=True), default=None,
                     help="Also stop after this many seconds of training (checked between updates)."),
        click.option("--learning-rate", type=FiniteFloat(0, min_open=True), default=P.learning_rate,
                     show_default=True),
        click.option("--n-steps", type=click.IntRange(1, 1 << 20), default=P.n_steps, show_default=True,
                     help="Steps per env per update."),
        click.option("--batch-size", type=click.IntRange(1, 1 << 40), default=P.batch_size, show_default=True,
                     help="Minibatch size, over all processes: each of N takes batch_size/N samples of it."),
        click.option("--n-epochs", type=click.IntRange(1, 10_000), default=P.n_epochs, show_default=True),
        click.option("--gamma", type=FiniteFloat(0, 1), default=P.gamma, show_default=True),
        click.option("--gae-lambda", type=FiniteFloat(0, 1), default=P.gae_lambda, show_default=True),
        click.option("--clip-epsilon", type=FiniteFloat(0, min_open=True), default=P.clip_epsilon,
                     show_default=True),
        click.option("--value-loss-coef", type=FiniteFloat(0), default=P.value_loss_coef, show_default=True),
        click.option("--entropy-coef", type=FiniteFloat(0), default=P.entropy_coef, show_default=True),
        click.option("--fire-entropy-penalty", type=FiniteFloat(0), default=P.fire_entropy_penalty,
                     show_default=True,
                     help="Weight of a penalty on the trigger's entropy: launch probabilities near 0 or 1, so the "
                          "sampled launch time of training nears the deterministic one of play. 0: off."),
        click.option("--max-grad-norm", type=FiniteFloat(0, min_open=True), default=P.max_grad_norm,
                     show_default=True),
        click.option("--clip-value-loss/--no-clip-value-loss", default=P.clip_value_loss, show_default=True,
                     help="Clip the value update like the policy."),
        click.option("--lr-schedule", type=click.Choice(LR_SCHEDULES), default=P.lr_schedule, show_default=True,
                     help="constant; linear decay to 0 at --max-steps; adaptive by KL target (rsl_rl)."),
        click.option("--desired-kl", type=FiniteFloat(0, min_open=True), default=P.desired_kl, show_default=True,
                     help="KL target of --lr-schedule adaptive."),
        click.option("--lr-anneal", type=FiniteFloat(0, 1, max_open=True), default=P.lr_anneal, show_default=True,
                     metavar="SHARE",
                     help="Over this last share of the budget (--max-steps, or --max-time when that ends first) "
                          "the learning rate's ceiling falls linearly to 0, with any --lr-schedule. 0: off."),
        click.option("--value-norm/--no-value-norm", default=True if mappo else P.value_norm, show_default=True,
                     help="Critic learns normalized returns: MAPPO's ValueNorm (debiased moving averages) for "
                          "mappo, a running mean and variance for ppo."),
        click.option("--obs-norm/--no-obs-norm", default=R.obs_norm, show_default=True,
                     help="Running observation normalization, saved in checkpoints (rsl_rl)."),
        click.option("--layer-norm/--no-layer-norm", default=N.input_layer_norm, show_default=True,
                     help="LayerNorm on the network input."),
        click.option("--obs-delta/--no-obs-delta", default=N.obs_delta, show_default=True,
                     help="Feed the network each observation's change since the last step beside it (rates: "
                          "missile closure, turn rate)."),
        *([] if mappo else [click.option(
            "--privileged-critic/--no-privileged-critic", default=R.privileged_critic, show_default=True,
            help="Critic reads the env's global state (rsl_rl privileged observations, MAPPO).")]),
        click.option("--obs-mode", type=click.Choice(["default", "extended"]), default=R.obs_mode, show_default=True,
                     help="extended adds aspect, enemy missiles and the nearest threat to the 10 standard features."),
        click.option("--team-size", type=click.IntRange(1, 8), default=2 if mappo else R.team_size, show_default=True,
                     help="Aircraft a side: the policy flies every seat of its team, each on its own observation "
                          "(parameter sharing); opponents fly the other team seat by seat."),
        click.option("--init-fire-logit", type=FiniteFloat(-50, 50), default=N.init_fire_logit, show_default=True,
                     help="Starting bias of the fire logit (-6: p≈0.0025 per step, missiles kept for later)."),
        click.option("--init-log-std", type=FiniteFloat(-20, 20), default=N.init_log_std, show_default=True,
                     help="Starting log-std of the rudder Gaussian."),
        click.option("--save-interval", type=click.IntRange(1, MAX_STEPS), default=R.save_interval, show_default=True,
                     help="Environment steps between checkpoints (whole updates)."),
        click.option("--log-interval", type=click.IntRange(1, MAX_STEPS), default=R.log_interval, show_default=True,
                     help="Environment steps between console lines; metrics.csv gets every update."),
        click.option("--eval-interval", type=click.IntRange(0, MAX_STEPS), default=R.eval_interval, show_default=True,
                     help="Environment steps between deterministic evaluations (0: with each checkpoint)."),
        click.option("--eval-games", type=click.IntRange(0, MAX_ENVS), default=R.eval_games, show_default=True,
                     help="Games per opponent in each evaluation (0: none)."),
        click.option("--keep-best/--no-keep-best", default=R.keep_best, show_default=True,
                     help="After each evaluation keep the weights with the best worst-case score over the "
                          "evaluation opponents (wins plus half the draws) in best.pt; best.json names the step."),
        click.option("--rollback", type=FiniteFloat(0, 1), default=R.rollback, show_default=True, metavar="MARGIN",
                     help="When an evaluation's worst score (wins plus half the draws) falls more than MARGIN below "
                          "that of the weights in best.pt, training goes back to those weights. 0: off."),
        click.option("--gate", type=FiniteFloat(0, 1), default=R.gate, show_default=True, metavar="TIE",
                     help="Evaluations also play the weights in best.pt; worst scores within TIE of theirs are a tie, "
                          "which the duel breaks: new weights replace them by scoring above 0.5 (with --rollback, "
                          "below 0.5 - MARGIN goes back). 0: off."),
        click.option("--self-slots", type=click.IntRange(1, 1024), default=R.self_slots, show_default=True,
                     help="Past checkpoints playing at once for --vs self (opponents drawn at once for --vs league)."),
        click.option("--tenure", type=click.IntRange(0, MAX_STEPS), default=R.tenure, show_default=True,
                     help="Env steps a drawn opponent (--vs self, --vs league) keeps its envs, in whole rollouts; "
                          "then they get a new draw. 0: the longest battle (max_time / dt). With --no-handover "
                          "and 0 no game changes opponent midway."),
        click.option("--handover/--no-handover", default=R.handover, show_default=True,
                     help="A drawn opponent takes over the battles in flight (a game's result goes to whoever "
                          "ends it); --no-handover starts new battles at each draw instead."),
        click.option("--ladder-share", type=FiniteFloat(0, 1, min_open=True), default=R.ladder_share,
                     show_default=True,
                     help="--vs league: share of the drawn opponents taken from the ladder and training partners "
                          "once the run has checkpoints; the rest are its own checkpoints."),
        click.option("--pfsp-memory", type=FiniteFloat(0, 1e12), default=R.pfsp_memory, show_default=True,
                     metavar="GAMES",
                     help="--vs self / league: games against an opponent over which its PFSP record fades "
                          "(exponentially), so priorities follow what the learner does now; 0: every game "
                          "counts alike."),
        click.option("--pfsp-power", type=FiniteFloat(0, 16), default=R.pfsp_power, show_default=True,
                     help="--vs self / league: an opponent's PFSP weight is (1 - the learner's score against it) "
                          "to this power, floored at 0.05 (2: only scores below 0.78 rise above the floor)."),
        click.option("--kickstart", metavar="NAME|ckpt:PATH", default=R.kickstart,
                     help="Kickstarting: a teacher agent whose actions, on the learner's own states, are an extra "
                          "loss, weighted from --kickstart-coef to --kickstart-final over --kickstart-steps "
                          "(docs/training.md). Duels only."),
        click.option("--kickstart-steps", type=click.IntRange(0, MAX_STEPS), default=R.kickstart_steps,
                     show_default=True,
                     help="Environment steps over which the teacher's weight moves to --kickstart-final."),
        click.option("--kickstart-coef", type=FiniteFloat(0), default=P.kickstart_coef, show_default=True,
                     help="The teacher's weight at the start, against the PPO loss."),
        click.option("--kickstart-final", type=FiniteFloat(0), default=P.kickstart_final, show_default=True,
                     help="The teacher's weight from --kickstart-steps on (0: the teacher is then dropped)."),
        click.option("--kickstart-trigger", type=FiniteFloat(0), default=P.kickstart_trigger, show_default=True,
                     help="Weight of the teacher's trigger (when to fire) against its rudder, within its loss "
                          "(0: the learner fires as the reward teaches it)."),
        click.option("--threads", type=click.IntRange(0, MAX_THREADS), default=R.threads, help=THREADS_HELP),
        click.option("--device", default=R.device, show_default=True,
                     help="cpu, cuda, cuda:N or auto. With several processes, cuda gives each the GPU of its local "
                          "rank."),
        click.option("--nproc", type=click.IntRange(1, MAX_NPROC), default=None,
                     help="Train on N processes of this machine, as torchrun --nproc-per-node N -m arena train would: "
                          "each steps its share of --num-envs with its own seed; gradients and normalizers are "
                          "merged so all hold the same weights; process 0 writes. See docs/scaling.md."),
        click.option("--seed", type=click.IntRange(0, MAX_SEED), default=R.seed, show_default=True),
        click.option("--resume", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Continue from a checkpoint of this trainer (flags given now override its settings)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Output directory [default: runs/ppo-<time>, or the checkpoint's directory with --resume]."),
        click.option("--progress/--no-progress", default=True, show_default=True, help="Progress display."),
    ]
    if mappo:
        opts[:0] = [
            click.option("--policy", type=click.Choice(POLICIES), default=R.policy, show_default=True,
                         help="shared: one actor and critic for every seat, told its seat; separated: one per seat."),
            click.option("--recurrent/--no-recurrent", default=N.recurrent, show_default=True,
                         help="A GRU cell in the actor and the critic, its state reset when a battle restarts."),
            click.option("--data-chunk-length", type=click.IntRange(1, 1 << 20), default=P.data_chunk_length,
                         show_default=True, help="--recurrent: steps per training sequence; must divide --n-steps."),
        ]
    for opt in reversed(opts):
        func = opt(func)
    return func


def build_config(params: dict[str, Any], base: TrainConfig | None = None, only: set[str] | None = None) -> TrainConfig:
    """Copy CLI values into a TrainConfig (all of them, or just the names in ``only``)."""
    cfg = base or TrainConfig()
    for name, value in params.items():
        if name not in PARAMS or (only is not None and name not in only):
            continue
        section, field_name = PARAMS[name]
        if name == "vs":
            value = tuple(value) if value else RunConfig().vs
        setattr(getattr(cfg, section), field_name, value)
    return cfg


def config_from_dict(data: Any, command: click.Command | None = None, ctx: click.Context | None = None) -> TrainConfig:
    """The TrainConfig saved in a checkpoint, every value checked as the command line would check it.

    A value of the wrong type or out of range raises ``ValueError`` naming ``config.SECTION.KEY``;
    unknown keys (from a newer version) are ignored.
    """
    from arena_ppo.agent import check_network

    if not isinstance(data, dict):
        raise ValueError(f"config: expected a dict, got {type(data).__name__}")
    options = {p.name: p for p in (command.params if command is not None else []) if p.name}
    sections: dict[str, dict[str, Any]] = {}
    for section, cls in (("run", RunConfig), ("ppo", PPOConfig)):
        raw = data.get(section, {})
        if not isinstance(raw, dict):
            raise ValueError(f"config.{section}: expected a dict, got {type(raw).__name__}")
        defaults = cls()
        values = dict(SAVED_BEFORE.get(section, {}))
        for f in fields(cls):
            if f.name in raw:
                values[f.name] = check_value(raw[f.name], getattr(defaults, f.name), options.get(f.name), ctx,
                                             f"config.{section}.{f.name}")
        sections[section] = values
    network = data.get("network", {})
    try:
        network = check_network(network)
    except ValueError as exc:
        raise ValueError(f"config.{exc}") from None
    return TrainConfig(run=RunConfig(**sections["run"]), ppo=PPOConfig(**sections["ppo"]),
                       network=NetworkConfig.from_dict(network))


def check_value(value: Any, default: Any, option: click.Parameter | None, ctx: click.Context | None, key: str) -> Any:
    """One saved setting: the Python type of its default, then the option's own range or choices."""
    if isinstance(default, tuple):
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise ValueError(f"{key}: expected a list of strings, got {value!r}"[:200])
        return tuple(value)
    if default is None and value is None:
        return None
    wanted: tuple[type, ...]
    if isinstance(default, bool) or (option is not None and option.is_flag):  # type: ignore[attr-defined]
        wanted = (bool,)
    elif isinstance(default, float):
        wanted = (int, float)
    elif isinstance(default, int) or default is None:  # threads: int | None
        wanted = (int,)
    else:
        wanted = (str,)
    if not isinstance(value, wanted) or (bool not in wanted and isinstance(value, bool)):
        names = " or ".join(t.__name__ for t in wanted)
        raise ValueError(f"{key}: expected {names}, got {value!r}"[:200])
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{key}: expected a finite number, got {value!r}")
    if option is not None and bool not in wanted:
        try:
            return option.type.convert(value, option, ctx)
        except click.BadParameter as exc:
            raise ValueError(f"{key}: {exc.message}") from None
    return value


class PPOTrainer:
    """Trainer plugin entry: ``arena train ppo``."""

    name: ClassVar[str] = "ppo"
    aliases: ClassVar[tuple[str, ...]] = ()
    help: ClassVar[str] = "Train a PPO agent against opponents (agents, checkpoints, self-play)."

    @classmethod
    def command(cls) -> click.Command:
        @click.command(cls.name, help=HELP, short_help=cls.help, context_settings={"max_content_width": 110})
        @_options
        @click.pass_context
        def train_ppo(ctx: click.Context, **params: Any) -> None:
            run_training(ctx, params)

        return train_ppo


class MAPPOTrainer:
    """Trainer plugin entry: ``arena train mappo``."""

    name: ClassVar[str] = "mappo"
    aliases: ClassVar[tuple[str, ...]] = ()
    help: ClassVar[str] = "Train a MAPPO team (central critic, shared or per-seat actors) for team battles."

    @classmethod
    def command(cls) -> click.Command:
        @click.command(cls.name, help=MAPPO_HELP, short_help=cls.help, context_settings={"max_content_width": 110})
        @lambda func: _options(func, "mappo")
        @click.pass_context
        def train_mappo(ctx: click.Context, **params: Any) -> None:
            run_training(ctx, params, "mappo")

        return train_mappo


MAPPO_HELP = """Train a MAPPO team against an opponent pool (team battles, --team-size 2 by default).

\b
  arena train mappo --team-size 2 --vs crank
  arena train mappo --team-size 4 --vs crank --policy separated
  arena train mappo --vs crank --vs self=0.5
  arena train mappo --resume runs/mappo-20250101-120000/ckpt_004194304.pt
  arena train mappo --vs crank --nproc 2

Each aircraft's actor reads its own observation and its seat; the critic reads the side's global
state; returns are normalized by ValueNorm, and dead aircraft add no loss. Writes what `arena train
ppo` writes; the checkpoints play at their team size in `arena play` and tournaments.
"""


HELP = """Train a PPO agent against an opponent pool.

\b
  arena train ppo --vs crank
  arena train ppo --vs crank=3 --vs self --reward pursuit
  arena train ppo --vs rule_based --reward zero --num-envs 8 --n-steps 256 --max-steps 1000
  arena train ppo --resume runs/ppo-20250101-120000/ckpt_004194304.pt --max-steps 40000000
  arena train ppo --vs crank --nproc 2
  torchrun --nproc-per-node 4 -m arena train ppo --vs crank --device cuda

Writes checkpoints, metrics.csv, eval.csv and config.yaml to --out. Ctrl-C finishes the current
update, saves a checkpoint and stops; --resume continues exactly where a checkpoint left off. On
several processes (--nproc, torchrun) --num-envs, --batch-size and --max-steps count all of them,
process 0 writes everything, and a run resumes on as many processes as saved it.
"""


def fail(message: str) -> click.ClickException:
    """One line, non-zero exit, no traceback: arena's own error type when the core offers it."""
    try:
        from arena.cli import ArenaError
    except ImportError:  # pragma: no cover - the core always has it
        return click.ClickException(message)
    return ArenaError(message)


def explicit(ctx: click.Context) -> set[str]:
    """Names of the parameters the user typed (not defaults)."""
    from click.core import ParameterSource

    return {name for name in ctx.params if ctx.get_parameter_source(name) == ParameterSource.COMMANDLINE}


def run_training(ctx: click.Context, params: dict[str, Any], algorithm: str = "ppo") -> dict[str, float]:
    """Validate everything that can be wrong before any compute starts, then run (``algorithm``: ppo or mappo).

    Three ways in: a plain process; ``--nproc N``, which checks the run here and starts N processes
    (:mod:`arena_ppo.launch`); and a process started by torchrun (or by ``--nproc``), which joins
    the others and trains as one of them.
    """
    from arena.training.distributed import DistributedError, Group, PeerFailure, rank_from_env

    try:
        rank = rank_from_env()
    except DistributedError as exc:
        raise fail(str(exc)) from None
    nproc = params.get("nproc")
    if nproc is not None:
        if rank is not None:
            raise fail(f"--nproc {nproc}: this process already runs as {rank} under torchrun, which started the "
                       f"processes; leave out --nproc (or start it without torchrun)")
        from arena_ppo.launch import launch_training

        return launch_training(ctx, params, algorithm, nproc)
    if rank is None:
        return train(ctx, params, algorithm)
    try:
        group = Group.join(rank)
    except (DistributedError, PeerFailure) as exc:
        raise fail(str(exc)) from None
    try:
        result = train(ctx, params, algorithm, group)
    except PeerFailure as exc:  # a process ended while the others were setting up
        from arena_ppo.launch import everyone

        group.close(wait=False)
        raise everyone(group, f"training did not start: {exc}") from None
    except BaseException:  # a process that exits inside the group can abort at shutdown
        group.close(wait=False)  # the others may be anywhere: waiting for them could hang
        raise
    group.close()
    return result


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


def prepare(ctx: click.Context, params: dict[str, Any], algorithm: str, rank: Any = None) -> Setup:
    """Every check of a run that needs no compute and writes nothing; raises a one-line error.

    ``rank`` (an :class:`arena.training.distributed.Rank`) checks the run as one of several
    processes: sizes that must split over them, one GPU each, a checkpoint saved by as many.
    """
    from arena.training import CheckpointError, OpponentSpecError, default_run_dir, load_checkpoint

    resume_data = None
    plan: ResumePlan | None = None
    given = explicit(ctx)
    world = rank.world_size if rank is not None else 1
    if params.get("resume") is not None:
        from arena_ppo.agent import FORMAT_VERSION

        resume = Path(params["resume"])
        try:
            resume_data = load_checkpoint(resume, expect_agent=algorithm, max_version=FORMAT_VERSION)
        except CheckpointError as exc:
            raise fail(str(exc)) from None
        if "counters" not in resume_data or "config" not in resume_data:
            raise fail(f"checkpoint {resume}: holds weights only, no trainer state to resume from")
        try:
            cfg = config_from_dict(resume_data["config"], ctx.command, ctx)
        except ValueError as exc:
            raise fail(f"checkpoint {resume}: damaged trainer state: {exc}") from None
        fresh = build_config(params)
        mismatched = [n for n in FIXED_ON_RESUME if n in given and getattr(getattr(fresh, PARAMS[n][0]), PARAMS[n][1])
                      != getattr(getattr(cfg, PARAMS[n][0]), PARAMS[n][1])]
        if mismatched:
            raise fail(f"--resume: cannot change {', '.join('--' + n.replace('_', '-') for n in mismatched)} of a run "
                       f"(the checkpoint's tensors depend on it); start a new run instead")
        cfg = build_config(params, cfg, given)
        counters = resume_data["counters"]
        if not isinstance(counters, dict):
            raise fail(f"checkpoint {resume}: damaged trainer state: counters: expected a dict, got "
                       f"{type(counters).__name__}")
        step = counters.get("env_steps")
        if isinstance(step, bool) or not isinstance(step, int) or step < 0:
            raise fail(f"checkpoint {resume}: damaged trainer state: counters.env_steps: expected an int >= 0, "
                       f"got {step!r}"[:300])
        check_saved_processes(resume, resume_data, world, algorithm)
        try:
            plan = plan_resume(resume, step, params["out"])
        except ValueError as exc:
            raise fail(str(exc)) from None
        out = plan.out
    else:
        cfg = build_config(params)
        out = params["out"] or default_run_dir(algorithm)
        if holds_run(out):
            # A second run here would append to the first one's metrics and play its checkpoints as `self`.
            raise fail(f"--out {out}: already holds a training run; continue it with --resume PATH, or give "
                       f"another directory")
    cfg.run.out = str(out)
    if cfg.network.recurrent and cfg.ppo.n_steps % cfg.ppo.data_chunk_length:
        raise fail(f"--data-chunk-length {cfg.ppo.data_chunk_length} must divide --n-steps {cfg.ppo.n_steps}: the "
                   f"rollout is cut into whole sequences")
    for flag, value, use in (("--rollback", cfg.run.rollback, "goes back to the weights in best.pt"),
                             ("--gate", cfg.run.gate, "plays the weights in best.pt at each evaluation")):
        if value > 0 and (not cfg.run.keep_best or cfg.run.eval_games == 0):
            raise fail(f"{flag} {value:g} {use}: it needs --keep-best and --eval-games above 0")
    if algorithm == "mappo":
        cfg.run.privileged_critic = True  # the central critic is what makes it MAPPO
    if rank is not None:
        check_split(cfg, world)

    from arena_ppo.kickstart import check_teacher
    from arena_ppo.runners import opponent_specs

    try:
        specs = opponent_specs(cfg.run, cfg.run.num_envs // world)
        teacher = check_teacher(cfg.run.kickstart, cfg.run.team_size) if cfg.run.kickstart else None
    except OpponentSpecError as exc:
        raise fail(str(exc)) from None
    if world > 1 and cfg.run.num_envs // world < len(specs):
        raise fail(f"--num-envs {cfg.run.num_envs}: {len(specs)} opponents need {len(specs)} envs in each of the "
                   f"{world} processes; give at least {len(specs) * world}")
    reward_fn = resolve_reward(cfg.run.reward)
    try:
        if rank is not None:
            from arena.training.distributed import process_device

            device = process_device(cfg.run.device, rank)
        else:
            from arena.match import check_device

            device = check_device(cfg.run.device)
    except ValueError as exc:
        text = str(exc)
        raise fail(text if text.startswith("--device") else f"--device: {text}") from None
    make_opponent = opponent_factory(device, cfg.run.env_config())
    for spec in specs:  # fail now, not after the first rollout
        if spec.kind in ("agent", "checkpoint"):
            make_opponent(spec)
    if teacher is not None:
        opponent_factory(device, cfg.run.env_config(), option="--kickstart")(teacher)
    return Setup(cfg, Path(out), device, make_opponent, reward_fn, resume_data, plan)


def check_split(cfg: TrainConfig, world: int) -> None:
    """``--num-envs`` and ``--batch-size`` count all processes: each must get an equal, non-empty share."""
    envs, batch = cfg.run.num_envs, cfg.ppo.batch_size
    if envs < world:
        raise fail(f"--num-envs {envs}: fewer battles than the {world} processes; it counts the envs of all "
                   f"processes, each needs at least one")
    if envs % world:
        low, high = envs - envs % world, envs - envs % world + world
        raise fail(f"--num-envs {envs} does not split evenly over {world} processes (it counts the envs of all of "
                   f"them); give a multiple of {world}, e.g. {low if low else high} or {high}")
    if batch < world:
        raise fail(f"--batch-size {batch}: smaller than the {world} processes; it counts the samples of all "
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


def train(ctx: click.Context, params: dict[str, Any], algorithm: str, group: Any = None) -> dict[str, float]:
    """Check, build, resume and run the training loop in this process (one of ``group`` when given).

    With several processes every step that can fail is agreed on (:func:`arena_ppo.launch.agreed`):
    all processes go on, or all stop with one line from the main process. Only the main process
    creates the output directory and prints.
    """
    import signal

    from arena.match import AgentFailure
    from arena.training import BEST_CHECKPOINT, StopRequest, describe_split
    from arena.training.distributed import DivergenceError, PeerFailure

    from arena_ppo.launch import agreed, everyone
    from arena_ppo.runners import MAPPORunner, OnPolicyRunner

    main = group is None or group.rank.main
    setup = agreed(group, lambda: prepare(ctx, params, algorithm, group.rank if group is not None else None))
    if group is not None:  # the main process named the output (its clock, its branch); all write there
        setup.out, setup.plan = group.broadcast_object((setup.out, setup.plan))
        setup.cfg.run.out = str(setup.out)
    cfg, out, plan, device = setup.cfg, setup.out, setup.plan, setup.device
    runner_class = MAPPORunner if algorithm == "mappo" else OnPolicyRunner

    def create_outputs() -> bool:
        check_writable(out)
        return plan.materialize() if plan is not None else False  # the branch's self-play pool needs its checkpoints

    def build() -> Any:
        try:
            return runner_class(cfg, out, setup.make_opponent, reward_fn=setup.reward_fn,
                                on_checkpoint=announce_checkpoint, console=click.echo,
                                progress=params.get("progress", True), group=group)
        except ValueError as exc:
            raise fail(str(exc)) from None
        except (MemoryError, RuntimeError) as exc:
            if not out_of_memory(exc):
                raise
            raise fail(f"--num-envs {cfg.run.num_envs:,} x --n-steps {cfg.ppo.n_steps:,}: not enough memory on "
                       f"{device}; use fewer envs or steps per update") from None

    def restore() -> None:
        try:
            runner.restore(setup.resume_data)
        except Exception as exc:  # noqa: BLE001 - a damaged part of the trainer state: one line naming it
            text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise fail(f"checkpoint {params['resume']}: cannot resume: {text}") from None

    created = agreed(group, create_outputs if main else (lambda: False))
    try:
        runner = agreed(group, build)
        if setup.resume_data is not None:
            agreed(group, restore)
    except (click.ClickException, click.exceptions.Exit):
        if main and plan is not None:
            plan.undo(created)
        raise
    if plan is not None and plan.note and main:
        click.echo(f"note: {plan.note}", err=True)

    size = cfg.run.team_size
    if algorithm == "mappo":
        teams = f"{size}-v-{size}, {cfg.run.policy} policy, central critic, "
    else:
        teams = f"{size}-v-{size} (one policy flies every seat), " if size > 1 else ""
    world = runner.rank.world_size
    if group is None:
        where, envs = f"{runner.device}", f"{cfg.run.num_envs} envs"
    else:
        gpus = ", one GPU each" if runner.device.type == "cuda" and world > 1 else ""
        where = f"{world} process{'es' if world > 1 else ''} ({runner.device.type}{gpus})"
        envs = f"{cfg.run.num_envs} envs ({runner.local_envs} per process)"
    split = describe_split(runner.pool) + (" per process" if group is not None and world > 1 else "")
    trigger = f", trigger {cfg.ppo.kickstart_trigger:g}" if cfg.ppo.kickstart_trigger != 1 else ""
    taught = (f"; taught by {cfg.run.kickstart} (weight {cfg.ppo.kickstart_coef:g} to {cfg.ppo.kickstart_final:g} "
              f"over {cfg.run.kickstart_steps:,} steps{trigger})" if cfg.run.kickstart else "")
    if main:
        click.echo(f"training {algorithm} on {where}, {teams}vs {split}; reward {cfg.run.reward}{taught}; "
                   f"{envs} x {cfg.ppo.n_steps} steps per update; output {out}")
    suffix = "" if main else f" ({group.rank})"
    stopping = {} if group is None else {"signals": (signal.SIGINT, signal.SIGTERM),
                                         **({} if main else {"message": ""})}
    with StopRequest(**stopping) as stop:
        try:
            metrics = runner.learn(stop, max_time=params.get("max_time"))
        except KeyboardInterrupt:
            raise click.exceptions.Exit(130) from None
        except FloatingPointError as exc:  # every process reads the same losses: they all stop here
            raise everyone(group, f"training diverged: {exc}") from None
        except DivergenceError as exc:
            raise everyone(group, f"{exc}; nothing was saved at this step, the last checkpoint in {out} is intact "
                                  f"(a bug: please report it)") from None
        except PeerFailure as exc:
            raise everyone(group, f"training stopped: {exc}; the last checkpoint in {out} is intact") from None
        except AgentFailure as exc:
            saved = getattr(exc, "checkpoint", None)
            kept = f"; what was learned is saved in {saved}" if saved else (
                f"; the last checkpoint in {out} is intact" if group is not None else "")
            raise fail(f"training stopped: opponent {exc}{kept}{suffix}") from None
        except OSError as exc:
            raise fail(f"cannot write to {exc.filename or out}: {exc.strerror or exc}; the last checkpoint in {out} "
                       f"is intact{suffix}") from None
    if main:
        counters = runner.counters
        click.echo(f"done: {counters.env_steps:,} steps, {counters.updates} updates; checkpoints in {out}")
        best = runner.best
        if best is not None:
            click.echo(f"best: {out / BEST_CHECKPOINT}, the weights of step {best.step:,} (worst evaluation score "
                       f"{best.worst:.3f}, against {best.weakest()}; mean {best.mean:.3f})")
    return metrics


def out_of_memory(exc: BaseException) -> bool:
    text = str(exc).lower()
    return isinstance(exc, MemoryError) or type(exc).__name__ == "OutOfMemoryError" or (
        "memory" in text and ("alloc" in text or "out of" in text or "not enough" in text))


def holds_run(directory: Path) -> bool:
    """Whether ``directory`` already holds a training run (checkpoints or metrics)."""
    from arena.training import list_checkpoints

    return bool(list_checkpoints(directory)) or (Path(directory) / "metrics.csv").exists()


def check_writable(out: Path) -> None:
    """Create ``out`` and write a probe file now, so a bad --out fails before any training."""
    import os

    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".arena-write-test.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise fail(f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__}); expected a directory "
                   f"that can be created and written") from None


@dataclass
class ResumePlan:
    """Where a resumed run writes, and what history a new folder starts with.

    A run continues in its own folder only from its latest state; resuming an older checkpoint
    branches into a new folder, so the later checkpoints and metrics of the abandoned line are never
    overwritten, mixed with new rows, or drawn as ``--vs self`` opponents.
    """

    out: Path
    source: Path | None = None  # the run folder whose history (up to ``step``) the new folder starts with
    step: int = 0
    note: str = ""

    def materialize(self) -> bool:
        """Create the new folder with the history up to ``step``; returns whether a folder was created."""
        if self.source is None:
            return False
        created = not self.out.exists()
        branch_history(self.source, self.out, self.step)
        return created

    def undo(self, created: bool) -> None:
        """Remove a branch folder this plan created (resume failed before anything was trained)."""
        import shutil

        if created and self.out.exists():
            shutil.rmtree(self.out, ignore_errors=True)


def plan_resume(checkpoint: Path, step: int, out: Path | None) -> ResumePlan:
    """Decide where ``--resume checkpoint`` (taken at ``step``) writes; ``ValueError`` when it must refuse."""
    home = checkpoint.parent
    if out is not None and not same_dir(out, home):
        if holds_run(out):
            raise ValueError(f"--out {out}: already holds another training run; resuming {checkpoint} there would mix "
                             f"the two runs — give a new or empty directory, or leave out --out")
        return ResumePlan(out, home if holds_run(home) else None, step)
    later = later_than(home, step)
    if not later:
        return ResumePlan(home)
    if out is not None:
        raise ValueError(f"--resume {checkpoint}: {home} already goes on past step {step:,} ({later}); resuming "
                         f"there would overwrite it — leave out --out to branch into a new folder, or give a new one")
    branch = free_dir(home.parent / f"{home.name}-branch-{step}")
    return ResumePlan(branch, home, step,
                      note=f"{checkpoint.name} is not the latest state of {home} ({later}); continuing in a new "
                           f"folder {branch} with that run's checkpoints and metrics up to step {step:,}")


def same_dir(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def free_dir(base: Path) -> Path:
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def later_than(directory: Path, step: int) -> str:
    """What in a run folder is newer than ``step`` (checkpoints, metric rows), described; "" when nothing."""
    from arena.training import checkpoint_step, list_checkpoints

    found = []
    newer = [p for p in list_checkpoints(directory) if (checkpoint_step(p) or 0) > step]
    if newer:
        found.append(f"{len(newer)} later checkpoint(s), up to {newer[-1].name}")
    for name in ("metrics.csv", "eval.csv"):
        rows = [r for r in read_rows(directory / name) if row_step(r) > step]
        if rows:
            found.append(f"{len(rows)} row(s) of {name} past it")
    return ", ".join(found)


def read_rows(path: Path) -> list[dict[str, str]]:
    import csv

    if not path.is_file():
        return []
    try:
        with path.open(newline="") as handle:
            return list(csv.DictReader(handle))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def row_step(row: dict[str, str]) -> float:
    try:
        return float(row.get("step") or "nan")
    except ValueError:
        return float("nan")


def branch_history(source: Path, target: Path, step: int) -> None:
    """Give ``target`` the history of ``source`` up to ``step``: checkpoints (hard links where possible)
    and the metrics/eval rows, so the branch reads as one run and ``--vs self`` finds its past."""
    import csv
    import os
    import shutil

    from arena.training import checkpoint_step, list_checkpoints

    target.mkdir(parents=True, exist_ok=True)
    for path in list_checkpoints(source):
        if (checkpoint_step(path) or 0) <= step and not (target / path.name).exists():
            try:
                os.link(path, target / path.name)
            except OSError:
                shutil.copy2(path, target / path.name)
    for name in ("metrics.csv", "eval.csv"):
        src = source / name
        if not src.is_file() or (target / name).exists():
            continue
        with src.open(newline="") as handle:
            reader = csv.DictReader(handle)
            columns = list(reader.fieldnames or [])
            rows = [r for r in reader if row_step(r) <= step]
        with (target / name).open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)


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


def announce_checkpoint(path: str, step: int, metrics: dict[str, float]) -> None:
    """Tell ``arena_checkpoint_saved`` observers; one that raises is reported, training goes on."""
    from arena.plugins import get_host

    try:
        get_host().hook.arena_checkpoint_saved(path=path, step=step, metrics=metrics)
    except Exception as exc:  # noqa: BLE001 - an observer's bug must not end a training run
        click.echo(f"warning: an arena_checkpoint_saved observer raised {type(exc).__name__}: {exc}", err=True)
