"""A tournament asked to end by a signal stores what it played and exits with the signal's status."""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

LEAGUE = """name: sig
output: out
seed: 1
device: cpu
max_envs: 4
games_per_pairing: 400
participants: [placeholder, crank, sniper]
"""


def stored_games(db: Path) -> int:
    try:
        with sqlite3.connect(f"file:{db}?mode=ro", uri=True) as conn:
            return int(conn.execute("SELECT count(*) FROM games").fetchone()[0])
    except sqlite3.Error:
        return 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGTERM ends a process at once on Windows")
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stores_the_games_played_and_ends_with_its_status(tmp_path, sig):
    (tmp_path / "league.yaml").write_text(LEAGUE)
    proc = subprocess.Popen([sys.executable, "-m", "arena", "tournament", "league.yaml", "--quiet"], cwd=tmp_path,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        end = time.monotonic() + 120
        while stored_games(tmp_path / "out" / "results.sqlite") == 0:
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < end, "no game was stored in time"
            time.sleep(0.1)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "interrupted: finished games are stored in" in err and "Traceback" not in err
    assert stored_games(tmp_path / "out" / "results.sqlite") > 0
