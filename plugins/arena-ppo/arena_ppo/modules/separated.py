"""One actor and one critic per seat (MAPPO's separated policies), behind the shared model's interface.

Every input row ends with the one-hot of the seat it flies; :class:`SeatRouted` sends each row to
its seat's network (without those columns) and puts the outputs back in row order, so the PPO update,
the sampling and the log-probabilities of :class:`~arena_ppo.modules.ActorCritic` are used unchanged.
"""

from __future__ import annotations

from dataclasses import replace

import torch
from torch import nn

from arena_ppo.config import NetworkConfig
from arena_ppo.modules.actor_critic import Actor, ActorCritic, Critic


class SeatRouted(nn.Module):
    """Seat ``k``'s rows through ``nets[k]``: the seat is read from the one-hot tail of each row."""

    def __init__(self, nets: list[nn.Module]) -> None:
        super().__init__()
        self.nets = nn.ModuleList(nets)

    def forward(self, x: torch.Tensor) -> torch.Tensor | tuple[torch.Tensor, ...]:
        seats = len(self.nets)
        seat = x[:, -seats:].argmax(-1)
        body = x[:, :-seats]
        outs: list[torch.Tensor] | None = None
        single = False
        for k, net in enumerate(self.nets):
            rows = torch.nonzero(seat == k).flatten()
            result = net(body.index_select(0, rows))
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
