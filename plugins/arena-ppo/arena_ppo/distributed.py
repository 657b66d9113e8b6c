"""Keeping the processes of a PPO run identical (``--nproc N``, torchrun).

Each process steps its own envs against its own opponents, with its own seed: that is just more
data. Everything that decides the weights is made the same on every process, so that their weights
stay bit for bit equal without ever being copied after the start:

- gradients are averaged before each optimizer step (one all-reduce per minibatch, which also
  carries the minibatch's KL, so the adaptive learning rate moves the same way everywhere);
- advantages are normalized with the mean and spread of all processes' rollouts;
- the observation and critic normalizers merge every process's rollout at its end, the value
  normalizers every process's batch at each update, in rank order
  (:class:`~arena_ppo.modules.RunningNormalizer`), so all processes normalize alike;
- the learning-rate schedule reads the step counter, which counts the steps of all processes.

What differs between processes is only what a checkpoint keeps per process: the env world, the
random streams, the opponents' and the kickstart teacher's per-env memory, a recurrent learner's
hidden state (:data:`RANK_KEYS`). The main
process gathers those into its checkpoint, so a run saved by N processes resumes on N processes
exactly. Per-opponent results (PFSP records of ``--vs self`` and ``--vs league``) are pooled after
each rollout, so every process draws from the same priorities.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import torch

from arena.training.distributed import Group, fingerprint, to_cpu
from arena_ppo.modules.normalizer import fold

if TYPE_CHECKING:
    from arena.training import SelfPlayPool
    from arena_ppo.agent import PPOAgent
    from arena_ppo.algorithms import PPO

# The parts of a trainer checkpoint that each process has its own.
RANK_KEYS = ("rng", "env", "opponents", "hidden", "teacher")
NORMALIZERS = ("obs_normalizer", "critic_normalizer", "value_normalizer")
ROLLOUT_NORMALIZERS = ("obs_normalizer", "critic_normalizer")  # updated at every env step: merged per rollout


class UpdateSync:
    """What :meth:`PPO.update <arena_ppo.algorithms.PPO.update>` needs from the other processes."""

    def __init__(self, group: Group) -> None:
        self.group = group
        self.world = group.rank.world_size

    def average_gradients(self, params: Iterable[torch.nn.Parameter], *scalars: torch.Tensor) -> torch.Tensor:
        """Replace each gradient by its mean over the processes (one flat all-reduce, rsl_rl's
        ``reduce_parameters``); ``scalars`` ride along and come back averaged (the first one is returned)."""
        grads = [p.grad for p in params if p.grad is not None]
        flat = torch.cat([g.reshape(-1) for g in grads] + [s.detach().reshape(1).to(grads[0].dtype) for s in scalars])
        self.group.all_reduce_(flat)
        flat /= self.world
        offset = 0
        for grad in grads:
            grad.copy_(flat[offset:offset + grad.numel()].view_as(grad))
            offset += grad.numel()
        averaged = flat[offset:]
        return averaged[0].to(scalars[0].dtype) if scalars else averaged

    def average(self, values: torch.Tensor) -> torch.Tensor:
        """The mean of ``values`` over the processes (logged losses)."""
        return self.group.all_reduce_(values.clone()) / self.world

    def mean_std(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and (unbiased) standard deviation of every process's ``rows`` together."""
        if self.world == 1:
            return rows.mean(), rows.std()
        x = rows.detach().double().reshape(-1)
        n = x.numel()
        mean = x.mean() if n else x.new_zeros(())
        m2 = (x - mean).square().sum()
        count, mean, m2 = fold(self.group.all_gather(torch.stack([x.new_tensor(float(n)), mean, m2])))
        std = torch.sqrt(m2 / (count - 1).clamp(min=1.0))
        return mean.reshape(()).to(rows.dtype), std.reshape(()).to(rows.dtype)


def attach(group: Group, agent: "PPOAgent", algorithm: "PPO") -> None:
    """Make ``algorithm``'s update and ``agent``'s value normalizer merge every process's data (the
    observation normalizers merge once per rollout: :func:`track_rollout`, :func:`merge_rollout`)."""
    if agent.value_normalizer is not None:
        agent.value_normalizer.gather = group.all_gather
    algorithm.sync = UpdateSync(group)


def track_rollout(group: Group, agent: "PPOAgent") -> None:
    """At the start of a rollout: the observation normalizers keep this process's batches apart."""
    if group.rank.world_size > 1:
        for key in ROLLOUT_NORMALIZERS:
            module = getattr(agent, key)
            if module is not None:
                module.track()


def merge_rollout(group: Group, agent: "PPOAgent") -> None:
    """At the end of a rollout: every process's observation normalizers become the same, those at the
    rollout's start merged with the batches of all processes (a lone process already holds them)."""
    if group.rank.world_size > 1:
        for key in ROLLOUT_NORMALIZERS:
            module = getattr(agent, key)
            if module is not None:
                module.merge(group.all_gather)


def broadcast_weights(group: Group, agent: "PPOAgent") -> None:
    """Copy the main process's weights and normalizer statistics to every process (rsl_rl's
    ``broadcast_parameters``): the start of a run, whatever each process initialized or loaded."""
    with torch.no_grad():
        for tensor in shared_tensors(agent).values():
            group.broadcast_(tensor)


def shared_tensors(agent: "PPOAgent") -> dict[str, torch.Tensor]:
    """The learner's tensors that must be equal on every process: weights, buffers, normalizers."""
    out = {f"model.{k}": v for k, v in agent.model.state_dict(keep_vars=True).items()}
    for key in NORMALIZERS:
        module = getattr(agent, key)
        if module is not None:
            out.update({f"{key}.{k}": v for k, v in module.state_dict(keep_vars=True).items()})
    return {k: v.data if isinstance(v, torch.nn.Parameter) else v for k, v in out.items()}


def state_digests(agent: "PPOAgent", algorithm: "PPO") -> dict[str, str]:
    """Digests of everything that must be equal on every process: the shared tensors, the optimizer's
    moments and step counts, and the learning rate."""
    tensors: dict[str, Any] = dict(shared_tensors(agent))
    optimizer = algorithm.optimizer.state_dict()
    for pid, entry in optimizer["state"].items():
        for name, value in entry.items():
            tensors[f"optimizer.{pid}.{name}"] = value
    tensors["learning_rate"] = algorithm.learning_rate
    return fingerprint(tensors)


def gather_rank_states(group: Group, state: dict[str, Any]) -> list[dict[str, Any]] | None:
    """On the main process, the :data:`RANK_KEYS` part of every other process's trainer state (rank
    order, on the CPU); None elsewhere."""
    mine = to_cpu({key: state[key] for key in RANK_KEYS if key in state})
    every = group.gather_object(mine)
    return None if every is None else every[1:]


def rank_part(data: dict[str, Any], rank: int, world_size: int) -> dict[str, Any]:
    """The trainer state this process resumes from: the checkpoint's own keys on the main process,
    its entry of ``ranks`` elsewhere. Raises ``ValueError`` naming what does not fit."""
    saved = data.get("world_size", 1)
    if isinstance(saved, bool) or not isinstance(saved, int) or saved < 1:
        raise ValueError(f"world_size: expected an int >= 1, got {saved!r}"[:200])
    if saved != world_size:
        raise ValueError(f"the run was saved by {describe_processes(saved)}; it resumes on {saved}, not {world_size}")
    if rank == 0:
        return data
    ranks = data.get("ranks")
    if not isinstance(ranks, list) or len(ranks) != world_size - 1:
        raise ValueError(f"ranks: expected the state of {world_size - 1} other process(es), got "
                         f"{len(ranks) if isinstance(ranks, list) else type(ranks).__name__}")
    part = ranks[rank - 1]
    if not isinstance(part, dict):
        raise ValueError(f"ranks[{rank - 1}]: expected a dict, got {type(part).__name__}")
    return {**data, **{key: part.get(key) for key in RANK_KEYS}}


def describe_processes(count: int) -> str:
    return "1 process" if count == 1 else f"{count} processes"


def share_records(group: Group, self_play: "SelfPlayPool", before: dict[str, tuple[float, float, float]]) -> None:
    """Pool the games every process played against each past checkpoint (or ladder agent) since
    ``before``, so every process holds the same PFSP records; sums run in rank order."""
    from arena.training import Tally

    mine = {}
    for name, tally in self_play.records.items():
        base = before.get(name, (0.0, 0.0, 0.0))
        delta = (tally.wins - base[0], tally.draws - base[1], tally.losses - base[2])
        if any(delta):
            mine[name] = delta
    every = group.all_gather_object(mine)
    names = list(self_play.records) + [n for part in every for n in part if n not in self_play.records]
    for name in dict.fromkeys(names):
        total = list(before.get(name, (0.0, 0.0, 0.0)))
        for part in every:
            for i, value in enumerate(part.get(name, (0.0, 0.0, 0.0))):
                total[i] += value
        if name in self_play.records or any(total):
            self_play.records[name] = Tally(*total)


def record_snapshot(self_play: "SelfPlayPool") -> dict[str, tuple[float, float, float]]:
    return {name: (t.wins, t.draws, t.losses) for name, t in self_play.records.items()}
