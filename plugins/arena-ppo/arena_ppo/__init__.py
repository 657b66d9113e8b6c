"""Arena plugin ``arena-ppo``: the PPO agent (``ppo``), its trainer (``arena train ppo``) and reward shaping.

Hook functions import the heavy modules when called, so loading the plugin for ``arena --help``
never imports torch.
"""

from __future__ import annotations

from typing import Any

import arena


@arena.hookimpl
def arena_agents() -> list[type]:
    from arena_ppo.agent import PPOAgent

    return [PPOAgent]


@arena.hookimpl
def arena_trainers() -> list[type]:
    from arena_ppo.trainer import PPOTrainer

    return [PPOTrainer]


@arena.hookimpl
def arena_rewards() -> dict[str, Any]:
    from arena_ppo.rewards import REWARDS

    return dict(REWARDS)
