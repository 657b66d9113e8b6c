"""The training loop."""

from arena_ppo.runners.on_policy_runner import Counters, OnPolicyRunner, opponent_specs

__all__ = ["Counters", "OnPolicyRunner", "opponent_specs"]
