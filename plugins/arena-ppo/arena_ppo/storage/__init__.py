"""Rollout storage."""

from arena_ppo.storage.rollout_storage import RolloutStorage, Transition, compute_gae

__all__ = ["RolloutStorage", "Transition", "compute_gae"]
