"""The ``arena`` command line. Sub-commands stay thin: they parse, call a library function, print.

Nothing heavy is imported at module level, so ``arena --help`` answers without loading torch.
"""

from __future__ import annotations

import json
from typing import Any

import click

from arena import __version__


class ArenaError(click.ClickException):
    """A mistake the user can fix: printed as one line, exit status 2, no traceback."""

    exit_code = 2


def echo_json(data: Any) -> None:
    click.echo(json.dumps(data, indent=2, default=str))


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="arena")
def main() -> None:
    """Arena: train and rate agents in vectorized 1-v-1 air combat.

    \b
      arena train ppo --vs crank                 train PPO against CrankAgent
      arena play crank placeholder --games 1000  a batch of battles between two agents
      arena tournament tournaments/league.yaml   rate a league; leaderboard + CSV
      arena agents                               what the installed plugins provide
    """


@main.command("env-info")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N or auto.")
@click.option("--obs-mode", type=click.Choice(["default", "extended"]), default="default", show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def env_info(device: str, obs_mode: str, as_json: bool) -> None:
    """Print the environment's constants, the device and the observation keys."""
    from dataclasses import asdict

    from arena.env import EnvConfig, TensorEnv

    try:
        env = TensorEnv(1, device=device, config=EnvConfig(obs_mode=obs_mode))  # type: ignore[arg-type]
    except ValueError as exc:
        raise ArenaError(str(exc)) from exc
    cfg = asdict(env.config)
    info = {
        "device": str(env.device),
        "config": cfg,
        "obs_keys": list(env.obs_keys),
        "global_state_size": env.global_state_size,
        "max_steps": env.config.max_steps,
    }
    if as_json:
        echo_json(info)
        return
    click.echo(f"device: {info['device']}")
    click.echo(f"observation ({len(env.obs_keys)}): {', '.join(env.obs_keys)}")
    click.echo(f"global state size: {info['global_state_size']}   decision steps per episode: {info['max_steps']}")
    click.echo("EnvConfig:")
    for key, value in cfg.items():
        if isinstance(value, dict):
            for sub, v in value.items():
                click.echo(f"  {key}.{sub:<24} {v}")
        else:
            click.echo(f"  {key:<31} {value}")
