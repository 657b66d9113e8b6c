"""``arena sweep ppo --confirm BEST.yaml --seeds 5``: the chosen settings beside the defaults, on new seeds.

A sweep picks the best of many trials on the same few seeds, so its best objective flatters it.
Confirming trains the chosen settings and the defaults (the same file without the searched settings)
on seeds the sweep did not use, scores every seed as the sweep does, and prints both side by side:
a default changes only where this shows a gain. A seed that failed counts as 0 in the median, worst and
mean, as a failing seed costs a trial in the sweep. Runs go to ``OUT/best/seed-S`` and
``OUT/defaults/seed-S``; a confirmation that stopped reuses the seeds it had scored.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from arena_ppo.sweep.runs import Pool, SeedJob, SeedResult, settings_text, write_text
from arena_ppo.sweep.study import POLL

if TYPE_CHECKING:
    from arena.training.interrupt import StopRequest

GROUPS = ("best", "defaults")


def confirm(algorithm: str, settings: dict[str, dict[str, Any]], seeds: tuple[int, ...], games: int, workers: int,
            out: Path, echo: Callable[[str], None], stop: StopRequest) -> dict[str, Any] | None:
    """Train and score each group's ``settings`` (by key) on ``seeds``; the scores by group, or None where
    ``stop`` was requested first (the runs are then stopped)."""
    files = {}
    for group in GROUPS:
        files[group] = out / group / "settings.yaml"
        write_text(files[group], settings_text(algorithm, settings[group],
                                               f"arena sweep --confirm: the {group} settings"))
    jobs = [SeedJob((group, seed), algorithm, files[group], seed, out / group / f"seed-{seed}", games)
            for seed in seeds for group in GROUPS]
    total = len(jobs)
    results: dict[str, dict[int, SeedResult]] = {group: {} for group in GROUPS}
    pool = Pool(workers)

    def ended(result: SeedResult) -> None:
        group, seed = result.job.key
        results[group][seed] = result
        what = f"score {result.score:.3f}" if result.score is not None else f"failed: {result.error}"
        how = " (scored before)" if result.reused else ""
        done = sum(len(r) for r in results.values())
        echo(f"{group} seed {seed}: {what}{how}; {done}/{total} runs")

    try:
        while (jobs or pool.running) and not stop.requested:
            for result in pool.poll():
                ended(result)
            while jobs and pool.free() > 0:
                started = pool.start(jobs.pop(0))
                if started is not None and started.busy:  # an earlier process still trains there: later
                    jobs.insert(0, started.job)
                    break
                if started is not None:
                    ended(started)
            time.sleep(POLL)
    finally:
        pool.stop_all()
    if stop.requested:
        return None
    return {group: group_summary(files[group], results[group], seeds) for group in GROUPS}


def group_summary(path: Path, results: dict[int, SeedResult], seeds: tuple[int, ...]) -> dict[str, Any]:
    """Each seed's score, and their median, worst and mean, a failed seed counted as 0."""
    scores = {s: results[s].score for s in seeds if s in results and results[s].score is not None}
    values = [float(scores.get(s) or 0.0) for s in seeds if s in results]
    return {"settings": str(path), "scores": scores,
            "errors": {s: r.error for s, r in results.items() if r.error is not None},
            "median": statistics.median(values) if values else None, "worst": min(values) if values else None,
            "mean": sum(values) / len(values) if values else None}


def render(data: dict[str, Any], seeds: tuple[int, ...], changed: dict[str, tuple[Any, Any]]) -> str:
    header = ["", *(f"seed {s}" for s in seeds), "median", "worst", "mean"]
    lines = []
    for group in GROUPS:
        g = data[group]
        lines.append([group, *(f"{g['scores'][s]:.3f}" if s in g["scores"] else "failed (0)" for s in seeds),
                      *("-" if g[k] is None else f"{g[k]:.3f}" for k in ("median", "worst", "mean"))])
    widths = [max(len(h), *(len(line[i]) for line in lines)) for i, h in enumerate(header)]
    out = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    out += ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    if changed:
        out.append("best differs from the defaults in: " + ", ".join(
            f"{k} {show(best)} (default {show(default)})" for k, (best, default) in changed.items()))
    for group in GROUPS:
        for seed, error in data[group]["errors"].items():
            out.append(f"{group} seed {seed} failed (counted as 0 in the median, worst and mean): {error}")
    b, d = data["best"], data["defaults"]
    if b["median"] is not None and d["median"] is not None:
        verdict = ("a gain on both the median and the worst seed" if b["median"] > d["median"] and
                   b["worst"] > d["worst"] else "no gain on both the median and the worst seed: keep the defaults")
        out.append(f"best against the defaults: median {b['median'] - d['median']:+.3f}, worst "
                   f"{b['worst'] - d['worst']:+.3f}: {verdict}")
    return "\n".join(out)


def show(value: Any) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)
