"""The PPO update."""

from arena_ppo.algorithms.ppo import PPO, bernoulli_kl, gaussian_kl

__all__ = ["PPO", "bernoulli_kl", "gaussian_kl"]
