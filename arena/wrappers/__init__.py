"""Standard interfaces to the arena, for algorithms from other libraries (optional extra: ``wrappers``).

- :class:`ArenaVectorEnv` — a Gymnasium 1.x ``VectorEnv`` of many duels against any agent spec;
- :class:`ArenaEnv` — one duel as a plain Gymnasium ``Env``;
- :class:`ArenaParallelEnv` — a PettingZoo ``ParallelEnv``: one battle, every aircraft an agent;
- :class:`ArenaTorchRLEnv` — a TorchRL ``EnvBase`` of many battles (duels, or team battles grouped as
  VMAS groups its agents), tensors on the env's device (optional extra: ``torchrl``).
- :class:`ArenaRslRlEnv` — an rsl_rl ``VecEnv`` of many duels, the global state as the critic's
  observation group, on the env's device (optional extra: ``rsl_rl``).

Importing this module registers ``Arena/Duel-v0`` (``gymnasium.make`` gives :class:`ArenaEnv`,
``gymnasium.make_vec(..., vectorization_mode="vector_entry_point")`` :class:`ArenaVectorEnv`);
``gymnasium.make("arena.wrappers:Arena/Duel-v0")`` imports it for you.
"""

from __future__ import annotations

try:
    import gymnasium
except ImportError as exc:  # pragma: no cover - depends on the installation
    raise ImportError("arena.wrappers needs gymnasium (and pettingzoo for the multi-agent env): "
                      "pip install 'agent-arena[wrappers]'") from exc

from arena.wrappers.gym_env import ArenaEnv, ArenaVectorEnv

ENV_ID = "Arena/Duel-v0"


def register_envs() -> None:
    """Register ``Arena/Duel-v0`` with Gymnasium (idempotent)."""
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(ENV_ID, entry_point="arena.wrappers.gym_env:ArenaEnv",
                           vector_entry_point="arena.wrappers.gym_env:ArenaVectorEnv",
                           max_episode_steps=None, disable_env_checker=True)


register_envs()


def __getattr__(name: str):  # these only when asked for: pettingzoo, torchrl and rsl_rl are heavier imports
    if name == "ArenaParallelEnv":
        from arena.wrappers.pettingzoo_env import ArenaParallelEnv

        return ArenaParallelEnv
    if name == "ArenaTorchRLEnv":
        from arena.wrappers.torchrl_env import ArenaTorchRLEnv

        return ArenaTorchRLEnv
    if name == "ArenaRslRlEnv":
        from arena.wrappers.rsl_rl_env import ArenaRslRlEnv

        return ArenaRslRlEnv
    raise AttributeError(name)


__all__ = ["ENV_ID", "ArenaEnv", "ArenaParallelEnv", "ArenaRslRlEnv", "ArenaTorchRLEnv", "ArenaVectorEnv",
           "register_envs"]
