"""A run's files as a resumed run writes them: a metric CSV whose last row a killed run left cut short is
repaired before it is appended to (and the repair said), and no file of a run is written through a
symbolic link — whole files replace the link, the appended metric CSVs refuse it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
import torch

from arena.output_files import LinkedOutputError
from arena.training import MetricLogger, save_checkpoint, write_config
from arena.training.best import BestRecord, keep_best


def outside_file(tmp_path: Path, name: str, content: bytes = b"not the run's\n") -> tuple[Path, Path]:
    """``tmp_path/run/name``, a symbolic link to a file outside the run folder holding ``content``."""
    run, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run.mkdir(exist_ok=True)
    elsewhere.mkdir(exist_ok=True)
    (elsewhere / name).write_bytes(content)
    (run / name).symlink_to(elsewhere / name)
    return run / name, elsewhere / name


def field_counts(path: Path) -> list[int]:
    with path.open(newline="") as handle:
        return [len(row) for row in csv.reader(handle)]


# -- issue 67 item 4: a row cut short -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["metrics.csv", "eval.csv"])
@pytest.mark.parametrize("cut", ["76", "768,3,0.0", "768,3\r\n"])
def test_resuming_drops_a_row_a_killed_run_left_cut_short_and_says_so(tmp_path: Path, name: str, cut: str) -> None:
    path = tmp_path / name
    first = MetricLogger(path)
    for step in (256, 512):
        first.log({"step": step, "update": step // 256, "loss": 0.5})
    with path.open("a", newline="") as handle:  # the run is killed while it writes the next row
        handle.write(cut)
    resumed = MetricLogger(path)
    resumed.log({"step": 768, "update": 3, "loss": 0.25})
    assert field_counts(path) == [3, 3, 3, 3]
    assert [r["step"] for r in csv.DictReader(path.open(newline=""))] == ["256", "512", "768"]
    assert resumed.note is not None and resumed.note.startswith(f"{path}: dropped line 4, a row an interrupted write")


def test_a_whole_file_is_appended_to_without_a_note(tmp_path: Path) -> None:
    path = tmp_path / "metrics.csv"
    MetricLogger(path).log({"step": 1, "loss": 0.5})
    again = MetricLogger(path)
    assert again.note is None
    again.log({"step": 2, "loss": 0.25, "kl": 0.01})  # a wider row rewrites the file, whole
    assert field_counts(path) == [3, 3, 3]


# -- issue 67 item 5: no run file is written through a link --------------------------------------------------


@pytest.mark.parametrize("name", ["metrics.csv", "eval.csv"])
def test_a_metric_log_that_is_a_link_is_refused_before_anything_is_written(tmp_path: Path, name: str) -> None:
    link, outside = outside_file(tmp_path, name, b"step,loss\r\n1,0.5\r\n2")  # even one with a cut row
    with pytest.raises(LinkedOutputError, match=f"^{link}: a symbolic link to {outside}; arena does not append"):
        MetricLogger(link).log({"step": 3, "loss": 0.1})
    assert outside.read_bytes() == b"step,loss\r\n1,0.5\r\n2" and link.is_symlink()


def test_whole_run_files_replace_a_link_and_leave_what_it_pointed_to(tmp_path: Path) -> None:
    payload = {"agent": "test", "format_version": 1, "weights": torch.zeros(2)}
    writers = {
        "config.yaml": lambda p: write_config(p, {"seed": 1}),
        "ckpt_000000256.pt": lambda p: save_checkpoint(payload, p),
        "best.json": lambda p: keep_best(p.parent, payload, BestRecord(256, 0.5, 0.5, {"crank": 0.5})),
    }
    for name, write in writers.items():
        link, outside = outside_file(tmp_path, name)
        if name == "best.json":  # keep_best writes best.pt too: a link as well
            best_pt, best_outside = outside_file(tmp_path, "best.pt")
        write(link)
        assert outside.read_bytes() == b"not the run's\n", name
        assert link.is_file() and not link.is_symlink(), name
    assert best_outside.read_bytes() == b"not the run's\n" and not best_pt.is_symlink()
    assert json.loads((tmp_path / "run" / "best.json").read_text())["step"] == 256
