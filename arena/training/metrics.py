"""Run outputs a trainer writes: metrics (CSV, console, TensorBoard) and the resolved config (YAML).

TensorBoard is an optional extra (``pip install agent-arena[tensorboard]``); without it the CSV and
the console still get everything.
"""

from __future__ import annotations

import csv
import math
import os
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, is_dataclass
from pathlib import Path
from typing import Any

from arena.output_files import open_append, repair_csv_tail, staged, write_text


def default_run_dir(prefix: str, root: str | os.PathLike[str] = "runs") -> Path:
    """``runs/<prefix>-YYYYmmdd-HHMMSS``, with a numeric suffix if that already exists."""
    base = Path(root) / f"{prefix}-{time.strftime('%Y%m%d-%H%M%S')}"
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def tensorboard_writer(directory: Path) -> Any | None:
    """A SummaryWriter when the ``tensorboard`` package is installed, else None (silently: it is optional)."""
    try:
        import tensorboard  # noqa: F401
        from torch.utils.tensorboard import SummaryWriter
    except Exception:  # noqa: BLE001 - missing or broken optional extra: CSV only
        return None
    return SummaryWriter(log_dir=str(directory))


class MetricLogger:
    """Appends one row per call to a CSV file and mirrors numbers to TensorBoard.

    Columns are fixed by the first row written (or by the header of an existing file when a run is
    resumed); a later row with new keys rewrites the file with the wider header, so nothing logged
    is ever dropped.

    An existing file is appended to only once it is whole: a last row that a killed run left cut short
    is dropped first, and :attr:`note` says so in one line (None when nothing was dropped). A file that
    is a symbolic link is refused (:class:`arena.output_files.LinkedOutputError`, an ``OSError`` naming
    the link): appending would write into the file it points to (see :mod:`arena.output_files`).
    """

    def __init__(self, path: str | os.PathLike[str], tensorboard: Any | None = None,
                 console: Callable[[str], None] | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.tensorboard = tensorboard
        self.console = console
        self.columns: list[str] = []
        self.note = repair_csv_tail(self.path)  # refuses a link, drops a cut last row
        if self.path.exists() and self.path.stat().st_size > 0:
            with self.path.open(newline="") as handle:
                self.columns = next(csv.reader(handle), [])

    def log(self, row: Mapping[str, Any], step: int | None = None, prefix: str = "") -> None:
        flat = {k: _plain(v) for k, v in row.items()}
        new = [k for k in flat if k not in self.columns]
        if new:
            self._widen(self.columns + new)
        with open_append(self.path) as handle:
            csv.DictWriter(handle, fieldnames=self.columns).writerow(flat)
        if self.tensorboard is not None and step is not None:
            for key, value in flat.items():
                if isinstance(value, (int, float)) and not isinstance(value, bool) and key != "step":
                    self.tensorboard.add_scalar(f"{prefix}{key}", value, step)
        if self.console is not None:
            self.console(format_row(flat))

    def _widen(self, columns: list[str]) -> None:
        rows: list[dict[str, str]] = []
        if self.path.exists() and self.columns:
            with self.path.open(newline="") as handle:
                rows = list(csv.DictReader(handle))
        with staged(self.path) as tmp, tmp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
        self.columns = columns

    def close(self) -> None:
        if self.tensorboard is not None:
            self.tensorboard.flush()


def _plain(value: Any) -> Any:
    if hasattr(value, "item") and callable(value.item):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return value  # written as nan/inf: a diverging run should show it, not hide it
    return value


def format_row(row: Mapping[str, Any]) -> str:
    parts = []
    for key, value in row.items():
        if isinstance(value, float):
            parts.append(f"{key} {value:.4g}")
        else:
            parts.append(f"{key} {value}")
    return "  ".join(parts)


def to_plain(obj: Any) -> Any:
    """Dataclasses, tuples and paths as YAML-friendly builtins."""
    if is_dataclass(obj) and not isinstance(obj, type):
        obj = asdict(obj)
    if isinstance(obj, Mapping):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [to_plain(v) for v in obj]
    if isinstance(obj, Path):
        return str(obj)
    return obj


def write_config(path: str | os.PathLike[str], config: Mapping[str, Any]) -> Path:
    """The resolved run configuration as YAML, so a run can be read back and repeated."""
    import yaml

    return write_text_atomically(path, yaml.safe_dump(to_plain(config), sort_keys=False))


def write_text_atomically(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: readers see the old
    file or the new one, never half of it, and a symbolic link at ``path`` is replaced, not written
    through (:func:`arena.output_files.write_text`)."""
    return write_text(path, text)
