"""What a run is built from, decided once before any compute: the run context.

Every component of a run (the agent, the update, the opponents, the env, the rollouts, the evaluation)
is built from one :class:`RunContext`, so none of them is handed a dozen positional arguments in an
order that matters, and none changes what another was given: the config is a private copy that
nothing writes to.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from arena.env import EnvConfig
from arena.threads import apply_threads
from arena.training import OpponentSpec
from arena.training.process_group import rank_seed
from arena_ppo.algorithms.ppo import compile_update
from arena_ppo.process_sync import ProcessSync
from arena_ppo.runners.outputs import RunOutputs
from arena_ppo.train_config import TrainConfig, check_together

RewardFn = Callable[..., torch.Tensor]
Console = Callable[[str], None]
CheckpointObserver = Callable[[str, int, dict[str, float]], None]


@dataclass(frozen=True)
class RunContext:
    """One run's settings and surroundings: built by :meth:`create`, read by every component.

    ``make_opponent(spec)`` builds a fixed opponent for a ``vs`` entry; ``reward_fn`` is the shaping
    added to the env reward; ``on_checkpoint(path, step, metrics)`` observes every checkpoint on the
    main process. ``generators`` are the training's own random streams (the learner's actions, the
    minibatch order and the opponents' draws), apart from the global one that evaluation and new
    opponents may consume.
    """

    cfg: TrainConfig
    out_dir: Path
    device: torch.device
    sync: ProcessSync
    seed: int  # this process's seed: its envs and random streams
    local_envs: int  # this process's envs; run.num_envs counts all of them
    env_config: EnvConfig
    generators: dict[str, torch.Generator]
    make_opponent: Callable[[OpponentSpec], Any]
    reward_fn: RewardFn | None
    outputs: RunOutputs
    progress: bool
    on_checkpoint: CheckpointObserver | None
    compile_update: tuple[bool, str]  # whether the update's gradient step is compiled, and why not

    @classmethod
    def create(cls, cfg: TrainConfig, out_dir: Path, make_opponent: Callable[[OpponentSpec], Any],
               reward_fn: RewardFn | None = None, on_checkpoint: CheckpointObserver | None = None,
               console: Console | None = print, progress: bool = True, sync: ProcessSync | None = None
               ) -> "RunContext":
        """Resolve the device and the threads, decide whether the update compiles, and seed the weights'
        initialization (the same on every process: :meth:`seed_streams` then gives each process its own).
        ``ValueError`` for envs that do not split over the processes, or settings that contradict each
        other (:func:`~arena_ppo.train_config.check_together`: the command line checks them first)."""
        check_together(cfg)
        sync = sync or ProcessSync()
        world, run = sync.world_size, cfg.run
        if run.num_envs % world:
            raise ValueError(f"--num-envs {run.num_envs} does not split evenly over {world} processes")
        local_envs = run.num_envs // world
        device = sync.resolve_device(run.device)
        apply_threads(run.threads, batch=local_envs, processes=sync.rank.local_world_size)
        torch.manual_seed(run.seed)  # network initialization: the same on every process
        seed = rank_seed(run.seed, sync.rank.rank)
        generators = {"action": torch.Generator(device=device), "shuffle": torch.Generator()}
        generators["action"].manual_seed(seed + 1)
        generators["shuffle"].manual_seed(seed + 2)
        return cls(copy.deepcopy(cfg), Path(out_dir), device, sync, seed, local_envs, run.env_config(), generators,
                   make_opponent, reward_fn, RunOutputs(Path(out_dir), console, sync.main), progress and sync.main,
                   on_checkpoint if sync.main else None, compile_update(device))

    @property
    def seats(self) -> int:
        """The learner flies every seat of p1: one row per aircraft."""
        return self.env_config.team_size

    def seed_streams(self) -> None:
        """After the weights are initialized: every other process draws from its own seed from here on."""
        if self.sync.rank.rank:
            torch.manual_seed(self.seed)

    def echo(self, text: str) -> None:
        self.outputs.echo(text)
