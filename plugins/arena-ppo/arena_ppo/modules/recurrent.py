"""Recurrent actor and critic (MAPPO's ``--recurrent``): the MLP trunk, then a GRU cell, then the heads.

Acting is one step at a time with the hidden state passed in and out (the runner and the agent keep
it per row and zero it where a battle restarted). The update re-runs stored rollouts in chunks of
``data_chunk_length`` steps: each chunk starts from the hidden state stored at its first step and
zeroes it again wherever an episode began inside the chunk, so the gradient sees the same hidden
states the rollout did (as the MAPPO documents' recurrent training does).
"""

from __future__ import annotations

import torch
from torch import nn

from arena_ppo.modules.actor_critic import Actor, ActorCritic, Critic, PolicyOutput
from arena_ppo.modules.seat_routing import SeatRouted
from arena_ppo.train_config import NetworkConfig


class RecurrentActor(Actor):
    """Trunk → GRU cell → (rudder mean, log-std, fire logit)."""

    def __init__(self, cfg: NetworkConfig) -> None:
        super().__init__(cfg)
        width = cfg.actor_hidden[-1] if cfg.actor_hidden else cfg.obs_dim
        self.gru = nn.GRUCell(width, width)

    def step(self, obs: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, ...]:
        h = self.gru(self.trunk(obs), hidden)
        return (*self.heads(h, obs), h)


class RecurrentCritic(Critic):
    """Trunk → GRU cell → V(s)."""

    def __init__(self, cfg: NetworkConfig) -> None:
        super().__init__(cfg)
        width = cfg.critic_hidden[-1] if cfg.critic_hidden else cfg.critic_obs_dim
        self.gru = nn.GRUCell(width, width)

    def step(self, obs: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = self.gru(self.trunk(obs), hidden)
        return self.head(h).squeeze(-1), h


def unroll(step, inputs: torch.Tensor, h0: torch.Tensor, starts: torch.Tensor) -> list[tuple[torch.Tensor, ...]]:
    """``step`` over a chunk ``inputs`` [L, B, F] from ``h0`` [B, H]; ``starts[t]`` zeroes the state first."""
    h, outs = h0, []
    for t in range(inputs.shape[0]):
        h = h * (~starts[t]).unsqueeze(-1).to(h.dtype)
        out = step(inputs[t], h)
        h = out[-1]
        outs.append(out)
    return outs


class RecurrentActorCritic(ActorCritic):
    """The actor-critic with a GRU cell in each network; ``hidden_size`` is the last hidden width."""

    recurrent = True

    # Per-seat models (separated.RecurrentSeparatedActorCritic) route each row to its seat's network.
    actor: RecurrentActor | SeatRouted
    critic: RecurrentCritic | SeatRouted

    def __init__(self, cfg: NetworkConfig) -> None:
        nn.Module.__init__(self)
        self.cfg = cfg
        self.actor = RecurrentActor(cfg)
        self.critic = RecurrentCritic(cfg)
        self.actor_hidden_size = self.actor.gru.hidden_size
        self.critic_hidden_size = self.critic.gru.hidden_size

    def act(self, obs: torch.Tensor, deterministic: bool = False, generator: torch.Generator | None = None,
            hidden: torch.Tensor | None = None) -> PolicyOutput:
        if hidden is None:
            hidden = obs.new_zeros(obs.shape[0], self.actor_hidden_size)
        mean, log_std, logit, h = self.actor.step(obs, hidden)
        out = self.sample(mean, log_std, logit, deterministic=deterministic, generator=generator)
        out.hidden = h
        return out

    def value_step(self, critic_obs: torch.Tensor, hidden: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        v, h = self.critic.step(critic_obs, hidden)
        return v, h

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        """V from a zero hidden state (a first step); the runner uses :meth:`value_step`."""
        return self.critic.step(critic_obs, critic_obs.new_zeros(critic_obs.shape[0], self.critic_hidden_size))[0]

    def evaluate(self, obs: torch.Tensor, u: torch.Tensor, fire: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        mean, log_std, logit, _ = self.actor.step(obs, obs.new_zeros(obs.shape[0], self.actor_hidden_size))
        return self.score(u, fire, mean, log_std, logit)

    # -- the update: chunks of sequences, outputs in the batch's time-major row order -------------

    def evaluate_batch(self, batch: dict[str, torch.Tensor]
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        outs = unroll(self.actor.step, batch["obs_seq"], batch["actor_h0"], batch["starts"])
        mean, log_std, logit = (torch.stack([o[i] for o in outs]).reshape(-1) for i in range(3))
        return self.score(batch["u"], batch["fire"], mean, log_std, logit)

    def value_batch(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        outs = unroll(self.critic.step, batch["critic_seq"], batch["critic_h0"], batch["starts"])
        return torch.stack([o[0] for o in outs]).reshape(-1)
