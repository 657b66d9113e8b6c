"""One actor and one critic per seat (MAPPO's separated policies), behind the shared model's interface.

Every input row ends with the one-hot of the seat it flies;
:class:`~arena_ppo.modules.seat_routing.SeatRouted` sends each row to its seat's network (without those
columns) and puts the outputs back in row order, so the PPO update, the sampling and the
log-probabilities of :class:`~arena_ppo.modules.ActorCritic` are used unchanged.
"""

from __future__ import annotations

from dataclasses import replace

from torch import nn

from arena_ppo.modules.actor_critic import Actor, ActorCritic, Critic
from arena_ppo.modules.recurrent import RecurrentActor, RecurrentActorCritic, RecurrentCritic
from arena_ppo.modules.seat_routing import SeatRouted
from arena_ppo.train_config import NetworkConfig


class SeparatedActorCritic(ActorCritic):
    """``seats`` independent actor-critics; ``cfg``'s input sizes include the seat columns."""

    def __init__(self, cfg: NetworkConfig, seats: int) -> None:
        nn.Module.__init__(self)
        self.cfg = cfg
        inner = replace(cfg, obs_dim=cfg.obs_dim - seats, critic_obs_dim=cfg.critic_obs_dim - seats)
        self.actor = SeatRouted([Actor(inner) for _ in range(seats)])
        self.critic = SeatRouted([Critic(inner) for _ in range(seats)])


class RecurrentSeparatedActorCritic(RecurrentActorCritic):
    """Per-seat recurrent actor-critics: each row's hidden state travels with it to its seat's network."""

    def __init__(self, cfg: NetworkConfig, seats: int) -> None:
        nn.Module.__init__(self)
        self.cfg = cfg
        inner = replace(cfg, obs_dim=cfg.obs_dim - seats, critic_obs_dim=cfg.critic_obs_dim - seats)
        actors, critics = [RecurrentActor(inner) for _ in range(seats)], [RecurrentCritic(inner) for _ in range(seats)]
        self.actor = SeatRouted(actors)
        self.critic = SeatRouted(critics)
        self.actor_hidden_size = actors[0].gru.hidden_size
        self.critic_hidden_size = critics[0].gru.hidden_size
