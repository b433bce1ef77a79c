"""Training progress off a TTY: a Lightning callback feeding :class:`fairltr.progress.Progress`
(a line every 10 s or 10% of the steps, with done/total, rate and time left), for runs whose
output goes to a file, where Lightning's bar is off."""

from __future__ import annotations

from typing import Any, Callable

import lightning.pytorch as pl

from fairltr.progress import Progress

__all__ = ["ProgressLines"]


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
