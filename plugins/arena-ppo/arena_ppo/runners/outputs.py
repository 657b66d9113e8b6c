"""What a run writes besides checkpoints: config.yaml, metrics.csv, eval.csv, TensorBoard and console lines.

Only the main process of a run writes; the others hold a :class:`RunOutputs` that writes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from arena.progress import Progress, format_duration, format_stat
from arena.training import MetricLogger, clean_stale_temp_files, tensorboard_writer, write_config


class RunOutputs:
    """The output folder's logs and the console (``console`` None: silent)."""

    def __init__(self, out_dir: Path, console: Callable[[str], None] | None, main: bool = True) -> None:
        self.out_dir, self.main = Path(out_dir), main
        self.console = console if main else None
        self.meter: Progress | None = None  # while a run trains: lines go above its live line
        self.metrics: MetricLogger | None = None
        self.evals: MetricLogger | None = None

    def open(self, config: dict[str, Any]) -> None:
        """Create the folder, write config.yaml (``config``: plain values) and open the metric logs (a row a
        killed run left cut short is dropped, and said; a log that is a symbolic link is refused with an
        ``OSError`` naming it)."""
        if not self.main:
            return
        self.out_dir.mkdir(parents=True, exist_ok=True)
        for path in clean_stale_temp_files(self.out_dir):  # left by a writer that was killed mid-write
            self.echo(f"removed {path.name}, an unfinished write of a process that no longer runs")
        write_config(self.out_dir / "config.yaml", config)
        self.metrics = MetricLogger(self.out_dir / "metrics.csv")
        self.evals = MetricLogger(self.out_dir / "eval.csv")
        for log in (self.metrics, self.evals):  # a row a killed run left cut short, dropped before appending
            if log.note is not None:
                self.echo(f"note: {log.note}")
        self.metrics.tensorboard = self.evals.tensorboard = tensorboard_writer(self.out_dir / "tensorboard")

    def echo(self, text: str) -> None:
        if self.console is None:
            return
        if self.meter is not None:
            self.meter.echo(text, self.console)
        else:
            self.console(text)

    def log_update(self, metrics: dict[str, float], step: int) -> None:
        if self.metrics is not None:
            self.metrics.log(metrics, step=step)

    def log_evaluation(self, row: dict[str, float], step: int) -> None:
        if self.evals is not None:
            self.evals.log(row, step=step, prefix="eval/")

    def update_line(self, m: dict[str, float], max_steps: int, eta: float) -> None:
        """One console line of an update; episode statistics are NaN until an episode ends: shown as "-".
        It says how far the run is (of ``max_steps``, ``eta`` seconds left, NaN: not known yet), since
        off a terminal it is the run's only progress line."""
        done = 100.0 * min(m["step"] / max(max_steps, 1), 1.0)
        self.echo(f"update {m['update']:>5}  steps {m['step']:>11,}/{max_steps:,} ({done:5.1f}%)  "
                  f"eta {format_duration(eta)}  sps {m['sps']:>7,.0f}  "
                  f"win {format_stat(m['win_rate'], '.3f')}  draw {format_stat(m['draw_rate'], '.3f')}  "
                  f"return {format_stat(m['episode_return'], '+.3f')}  "
                  f"length {format_stat(m['episode_length'], '.0f')}  "
                  f"pl {m['policy_loss']:+.4f}  vl {m['value_loss']:.4f}  ent {m['entropy']:.3f}  "
                  f"kl {m['approx_kl']:.4f}  clip {m['clip_fraction']:.3f}  lr {m['learning_rate']:.2e}")

    def close(self) -> None:
        if self.metrics is not None:
            self.metrics.close()
