"""The scripts benchmarks/gpu.sh runs still run: each at toy sizes on the CPU, in a process of its own.

They measure, so nothing here checks a figure; but a GPU is lent rarely, and a script broken by a change
to what it drives (update_paths.py read an attribute the league env no longer had) costs that lease.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

RUNS = {
    "wrappers": ["benchmarks/wrappers.py", "--sizes", "32", "--steps", "3", "--rounds", "1", "--threads", "1"],
    "env_throughput": ["benchmarks/env_throughput.py", "--sizes", "32", "--steps", "3", "--repeats", "1",
                       "--device", "cpu", "--threads", "1"],
    "update_paths": ["benchmarks/update_paths.py", "--envs", "32", "--repeats", "1"],
}


@pytest.mark.parametrize("name", RUNS)
def test_a_benchmark_gpu_sh_runs_still_runs(name: str) -> None:
    done = subprocess.run([sys.executable, *RUNS[name]], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "32" in done.stdout  # its row for the size asked


def test_time_to_quality_scores_its_checkpoints_and_writes_its_results(tmp_path: Path) -> None:
    import json

    done = subprocess.run([sys.executable, "benchmarks/time_to_quality.py", "--arm", "tiny=--num-envs 64",
                           "--minutes", "0.05", "--save-updates", "1", "--games", "4", "--out", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = json.loads((tmp_path / "results.json").read_text())
    assert [r["arm"] for r in rows] == ["tiny"] and rows[0]["updates"] >= 1
    assert "| tiny |" in done.stdout
