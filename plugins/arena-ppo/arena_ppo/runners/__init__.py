"""The training loop, and the learner it steps, built from a run's plan."""

from arena_ppo.runners.build import build_learner, build_run
from arena_ppo.runners.learner import Learner
from arena_ppo.runners.on_policy_runner import OnPolicyRunner
from arena_ppo.runners.resume import Counters

__all__ = ["Counters", "Learner", "OnPolicyRunner", "build_learner", "build_run"]
