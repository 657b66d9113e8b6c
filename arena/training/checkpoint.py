"""Checkpoint files: written atomically, read back without unpickling arbitrary objects.

A checkpoint is a plain dict of tensors, numbers, strings and containers, so
``torch.load(path, weights_only=True)`` accepts it and a file from an untrusted source cannot run
code. Every arena checkpoint names the agent that wrote it (``"agent"``) and its layout
(``"format_version"``); that is how ``arena play run/ckpt.pt`` finds the class to load it with.

A run's checkpoint file names (``ckpt_<step>.pt``), the step they encode and the listing of a run's
checkpoints live in :mod:`arena.run_files`, below both this package and :mod:`arena.tournament`, which
reads them too (``arena.training`` re-exports them).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena.output_files import staged

# Re-exported from their old place here: checkpoint names are read by the tournament too (see the docstring).
from arena.torchfile import TorchFileError, read_torch_file
from arena.training.process_group import to_cpu

if TYPE_CHECKING:
    import torch

REQUIRED_KEYS = ("agent", "format_version")
# Temp files of unfinished writes: ".<final name>.<writer pid>.<random>.tmp" (the pid says whose it is),
# with the final name's suffix after ".tmp" for writers that choose the format by the name (pictures).
TEMP_PATTERN = re.compile(r"^\.(?P<target>.+)\.(?P<pid>\d+)\.[^.]+\.tmp(\.[A-Za-z0-9]+)?$")
LEGACY_TEMP_PATTERN = re.compile(r"^\.ckpt_\d+\.pt\.[^.]+\.tmp$")  # written before the pid was added
LEGACY_TEMP_AGE = 3600.0  # seconds after which a pid-less temp file is surely abandoned


class CheckpointError(ValueError):
    """A checkpoint is missing, unreadable, or not what the caller expected; the message names the file."""


def save_checkpoint(payload: Mapping[str, Any], path: str | os.PathLike[str]) -> Path:
    """Write ``payload`` to ``path`` atomically.

    The data goes to a temporary file in the same directory, is flushed to disk, and only then
    replaces ``path``: a crash or Ctrl-C mid-write leaves the previous file intact and never a
    truncated one that a resume or a self-play opponent pool would choke on. Tensors are saved on
    the CPU, so a checkpoint written on a GPU loads with a plain ``torch.load`` on a machine without one.
    """
    import torch

    missing = [k for k in REQUIRED_KEYS if k not in payload]
    if missing:
        raise ValueError(f"checkpoint payload lacks {missing}; "
                         "every arena checkpoint names its agent and format version")
    target = Path(path)
    with staged(target, mode=0o600) as tmp:
        torch.save(to_cpu(dict(payload)), tmp)
    return target


def pid_alive(pid: int) -> bool:
    """Whether a process with this id exists on this machine (a signal-0 probe; EPERM means it does)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def clean_stale_temp_files(directory: str | os.PathLike[str]) -> list[Path]:
    """Delete temp files left in ``directory`` by writers that died mid-write (kill -9, power loss).

    Only files whose writer process is gone are removed (a live writer, another run resumed in the
    same folder, keeps its own); pid-less temp files of older versions go once they are an hour old.
    Returns what was removed. Called when a run starts or resumes.
    """
    import time

    root = Path(directory)
    if not root.is_dir():
        return []
    removed = []
    for path in root.iterdir():
        match = TEMP_PATTERN.match(path.name)
        try:
            if match is not None:
                stale = int(match.group("pid")) != os.getpid() and not pid_alive(int(match.group("pid")))
            elif LEGACY_TEMP_PATTERN.match(path.name):
                stale = time.time() - path.stat().st_mtime > LEGACY_TEMP_AGE
            else:
                continue
            if stale and path.is_file():
                path.unlink()
                removed.append(path)
        except OSError:  # vanished meanwhile, or not ours to delete: leave it
            continue
    return removed


def load_checkpoint(path: str | os.PathLike[str], *, map_location: "str | torch.device" = "cpu",
                    expect_agent: str | None = None, max_version: int | None = None) -> dict[str, Any]:
    """Read a checkpoint with ``weights_only=True`` and check that it is an arena checkpoint.

    ``expect_agent`` refuses a file written by another agent; ``max_version`` refuses a layout newer
    than the reader understands. Every failure is a :class:`CheckpointError` naming the file.
    """
    file = Path(path)
    try:
        data = read_torch_file(file, map_location=map_location)
    except TorchFileError as exc:
        raise CheckpointError(str(exc)) from exc
    if not isinstance(data, dict) or any(k not in data for k in REQUIRED_KEYS):
        raise CheckpointError(f"checkpoint {file}: not an arena checkpoint (expected a dict with keys "
                              f"{list(REQUIRED_KEYS)}; is it a file from another tool?)")
    if expect_agent is not None and data["agent"] != expect_agent:
        raise CheckpointError(f"checkpoint {file}: written by agent {data['agent']!r}, not {expect_agent!r}")
    if not isinstance(data["agent"], str) or not data["agent"]:
        raise CheckpointError(f"checkpoint {file}: 'agent' is {data['agent']!r}; expected the name of an agent")
    version = data["format_version"]
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise CheckpointError(f"checkpoint {file}: 'format_version' is {version!r}, malformed: expected an int >= 1")
    if max_version is not None and version > max_version:
        raise CheckpointError(f"checkpoint {file}: format version {version!r} is newer than this reader "
                              f"understands (<= {max_version}); upgrade the plugin that wrote it")
    return data
