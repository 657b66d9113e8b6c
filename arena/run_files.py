"""A training run's files by name: its checkpoints (``ckpt_<step>.pt``) and the best weights it kept
(``best.pt``, recorded in ``best.json``), and what their names and records say without loading them.

:mod:`arena.training` writes these files and :mod:`arena.tournament` reads them (rating a run's
checkpoints over training, and marking the weights the run kept), so they are named here, below
both: this module imports nothing of arena. What a best record holds besides its step, and how
weights are chosen, is :mod:`arena.training.best`'s.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

CHECKPOINT_PATTERN = re.compile(r"^ckpt_(\d+)\.pt$")
EXPLOITER_PATTERN = re.compile(r"^exploiter_(\d+)\.pt$")  # a league's exploiter weights, by the learner's step
BEST_CHECKPOINT = "best.pt"
BEST_RECORD = "best.json"

T = TypeVar("T")


def checkpoint_name(step: int) -> str:
    """File name of the checkpoint taken after ``step`` environment steps; sorts by step."""
    return f"ckpt_{int(step):09d}.pt"


def checkpoint_step(path: str | os.PathLike[str]) -> int | None:
    """The step encoded in a checkpoint file name, or None for other names."""
    match = CHECKPOINT_PATTERN.match(Path(path).name)
    return int(match.group(1)) if match else None


def list_checkpoints(directory: str | os.PathLike[str]) -> list[Path]:
    """This run's checkpoints in ``directory``, oldest first (temp files of unfinished writes excluded)."""
    return [path for _, path in files_by_step(directory, CHECKPOINT_PATTERN)]


def exploiter_name(step: int) -> str:
    """File name of the exploiter weights that joined a league when its learner was at ``step``."""
    return f"exploiter_{int(step):09d}.pt"


def list_exploiters(directory: str | os.PathLike[str]) -> list[tuple[int, Path]]:
    """(learner's step, file) of each exploiter snapshot that joined the league run in ``directory``, oldest first."""
    return files_by_step(directory, EXPLOITER_PATTERN)


def files_by_step(directory: str | os.PathLike[str], pattern: re.Pattern[str]) -> list[tuple[int, Path]]:
    """(step, file) of the files in ``directory`` whose names match ``pattern`` (the step its group 1), by step."""
    root = Path(directory)
    if not root.is_dir():
        return []
    return sorted((int(m.group(1)), p) for p in root.iterdir() if p.is_file() and (m := pattern.match(p.name)))


def record_step(data: Any) -> int:
    """The step of a best record (a dict read back from ``best.json`` or a checkpoint): the weights of
    which step the run kept. ``ValueError`` naming the bad field."""
    if not isinstance(data, Mapping):
        raise ValueError(f"expected a dict, got {type(data).__name__}")
    step = data.get("step")
    if isinstance(step, bool) or not isinstance(step, int) or step < 0:
        raise ValueError(f"step: expected an int >= 0, got {step!r}"[:200])
    return step


def read_best_record(out_dir: str | os.PathLike[str], parse: Callable[[Any], T]) -> T | None:
    """``parse`` of the JSON in a run's ``best.json``; None when the run kept none. ``ValueError`` naming
    the file when it is unreadable or ``parse`` refuses it (with a ``ValueError``)."""
    path = Path(out_dir) / BEST_RECORD
    if not path.is_file():
        return None
    try:
        return parse(json.loads(path.read_text()))
    except (OSError, ValueError) as exc:  # json.JSONDecodeError is a ValueError
        raise ValueError(f"{path}: {exc}") from exc


def read_best_step(out_dir: str | os.PathLike[str]) -> int | None:
    """The step of the weights a run kept, from its ``best.json``; None when it kept none. ``ValueError``
    naming the file when it is unreadable or its step is not one. The record's other fields are not
    checked here (:func:`arena.training.read_best` reads and checks all of it)."""
    return read_best_record(out_dir, record_step)
