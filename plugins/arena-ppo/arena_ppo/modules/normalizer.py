"""Running mean/variance normalization of observations (rsl_rl) and of value targets (MAPPO's ValueNorm).

The statistics live in module buffers, so they travel in ``state_dict`` — a checkpoint evaluated
later sees inputs scaled exactly as during training.
"""

from __future__ import annotations

import torch
from torch import nn


class RunningNormalizer(nn.Module):
    """Tracks mean and variance of a stream of ``[B, F]`` batches (parallel Welford merge).

    ``update`` is called only while collecting training data; ``forward`` never changes the
    statistics, so evaluation and opponents using a frozen checkpoint are deterministic.
    """

    def __init__(self, size: int, eps: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__()
        self.eps, self.clip = eps, clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.reshape(-1, self.mean.shape[0]).float()
        n = batch.shape[0]
        if n == 0:
            return
        b_mean = batch.mean(0)
        b_var = batch.var(0, unbiased=False)
        total = self.count + n
        delta = b_mean - self.mean
        w = (n / total).float()
        self.mean += delta * w
        m2 = self.var * self.count.float() + b_var * n + delta.square() * (self.count.float() * n / total.float())
        self.var.copy_(m2 / total.float())
        self.count.copy_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sqrt(self.var + self.eps) + self.mean


class ValueNormalizer(RunningNormalizer):
    """Scale of the return targets: the critic predicts normalized values (MAPPO's ValueNorm).

    Returns of this game live in roughly [-1, 1] but the shaping terms shift their spread as the
    policy changes; normalizing keeps the value loss on one scale through training.
    """

    def __init__(self) -> None:
        super().__init__(1, eps=1e-5, clip=1e6)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.eps))

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.sqrt(self.var + self.eps) + self.mean


class ValueNorm(nn.Module):
    """MAPPO's ValueNorm: running mean and mean square of the return targets as exponential moving
    averages, debiased like Adam's moments.

    With ``beta`` close to 1 the statistics follow the returns slowly; the debiasing term (the sum of
    the weights given so far) keeps the first updates from being pulled toward the zero start. The
    variance is floored at 1e-2, as in the reference, so a run of near-constant returns cannot blow the
    normalized targets up. ``per_minibatch``: the update calls :meth:`update` with each minibatch's
    returns, as the reference's value loss does.
    """

    per_minibatch = True

    def __init__(self, beta: float = 0.99999, eps: float = 1e-5) -> None:
        super().__init__()
        self.beta, self.eps = beta, eps
        self.register_buffer("running_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("running_mean_sq", torch.zeros((), dtype=torch.float64))
        self.register_buffer("debiasing_term", torch.zeros((), dtype=torch.float64))

    def mean_var(self) -> tuple[torch.Tensor, torch.Tensor]:
        weight = self.debiasing_term.clamp(min=self.eps)
        mean = self.running_mean / weight
        var = (self.running_mean_sq / weight - mean.square()).clamp(min=1e-2)
        return mean, var

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.detach().to(torch.float64)
        w = self.beta
        self.running_mean.mul_(w).add_(batch.mean() * (1.0 - w))
        self.running_mean_sq.mul_(w).add_(batch.square().mean() * (1.0 - w))
        self.debiasing_term.mul_(w).add_(1.0 - w)

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self.mean_var()
        return ((x - mean) / torch.sqrt(var)).to(x.dtype)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self.mean_var()
        return (x * torch.sqrt(var) + mean).to(x.dtype)
