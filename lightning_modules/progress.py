"""Training progress off a TTY: a Lightning callback feeding :class:`fairltr.progress.Progress`
(a line every 10 s or 10% of the steps, with done/total, rate and time left), for runs whose
output goes to a file, where Lightning's bar is off."""

from __future__ import annotations

from typing import Any, Callable

import lightning.pytorch as pl

from fairltr.progress import Progress

__all__ = ["ProgressLines", "MetricLines"]


class ProgressLines(pl.Callback):
    """``training N steps: done/total (pct%), rate/s, time left`` lines (rank 0 only)."""

    def __init__(self, echo: Callable[[str], None] | None = None) -> None:
        self.echo = echo
        self._progress: Progress | None = None

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        if trainer.is_global_zero and trainer.max_steps and trainer.max_steps > 0:
            self._progress = Progress(f"training {trainer.max_steps} steps", trainer.max_steps, self.echo, tty=False)

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any, **kwargs: Any) -> None:
        if self._progress is not None:
            self._progress(min(trainer.global_step, self._progress.total))


class MetricLines(pl.Callback):
    """``step N: name value, ... (t s)`` lines every ``every`` optimizer steps and at the last one
    (rank 0 only), for the logged training metrics named in ``metrics`` (``{label: key}``, e.g.
    ``{"loss": "train/loss"}``; a key not logged yet shows ``nan``)."""

    def __init__(self, metrics: dict[str, str], every: int = 25, echo: Callable[[str], None] = print) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        self.metrics, self.every, self.echo = dict(metrics), every, echo
        self._t0 = 0.0

    def on_train_start(self, trainer: pl.Trainer, pl_module: Any) -> None:
        import time

        self._t0 = time.perf_counter()

    def on_train_batch_end(self, trainer: pl.Trainer, *args: Any, **kwargs: Any) -> None:
        import time

        step = trainer.global_step
        if not trainer.is_global_zero or not (step % self.every == 0 or step == trainer.max_steps):
            return
        logged = trainer.callback_metrics
        values = ", ".join(f"{label} {float(logged.get(key, float('nan'))):.4f}" for label, key in self.metrics.items())
        self.echo(f"  step {step}: {values} ({time.perf_counter() - self._t0:.0f} s)")
