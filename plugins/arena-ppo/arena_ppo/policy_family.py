"""Playing a policy, alone or as a family: checkpoints of one architecture acting as one call.

Play needs the action only: the rudder (``tanh`` of the mean, or of a Gaussian draw) and the trigger
(a Bernoulli draw, or the median rule of eval mode); no log-probability, no value. A family of
checkpoints (a league's, or the past selves a training run draws) acts in one call on all its members'
rows: the observation is stacked once, each row is normalized with its member's statistics, and each
member draws its noise from its own stream, as it would alone. The actors run one after another on
their rows (on the CPU a call per member is faster than a batched matmul at league sizes), or, on a
GPU, as one stacked call (:func:`torch.func.stack_module_state` and :func:`torch.vmap`) over rows
padded to the largest member: a handful of launches instead of a handful per member.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING, Any

from arena.families import MemberRows, Stream

if TYPE_CHECKING:
    import torch

LN_2 = math.log(2.0)
Draw = Callable[[Callable[[], Any]], Any]


def median_trigger(hazard: "torch.Tensor | None", logit: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
    """Eval mode's trigger (:meth:`arena_ppo.agent.PPOAgent.fire_decision`): fire where the hazard since the
    last launch reaches ln 2; returns the trigger and the hazard to keep."""
    import torch
    from torch.nn import functional as F

    if hazard is None or hazard.shape != logit.shape or hazard.device != logit.device:
        hazard = torch.zeros_like(logit)
    hazard = hazard + F.softplus(logit)
    fire = hazard >= LN_2
    return fire, hazard.masked_fill(fire, 0.0)


def played_trigger(rule: str, hazard: "torch.Tensor | None", logit: "torch.Tensor"
                   ) -> tuple["torch.Tensor", "torch.Tensor | None"]:
    """Eval mode's trigger by ``rule``: "threshold" (p > 0.5, no memory) or "median"
    (:func:`median_trigger`); returns the trigger and the hazard to keep."""
    if rule == "threshold":
        return logit > 0.0, hazard
    return median_trigger(hazard, logit)


def sampled_controls(mean: "torch.Tensor", log_std: "torch.Tensor", logit: "torch.Tensor", noise: "torch.Tensor",
                     uniform: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
    """Rudder and trigger drawn as in training, from a standard normal ``noise`` and a ``uniform`` a row."""
    import torch

    return torch.tanh(mean + noise * torch.exp(log_std)), uniform < torch.sigmoid(logit)


def draws(n: int, like: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor"]:
    """The two draws of a sampled step on ``n`` rows, in the order training draws them."""
    import torch

    noise = torch.randn((n,), device=like.device, dtype=like.dtype)
    return noise, torch.rand((n,), device=like.device, dtype=like.dtype)


def family_key(agent: Any) -> Hashable | None:
    """What policies must share to act as one: the inputs, the mode, the trigger and the actor's shape. A
    recurrent policy, or one told its seat, plays alone."""
    from arena_ppo.modules.actor_critic import Actor

    actor = agent.model.actor
    if agent.recurrent or agent.seat_columns or type(actor) is not Actor:
        return None
    norm = agent.obs_normalizer
    cfg = actor.cfg
    shapes = tuple((name, tuple(t.shape)) for name, t in actor.state_dict().items())
    return (tuple(agent.obs_keys), agent.training, agent.fire_rule, str(agent.device),
            None if norm is None else (norm.eps, norm.clip), shapes, cfg.log_std_min, cfg.log_std_max,
            cfg.input_layer_norm)


class PolicyFamily:
    """Policies of one :func:`family_key` acting as one call, member 0's rows first."""

    def __init__(self, members: Sequence[Any], rows: Sequence[int], streams: Sequence[Stream],
                 stacked: bool | None = None) -> None:
        """``stacked``: the actors as one vmapped call (default: on a GPU) rather than one call each."""
        import torch

        first = members[0]
        self.streams = list(streams)
        self.rows = MemberRows(rows, first.device)
        self.obs_keys, self.training, self.fire_rule = first.obs_keys, first.training, first.fire_rule
        self.normalized = first.obs_normalizer is not None
        if self.normalized:
            self.clip = first.obs_normalizer.clip
            self.member_mean = torch.stack([m.obs_normalizer.mean for m in members])
            self.member_scale = torch.stack([torch.sqrt(m.obs_normalizer.var + m.obs_normalizer.eps) for m in members])
        self.fire_hazard: torch.Tensor | None = None
        self.stacked = first.device.type == "cuda" if stacked is None else stacked
        if not self.stacked:
            self.actors = [m.model.actor.plain() for m in members]
        else:
            from torch.func import stack_module_state

            actors = [m.model.actor for m in members]
            self.params, self.buffers = stack_module_state(actors)
            self.shape = copy.deepcopy(actors[0]).to("meta")
        self._layout()

    def _layout(self) -> None:
        """Per-row statistics, and for the stacked actor where each row sits in the padded [members, rows] grid."""
        import torch

        index = self.rows.index
        if self.normalized:
            self.mean, self.scale = self.member_mean[index], self.member_scale[index]
        if self.stacked:
            starts = torch.tensor([0, *self.rows.counts[:-1]], device=index.device).cumsum(0)
            self.position = torch.arange(index.numel(), device=index.device) - starts[index]
            self.width = max(self.rows.counts, default=0)

    def act(self, observation: dict[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
        import torch

        from arena.env import obs_vector

        with torch.no_grad():
            x = obs_vector(observation, self.obs_keys)
            if self.normalized:
                x = ((x - self.mean) / self.scale).clamp(-self.clip, self.clip)
            mean, log_std, logit = self.stacked_heads(x) if self.stacked else self.heads(x)
            if self.training:
                parts = [self.streams[m](functools.partial(draws, stop - start, mean))
                         for m, start, stop in self.rows.spans()]
                noise = torch.cat([p[0] for p in parts])
                uniform = torch.cat([p[1] for p in parts])
                rudder, fire = sampled_controls(mean, log_std, logit, noise, uniform)
            else:
                rudder = torch.tanh(mean)
                fire, self.fire_hazard = played_trigger(self.fire_rule, self.fire_hazard, logit)
        return {"rudder": rudder, "throttle": torch.ones_like(rudder), "fire": fire}

    def heads(self, x: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]:
        """Each member's actor on its own rows, one after another."""
        import torch

        outs = [self.actors[m](x[start:stop]) for m, start, stop in self.rows.spans()]
        return tuple(torch.cat([o[i] for o in outs]) for i in range(3))  # type: ignore[return-value]

    def stacked_heads(self, x: "torch.Tensor") -> tuple["torch.Tensor", "torch.Tensor", "torch.Tensor"]:
        """Every member's actor in one call, over rows padded to the largest member's."""
        import torch
        from torch.func import functional_call

        index = self.rows.index
        grid = x.new_zeros(self.rows.members, self.width, x.shape[1])
        grid[index, self.position] = x

        def one(params: dict[str, torch.Tensor], buffers: dict[str, torch.Tensor], rows: torch.Tensor) -> Any:
            return functional_call(self.shape, (params, buffers), (rows,))

        out = torch.vmap(one)(self.params, self.buffers, grid)
        return tuple(o[index, self.position] for o in out)

    def reset(self, env_mask: "torch.Tensor | None" = None) -> None:
        if env_mask is None:
            self.fire_hazard = None
        elif self.fire_hazard is not None and env_mask.shape == self.fire_hazard.shape:
            self.fire_hazard = self.fire_hazard.masked_fill(env_mask.to(self.fire_hazard.device), 0.0)

    def keep_rows(self, rows: "torch.Tensor") -> None:
        self.rows.keep(rows)
        if self.fire_hazard is not None:
            self.fire_hazard = self.fire_hazard[rows.to(self.fire_hazard.device)]
        self._layout()
