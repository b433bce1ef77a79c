"""Lightning's ``MLFlowLogger``, built here so that Lightning objects live in this adapter only.

The tracking URI and the run to join are decided by the MLflow adapter
(:func:`fairltr.tracking.runs.config.logger_target`); a workflow passes them in, so this module imports
neither :mod:`fairltr.tracking` nor MLflow itself (docs/architecture.md).
"""

from __future__ import annotations

from typing import Any

__all__ = ["mlflow_logger"]


def mlflow_logger(experiment: str, run_name: str | None = None, *, tracking_uri: str,
                  run_id: str | None = None, **kwargs: Any):
    """A Lightning ``MLFlowLogger`` on ``tracking_uri``, logging into run ``run_id`` when given
    (the job's own run) or into a new run of ``experiment``. Extra keyword arguments go to
    ``MLFlowLogger`` (e.g. ``tags``, ``log_model``)."""
    from lightning.pytorch.loggers import MLFlowLogger

    if run_id:
        kwargs.setdefault("run_id", run_id)
    return MLFlowLogger(experiment_name=experiment, run_name=run_name, tracking_uri=tracking_uri, **kwargs)
