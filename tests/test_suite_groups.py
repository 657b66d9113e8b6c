"""The suite's ``xdist_group`` marks hold: tests marked with one group run in one worker.

Several modules share a set-up that takes a minute (a killed and resumed sweep, the straight training
runs that resumed runs are compared with) or that only one worker may hold at a time (a local Ray).
``make test`` runs ``--dist loadgroup`` for that; pytest 9.2 with pytest-xdist 3.8 silently stopped
grouping (the group rides on a node id pytest no longer reads), which doubled that set-up and let two
Rays start side by side. This runs a small suite the way ``make test`` does and looks where each test ran.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("xdist", reason="make test runs the suite with pytest-xdist")

SUITE = textwrap.dedent("""
    import os
    from pathlib import Path

    import pytest

    def ran(name):
        folder = Path(os.environ["WHERE_TESTS_RAN"])
        (folder / name).write_text(os.environ.get("PYTEST_XDIST_WORKER", "main"))

    @pytest.mark.xdist_group("shared")
    @pytest.mark.parametrize("i", range(4))
    def test_grouped(i):
        ran(f"grouped-{i}")

    @pytest.mark.parametrize("i", range(4))
    def test_free(i):
        ran(f"free-{i}")
""")


def test_tests_of_one_xdist_group_run_in_one_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "test_grouped.py").write_text(SUITE)
    where = tmp_path / "ran"
    where.mkdir()
    monkeypatch.setenv("WHERE_TESTS_RAN", str(where))
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadgroup", "-p",
                           "no:cacheprovider", "test_grouped.py"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    workers = {path.name: path.read_text() for path in where.iterdir()}
    assert len(workers) == 8 and set(workers.values()) <= {"gw0", "gw1"}, workers
    grouped = {workers[f"grouped-{i}"] for i in range(4)}
    assert len(grouped) == 1, f"the group's tests ran in {sorted(grouped)}: --dist loadgroup does not group here"
