"""The training loop."""

from arena_ppo.runners.on_policy_runner import Counters, OnPolicyRunner

__all__ = ["Counters", "OnPolicyRunner"]
