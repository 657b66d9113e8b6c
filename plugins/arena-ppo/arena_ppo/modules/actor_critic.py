"""Actor and critic networks and the policy distribution.

Rudder: a Gaussian over a pre-squash value ``u``; the action is ``tanh(u)`` in [-1, 1] and its
log-probability carries the change-of-variables term ``-log(1 - tanh(u)^2)``. Fire: a Bernoulli.
Throttle is not learned (fixed at full). The storage keeps ``u`` itself, so the ratio of the
update never has to invert tanh (``atanh`` near ±1 is where squashed policies go NaN).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F

from arena_ppo.train_config import NetworkConfig

LOG_2 = math.log(2.0)
HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


def mlp(sizes: tuple[int, ...], input_layer_norm: bool = False) -> nn.Sequential:
    """Linear+ReLU trunk over ``sizes`` (input first), optionally LayerNorm on the raw input."""
    layers: list[nn.Module] = [nn.LayerNorm(sizes[0])] if input_layer_norm else []
    for a, b in zip(sizes[:-1], sizes[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    return nn.Sequential(*layers)


def orthogonal_(layer: nn.Linear, gain: float, bias: float = 0.0) -> nn.Linear:
    """cleanrl's init: orthogonal weights; hidden gain √2, policy heads 0.01 (near-uniform start), value head 1."""
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.constant_(layer.bias, bias)
    return layer


MASKED_LOGIT = -1e4  # a trigger that never fires: sigmoid 0, log-prob of holding 0, entropy 0, no gradient


def mask_trigger(obs: torch.Tensor, logit: torch.Tensor) -> torch.Tensor:
    """The fire logit where the first input (the env's ``launch_clear``, or ``launch_ready``) says a
    launch now would leave with a lock, :data:`MASKED_LOGIT` elsewhere: a launch the policy cannot
    waste, which is never sampled, adds no entropy and no gradient. The input is read after the running
    normalizer, by its sign: for any running mean of a 0/1 input below 1, a 1 reads above 0 and a 0 at
    or below it."""
    return logit.masked_fill(obs[..., 0] <= 0, MASKED_LOGIT)


class Actor(nn.Module):
    """obs → trunk → (rudder mean, rudder log-std, fire logit); with ``cfg.fire_mask`` the trigger is
    masked by the first input (:func:`mask_trigger`), in training and in play alike."""

    def __init__(self, cfg: NetworkConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.trunk = mlp((cfg.obs_dim, *cfg.actor_hidden), cfg.input_layer_norm)
        width = cfg.actor_hidden[-1] if cfg.actor_hidden else cfg.obs_dim
        self.rudder = nn.Linear(width, 2)
        self.fire = orthogonal_(nn.Linear(width, 1), 0.01, cfg.init_fire_logit)
        for m in self.trunk:
            if isinstance(m, nn.Linear):
                orthogonal_(m, math.sqrt(2.0))
        orthogonal_(self.rudder, 0.01)
        with torch.no_grad():
            self.rudder.bias[1] = cfg.init_log_std

    def forward(self, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.heads(self.trunk(obs), obs)

    def heads(self, h: torch.Tensor, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(rudder mean, rudder log-std, fire logit) from the last hidden layer (and the input, for the mask)."""
        mean, log_std = self.rudder(h).unbind(-1)
        log_std = log_std.clamp(self.cfg.log_std_min, self.cfg.log_std_max)
        logit = self.fire(h).squeeze(-1)
        return mean, log_std, mask_trigger(obs, logit) if self.cfg.fire_mask else logit

    def plain(self) -> "Callable[[torch.Tensor], tuple[torch.Tensor, torch.Tensor, torch.Tensor]]":
        """:meth:`forward` as plain tensor functions over this actor's own weights: the same numbers
        without a module call per layer, for play, where a league runs dozens of small actors a step."""
        layers: list[tuple[str, tuple[torch.Tensor, ...]]] = []
        for m in self.trunk:
            if isinstance(m, nn.Linear):
                layers.append(("linear", (m.weight, m.bias)))
            elif isinstance(m, nn.LayerNorm):
                layers.append(("norm", (m.weight, m.bias)))
            elif isinstance(m, nn.ReLU):
                layers.append(("relu", ()))
            else:
                raise TypeError(f"Actor.plain: no plain form of {type(m).__name__}")
        rudder, fire = (self.rudder.weight, self.rudder.bias), (self.fire.weight, self.fire.bias)
        low, high, masked = self.cfg.log_std_min, self.cfg.log_std_max, self.cfg.fire_mask
        shape = (self.cfg.obs_dim,)
        eps = next((m.eps for m in self.trunk if isinstance(m, nn.LayerNorm)), 1e-5)

        def forward(obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            h = obs
            for kind, params in layers:
                if kind == "linear":
                    h = F.linear(h, *params)
                elif kind == "relu":
                    h = F.relu(h)
                else:
                    h = F.layer_norm(h, shape, params[0], params[1], eps)
            mean, log_std = F.linear(h, *rudder).unbind(-1)
            logit = F.linear(h, *fire).squeeze(-1)
            return mean, log_std.clamp(low, high), mask_trigger(obs, logit) if masked else logit

        return forward


class Critic(nn.Module):
    """critic obs → trunk → V(s)."""

    def __init__(self, cfg: NetworkConfig) -> None:
        super().__init__()
        self.trunk = mlp((cfg.critic_obs_dim, *cfg.critic_hidden), cfg.input_layer_norm)
        width = cfg.critic_hidden[-1] if cfg.critic_hidden else cfg.critic_obs_dim
        for m in self.trunk:
            if isinstance(m, nn.Linear):
                orthogonal_(m, math.sqrt(2.0))
        self.head = orthogonal_(nn.Linear(width, 1), 1.0)

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.head(self.trunk(obs)).squeeze(-1)


def squash_correction(u: torch.Tensor) -> torch.Tensor:
    """log(1 - tanh(u)^2), written so it stays finite for any |u| (no tanh, no log of ~0)."""
    return 2.0 * (LOG_2 - u - F.softplus(-2.0 * u))


def gaussian_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    z = (u - mean) * torch.exp(-log_std)
    return -0.5 * z * z - log_std - HALF_LOG_2PI


def squashed_log_prob(u: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor) -> torch.Tensor:
    """Log-density of the rudder ``tanh(u)`` in action space."""
    return gaussian_log_prob(u, mean, log_std) - squash_correction(u)


def bernoulli_log_prob(fire: torch.Tensor, logit: torch.Tensor) -> torch.Tensor:
    """log p(fire) for fire in {0., 1.}: −BCE-with-logits."""
    return -F.binary_cross_entropy_with_logits(logit, fire, reduction="none")


def bernoulli_entropy(logit: torch.Tensor) -> torch.Tensor:
    p = torch.sigmoid(logit)
    return F.binary_cross_entropy_with_logits(logit, p, reduction="none")


@dataclass
class PolicyOutput:
    """One step of the policy for the rollout: what the env gets and what the update needs."""

    rudder: torch.Tensor  # tanh(u), [N]
    fire: torch.Tensor  # {0., 1.}, [N]
    u: torch.Tensor  # pre-squash rudder sample, [N]
    log_prob: torch.Tensor  # joint log-prob of (rudder, fire), [N]
    mean: torch.Tensor
    log_std: torch.Tensor
    fire_logit: torch.Tensor
    hidden: torch.Tensor | None = None  # recurrent actors: the hidden state after this step, [N, H]


class ActorCritic(nn.Module):
    """The actor, the critic and the distributions between them."""

    # An Actor and a Critic here; per-seat models route each row to its seat's (seat_routing.SeatRouted).
    actor: nn.Module  # obs -> (rudder mean, rudder log-std, fire logit)
    critic: nn.Module  # critic obs -> V(s)

    def __init__(self, cfg: NetworkConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.actor = Actor(cfg)
        self.critic = Critic(cfg)

    recurrent = False

    def act(self, obs: torch.Tensor, deterministic: bool = False,
            generator: torch.Generator | None = None) -> PolicyOutput:
        mean, log_std, logit = self.actor(obs)
        return self.sample(mean, log_std, logit, deterministic=deterministic, generator=generator)

    @staticmethod
    def sample(mean: torch.Tensor, log_std: torch.Tensor, logit: torch.Tensor, deterministic: bool = False,
               generator: torch.Generator | None = None) -> PolicyOutput:
        """Draw (or, deterministic, take the mode of) the rudder and the trigger from the policy's parameters."""
        if deterministic:
            u = mean
            fire = (logit > 0).float()  # p > 0.5
        else:
            noise = torch.randn(mean.shape, generator=generator, device=mean.device, dtype=mean.dtype)
            u = mean + noise * torch.exp(log_std)
            fire = (torch.rand(logit.shape, generator=generator, device=logit.device, dtype=logit.dtype)
                    < torch.sigmoid(logit)).float()
        log_prob = squashed_log_prob(u, mean, log_std) + bernoulli_log_prob(fire, logit)
        return PolicyOutput(torch.tanh(u), fire, u, log_prob, mean, log_std, logit)

    def evaluate(self, obs: torch.Tensor, u: torch.Tensor, fire: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """log-prob and entropy of stored actions under the current policy, plus (mean, log_std, logit).

        The entropy is that of the Gaussian before the squash plus the Bernoulli's: the squashed
        density has no closed form, and the pre-squash entropy is the usual stand-in for the bonus.
        """
        return self.score(u, fire, *self.actor(obs))

    @staticmethod
    def score(u: torch.Tensor, fire: torch.Tensor, mean: torch.Tensor, log_std: torch.Tensor, logit: torch.Tensor
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        log_prob = squashed_log_prob(u, mean, log_std) + bernoulli_log_prob(fire, logit)
        entropy = (0.5 + HALF_LOG_2PI + log_std) + bernoulli_entropy(logit)
        return log_prob, entropy, mean, log_std, logit

    def value(self, critic_obs: torch.Tensor) -> torch.Tensor:
        return self.critic(critic_obs)

    # -- what the update calls: a minibatch of rows (recurrent models take sequences instead) ------

    def evaluate_batch(self, batch: dict[str, torch.Tensor]
                       ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.evaluate(batch["obs"], batch["u"], batch["fire"])

    def value_batch(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        return self.value(batch["critic_obs"])
