"""Networks and normalizers."""

from arena_ppo.modules.actor_critic import (
    Actor,
    ActorCritic,
    Critic,
    PolicyOutput,
    bernoulli_log_prob,
    gaussian_log_prob,
    squash_correction,
    squashed_log_prob,
)
from arena_ppo.modules.normalizer import RunningNormalizer, ValueNorm, ValueNormalizer
from arena_ppo.modules.recurrent import RecurrentActorCritic
from arena_ppo.modules.seat_routing import SeatRouted
from arena_ppo.modules.separated import RecurrentSeparatedActorCritic, SeparatedActorCritic

__all__ = [
    "Actor", "ActorCritic", "Critic", "PolicyOutput", "RecurrentActorCritic",
    "RecurrentSeparatedActorCritic",
    "RunningNormalizer", "SeatRouted", "SeparatedActorCritic",
    "ValueNorm", "ValueNormalizer", "bernoulli_log_prob",
    "gaussian_log_prob", "squash_correction", "squashed_log_prob",
]
