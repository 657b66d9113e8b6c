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
