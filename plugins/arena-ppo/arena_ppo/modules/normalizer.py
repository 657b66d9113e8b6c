"""Running mean/variance normalization of observations (rsl_rl) and of value targets (MAPPO's ValueNorm).

The statistics live in module buffers, so they travel in ``state_dict`` — a checkpoint evaluated
later sees inputs scaled exactly as during training.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import torch
from torch import nn

# Every process's 1-D statistics tensor, stacked in rank order ([world, k]): how a normalizer reads the
# batches of the other processes of a run (RunningNormalizer.gather and .merge, ValueNorm.gather).
Gather = Callable[[torch.Tensor], torch.Tensor]
Moments = tuple[torch.Tensor, torch.Tensor, torch.Tensor]  # count, mean, sum of squared deviations (float64)


def combine(a: Moments, b: Moments) -> Moments:
    """Chan's parallel merge of two sets of moments (either may be empty)."""
    count_a, mean_a, m2_a = a
    count_b, mean_b, m2_b = b
    total = count_a + count_b
    share = torch.where(total > 0, count_b / total.clamp(min=1.0), torch.zeros_like(total))
    delta = mean_b - mean_a
    return total, mean_a + delta * share, m2_a + m2_b + delta.square() * count_a * share


def fold(parts: torch.Tensor) -> Moments:
    """The moments of every row of ``parts`` together, merged in row (rank) order; rows are
    ``[count, mean (F), m2 (F)]`` as :meth:`RunningNormalizer._encode` writes them."""
    size = (parts.shape[1] - 1) // 2
    rows = [(part[0], part[1:1 + size], part[1 + size:]) for part in parts]
    total = rows[0]
    for row in rows[1:]:
        total = combine(total, row)
    return total


# Saved statistics that cannot be negative, by buffer name, as a message names them.
STATISTICS = {"var": "variance", "count": "count", "running_mean_sq": "mean square",
              "debiasing_term": "sum of weights"}


def refuse_negative(state: Mapping[str, object], names: tuple[str, ...], key: str) -> None:
    """Raise ``ValueError`` naming ``key.name`` where a statistic that cannot be negative is.

    A negative variance passes every finiteness check, yet its square root is NaN: the policy would
    act NaN for every input. Such a file was damaged or edited; it is refused when loaded.
    """
    for name in names:
        value = state.get(name)
        if isinstance(value, torch.Tensor) and value.is_floating_point() and bool((value < 0).any()):
            raise ValueError(f"{key}.{name}: holds negative values ({float(value.min()):.3g}); a "
                             f"{STATISTICS[name]} is never below 0")


class RunningNormalizer(nn.Module):
    """Tracks mean and variance of a stream of ``[B, F]`` batches (parallel Welford merge).

    ``update`` is called only while collecting training data; ``forward`` never changes the
    statistics, so evaluation and opponents using a frozen checkpoint are deterministic.

    On several processes every process must end up with the same statistics, those of all their
    batches together, so that their policies stay the same function of the observation. Two ways:

    - ``gather`` (value targets, one batch per update): each update merges every process's batch
      at once; a lone process gets its own batch back untouched.
    - :meth:`track` and :meth:`merge` (observations, a batch per env step): during a rollout each
      process updates with its own batches only, as a single process does, and keeps them apart;
      ``merge`` then replaces the statistics by those at ``track`` merged with every process's
      batches since, in rank order. One exchange per rollout instead of one per step, which would
      hold every process to the pace of the slowest at every step.

    Neither is saved: the hooks are set by the trainer of each run.
    """

    # Buffers (registered in __init__, saved in state_dict).
    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor  # float64 scalar

    def __init__(self, size: int, eps: float = 1e-8, clip: float = 10.0) -> None:
        super().__init__()
        self.eps, self.clip = eps, clip
        self.register_buffer("mean", torch.zeros(size))
        self.register_buffer("var", torch.ones(size))
        self.register_buffer("count", torch.zeros((), dtype=torch.float64))
        self.gather: Gather | None = None
        self._origin: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None  # statistics at track()
        self._own: Moments | None = None  # this process's batches since track()

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.reshape(-1, self.mean.shape[0]).float()
        n = batch.shape[0]
        b_mean = batch.mean(0) if n else torch.zeros_like(self.mean)
        b_var = batch.var(0, unbiased=False) if n else torch.zeros_like(self.var)
        if self.gather is not None:
            parts = self.gather(self._encode(n, b_mean, b_var))
            if parts.shape[0] > 1:  # a lone process keeps its own batch, bit for bit
                count, mean, m2 = fold(parts)
                self._absorb(count, mean.float(), (m2 / count.clamp(min=1.0)).float())
                return
        if n == 0:
            return
        if self._own is not None:
            self._own = combine(self._own, self._moments(n, b_mean, b_var))
        self._absorb(n, b_mean, b_var)

    def track(self) -> None:
        """Keep this process's batches apart from now on, for :meth:`merge`."""
        self._origin = (self.count.clone(), self.mean.clone(), self.var.clone())
        zero = torch.zeros((), dtype=torch.float64, device=self.mean.device)
        self._own = (zero, torch.zeros_like(self.mean, dtype=torch.float64),
                     torch.zeros_like(self.var, dtype=torch.float64))

    @torch.no_grad()
    def merge(self, gather: Gather) -> None:
        """The statistics at :meth:`track` merged with every process's batches since (rank order)."""
        if self._origin is None or self._own is None:
            raise RuntimeError("merge() without track()")
        count, mean, m2 = self._own
        parts = gather(torch.cat([count.reshape(1), mean, m2]))
        count, mean, m2 = fold(parts)
        self.count.copy_(self._origin[0])
        self.mean.copy_(self._origin[1])
        self.var.copy_(self._origin[2])
        self._origin = self._own = None
        if float(count) > 0:
            self._absorb(count, mean.float(), (m2 / count).float())

    def _absorb(self, n: "int | torch.Tensor", b_mean: torch.Tensor, b_var: torch.Tensor) -> None:
        """Merge a batch of ``n`` rows with mean ``b_mean`` and variance ``b_var`` into the statistics."""
        total = self.count + n
        delta = b_mean - self.mean
        w = (n / total).float()
        self.mean += delta * w
        m2 = self.var * self.count.float() + b_var * n + delta.square() * (self.count.float() * n / total.float())
        self.var.copy_(m2 / total.float())
        self.count.copy_(total)

    def _moments(self, n: int, b_mean: torch.Tensor, b_var: torch.Tensor) -> Moments:
        count = torch.full((), float(n), dtype=torch.float64, device=b_mean.device)
        return count, b_mean.double(), b_var.double() * n

    def _encode(self, n: int, b_mean: torch.Tensor, b_var: torch.Tensor) -> torch.Tensor:
        """One process's batch for a gather: ``[count, mean, m2]`` in float64."""
        count, mean, m2 = self._moments(n, b_mean, b_var)
        return torch.cat([count.reshape(1), mean, m2])

    @staticmethod
    def check_state(state: Mapping[str, object], key: str) -> None:
        """Refuse saved statistics no run can produce: a negative variance or count."""
        refuse_negative(state, ("var", "count"), key)

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

    # Buffers (registered in __init__, saved in state_dict), float64 scalars.
    running_mean: torch.Tensor
    running_mean_sq: torch.Tensor
    debiasing_term: torch.Tensor

    def __init__(self, beta: float = 0.99999, eps: float = 1e-5) -> None:
        super().__init__()
        self.beta, self.eps = beta, eps
        self.register_buffer("running_mean", torch.zeros((), dtype=torch.float64))
        self.register_buffer("running_mean_sq", torch.zeros((), dtype=torch.float64))
        self.register_buffer("debiasing_term", torch.zeros((), dtype=torch.float64))
        self.gather: Gather | None = None  # as RunningNormalizer.gather: every process's minibatch, merged

    @staticmethod
    def check_state(state: Mapping[str, object], key: str) -> None:
        """Refuse saved statistics no run can produce: a negative mean square or sum of weights."""
        refuse_negative(state, ("running_mean_sq", "debiasing_term"), key)

    def mean_var(self) -> tuple[torch.Tensor, torch.Tensor]:
        weight = self.debiasing_term.clamp(min=self.eps)
        mean = self.running_mean / weight
        var = (self.running_mean_sq / weight - mean.square()).clamp(min=1e-2)
        return mean, var

    @torch.no_grad()
    def update(self, batch: torch.Tensor) -> None:
        batch = batch.detach().to(torch.float64)
        mean, mean_sq = batch.mean(), batch.square().mean()
        if self.gather is not None:
            mean, mean_sq = self._pooled(batch, mean, mean_sq)
        w = self.beta
        self.running_mean.mul_(w).add_(mean * (1.0 - w))
        self.running_mean_sq.mul_(w).add_(mean_sq * (1.0 - w))
        self.debiasing_term.mul_(w).add_(1.0 - w)

    def _pooled(self, batch: torch.Tensor, mean: torch.Tensor,
                mean_sq: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and mean square over every process's minibatch, each weighted by its size (a process
        whose minibatch holds no live aircraft adds nothing); a lone process keeps its own."""
        assert self.gather is not None
        n = batch.numel()
        local = torch.stack([torch.full((), float(n), dtype=torch.float64, device=batch.device),
                             mean if n else torch.zeros_like(mean), mean_sq if n else torch.zeros_like(mean_sq)])
        parts = self.gather(local)
        if parts.shape[0] == 1:
            return mean, mean_sq
        counts = parts[:, 0]
        total = counts.sum()
        return (parts[:, 1] * counts).sum() / total, (parts[:, 2] * counts).sum() / total

    def normalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self.mean_var()
        return ((x - mean) / torch.sqrt(var)).to(x.dtype)

    def denormalize(self, x: torch.Tensor) -> torch.Tensor:
        mean, var = self.mean_var()
        return (x * torch.sqrt(var) + mean).to(x.dtype)
