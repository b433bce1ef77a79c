"""The life of an MLflow run opened by a fairltr job, stated once.

* :func:`job_run` is the run a job logs into. Inside ``mlflow run`` (``MLFLOW_RUN_ID`` set) it is
  the run ``mlflow run`` created; inside an active run it is a nested run; otherwise a new run
  in ``experiment``. On any exception the run ends FAILED, on Ctrl-C (``KeyboardInterrupt``)
  KILLED, and the exception propagates: no run a fairltr command opened is left RUNNING.
* :func:`child_run` is a nested run under the active one (a second model of the same job).
* :func:`log_params` logs params without ever changing a value the run already holds
  (``mlflow run`` logs its entry-point parameters first); a differing value goes under
  ``fairltr.<key>``. MLflow's client batches params, metrics and tags itself.
* :func:`log_metrics` logs the finite values only (NaN = undefined: skipped, so a gate on it
  fails closed).

Ctrl-C (:mod:`fairltr.interrupts`): one that arrives while the run is being created is held back
until the run is inside the block that ends it, so it ends KILLED, never RUNNING; one during the
write that ends a run waits for that write. An exception raised while a KeyboardInterrupt
propagated (a clean-up cut short) also ends the run KILLED.

Never RUNNING forever: when ending a run fails (the tracking server is gone), the run id, the
status it should get and a digest of the tracking URI (never the URI: it may hold a password)
are written to ``pending_run_ends.json`` in the fairltr state folder (``$FAIRLTR_STATE_DIR``,
else ``$XDG_STATE_HOME/fairltr``, else ``~/.local/state/fairltr``), and one line on stderr names
the run and the command that marks it (``fairltr mark-run RUN_ID --status FAILED``). The next
fairltr command against the same store (:func:`fairltr.tracking.runs.config.configure` calls
:func:`settle_pending_ends`) sets the recorded status on runs still RUNNING and forgets them.
"""

from __future__ import annotations

import json
import math
import os
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, Mapping

import numpy as np

from fairltr.interrupts import caused_by_interrupt, hold, release
from fairltr.tracking.runs.config import configure, redact_text, redact_uri, tracking_uri
from fairltr.tracking.runs.pending_ends import (  # noqa: F401  (re-exported: the names before pending_ends.py)
    _SETTLED, _store_key, pending_ends_file, read_pending, record_pending_end, settle_pending_ends,
)

_read_pending = read_pending

__all__ = ["job_run", "child_run", "end_run_status", "log_params", "log_metrics", "finite_metrics", "mark_run",
           "record_pending_end", "settle_pending_ends", "pending_ends_file", "RUN_STATUSES"]

RUN_STATUSES = ("FINISHED", "FAILED", "KILLED")


def finite_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """The entries of ``metrics`` that are finite numbers (bools and strings dropped)."""
    out: dict[str, float] = {}
    for key, value in metrics.items():
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            continue
        if math.isfinite(float(value)):
            out[key] = float(value)
    return out


def end_run_status(exc: BaseException | None) -> str:
    """FINISHED without an exception, KILLED for Ctrl-C / SIGTERM (or an error raised while one
    propagated), FAILED otherwise."""
    if exc is None:
        return "FINISHED"
    if isinstance(exc, (KeyboardInterrupt, SystemExit)) and not (
            isinstance(exc, SystemExit) and exc.code in (0, None)):
        return "KILLED"
    return "KILLED" if caused_by_interrupt(exc) else "FAILED"


@contextmanager
def _ended_on_exit(run_id: str) -> Iterator[None]:
    """End the active run ``run_id`` with the status the block's outcome calls for."""
    import mlflow

    try:
        yield
    except BaseException as exc:
        _end_quietly(run_id, end_run_status(exc))
        raise
    else:
        _end_quietly(run_id, "FINISHED", raise_errors=True)


def _end_quietly(run_id: str, status: str, raise_errors: bool = False) -> None:
    """Pop ``run_id`` from the active-run stack and set its status; while an exception is
    already propagating, a second failure (the server is gone) must not mask it. When setting
    the status fails, the run is recorded for :func:`settle_pending_ends` and one line says how
    to mark it."""
    import mlflow

    opened = hold()  # a Ctrl-C now waits for this write (at most MAX_DEFER_SECONDS)
    try:
        active = mlflow.active_run()
        if active is not None and active.info.run_id == run_id:
            mlflow.end_run(status)  # pops the run before it calls the store
        else:
            mlflow.MlflowClient().set_terminated(run_id, status)
    except Exception as exc:
        _report_unended(run_id, status, exc)
        if raise_errors:
            raise
    except KeyboardInterrupt as exc:  # the store did not answer before a Ctrl-C's wait ran out
        _report_unended(run_id, status, exc)
        raise
    finally:
        release(opened)


def _report_unended(run_id: str, status: str, exc: BaseException) -> None:
    import sys

    uri = tracking_uri()
    try:
        saved = record_pending_end(uri, run_id, status)
    except Exception:  # the state folder cannot be written: the printed line is all we have
        saved = None
    reason = _short_reason(redact_text(" ".join(str(getattr(exc, "message", None) or exc).split())))
    later = "the next fairltr command against this tracking store marks it, or run: " if saved else "run: "
    sys.stderr.write(f"fairltr: MLflow run {run_id} could not be marked {status} at {redact_uri(uri)} ({reason}); "
                     f"{later}fairltr mark-run {run_id} --status {status}\n")


def _short_reason(text: str) -> str:
    """The cause of a failed tracking call in a few words (connection refused, timed out...)."""
    lowered = text.lower()
    for needle, short in (("connection refused", "connection refused"), ("timed out", "timed out"),
                          ("name or service not known", "unknown host"), ("max retries exceeded", "server unreachable"),
                          ("connection reset", "connection reset"), ("remote end closed", "connection closed")):
        if needle in lowered:
            return short
    return text if len(text) <= 160 else text[:157] + "..."


def mark_run(run_id: str, status: str = "FAILED", *, force: bool = False) -> tuple[str, str]:
    """Set the status of ``run_id`` to ``status`` (FINISHED, FAILED or KILLED) when it is
    RUNNING (any status with ``force``); forget its pending record. Returns (status before,
    status after)."""
    import mlflow

    from fairltr.errors import ConfigError
    from fairltr.files import atomic_write_text, file_lock

    status = status.upper()
    if status not in RUN_STATUSES:
        raise ConfigError(f"status must be one of {RUN_STATUSES}, got {status!r}")
    path = pending_ends_file()
    if path.is_file():  # this command decides the run's status: forget what was recorded for it
        with file_lock(path.with_name(path.name + ".lock"), timeout=30.0):
            entries = read_pending(path)
            rest = [e for e in entries if e["run_id"] != run_id]
            if len(rest) != len(entries):
                atomic_write_text(path, json.dumps(rest, indent=1))
    configure()
    client = mlflow.MlflowClient()
    before = client.get_run(run_id).info.status
    after = before
    if before == "RUNNING" or force:
        client.set_terminated(run_id, status)
        after = status
    return before, after


@contextmanager
def job_run(experiment: str | None, run_name: str | None = None, *, tags: Mapping[str, str] | None = None,
            description: str | None = None, reuse_active: bool = False) -> Iterator[Any]:
    """The run a job logs into (see the module docstring); yields the active ``mlflow.ActiveRun``.

    ``reuse_active=True`` logs into the active run itself (left open: its owner ends it) instead of
    a nested run."""
    import mlflow


    configure(experiment)
    tags = dict(tags or {})
    if description:
        tags["mlflow.note.content"] = description
    active = mlflow.active_run()
    if active is not None and reuse_active:
        if tags:
            mlflow.set_tags(tags)
        yield active
        return
    if active is not None:
        start = lambda: mlflow.start_run(run_name=run_name, nested=True, tags=tags)  # noqa: E731
    elif os.environ.get("MLFLOW_RUN_ID"):
        start = lambda: mlflow.start_run(tags=tags)  # noqa: E731  (the run `mlflow run` created: keeps its name)
    else:
        start = lambda: mlflow.start_run(run_name=run_name, tags=tags)  # noqa: E731
    with _started(start) as run:
        yield run


@contextmanager
def _started(start: Callable[[], Any]) -> Iterator[Any]:
    """``start()`` (an ``mlflow.start_run``) and the block that ends the run it opens: a Ctrl-C
    during the start is held back and raised inside that block (the run ends KILLED). Should the
    start be cut anyway (a store that hangs past the wait), a run it already made active is
    ended KILLED."""
    import mlflow

    before = mlflow.active_run()
    opened = hold()
    try:
        run = start()
    except BaseException as exc:
        release(opened)
        now = mlflow.active_run()
        if now is not None and (before is None or now.info.run_id != before.info.run_id):
            _end_quietly(now.info.run_id, end_run_status(exc))
        raise
    with _ended_on_exit(run.info.run_id):
        release(opened, raise_now=True)
        yield run


@contextmanager
def child_run(run_name: str | None = None, *, tags: Mapping[str, str] | None = None) -> Iterator[Any]:
    """A nested run under the active run, ended like :func:`job_run`."""
    import mlflow

    with _started(lambda: mlflow.start_run(run_name=run_name, nested=True, tags=dict(tags or {}))) as run:
        yield run


def log_params(run_id: str, params: Mapping[str, Any], client: Any = None) -> dict[str, str]:
    """Log ``params`` (None values skipped, text cut to MLflow's 6,000 characters) without
    changing a value the run already holds; a differing value goes under ``fairltr.<key>``.
    Returns what was logged."""
    import mlflow
    from mlflow.entities import Param

    client = client or mlflow.MlflowClient()
    have = client.get_run(run_id).data.params
    out: dict[str, str] = {}
    for key, value in params.items():
        if value is None:
            continue
        text = str(value)[:6000]
        if key in have:
            if have[key] != text and f"fairltr.{key}" not in have:
                out[f"fairltr.{key}"] = text
        else:
            out[key] = text
    if out:
        client.log_batch(run_id, params=[Param(k, v) for k, v in out.items()])
    return out


def log_metrics(run_id: str, metrics: Mapping[str, Any], step: int = 0) -> dict[str, float]:
    """Log the finite entries of ``metrics`` in one call (the client splits large batches)."""
    import mlflow
    from mlflow.entities import Metric

    finite = finite_metrics(metrics)
    if finite:
        now = int(time.time() * 1000)
        mlflow.MlflowClient().log_batch(run_id, metrics=[Metric(k, v, now, step) for k, v in finite.items()])
    return finite
