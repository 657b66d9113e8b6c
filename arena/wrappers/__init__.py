"""Standard interfaces to the arena, for algorithms from other libraries (each an optional extra).

- :class:`ArenaVectorEnv` — a Gymnasium 1.x ``VectorEnv`` of many duels against any agent spec;
- :class:`ArenaEnv` — one duel as a plain Gymnasium ``Env``;
- :class:`ArenaParallelEnv` — a PettingZoo ``ParallelEnv``: one battle, every aircraft an agent
  (extra ``wrappers`` for these three);
- :class:`ArenaTorchRLEnv` — a TorchRL ``EnvBase`` of many battles (duels, or team battles grouped as
  VMAS groups its agents), tensors on the env's device (extra ``torchrl``);
- :class:`ArenaRslRlEnv` — an rsl_rl ``VecEnv`` of many duels, the global state as the critic's
  observation group, on the env's device (extra ``rsl-rl``).

Each is imported when first asked for, so an installation with one library uses its interface
without the others. Where Gymnasium is installed, importing this module registers ``Arena/Duel-v0``
(``gymnasium.make`` gives :class:`ArenaEnv`, ``gymnasium.make_vec(..., vectorization_mode=
"vector_entry_point")`` :class:`ArenaVectorEnv`); ``gymnasium.make("arena.wrappers:Arena/Duel-v0")``
imports it for you.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import Any

ENV_ID = "Arena/Duel-v0"
GYMNASIUM_MISSING = ("arena.wrappers' Gymnasium and PettingZoo interfaces need gymnasium (and pettingzoo for "
                     "the multi-agent env): pip install 'agent-arena[wrappers]'")
# Each interface: the module defining it, and the extra that installs what it imports.
INTERFACES = {
    "ArenaVectorEnv": ("arena.wrappers.gym_env", "wrappers"),
    "ArenaEnv": ("arena.wrappers.gym_env", "wrappers"),
    "ArenaParallelEnv": ("arena.wrappers.pettingzoo_env", "wrappers"),
    "ArenaTorchRLEnv": ("arena.wrappers.torchrl_env", "torchrl"),
    "ArenaRslRlEnv": ("arena.wrappers.rsl_rl_env", "rsl-rl"),
}


def register_envs() -> None:
    """Register ``Arena/Duel-v0`` with Gymnasium (idempotent)."""
    try:
        import gymnasium
    except ImportError as exc:
        raise ImportError(GYMNASIUM_MISSING) from exc
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="arena.wrappers.gym_env:ArenaEnv",
                           vector_entry_point="arena.wrappers.gym_env:ArenaVectorEnv",
                           max_episode_steps=None, disable_env_checker=True)


if importlib.util.find_spec("gymnasium") is not None:
    register_envs()


def __getattr__(name: str) -> Any:
    """The interface ``name``, imported now; an ImportError naming the extra when its library is missing."""
    if name not in INTERFACES:
        raise AttributeError(f"module 'arena.wrappers' has no attribute {name!r}")
    module, extra = INTERFACES[name]
    try:
        return getattr(importlib.import_module(module), name)
    except ModuleNotFoundError as exc:
        if exc.name is None or exc.name.startswith("arena"):
            raise
        raise ImportError(f"arena.wrappers.{name} needs {exc.name.partition('.')[0]}, which is not installed: "
                          f"pip install 'agent-arena[{extra}]'") from exc


__all__ = ["ENV_ID", "ArenaEnv", "ArenaParallelEnv", "ArenaRslRlEnv", "ArenaTorchRLEnv", "ArenaVectorEnv",
           "register_envs"]
