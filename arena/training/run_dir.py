"""A training run's folder: whether one holds a run, and where a resumed run writes.

A run continues in its own folder only from its latest state; resuming an older checkpoint branches
into a new folder (:func:`plan_resume`), so a later line of the run is never overwritten, mixed with
new rows, or drawn as a ``self`` opponent. Any trainer that writes checkpoints and metric CSVs with
:mod:`arena.training` can use it.
"""

from __future__ import annotations

import csv
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from arena.folder_lock import FolderBusy, FolderLock, FolderUnusable
from arena.output_files import LinkedOutputError, staged
from arena.run_files import BEST_CHECKPOINT, BEST_RECORD, checkpoint_step, list_checkpoints, list_exploiters


def holds_run(directory: Path) -> bool:
    """Whether ``directory`` already holds a training run (checkpoints or metrics)."""
    return bool(list_checkpoints(directory)) or (Path(directory) / "metrics.csv").exists()


# The files a run writes under these names, whatever its trainer (checkpoints are named by step).
RUN_FILES = ("config.yaml", "metrics.csv", "eval.csv", BEST_CHECKPOINT, BEST_RECORD)
APPENDED = ("metrics.csv", "eval.csv")  # the run files a resumed run appends to; the others are written whole


def check_writable(out: Path) -> None:
    """Create ``out`` and write a probe file now, so a bad --out fails before any training (``ValueError``);
    a folder (or anything but a file) where the run writes one of its :data:`RUN_FILES` fails too."""
    for name in RUN_FILES:
        path = Path(out) / name
        if name in APPENDED and path.is_symlink():  # a resumed run would append to the file it points to
            raise ValueError(f"--out {out}: {LinkedOutputError(path)}")
        if (path.exists() or path.is_symlink()) and not path.is_file():
            kind = "a folder" if path.is_dir() else "not a regular file"
            raise ValueError(f"--out {out}: {path} is {kind}; expected the run's {name} there to be a file (or "
                             f"nothing), so move it away or give another --out")
    try:
        out.mkdir(parents=True, exist_ok=True)
        probe = out / f".arena-write-test.{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise ValueError(f"--out {out}: cannot write there ({exc.strerror or type(exc).__name__}); expected a "
                         f"directory that can be created and written") from None


RUN_LOCK = "train.lock"


def lock_run(out: Path) -> FolderLock:
    """Hold the run folder ``out`` for this process (released when it ends, however it ends), so two
    runs never write one folder's checkpoints and metrics at once; ``ValueError`` when another holds it."""
    try:
        return FolderLock(out, RUN_LOCK).acquire()
    except FolderBusy as exc:
        raise ValueError(f"--out {out}: another training run (pid {exc.holder}) is writing into this run folder; "
                         f"wait for it to end, or give another --out") from None
    except FolderUnusable as exc:
        raise ValueError(f"--out {out}: cannot hold the run's lock file {RUN_LOCK} there ({exc.reason}); expected a "
                         f"writable directory") from None
    except LinkedOutputError as exc:
        raise ValueError(f"--out {out}: {exc}") from None


@dataclass
class ResumePlan:
    """Where a resumed run writes, and what history a new folder starts with.

    A run continues in its own folder only from its latest state; resuming an older checkpoint
    branches into a new folder, so the later checkpoints and metrics of the abandoned line are never
    overwritten, mixed with new rows, or drawn as ``--vs self`` opponents.
    """

    out: Path
    source: Path | None = None  # the run folder whose history (up to ``step``) the new folder starts with
    step: int = 0
    note: str = ""

    def materialize(self) -> bool:
        """Create the new folder with the history up to ``step``; returns whether a folder was created."""
        if self.source is None:
            return False
        created = not self.out.exists()
        branch_history(self.source, self.out, self.step)
        return created

    def undo(self, created: bool) -> None:
        """Remove a branch folder this plan created (resume failed before anything was trained)."""
        if created and self.out.exists():
            shutil.rmtree(self.out, ignore_errors=True)


def plan_resume(checkpoint: Path, step: int, out: Path | None) -> ResumePlan:
    """Decide where ``--resume checkpoint`` (taken at ``step``) writes; ``ValueError`` when it must refuse."""
    home = checkpoint.parent
    if out is not None and not same_dir(out, home):
        if holds_run(out):
            raise ValueError(f"--out {out}: already holds another training run; resuming {checkpoint} there would mix "
                             f"the two runs — give a new or empty directory, or leave out --out")
        return ResumePlan(out, home if holds_run(home) else None, step)
    later = later_than(home, step)
    if not later:
        return ResumePlan(home)
    if out is not None:
        raise ValueError(f"--resume {checkpoint}: {home} already goes on past step {step:,} ({later}); resuming "
                         f"there would overwrite it — leave out --out to branch into a new folder, or give a new one")
    branch = free_dir(home.parent / f"{home.name}-branch-{step}")
    return ResumePlan(branch, home, step,
                      note=f"{checkpoint.name} is not the latest state of {home} ({later}); continuing in a new "
                           f"folder {branch} with that run's checkpoints and metrics up to step {step:,}")


def same_dir(a: Path, b: Path) -> bool:
    try:
        return Path(a).resolve() == Path(b).resolve()
    except OSError:
        return False


def free_dir(base: Path) -> Path:
    path, n = base, 1
    while path.exists():
        n += 1
        path = base.with_name(f"{base.name}-{n}")
    return path


def later_than(directory: Path, step: int) -> str:
    """What in a run folder is newer than ``step`` (checkpoints, metric rows), described; "" when nothing."""
    found = []
    newer = [p for p in list_checkpoints(directory) if (checkpoint_step(p) or 0) > step]
    if newer:
        found.append(f"{len(newer)} later checkpoint(s), up to {newer[-1].name}")
    for name in ("metrics.csv", "eval.csv"):
        rows = [r for r in read_rows(directory / name) if row_step(r) > step]
        if rows:
            found.append(f"{len(rows)} row(s) of {name} past it")
    return ", ".join(found)


def read_rows(path: Path) -> list[dict[str, str]]:
    """The whole rows of a run's CSV file: a row a killed writer cut short (fewer or more fields than the
    header) is not one of the run's, and the run that resumes drops it (:func:`arena.output_files.repair_csv_tail`)."""
    if not path.is_file():
        return []
    try:
        with path.open(newline="") as handle:
            return [row for row in csv.DictReader(handle) if None not in row and None not in row.values()]
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


def row_step(row: dict[str, str]) -> float:
    try:
        return float(row.get("step") or "nan")
    except ValueError:
        return float("nan")


def branch_history(source: Path, target: Path, step: int) -> None:
    """Give ``target`` the history of ``source`` up to ``step``: checkpoints and a league's exploiter
    snapshots (hard links where possible) and the metrics/eval rows, so the branch reads as one run and
    its self-play pool draws from the same past."""
    target.mkdir(parents=True, exist_ok=True)
    # a league's exploiter snapshots are drawn with its past: the branch's pool must hold the same ones
    history = [*list_checkpoints(source), *(path for joined, path in list_exploiters(source) if joined <= step)]
    for path in history:
        if (checkpoint_step(path) or 0) <= step and not (target / path.name).exists():
            try:
                os.link(path, target / path.name)
            except OSError:
                shutil.copy2(path, target / path.name)
    for name in APPENDED:
        src = source / name
        if not src.is_file() or (target / name).exists() or (target / name).is_symlink():
            continue
        with src.open(newline="") as handle:
            columns = list(csv.DictReader(handle).fieldnames or [])
        rows = [r for r in read_rows(src) if row_step(r) <= step]
        with staged(target / name) as temp, temp.open("w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(rows)
