"""A stand-in for one training process, started by test_launcher.py through ``launch(..., module=...)``.

    python -m launcher_worker DIR

It follows its launcher as a trainer does (:func:`arena.training.launcher.follow_launcher`), writes
``DIR/<rank>.pid`` once it does, and waits. The first SIGTERM asks it to stop, as it asks a trainer;
it then waits a moment longer, so that a second SIGTERM (on which a trainer aborts) would be counted,
writes ``DIR/<rank>.txt`` with the number of SIGTERMs, prints a line (which must not fail on a
hung-up terminal) and exits with SIGTERM's status (143), as a trainer that stopped on it does.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path
from types import FrameType

from arena.training.launcher import follow_launcher

SETTLE_S = 0.5


def write(path: Path, text: str) -> None:
    """Whole or absent: the test polls for these files."""
    part = path.with_name(f".{path.name}.part")
    part.write_text(text)
    os.replace(part, path)


def main(out: Path) -> None:
    rank = os.environ["RANK"]
    terms: list[int] = []

    def stop(signum: int, frame: FrameType | None) -> None:
        terms.append(signum)

    signal.signal(signal.SIGTERM, stop)
    follow_launcher()
    write(out / f"{rank}.pid", str(os.getpid()))
    while not terms:
        time.sleep(0.02)
    time.sleep(SETTLE_S)
    write(out / f"{rank}.txt", str(len(terms)))
    print(f"process {rank} stopped", flush=True)
    sys.exit(128 + signal.SIGTERM)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
