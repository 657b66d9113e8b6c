"""``arena train ppo``: the command line of the PPO trainer.

Flags keep the names and meanings of the baseline PPO design's flags. This module imports neither torch nor the
runner at import time: ``arena train --help`` lists trainers without loading them.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path
from typing import Any, ClassVar

import click

from arena_ppo.config import LR_SCHEDULES, NetworkConfig, PPOConfig, RunConfig, TrainConfig

# CLI parameter -> (config section, field). Anything not listed is a run-only switch.
PARAMS: dict[str, tuple[str, str]] = {
    **{f.name: ("ppo", f.name) for f in fields(PPOConfig)},
    **{f.name: ("run", f.name) for f in fields(RunConfig)},
    "layer_norm": ("network", "input_layer_norm"),
    "init_fire_logit": ("network", "init_fire_logit"),
    "init_log_std": ("network", "init_log_std"),
}
# Settings a resumed run cannot change: the checkpoint's tensors are shaped by them.
FIXED_ON_RESUME = ("num_envs", "obs_mode", "obs_norm", "privileged_critic", "value_norm", "layer_norm")


def _options(func: Any) -> Any:
    P, R, N = PPOConfig(), RunConfig(), NetworkConfig()
    opts = [
        click.option("--vs", "vs", multiple=True, metavar="NAME[=WEIGHT]",
                     help="Opponent, repeatable: an agent name (crank, placeholder), ckpt:PATH, or self "
                          "(this run's past checkpoints, prioritized fictitious self-play). Envs are split by weight. "
                          f"[default: {' '.join(R.vs)}]"),
        click.option("--reward", default=R.reward, show_default=True,
                     help="Reward shaping added to the env reward (a name from arena_rewards)."),
        click.option("--num-envs", type=click.IntRange(1), default=R.num_envs, show_default=True,
                     help="Battles stepped at once."),
        click.option("--max-steps", type=click.IntRange(1), default=R.max_steps, show_default=True,
                     help="Environment steps over all envs; a rollout once started is finished."),
        click.option("--max-time", type=click.FloatRange(0, min_open=True), default=None,
                     help="Also stop after this many seconds of training (checked between updates)."),
        click.option("--learning-rate", type=click.FloatRange(0, min_open=True), default=P.learning_rate,
                     show_default=True),
        click.option("--n-steps", type=click.IntRange(1), default=P.n_steps, show_default=True,
                     help="Steps per env per update."),
        click.option("--batch-size", type=click.IntRange(1), default=P.batch_size, show_default=True,
                     help="Minibatch size."),
        click.option("--n-epochs", type=click.IntRange(1), default=P.n_epochs, show_default=True),
        click.option("--gamma", type=click.FloatRange(0, 1), default=P.gamma, show_default=True),
        click.option("--gae-lambda", type=click.FloatRange(0, 1), default=P.gae_lambda, show_default=True),
        click.option("--clip-epsilon", type=click.FloatRange(0, min_open=True), default=P.clip_epsilon,
                     show_default=True),
        click.option("--value-loss-coef", type=click.FloatRange(0), default=P.value_loss_coef, show_default=True),
        click.option("--entropy-coef", type=click.FloatRange(0), default=P.entropy_coef, show_default=True),
        click.option("--max-grad-norm", type=click.FloatRange(0, min_open=True), default=P.max_grad_norm,
                     show_default=True),
        click.option("--clip-value-loss/--no-clip-value-loss", default=P.clip_value_loss, show_default=True,
                     help="Clip the value update like the policy."),
        click.option("--lr-schedule", type=click.Choice(LR_SCHEDULES), default=P.lr_schedule, show_default=True,
                     help="constant; linear decay to 0 at --max-steps; adaptive by KL target (rsl_rl)."),
        click.option("--desired-kl", type=click.FloatRange(0, min_open=True), default=P.desired_kl, show_default=True,
                     help="KL target of --lr-schedule adaptive."),
        click.option("--value-norm/--no-value-norm", default=P.value_norm, show_default=True,
                     help="Critic learns normalized returns (MAPPO's ValueNorm)."),
        click.option("--obs-norm/--no-obs-norm", default=R.obs_norm, show_default=True,
                     help="Running observation normalization, saved in checkpoints (rsl_rl)."),
        click.option("--layer-norm/--no-layer-norm", default=N.input_layer_norm, show_default=True,
                     help="LayerNorm on the network input."),
        click.option("--privileged-critic/--no-privileged-critic", default=R.privileged_critic, show_default=True,
                     help="Critic reads the env's global state (rsl_rl privileged observations, MAPPO)."),
        click.option("--obs-mode", type=click.Choice(["default", "extended"]), default=R.obs_mode, show_default=True,
                     help="extended adds aspect, enemy missiles and the nearest threat to the 10 standard features."),
        click.option("--init-fire-logit", type=float, default=N.init_fire_logit, show_default=True,
                     help="Starting bias of the fire logit (-6: p≈0.0025 per step, missiles kept for later)."),
        click.option("--init-log-std", type=float, default=N.init_log_std, show_default=True,
                     help="Starting log-std of the rudder Gaussian."),
        click.option("--save-interval", type=click.IntRange(1), default=R.save_interval, show_default=True,
                     help="Environment steps between checkpoints (whole updates)."),
        click.option("--log-interval", type=click.IntRange(1), default=R.log_interval, show_default=True,
                     help="Environment steps between console lines; metrics.csv gets every update."),
        click.option("--eval-interval", type=click.IntRange(0), default=R.eval_interval, show_default=True,
                     help="Environment steps between deterministic evaluations (0: with each checkpoint)."),
        click.option("--eval-games", type=click.IntRange(0), default=R.eval_games, show_default=True,
                     help="Games per opponent in each evaluation (0: none)."),
        click.option("--self-slots", type=click.IntRange(1), default=R.self_slots, show_default=True,
                     help="Past checkpoints playing at once for --vs self."),
        click.option("--threads", type=click.IntRange(0), default=R.threads, show_default=True,
                     help="torch CPU threads (0: torch's default). Small networks gain little from more, "
                          "and on a busy CPU threads spin against each other."),
        click.option("--device", default=R.device, show_default=True, help="cpu, cuda, cuda:N or auto."),
        click.option("--seed", type=int, default=R.seed, show_default=True),
        click.option("--resume", type=click.Path(dir_okay=False, path_type=Path), default=None,
                     help="Continue from a checkpoint of this trainer (flags given now override its settings)."),
        click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                     help="Output directory [default: runs/ppo-<time>, or the checkpoint's directory with --resume]."),
        click.option("--progress/--no-progress", default=True, show_default=True, help="Progress display."),
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


def config_from_dict(data: dict[str, Any]) -> TrainConfig:
    run = {k: v for k, v in data.get("run", {}).items() if k in {f.name for f in fields(RunConfig)}}
    if "vs" in run:
        run["vs"] = tuple(run["vs"])
    ppo = {k: v for k, v in data.get("ppo", {}).items() if k in {f.name for f in fields(PPOConfig)}}
    return TrainConfig(run=RunConfig(**run), ppo=PPOConfig(**ppo),
                       network=NetworkConfig.from_dict(data.get("network", {})))


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


HELP = """Train a PPO agent against an opponent pool.

\b
  arena train ppo --vs crank
  arena train ppo --vs crank=3 --vs self --reward pursuit
  arena train ppo --vs rule_based --reward zero --num-envs 8 --n-steps 256 --max-steps 1000
  arena train ppo --resume runs/ppo-20250101-120000/ckpt_004194304.pt --max-steps 40000000

Writes checkpoints, metrics.csv, eval.csv and config.yaml to --out. Ctrl-C finishes the current
update, saves a checkpoint and stops; --resume continues exactly where a checkpoint left off.
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


def run_training(ctx: click.Context, params: dict[str, Any]) -> dict[str, float]:
    """Validate everything that can be wrong before any compute starts, then run."""
    from arena.training import (
        CheckpointError, OpponentSpecError, default_run_dir, list_checkpoints, load_checkpoint, parse_opponent_specs,
    )

    resume_data = None
    given = explicit(ctx)
    if params.get("resume") is not None:
        from arena_ppo.agent import FORMAT_VERSION

        try:
            resume_data = load_checkpoint(params["resume"], expect_agent="ppo", max_version=FORMAT_VERSION)
        except CheckpointError as exc:
            raise fail(str(exc)) from None
        if "counters" not in resume_data or "config" not in resume_data:
            raise fail(f"checkpoint {params['resume']}: holds weights only, no trainer state to resume from")
        cfg = config_from_dict(resume_data["config"])
        fresh = build_config(params)
        mismatched = [n for n in FIXED_ON_RESUME if n in given and getattr(getattr(fresh, PARAMS[n][0]), PARAMS[n][1])
                      != getattr(getattr(cfg, PARAMS[n][0]), PARAMS[n][1])]
        if mismatched:
            raise fail(f"--resume: cannot change {', '.join('--' + n.replace('_', '-') for n in mismatched)} of a run "
                       f"(the checkpoint's tensors depend on it); start a new run instead")
        cfg = build_config(params, cfg, given)
        out = params["out"] or Path(params["resume"]).parent
    else:
        cfg = build_config(params)
        out = params["out"] or default_run_dir("ppo")
        if list_checkpoints(out) or (Path(out) / "metrics.csv").exists():
            # A second run here would append to the first one's metrics and play its checkpoints as `self`.
            raise fail(f"--out {out}: already holds a training run; continue it with --resume PATH, or give "
                       f"another directory")
    cfg.run.out = str(out)

    try:
        specs = parse_opponent_specs(cfg.run.vs)
    except OpponentSpecError as exc:
        raise fail(str(exc)) from None
    reward_fn = resolve_reward(cfg.run.reward)
    try:
        from arena.env import resolve_device

        device = resolve_device(cfg.run.device)
    except ValueError as exc:
        raise fail(str(exc)) from None
    make_opponent = opponent_factory(device, cfg.run.obs_mode)
    for spec in specs:  # fail now, not after the first rollout
        if spec.kind != "self":
            make_opponent(spec)

    from arena_ppo.runners import OnPolicyRunner

    try:
        runner = OnPolicyRunner(cfg, Path(out), make_opponent, reward_fn=reward_fn, on_checkpoint=announce_checkpoint,
                                console=click.echo, progress=params.get("progress", True))
    except ValueError as exc:
        raise fail(str(exc)) from None
    if resume_data is not None:
        try:
            runner.restore(resume_data)
        except (KeyError, ValueError, RuntimeError) as exc:
            raise fail(f"checkpoint {params['resume']}: cannot resume ({type(exc).__name__}: {exc})") from None
    from arena.training import StopRequest, describe_split

    click.echo(f"training ppo on {runner.device} vs {describe_split(runner.pool)}; reward {cfg.run.reward}; "
               f"{cfg.run.num_envs} envs x {cfg.ppo.n_steps} steps per update; output {out}")
    with StopRequest() as stop:
        try:
            metrics = runner.learn(stop, max_time=params.get("max_time"))
        except KeyboardInterrupt:
            raise click.exceptions.Exit(130) from None
        except FloatingPointError as exc:
            raise fail(f"training diverged: {exc}") from None
    click.echo(f"done: {runner.counters.env_steps:,} steps, {runner.counters.updates} updates; checkpoints in {out}")
    return metrics


def resolve_reward(name: str) -> Any:
    from arena.agents import UnknownNameError, reward_registry

    try:
        return reward_registry().get(name)
    except UnknownNameError as exc:
        raise fail(f"--reward: {exc}") from None


def opponent_factory(device: Any, obs_mode: str) -> Any:
    """Build fixed opponents by name or checkpoint, as `arena play` does; errors become one-line CLI errors."""
    from arena.agents import AgentSpecError, build_agent
    from arena.env import EnvConfig

    env_config = EnvConfig(obs_mode=obs_mode)  # type: ignore[arg-type]

    def make(spec: Any) -> Any:
        try:  # "ckpt:PATH": the checkpoint names its own agent
            agent = build_agent(f"ckpt:{spec.target}" if spec.kind == "checkpoint" else spec.target, device,
                                env_config)
        except AgentSpecError as exc:
            raise fail(f"--vs {spec}: {exc}") from None
        return agent.eval()

    return make


def announce_checkpoint(path: str, step: int, metrics: dict[str, float]) -> None:
    """Tell ``arena_checkpoint_saved`` observers; one that raises is reported, training goes on."""
    from arena.plugins import get_host

    try:
        get_host().hook.arena_checkpoint_saved(path=path, step=step, metrics=metrics)
    except Exception as exc:  # noqa: BLE001 - an observer's bug must not end a training run
        click.echo(f"warning: an arena_checkpoint_saved observer raised {type(exc).__name__}: {exc}", err=True)
