"""One seed of a sweep: ``python -m arena_ppo.sweep.job --result FILE … -- train ppo --config … --seed S …``.

The process runs the ``arena train`` command line it is given, in itself (the same code, from a fresh
process, as ``arena train`` run by hand: the same settings and seed train the same weights, bit for
bit), then scores the run (:func:`arena_ppo.sweep.score.score_run`) with the torch it has already
loaded and writes the result to ``FILE`` as JSON, atomically. A failed run ends with its own exit
status and its message on stderr, and writes no result. It ends with the sweep that started it (a
killed sweep leaves no run behind writing into a folder it will reuse).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path


def die_with_parent(parent: int) -> None:
    """End this process when ``parent`` (the sweep) ends, however it ends: Linux's parent-death signal,
    and elsewhere a thread that watches the parent's pid."""
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # it ended before the signal was set
        os._exit(1)

    def watch() -> None:
        while True:
            time.sleep(1.0)
            if os.getppid() != parent:
                os._exit(1)

    threading.Thread(target=watch, name="sweep-parent-watch", daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m arena_ppo.sweep.job")
    parser.add_argument("--result", type=Path, required=True)
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--algorithm", default="ppo")
    parser.add_argument("--games", type=int, default=200)
    parser.add_argument("--digest", default="")
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--parent", type=int, default=None)
    parser.add_argument("train", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.parent is not None:
        die_with_parent(args.parent)
    train_args = args.train[1:] if args.train[:1] == ["--"] else args.train

    from arena.cli import main as arena

    start = time.perf_counter()
    try:
        arena.main(args=train_args, prog_name="arena", standalone_mode=True)
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    if code:
        return code
    trained = time.perf_counter() - start

    from arena_ppo.sweep.score import score_run

    try:
        result = score_run(args.run_dir, args.algorithm, args.games)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    result.update({"seed": args.seed, "digest": args.digest, "train_seconds": round(trained, 3),
                   "score_seconds": round(time.perf_counter() - start - trained, 3)})
    from arena.training.metrics import write_text_atomically

    write_text_atomically(args.result, json.dumps(result, indent=2) + "\n")
    print(f"score {result['score']:.4f} ({', '.join(f'{k} {v:.3f}' for k, v in result['scores'].items())}; "
          f"{result['games']} games each, {result['policy']}, {result['checkpoint']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
