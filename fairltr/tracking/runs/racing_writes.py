"""Writes two fairltr processes may race on, made safe to repeat.

MLflow's SQL stores insert some rows after a "does it exist?" query in the same transaction
(a dataset of an experiment, a run's tag). Two processes doing it at once both find nothing and
the slower insert fails on the unique key: ``UNIQUE constraint failed`` on SQLite, ``duplicate
key value violates unique constraint`` on PostgreSQL. The row exists then, and the same call
again finds it (``log_input`` reuses an experiment's dataset by name and digest and an input
the run already has; ``set_tag`` updates the row). :func:`repeat_on_unique_violation` makes
that second call; any other error propagates unchanged.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Mapping, TypeVar

__all__ = ["is_unique_violation", "repeat_on_unique_violation", "log_input"]

T = TypeVar("T")

_UNIQUE_VIOLATION_TEXTS = ("UNIQUE constraint failed", "duplicate key value violates unique constraint")


def is_unique_violation(exc: BaseException) -> bool:
    """True when ``exc`` (an MlflowException or the store's IntegrityError) is a unique-key
    violation of SQLite or PostgreSQL."""
    text = str(exc)
    return any(marker in text for marker in _UNIQUE_VIOLATION_TEXTS)


def repeat_on_unique_violation(write: Callable[[], T], *, attempts: int = 3, pause_s: float = 0.05) -> T:
    """``write()``, called again (at most ``attempts`` times in all, ``pause_s`` apart) while it
    fails on a unique-key violation; the last such failure, or any other error, propagates."""
    for attempt in range(1, attempts):
        try:
            return write()
        except Exception as exc:  # MlflowException or sqlalchemy's IntegrityError, by the store
            if not is_unique_violation(exc):
                raise
            time.sleep(pause_s * attempt)
    return write()  # the last attempt: whatever it raises propagates


def log_input(dataset: Any, *, context: str | None = None, tags: Mapping[str, str] | None = None) -> None:
    """``mlflow.log_input`` on the active run, repeated when a racing process created the same
    dataset (name and digest) in the experiment first."""
    import mlflow

    repeat_on_unique_violation(lambda: mlflow.log_input(dataset, context=context, tags=dict(tags) if tags else None))
