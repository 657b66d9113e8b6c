"""One actor and one critic per seat (MAPPO's separated policies), behind the shared model's interface.

Every input row ends with the one-hot of the seat it flies; :class:`SeatRouted` sends each row to
its seat's network (without those columns) and puts the outputs back in row order, so the PPO update,
the sampling and the log-probabilities of :class:`~arena_ppo.modules.ActorCritic` are used unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch
from torch import nn

from arena_ppo.config import NetworkConfig
from arena_ppo.modules.actor_critic import Actor, ActorCritic, Critic
from arena_ppo.modules.recurrent import RecurrentActor, RecurrentActorCritic, RecurrentCritic


class SeatRouted(nn.Module):
    """Seat ``k``'s rows through ``nets[k]``: the seat is read from the one-hot tail of each row."""

    def __init__(self, nets: Sequence[nn.Module]) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        return self._route(x, (), lambda net, body: net(body))

    def step(self, x: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """A recurrent step per seat: each row's hidden state goes with it."""
        return self._route(x, (hidden,), lambda net, body, h: net.step(body, h))  # type: ignore[return-value]

    def _route(self, x: torch.Tensor, extra: tuple[torch.Tensor, ...], call) -> torch.Tensor | tuple[torch.Tensor, ...]:
        seats = len(self.nets)
        seat = x[:, -seats:].argmax(-1)
        body = x[:, :-seats]
        outs: list[torch.Tensor] | None = None
        single = False
        for k, net in enumerate(self.nets):
            rows = torch.nonzero(seat == k).flatten()
            result = call(net, body.index_select(0, rows), *(e.index_select(0, rows) for e in extra))
            parts = (result,) if isinstance(result, torch.Tensor) else tuple(result)
            if outs is None:
                single = isinstance(result, torch.Tensor)
                outs = [p.new_zeros((x.shape[0], *p.shape[1:])) for p in parts]
            for out, part in zip(outs, parts):
                out.index_copy_(0, rows, part)
        assert outs is not None
        return outs[0] if single else tuple(outs)


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
