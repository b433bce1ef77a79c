"""Log a trained DELTR model to MLflow: params, per-iteration history, SPEC metrics, figures,
the HTML fairness report and the registrable pyfunc."""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from fairltr.deltr import DELTR

__all__ = ["frame_fingerprint", "file_fingerprint", "run_params", "log_history", "log_metrics_finite",
           "log_deltr_run", "log_ranker_into_run"]


def frame_fingerprint(df: pd.DataFrame) -> str:
    """sha256 over the column names and pandas' per-row hashes (order-sensitive, index-free)."""
    h = hashlib.sha256()
    h.update("\x1f".join(map(str, df.columns)).encode("utf-8"))
    h.update(pd.util.hash_pandas_object(df, index=False).to_numpy().tobytes())
    return h.hexdigest()


def file_fingerprint(path: str | Path, chunk: int = 1 << 20) -> str:
    """sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(chunk):
            h.update(block)
    return h.hexdigest()


def run_params(
    model: DELTR, train_df: pd.DataFrame | None = None, data_paths: Mapping[str, str | Path] | None = None
) -> dict[str, Any]:
    """Everything that identifies a training run: the constructor arguments, the values of the
    fairness loss's declared hyper-parameters (registry), features, data sizes and fingerprints."""
    from fairltr.losses.registry import get_loss

    params: dict[str, Any] = dict(model.get_params())
    loss = get_loss(model.fairness_loss)
    for hp in loss.params:
        params[hp.name] = getattr(model, hp.name, hp.default)
        params[f"{hp.name}_range"] = f"[{hp.low:g}, {hp.high:g}]{' log' if hp.log else ''}"
    params["features"] = ",".join(model.feature_names_)
    params["n_features"] = len(model.feature_names_)
    params["query_column"] = model.query_
    params["judgment_column"] = model.judgment_
    params["n_iter"] = model.n_iter_
    if train_df is not None:
        params["train_rows"] = len(train_df)
        if model.query_ in train_df.columns:
            params["train_queries"] = int(train_df[model.query_].nunique())
        params["train_sha256"] = frame_fingerprint(train_df)
    for role, path in (data_paths or {}).items():
        params[f"{role}_path"] = str(path)
        if Path(path).is_file():
            params[f"{role}_file_sha256"] = file_fingerprint(path)
    return params


def log_history(history: list[Mapping[str, float]], run_id: str, prefix: str = "train_") -> int:
    """Log ``history`` (dicts with ``iteration`` and terms) as metrics ``<prefix><term>`` with
    step = iteration, in as few ``log_batch`` calls as MLflow's 1,000-metric limit allows."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    entities = [
        Metric(f"{prefix}{key}", float(value), now, int(rec["iteration"]))
        for rec in history for key, value in rec.items()
        if key != "iteration" and isinstance(value, (int, float)) and math.isfinite(value)
    ]
    client = MlflowClient()
    for start in range(0, len(entities), 1000):
        client.log_batch(run_id, metrics=entities[start:start + 1000])
    return len(entities)


def log_metrics_finite(metrics: Mapping[str, float], run_id: str, step: int = 0) -> dict[str, float]:
    """Log the finite entries of ``metrics`` (NaN = undefined: skipped) in one batch."""
    from fairltr.tracking.runs import log_metrics

    return log_metrics(run_id, metrics, step)


def _figures(model: DELTR, frame: pd.DataFrame, title: str) -> dict[str, bytes]:
    from fairltr.tracking.plots import exposure_by_position, training_curve
    from fairltr.tracking.report import figure_to_png

    figs: dict[str, bytes] = {}
    if model.protected in frame.columns and model.query_ in frame.columns:
        figs["exposure_by_position.png"] = figure_to_png(exposure_by_position(
            frame, model.predict(frame), query=model.query_, group=model.protected,
            title=f"Protected vs non-protected by rank position ({title})"))
    if model.history:
        figs["training_curve.png"] = figure_to_png(training_curve(model.history))
    return figs


def log_deltr_run(
    model: DELTR,
    *,
    train_df: pd.DataFrame,
    test_df: pd.DataFrame | None = None,
    test_metrics: Mapping[str, float] | None = None,
    params: Mapping[str, Any] | None = None,
    data_paths: Mapping[str, str | Path] | None = None,
    register: str | None = None,
    run_name: str | None = None,
    experiment: str = "fairltr",
    tags: Mapping[str, str] | None = None,
) -> str:
    """Log a fitted DELTR model as one MLflow run and return its run id (the Python API; the
    workflows use :func:`fairltr.tracking.runs.job_run` + :func:`log_ranker_into_run`).

    Logs into the active run when it holds no model yet, else into a nested run; inside
    ``mlflow run`` (``MLFLOW_RUN_ID``) the first model logs into that run, which is left active so
    that later models of the same script nest under it; otherwise a new run in ``experiment``.
    Logged: see :func:`log_ranker_into_run`.
    """
    import mlflow

    from fairltr.tracking.config import configure
    from fairltr.tracking.runs import job_run

    configure(experiment)
    if mlflow.active_run() is None and os.environ.get("MLFLOW_RUN_ID"):
        mlflow.start_run()  # attach to the run `mlflow run` created and keep it for later models
    active = mlflow.active_run()
    reuse = active is not None and "fairltr.model" not in mlflow.MlflowClient().get_run(active.info.run_id).data.tags
    with job_run(experiment, run_name, reuse_active=reuse) as run:
        log_ranker_into_run(run.info.run_id, model, train_df=train_df, test_df=test_df, test_metrics=test_metrics,
                            params=params, data_paths=data_paths, register=register, title=run_name, tags=tags,
                            rename=reuse or run.info.run_name != run_name)
    return run.info.run_id


def log_ranker_into_run(run_id: str, model: DELTR, *, train_df: pd.DataFrame, test_df: pd.DataFrame | None = None,
                        test_metrics: Mapping[str, float] | None = None, params: Mapping[str, Any] | None = None,
                        data_paths: Mapping[str, str | Path] | None = None, register: str | None = None,
                        title: str | None = None, tags: Mapping[str, str] | None = None,
                        rename: bool = False):
    """Log a fitted ranker into the ACTIVE run ``run_id``: params (:func:`run_params` + ``params``),
    the training history as ``train_total``/``train_listnet``/``train_exposure`` with step =
    iteration (one batch), the finite ``test_metrics`` under their metric names, the artifacts
    ``exposure_by_position.png`` (on ``test_df`` if given, else ``train_df``), ``training_curve.png``,
    ``fairness_report.html``, and the pyfunc model ``model``, registered as a new version of
    ``register`` when given (tags ``fairltr.model_uri`` and ``fairltr.registered_version`` on the
    run). ``rename`` sets the run's name to ``title``. Returns MLflow's ``ModelInfo``."""
    import mlflow

    from fairltr.tracking.pyfunc import log_ranker_model
    from fairltr.tracking.report import fairness_report_html
    from fairltr.tracking.runs import log_metrics, log_params

    all_params = run_params(model, train_df, data_paths)
    all_params.update(params or {})
    log_params(run_id, all_params)
    run_tags = {"fairltr.model": "DELTR", "fairltr.fairness_loss": model.fairness_loss}
    if title and rename:
        run_tags["mlflow.runName"] = title
    run_tags.update(tags or {})
    mlflow.set_tags(run_tags)
    log_history(model.history, run_id)
    logged = log_metrics(run_id, test_metrics or {})
    frame = test_df if test_df is not None else train_df
    split = "test" if test_df is not None else "train"
    figs = _figures(model, frame, split)
    with tempfile.TemporaryDirectory(prefix="fairltr-run-") as tmp:
        for name, png in figs.items():
            (Path(tmp) / name).write_bytes(png)
        captions = {"exposure_by_position.png": f"Share of protected vs non-protected items by rank bucket, {split} split (DELTR Fig. 2)",
                    "training_curve.png": "Training objective per iteration"}
        report = fairness_report_html(
            f"{title or 'DELTR'} (gamma={model.gamma:g}{', colorblind' if model.colorblind else ''}; run {run_id})",
            metrics=logged, params=all_params,
            figures={captions.get(k, k): v for k, v in figs.items()},
            notes=None if logged else "No test metrics were given for this run.",
        )
        (Path(tmp) / "fairness_report.html").write_text(report, encoding="utf-8")
        mlflow.log_artifacts(tmp)  # one upload call for the figures and the report
    keep = [c for c in [model.query_, *model.feature_names_] if c in train_df.columns]
    info = log_ranker_model(model, name="model", input_example=train_df[keep].head(5), register=register)
    mlflow.set_tag("fairltr.model_uri", info.model_uri)
    if register:
        mlflow.set_tags({"fairltr.registered_model": register,
                         "fairltr.registered_version": str(info.registered_model_version)})
    return info
