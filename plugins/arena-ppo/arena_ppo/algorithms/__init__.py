"""The PPO update."""

from arena_ppo.algorithms.ppo import PPO, anneal_factor, bernoulli_kl, gaussian_kl

__all__ = ["PPO", "anneal_factor", "bernoulli_kl", "gaussian_kl"]
