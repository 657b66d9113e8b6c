"""The update's side of training on several processes: every process takes the same gradient step.

rsl_rl's multi-GPU PPO does this with two methods (``reduce_parameters`` and the broadcast at the
start); here the broadcast is the run's (:meth:`arena_ppo.process_sync.GroupSync.broadcast_weights`),
and the update asks the processes for three things (:class:`~arena_ppo.algorithms.ppo.UpdateSync`):
gradients averaged before each optimizer step, with the minibatch's KL riding along so the adaptive
learning rate moves the same way everywhere; advantages normalized with the mean and spread of all
processes' rollouts; and the logged losses averaged. One process needs none of it: PPO is given no
sync and computes each alone.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch

from arena.training.process_group import Group
from arena_ppo.modules.normalizer import fold


class GroupUpdate:
    """:class:`~arena_ppo.algorithms.ppo.UpdateSync` over a group of processes."""

    def __init__(self, group: Group) -> None:
        self.group = group

    @property
    def world_size(self) -> int:
        return self.group.rank.world_size

    def average_gradients(self, params: Iterable[torch.nn.Parameter], *scalars: torch.Tensor) -> torch.Tensor:
        """Replace each gradient by its mean over the processes (one flat all-reduce, rsl_rl's
        ``reduce_parameters``); ``scalars`` ride along and come back averaged (the first one is returned)."""
        grads = [p.grad for p in params if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads] + [s.detach().reshape(1).to(grads[0].dtype) for s in scalars])
        self.group.all_reduce_(flat)
        flat /= self.world_size
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
            offset += grad.numel()
        averaged = flat[offset:]
        return averaged[0].to(scalars[0].dtype) if scalars else averaged

    def average(self, values: torch.Tensor) -> torch.Tensor:
        """The mean of ``values`` over the processes (logged losses)."""
        return self.group.all_reduce_(values.clone()) / self.world_size

    def mean_std(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and (unbiased) standard deviation of every process's ``rows`` together."""
        if self.world_size == 1:
            return rows.mean(), rows.std()
        x = rows.detach().double().reshape(-1)
        n = x.numel()
        mean = x.mean() if n else x.new_zeros(())
        m2 = (x - mean).square().sum()
        count, mean, m2 = fold(self.group.all_gather(torch.stack([x.new_tensor(float(n)), mean, m2])))
        std = torch.sqrt(m2 / (count - 1).clamp(min=1.0))
        return mean.reshape(()).to(rows.dtype), std.reshape(()).to(rows.dtype)
