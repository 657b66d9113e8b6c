"""Generic pieces a trainer plugin reuses: opponent pools, checkpoint files, run outputs, evaluation.

The league env a trainer consumes is :mod:`arena.training.league_env` (it needs torch, which importing
this package does not). Nothing here names a plugin: agents are found through the registries in
:mod:`arena.agents`. The names of a run's files (checkpoints, best.json) are :mod:`arena.run_files`',
which the tournament reads too; they are re-exported here.
"""

from arena.run_files import BEST_CHECKPOINT, BEST_RECORD, checkpoint_name, checkpoint_step, list_checkpoints
from arena.training.agent_memory import capture_agent_memory, restore_agent_memory
from arena.training.best import BestRecord, keep_best, read_best
from arena.training.checkpoint import CheckpointError, clean_stale_temp_files, load_checkpoint, save_checkpoint
from arena.training.evaluation import EvalResult, Rating, ReferenceScale, evaluate, rate, reference_scale
from arena.training.interrupt import StopRequest
from arena.training.metrics import MetricLogger, default_run_dir, tensorboard_writer, to_plain, write_config
from arena.training.opponent_specs import (
    OpponentSpec,
    OpponentSpecError,
    league_agents,
    league_partners,
    parse_opponent_spec,
    parse_opponent_specs,
    split_envs,
    with_floor,
)
from arena.training.opponents import OpponentPool, Slot, describe_split
from arena.training.pfsp import SelfPlayPool, SnapshotError, Tally
from arena.training.process_group import (
    DistributedError,
    DivergenceError,
    Group,
    PeerFailure,
    Rank,
    rank_from_env,
    rank_seed,
)

__all__ = [
    "BEST_CHECKPOINT", "BEST_RECORD", "BestRecord", "capture_agent_memory", "checkpoint_name", "checkpoint_step",
    "CheckpointError", "clean_stale_temp_files", "default_run_dir", "describe_split",
    "DistributedError", "DivergenceError", "EvalResult", "evaluate", "Group", "keep_best",
    "league_agents", "league_partners", "list_checkpoints", "load_checkpoint", "MetricLogger",
    "OpponentPool", "Slot",
    "OpponentSpec", "OpponentSpecError", "parse_opponent_spec", "parse_opponent_specs", "PeerFailure",
    "Rank", "ReferenceScale", "rank_from_env", "rank_seed", "rate", "Rating", "read_best", "reference_scale",
    "restore_agent_memory",
    "save_checkpoint", "SelfPlayPool", "SnapshotError", "split_envs", "StopRequest", "Tally", "tensorboard_writer",
    "to_plain", "with_floor", "write_config",
]
