"""MAPPO's runner: the PPO loop with a team agent, a central critic and active masks.

What differs from :class:`~arena_ppo.runners.OnPolicyRunner` is only what the MAPPO documents add:
the actor sees each aircraft's observation and seat, the critic the side's global state (with the
seat), returns are normalized by ValueNorm, and an aircraft that was dead when it "acted" adds no
policy, entropy or value loss. Collection, the update, checkpoints, exact resume, evaluation,
self-play and the outputs are the PPO runner's own.
"""

from __future__ import annotations

from arena_ppo.mappo_agent import MAPPOAgent
from arena_ppo.runners.on_policy_runner import OnPolicyRunner


class MAPPORunner(OnPolicyRunner):
    """One MAPPO run: p1's whole team is the learner, the opponent pool flies p2."""

    agent_class = MAPPOAgent
    active_masks = True

    def build_agent(self) -> MAPPOAgent:
        run = self.cfg.run
        return MAPPOAgent(self.device, self.env_config, network=self.cfg.network, obs_norm=run.obs_norm,
                          value_norm=self.cfg.ppo.value_norm, policy=run.policy)
