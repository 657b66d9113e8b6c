"""Reward shaping offered through ``arena_rewards`` (``--reward NAME``), added to the env's reward.

Signature (see ``arena.plugins``): ``fn(obs, next_obs, rewards, dones, infos) -> [N]``, with the
learner's observation dicts before and after the step (``next_obs`` is the last observation of an
episode that just ended, not the first of the next one).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

Obs = dict[str, "torch.Tensor"]

AIM_COEF = 0.002  # per step with the enemy dead ahead; ≤ 0.6 over a 300-step episode, below a win's 1.0
CLOSE_COEF = 0.5  # per diagonal-fraction of range closed; 60 km of closing pays ≈ 0.21
AIM_TURN_COEF = 0.05  # per unit of cos(bearing) gained: turning from tail-on to nose-on pays 0.1
TIME_COEF = 0.002  # per step while both fly: a 300-step draw costs 0.6, a loss 1.0
MISSILE_COEF = 0.4  # per fraction of the load: with 4 carried, a launch costs 0.1 and an enemy launch pays 0.1


def zero(obs: Obs, next_obs: Obs, rewards: "torch.Tensor", dones: "torch.Tensor",
         infos: dict[str, Any]) -> "torch.Tensor":
    """No shaping: the env's rewards only (win/loss, survival, missile cost)."""
    import torch

    return torch.zeros_like(rewards)


def pursuit(obs: Obs, next_obs: Obs, rewards: "torch.Tensor", dones: "torch.Tensor",
            infos: dict[str, Any]) -> "torch.Tensor":
    """Reward pointing the nose at the enemy and closing the range, while both fly.

    Against a fixed opponent the sparse ±1 at the end of a 100–300-step battle is slow to learn
    from; these two dense terms teach the approach (the part every winning policy shares) and stay
    small next to a win, so they do not pay for flying into the enemy's missiles.
    """
    import torch

    aim = torch.cos(math.pi * next_obs["enemy_relative_angle"])
    closing = obs["enemy_distance"] - next_obs["enemy_distance"]
    flying = next_obs["alive"] * next_obs["enemy_alive"]
    return (AIM_COEF * aim + CLOSE_COEF * closing) * flying


def decisive(obs: Obs, next_obs: Obs, rewards: "torch.Tensor", dones: "torch.Tensor",
             infos: dict[str, Any]) -> "torch.Tensor":
    """Pursuit's closing term, a potential-based aim term, and a cost per step while both fly.

    ``pursuit`` pays for every step spent pointing at the enemy, so a long chase that ends in a draw
    earns about as much as a quick win, and an opponent that fires from afar and runs (the sniper) is
    never pressed. Here the aim term pays only for turning toward the enemy (a potential difference:
    it sums to nothing over a battle), and each step both fly costs ``TIME_COEF``: a draw is worth
    less than a win, still more than a loss.
    """
    import torch

    aim = torch.cos(math.pi * next_obs["enemy_relative_angle"]) - torch.cos(math.pi * obs["enemy_relative_angle"])
    closing = obs["enemy_distance"] - next_obs["enemy_distance"]
    flying = next_obs["alive"] * next_obs["enemy_alive"]
    return (AIM_TURN_COEF * aim + CLOSE_COEF * closing - TIME_COEF) * flying


def economy(obs: Obs, next_obs: Obs, rewards: "torch.Tensor", dones: "torch.Tensor",
            infos: dict[str, Any]) -> "torch.Tensor":
    """``pursuit`` plus a price on missiles: each own launch costs, each enemy launch pays, the same.

    Against an opponent that shoots from afar and runs (the sniper), a policy that empties its rails
    at the first long shot has nothing left when the enemy, out of missiles, finally comes close; the
    win that holding fire earns is 100+ steps away. This term makes the missile count itself worth
    something now. A hit still ends the battle with the win's 1.0, far more than the launch cost.
    The enemy's count is read from the extended observation; with the standard one only own launches
    are priced.
    """
    import torch

    spent = obs["missiles"] - next_obs["missiles"]
    enemy_spent = (obs["enemy_missiles"] - next_obs["enemy_missiles"]) if "enemy_missiles" in next_obs \
        else torch.zeros_like(spent)
    return pursuit(obs, next_obs, rewards, dones, infos) + MISSILE_COEF * (enemy_spent - spent)


REWARDS = {"zero": zero, "pursuit": pursuit, "decisive": decisive, "economy": economy}
