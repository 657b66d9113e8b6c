"""A run resumed in place into files a killed or tampered-with run left: a metric row cut short is
dropped and said, and a metric log that is a symbolic link is refused, not appended through."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from arena.cli import main
from arena_ppo.runners.outputs import RunOutputs

SMALL = ["--vs", "crank", "--num-envs", "8", "--set", "ppo.n_steps=32", "--set", "ppo.batch_size=64",
         "--eval-games", "0", "--no-progress", "--threads", "1"]


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run of two updates of 256 steps, a checkpoint after each."""
    out = tmp_path_factory.mktemp("trained") / "run"
    result = CliRunner().invoke(main, ["train", "ppo", *SMALL, "--max-steps", "512", "--save-interval", "256",
                                       "--out", str(out)])
    assert result.exit_code == 0, result.output
    return out


def resume(out: Path) -> object:
    return CliRunner().invoke(main, ["train", "ppo", "--resume", str(out / "ckpt_000000512.pt"), "--max-steps", "768",
                                     "--no-progress", "--threads", "1"])


def test_resuming_in_place_drops_the_row_a_killed_run_cut_and_says_so(trained: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    with (out / "metrics.csv").open("a", newline="") as handle:
        handle.write("76")  # killed while writing the row of step 768, its step half written
    result = resume(out)
    assert result.exit_code == 0, result.output
    with (out / "metrics.csv").open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert len({len(row) for row in rows}) == 1, "every row has the header's fields"
    assert [row[0] for row in rows[1:]] == ["256", "512", "768"]
    assert (f"note: {out}/metrics.csv: dropped line 4, a row an interrupted write left cut short (1 field where "
            f"the header has ") in result.output


def test_resuming_in_place_refuses_a_metrics_file_that_links_elsewhere(trained: Path, tmp_path: Path) -> None:
    out, outside = tmp_path / "run", tmp_path / "elsewhere.csv"
    shutil.copytree(trained, out)
    shutil.move(out / "metrics.csv", outside)
    (out / "metrics.csv").symlink_to(outside)
    before = outside.read_bytes()
    result = resume(out)
    assert result.exit_code != 0
    assert (f"--out {out}: {out}/metrics.csv: a symbolic link to {outside}; arena does not append to a file "
            f"through a link") in " ".join(result.output.split())
    assert outside.read_bytes() == before and (out / "metrics.csv").is_symlink()


def test_the_eval_log_is_repaired_and_said_too(tmp_path: Path) -> None:
    (tmp_path / "eval.csv").write_bytes(b"step,eval_crank_win\r\n256,0.5\r\n512,0.")
    lines: list[str] = []
    outputs = RunOutputs(tmp_path, console=lines.append)
    outputs.open({"seed": 1})
    outputs.log_evaluation({"step": 768, "eval_crank_win": 0.75}, step=768)
    outputs.close()
    assert lines == [f"note: {tmp_path}/eval.csv: dropped line 3, a row an interrupted write left cut short "
                     f"(2 fields where the header has 2, no end of line)"]
    assert (tmp_path / "eval.csv").read_bytes() == b"step,eval_crank_win\r\n256,0.5\r\n768,0.75\r\n"
