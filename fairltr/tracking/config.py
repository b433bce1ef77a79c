"""Where runs go: the tracking-URI policy shared by every fairltr adapter.

Policy: ``MLFLOW_TRACKING_URI`` (or a URI set with ``mlflow.set_tracking_uri``) wins; otherwise
a local SQLite store ``sqlite:///<cwd>/mlflow.db`` — MLflow 3.17's own default, made explicit so
that a stray ``./mlruns`` folder never switches the store to the deprecated file backend.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["DEFAULT_EXPERIMENT", "default_tracking_uri", "tracking_uri", "configure", "lightning_logger"]

DEFAULT_EXPERIMENT = "fairltr"


def default_tracking_uri(cwd: str | Path | None = None) -> str:
    """``sqlite:///<absolute cwd>/mlflow.db`` (the embedded store used without a server)."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    return f"sqlite:///{(base / 'mlflow.db').resolve()}"


def tracking_uri() -> str:
    """The URI runs are logged to: an explicitly set URI, else :func:`default_tracking_uri`."""
    import mlflow

    if mlflow.is_tracking_uri_set():
        return mlflow.get_tracking_uri()
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def configure(experiment: str | None = None) -> str:
    """Point MLflow at :func:`tracking_uri` (and the registry at the same store); select
    ``experiment`` unless a run is active or ``mlflow run`` handed us one (``MLFLOW_RUN_ID``).
    Returns the tracking URI."""
    import mlflow

    uri = tracking_uri()
    if not mlflow.is_tracking_uri_set():
        mlflow.set_tracking_uri(uri)
    if experiment and mlflow.active_run() is None and not os.environ.get("MLFLOW_RUN_ID"):
        mlflow.set_experiment(experiment)
    return uri


def lightning_logger(experiment: str = DEFAULT_EXPERIMENT, run_name: str | None = None, **kwargs):
    """A Lightning ``MLFlowLogger`` on the same tracking URI as the rest of fairltr.

    Inside ``mlflow run`` (``MLFLOW_RUN_ID`` set) or an active run, it logs into that run.
    Extra keyword arguments go to ``MLFlowLogger`` (e.g. ``tags``, ``log_model``).
    """
    import mlflow
    from lightning.pytorch.loggers import MLFlowLogger

    uri = tracking_uri()
    active = mlflow.active_run()
    run_id = active.info.run_id if active is not None else os.environ.get("MLFLOW_RUN_ID")
    if run_id:
        kwargs.setdefault("run_id", run_id)
    return MLFlowLogger(experiment_name=experiment, run_name=run_name, tracking_uri=uri, **kwargs)
