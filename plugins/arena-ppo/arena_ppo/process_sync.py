"""Keeping the processes of a PPO run identical (``--nproc N``, torchrun): the run's side.

Each process steps its own envs against its own opponents, with its own seed: that is just more
data. Everything that decides the weights is made the same on every process, so that their weights
stay bit for bit equal without ever being copied after the start:

- the update averages gradients and normalizes advantages over all processes
  (:mod:`arena_ppo.algorithms.update_sync`, handed to PPO as :attr:`ProcessSync.update`);
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

Agreeing on the set-up, aborting all processes with one line and starting them are the command
line's (:mod:`arena_ppo.launch`): nothing here prints or exits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from arena.training.pfsp import GatherObjects
from arena.training.process_group import Group, Rank, fingerprint, to_cpu
from arena_ppo.algorithms.update_sync import GroupUpdate

if TYPE_CHECKING:
    from arena_ppo.agent import PPOAgent
    from arena_ppo.algorithms import PPO
    from arena_ppo.algorithms.ppo import UpdateSync

# The parts of a trainer checkpoint that each process has its own.
RANK_KEYS = ("rng", "env", "opponents", "hidden", "teacher")
NORMALIZERS = ("obs_normalizer", "critic_normalizer", "value_normalizer")
ROLLOUT_NORMALIZERS = ("obs_normalizer", "critic_normalizer")  # updated at every env step: merged per rollout


class ProcessSync:
    """What the processes of a run must agree on, for a run of one process: every method a no-op.

    The runner, the rollouts and the evaluation speak to the other processes only through this
    object, so none of them branches on how many there are; :class:`GroupSync` is the same object
    over a :class:`~arena.training.process_group.Group`.
    """

    def __init__(self, rank: Rank | None = None) -> None:
        self.rank = rank or Rank()

    @property
    def main(self) -> bool:
        """Only the main process writes checkpoints, metrics and the console."""
        return self.rank.main

    @property
    def world_size(self) -> int:
        return self.rank.world_size

    @property
    def several(self) -> bool:
        """Whether the run is one of several processes (what the console and config.yaml say)."""
        return False

    @property
    def saves_midway(self) -> bool:
        """Whether a run stopped in the middle of an update (Ctrl-C, an opponent's failure) can still save
        the learner as it is: not when its processes stopped at different points of it."""
        return True

    def use_device(self, device: "torch.device") -> None:
        """Bind the processes' communication to this process's device (the plan's)."""

    @property
    def update(self) -> "UpdateSync | None":
        """What the update asks of the processes (:class:`~arena_ppo.algorithms.ppo.UpdateSync`); None:
        this process alone."""
        return None

    # -- the learner's statistics and weights ------------------------------------------------------------

    def attach(self, agent: "PPOAgent") -> None:
        """Make ``agent``'s value normalizer merge every process's batch at each update."""

    def begin_rollout(self, agent: "PPOAgent") -> None:
        """The observation normalizers keep this process's batches of the rollout apart."""

    def end_rollout(self, agent: "PPOAgent") -> None:
        """Every process's observation normalizers merged with the batches of all the rollouts."""

    def broadcast_weights(self, agent: "PPOAgent") -> None:
        """The main process's weights and statistics on every process (the start of a run)."""

    # -- results ------------------------------------------------------------------------------------

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        """``tensor`` summed over the processes, in place (tallies, episode statistics, evaluations)."""
        return tensor

    def any(self, flag: bool) -> bool:
        """Whether any process says ``flag`` (a stop asked for by one of them)."""
        return flag

    @property
    def gather_objects(self) -> GatherObjects | None:
        """Every process's picklable object in rank order (the PFSP records pooled after a rollout);
        None for one process, whose records are already everyone's."""
        return None

    # -- checkpoints --------------------------------------------------------------------------------

    def checkpoint_state(self, agent: "PPOAgent", algorithm: "PPO", state: dict[str, Any], step: int
                         ) -> dict[str, Any]:
        """The trainer state to save: this process's, with every other process's own part on the main one."""
        return state

    def saved(self) -> None:
        """Every process waits until the checkpoint exists (a ``self`` draw then sees it everywhere)."""

    def rank_part(self, data: dict[str, Any]) -> dict[str, Any]:
        """The part of a checkpoint this process resumes from (``ValueError`` naming what does not fit)."""
        return rank_part(data, self.rank.rank, self.rank.world_size)

class GroupSync(ProcessSync):
    """:class:`ProcessSync` over a group of processes (``--nproc N``, torchrun)."""

    def __init__(self, group: Group) -> None:
        super().__init__(group.rank)
        self.group = group

    @property
    def several(self) -> bool:
        return True

    @property
    def saves_midway(self) -> bool:
        return False

    def use_device(self, device: "torch.device") -> None:
        self.group.use_device(device)

    @property
    def update(self) -> "UpdateSync":
        return GroupUpdate(self.group)

    def attach(self, agent: "PPOAgent") -> None:
        if agent.value_normalizer is not None:
            agent.value_normalizer.gather = self.group.all_gather

    def begin_rollout(self, agent: "PPOAgent") -> None:
        if self.world_size > 1:
            for key in ROLLOUT_NORMALIZERS:
                module = getattr(agent, key)
                if module is not None:
                    module.track()

    def end_rollout(self, agent: "PPOAgent") -> None:
        """Every process's observation normalizers become the same: those at the rollout's start merged
        with the batches of all processes (a lone process already holds them)."""
        if self.world_size > 1:
            for key in ROLLOUT_NORMALIZERS:
                module = getattr(agent, key)
                if module is not None:
                    module.merge(self.group.all_gather)

    def broadcast_weights(self, agent: "PPOAgent") -> None:
        """rsl_rl's ``broadcast_parameters``: the start of a run, whatever each process initialized or loaded."""
        with torch.no_grad():
            for tensor in shared_tensors(agent).values():
                self.group.broadcast_(tensor)

    def sum_(self, tensor: torch.Tensor) -> torch.Tensor:
        return self.group.all_reduce_(tensor)

    def any(self, flag: bool) -> bool:
        return self.group.any(flag)

    @property
    def gather_objects(self) -> GatherObjects | None:
        return self.group.all_gather_object

    def checkpoint_state(self, agent: "PPOAgent", algorithm: "PPO", state: dict[str, Any], step: int
                         ) -> dict[str, Any]:
        """First check that the weights, normalizers and optimizers are still bit-identical on every
        process, then gather the others' own state (envs, random streams, opponents) on the main one."""
        self.group.check_identical(state_digests(agent, algorithm), f"the learners diverged by step {step:,}")
        others = gather_rank_states(self.group, state)
        if others:
            state = {**state, "world_size": self.world_size, "ranks": others}
        return state

    def saved(self) -> None:
        self.group.barrier()


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
