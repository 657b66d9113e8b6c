"""Arena plugin ``arena-ppo``: the PPO and MAPPO agents (``ppo``, ``mappo``), their trainers (``arena train
ppo``, ``arena train mappo``), reward shaping and ``arena sweep`` (their settings tuned with Optuna).

Hook functions import the heavy modules when called, so loading the plugin for ``arena --help``
never imports torch.
"""

from __future__ import annotations

from typing import Any

import arena


@arena.hookimpl
def arena_agents() -> list[type]:
    from arena_ppo.agent import PPOAgent
    from arena_ppo.mappo_agent import MAPPOAgent

    return [PPOAgent, MAPPOAgent]


@arena.hookimpl
def arena_trainers() -> list[type]:
    from arena_ppo.trainer import MAPPOTrainer, PPOTrainer

    return [PPOTrainer, MAPPOTrainer]


@arena.hookimpl
def arena_rewards() -> dict[str, Any]:
    from arena_ppo.rewards import REWARDS

    return dict(REWARDS)


@arena.hookimpl
def arena_commands(cli: Any) -> None:
    from arena_ppo.sweep.cli import sweep_group

    cli.add_command(sweep_group())
