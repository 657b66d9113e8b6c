"""The training loops: PPO's, and MAPPO's on top of it."""

from arena_ppo.runners.mappo_runner import MAPPORunner
from arena_ppo.runners.on_policy_runner import OnPolicyRunner
from arena_ppo.runners.resume import Counters
from arena_ppo.runners.training_opponents import opponent_specs

__all__ = ["Counters", "MAPPORunner", "OnPolicyRunner", "opponent_specs"]
