"""Log a trained DELTR model to MLflow: params, the training and test data as MLflow datasets,
the metrics (fairness first, counts as a table), per-iteration history, figures, the HTML
fairness report and the registrable pyfunc.

What the MLflow UI shows a person: the run's description names the fairness metrics and their
values; the metric list starts with :data:`~fairltr.tracking.evaluation.report.HEADLINE_METRICS`, then the
other fairness metrics, then relevance (no ``*_n_queries`` counts: they are the artifact
``metric_counts.json``); the logged model carries the final training objective.
"""

from __future__ import annotations

import hashlib
import math
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

from fairltr.plugins.rankers import Ranker
from fairltr.rankers import declaration_of
from fairltr.tracking.evaluation.result_metrics import log_result_metrics

__all__ = ["frame_fingerprint", "file_fingerprint", "run_params", "log_history", "log_metrics_finite",
           "log_deltr_run", "log_ranker_into_run", "log_dataset", "dataset_of",
           "metrics_description", "version_description", "DATASET_DIGEST_CHARS"]

DATASET_DIGEST_CHARS = 32  # MLflow's SQL stores keep a dataset digest in 36 characters


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
    model: Ranker, train_df: pd.DataFrame | None = None, data_paths: Mapping[str, str | Path] | None = None
) -> dict[str, Any]:
    """Everything that identifies a training run's settings: the constructor arguments, the
    values of the fairness loss's declared hyper-parameters (registry), features, data sizes and
    the data files' paths. The data's identity (sha256) is recorded on the run's datasets
    (:func:`log_dataset`), not as params."""
    from fairltr.losses.plugins import get_loss

    params: dict[str, Any] = dict(model.effective_params())
    if model.fairness_loss is not None:  # LambdaMART has no fairness loss
        loss = get_loss(model.fairness_loss)
        for hp in loss.params:
            params[hp.name] = getattr(model, hp.name, hp.default)
            params[f"{hp.name}_range"] = f"[{hp.low:g}, {hp.high:g}]{' log' if hp.log else ''}"
    groups = tuple(getattr(model.columns_, "groups", ()) or ())
    if groups:  # every attribute the run is audited on (training reads the first)
        params["group_columns"] = ",".join(groups)
        if train_df is not None and groups[0] in train_df.columns:
            from fairltr.data import category_codes

            reference = model._reference() if hasattr(model, "_reference") else None
            params["reference_category"] = str(category_codes(train_df[groups[0]], reference)[1][0])
    params["features"] = ",".join(model.feature_names_)
    params["n_features"] = len(model.feature_names_)
    params["query_column"] = model.query_
    params["judgment_column"] = model.judgment_
    params["n_iter"] = model.n_iter_
    if train_df is not None:
        params["train_rows"] = len(train_df)
        if model.query_ in train_df.columns:
            params["train_queries"] = int(train_df[model.query_].nunique())
    for role, path in (data_paths or {}).items():
        params[f"{role}_path"] = str(path)
    return params


def dataset_of(frame: pd.DataFrame, *, role: str, path: str | Path | None = None, sample: bool = False):
    """``frame`` as an MLflow dataset: named by its file (``train.csv``) or by ``role``, sourced
    from ``path`` when given, digest = the first :data:`DATASET_DIGEST_CHARS` hex characters of
    :func:`frame_fingerprint`. ``sample``: the frame is the first rows of the file only."""
    import mlflow.data

    name = Path(path).name if path is not None else role
    if sample:
        name += f" (first {len(frame)} rows)"
    kw: dict[str, Any] = {"source": str(Path(path).resolve())} if path is not None else {}
    return mlflow.data.from_pandas(frame, name=name, digest=frame_fingerprint(frame)[:DATASET_DIGEST_CHARS], **kw)


def log_dataset(frame: pd.DataFrame, *, role: str, context: str, path: str | Path | None = None,
                sample: bool = False):
    """Log ``frame`` as an input of the active run (``mlflow.log_input``, context ``context``:
    training, testing, evaluation) with input tags ``fairltr.sha256`` (:func:`frame_fingerprint`,
    in full) and ``fairltr.file_sha256`` (the file's bytes) when ``path`` is a file. Returns the
    dataset. A racing process that created the same dataset first is tolerated
    (:func:`fairltr.tracking.runs.racing_writes.log_input`)."""
    from fairltr.tracking.runs.racing_writes import log_input

    dataset = dataset_of(frame, role=role, path=path, sample=sample)
    tags = {"fairltr.sha256": frame_fingerprint(frame), "fairltr.role": role}
    if path is not None and Path(path).is_file():
        tags["fairltr.file_sha256"] = file_fingerprint(path)
    if sample:
        tags["fairltr.sample"] = f"first {len(frame)} rows of the file"
    log_input(dataset, context=context, tags=tags)
    return dataset


def log_history(history: list[Mapping[str, float]], run_id: str, prefix: str = "train_",
                model_id: str | None = None) -> int:
    """Log ``history`` (dicts with ``iteration`` and terms) as metrics ``<prefix><term>`` with
    step = iteration, in one ``log_batch`` call (MLflow's client splits it at its limits).
    ``model_id``: the entries of the last iteration are linked to that logged model, so that
    the model carries the final objective. Returns the number of values logged (NaN skipped)."""
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    now = int(time.time() * 1000)
    last = max((int(rec["iteration"]) for rec in history), default=None)
    entities = [
        Metric(f"{prefix}{key}", float(value), now, int(rec["iteration"]),
               model_id=model_id if int(rec["iteration"]) == last else None)
        for rec in history for key, value in rec.items()
        if key != "iteration" and isinstance(value, (int, float)) and math.isfinite(value)
    ]
    if entities:
        MlflowClient().log_batch(run_id, metrics=entities)
    return len(entities)


def log_metrics_finite(metrics: Mapping[str, float], run_id: str, step: int = 0) -> dict[str, float]:
    """Log the finite entries of ``metrics`` (NaN = undefined: skipped) in one batch."""
    from fairltr.tracking.runs.life_cycle import log_metrics

    return log_metrics(run_id, metrics, step)


def metrics_description(metrics: Mapping[str, float], *, split: str | None = None, lead: str | None = None,
                        report: str | None = "fairness_report.html", binary: Any = None, audit: Any = None,
                        threshold: float = 0.8, confidence: bool = False) -> str:
    """A run description (Markdown, shown at the top of the MLflow run page): the constant-model
    warning when the scores all tie (:func:`fairltr.gates.constant_model_warning`), the fairness
    metrics with their values, intervals and directions, then the headline relevance metrics, the
    four-fifths verdict of the audit (``audit``: an AuditResult; the worst category named) and the
    exposure headline (``binary``: which categories it compares, a BinaryView)."""
    from fairltr.metrics import direction_label, metric_info
    from fairltr.tracking.evaluation.report import HEADLINE_METRICS, exposure_headline, ordered_metric_keys

    def kind(key: str) -> str:
        try:
            return metric_info(key).kind
        except KeyError:
            return "other"

    keys = ordered_metric_keys([k for k in metrics if kind(k) in ("fairness", "relevance")
                                and not k.endswith(("_n_queries", "_ci_low", "_ci_high"))])
    fair = [k for k in keys if kind(k) == "fairness" and (k in HEADLINE_METRICS or "/" not in k)][:5]
    rel = [k for k in keys if kind(k) == "relevance" and k in HEADLINE_METRICS]
    where = f" ({split} split)" if split else ""
    lines = [lead] if lead else []
    from fairltr.gates import constant_model_warning

    if (warning := constant_model_warning(metrics)) is not None:  # the line the commands print
        lines.append(warning.replace("Warning:", "**Warning:**", 1))

    def shown(k: str) -> str:
        lo, hi = metrics.get(f"{k}_ci_low"), metrics.get(f"{k}_ci_high")
        iv = f" [{lo:.4g}, {hi:.4g}]" if _finite(lo) and _finite(hi) else ""
        return f"`{k}` {metrics[k]:.4g}{iv}"
    if fair:
        lines.append(f"**Fairness metrics{where}:** " + " · ".join(f"{shown(k)} ({direction_label(k)})" for k in fair))
    if rel:
        lines.append(f"**Relevance{where}:** " + " · ".join(shown(k) for k in rel))
    if _finite(metrics.get("ci_level")):
        lines.append(f"Intervals: {float(metrics['ci_level']):.0%} {metrics.get('ci_method', 'percentile')} bootstrap, "
                     f"{metrics.get('ci_n_boot')} resamples of {metrics.get('ci_unit')}, seed {metrics.get('ci_seed')}.")
    verdict = four_fifths_line(metrics, audit, threshold=threshold, confidence=confidence)
    if verdict:
        lines.append(verdict)
    headline = exposure_headline(metrics, binary=binary)
    if headline:
        lines.append(headline)
    if report:
        lines.append(f"Full table, figures and query counts: artifact `{report}`.")
    return "\n\n".join(lines)


def four_fifths_line(metrics: Mapping[str, float], audit: Any, *, threshold: float = 0.8,
                     confidence: bool = False) -> str | None:
    """``**Four-fifths rule (k = 10): FAIL.** Worst category race = Native American: impact ratio
    0.44 [0.30, 0.51] (>= 0.8 needed, on the interval's low end).``; None without an audit."""
    from fairltr.metrics.compare import holds
    from fairltr.metrics.verdicts import worst_category

    if audit is None:
        return None
    k = next((int(key.split("_at_")[1]) for key in audit.metrics if key.startswith("impact_ratio_at_")
              and "." not in key and not key.endswith(("_ci_low", "_ci_high"))), None)
    key = f"impact_ratio_at_{k}"
    value = metrics.get(key, audit.metrics.get(key))
    worst = worst_category(audit.table)
    if k is None or not _finite(value) or worst is None:
        return None
    lo, hi = metrics.get(f"{key}_ci_low"), metrics.get(f"{key}_ci_high")
    read = lo if confidence and _finite(lo) else value
    ok = holds(">=", float(read), threshold)
    iv = f" [{worst['ci_low']:.3g}, {worst['ci_high']:.3g}]" if _finite(worst.get("ci_low")) and \
        _finite(worst.get("ci_high")) else ""
    where = "on the interval's low end" if confidence and _finite(lo) else "point value"
    return (f"**Four-fifths rule (k = {k}): {'PASS' if ok else 'FAIL'}** ({key} {float(value):.3g}"
            + (f" [{float(lo):.3g}, {float(hi):.3g}]" if _finite(lo) and _finite(hi) else "")
            + f", >= {threshold:g} needed, {where}). Worst category {worst['attribute']} = {worst['category']}: "
            f"impact ratio {worst['value']:.3g}{iv}.")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _figures(model: Ranker, frame: pd.DataFrame, split: str) -> dict[str, bytes]:
    from fairltr.tracking.evaluation.plots import exposure_by_position, figure_to_png, training_curve

    figs: dict[str, bytes] = {}
    group = model.columns_.group
    if group in frame.columns and model.query_ in frame.columns:
        figs["exposure_by_position.png"] = figure_to_png(exposure_by_position(
            frame, model.predict(frame), query=model.query_, group=group))
    declared = declaration_of(model)
    if model.history and declared.curve_caption is not None:
        figs["training_curve.png"] = figure_to_png(training_curve(model.history, gamma=declared.weight_of(model)))
    return figs


def _model_words(model: Ranker, title: str | None) -> str:
    """``DELTR, gamma=1000, exposure_hinge`` (``PLRank, lambda=10, squared disparity, 32 samples``)
    without what ``title`` already says: the model's own :meth:`~fairltr.plugins.Ranker.describe`."""
    return model.describe(title)


def log_deltr_run(
    model: Ranker,
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
    workflows use :func:`fairltr.tracking.runs.life_cycle.job_run` + :func:`log_ranker_into_run`).

    Logs into the active run when it holds no model yet, else into a nested run; inside
    ``mlflow run`` (``MLFLOW_RUN_ID``) the first model logs into that run, which is left active so
    that later models of the same script nest under it; otherwise a new run in ``experiment``.
    Logged: see :func:`log_ranker_into_run`.
    """
    import mlflow

    from fairltr.tracking.runs.config import configure
    from fairltr.tracking.runs.life_cycle import job_run

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


def log_ranker_into_run(run_id: str, model: Ranker, *, train_df: pd.DataFrame, test_df: pd.DataFrame | None = None,
                        test_metrics: Mapping[str, float] | None = None, params: Mapping[str, Any] | None = None,
                        data_paths: Mapping[str, str | Path] | None = None, register: str | None = None,
                        title: str | None = None, tags: Mapping[str, str] | None = None,
                        rename: bool = False, train_sample: bool = False, serve_rerank: str | None = None,
                        test_audits: Mapping[int, Any] | None = None, audit_k: int | None = None,
                        serve_overrides: str | None = None, decision_log: str | None = None,
                        serve_sample: bool = False):
    """Log a fitted ranker into the ACTIVE run ``run_id``, in the order a reader needs it:

    * params (:func:`run_params` + ``params``); the training (and test) table as MLflow datasets
      (:func:`log_dataset`, contexts ``training`` / ``testing``; ``train_sample``: ``train_df``
      is the first rows of a streamed file);
    * the finite ``test_metrics`` (:func:`log_result_metrics`: fairness first, counts in
      ``metric_counts.json``) and a run description naming the fairness metrics (unless the run
      has one);
    * the artifacts ``exposure_by_position.png`` (on ``test_df`` if given, else ``train_df``),
      ``training_curve.png`` and ``fairness_report.html``, uploaded in one call;
    * the pyfunc model ``model``, registered as a new version of ``register`` when given (tags
      ``fairltr.model_uri`` and ``fairltr.registered_version`` on the run; a one-line version
      description with the test metrics); interrupted by Ctrl-C once registered, the version is
      deleted again (:func:`~fairltr.tracking.models.digests.withdraw_registration`);
    * then the training history as ``train_total`` / ``train_listnet`` / ``train_exposure`` with
      step = iteration, the last iteration linked to the logged model (which therefore carries
      the final objective, not iteration 0's).

    ``rename`` sets the run's name to ``title``; ``serve_rerank`` is the serving policy recorded with
    the model (:mod:`fairltr.fair.policy`; param ``serve_rerank`` and a line of the version
    description), ``serve_overrides`` the request params allowed to change it and ``decision_log``
    where the served model logs its decisions (params of the same names; recorded in the model);
    ``serve_sample`` makes a PLRank pyfunc serve sampled rankings (param ``serve_sample``). ``test_audits`` (``{k: AuditResult}`` of the evaluated table, SPEC 3b) adds
    ``audit_table.csv``, ``impact_ratios.png``, the per-category table and the intervals of the
    report, written as the ``fair_ranking`` evaluator writes them (at cut-off ``audit_k``).
    Returns MLflow's ``ModelInfo``."""
    import mlflow

    client = mlflow.MlflowClient()
    paths = dict(data_paths or {})
    all_params = _log_inputs(run_id, model, train_df, test_df, paths, params=params, title=title, tags=tags,
                             rename=rename, train_sample=train_sample, serve_rerank=serve_rerank,
                             serving={"serve_overrides": serve_overrides, "decision_log": decision_log,
                                      "serve_sample": "true" if serve_sample else None})
    split = "test" if test_df is not None else "train"
    heading = _heading(model, title)
    logged = _log_results(run_id, model, test_df if test_df is not None else train_df, train_df, split,
                          heading=heading, data_name=Path(paths[split]).name if split in paths else f"{split} table",
                          test_metrics=test_metrics, all_params=all_params, audits=test_audits or {},
                          audit_k=audit_k)
    try:
        info = _log_model(run_id, model, _input_example(model, train_df), register=register,
                          serving={"serve_rerank": serve_rerank, "serve_overrides": serve_overrides,
                                   "decision_log": decision_log, "serve_sample": serve_sample})
        if register:
            _record_version(client, register, info, version_description(
                heading, model, logged, split, serve_rerank=serve_rerank, serve_overrides=serve_overrides))
    except BaseException as exc:
        _withdraw_if_interrupted(exc, register, run_id)
        raise
    return info


def _withdraw_if_interrupted(exc: BaseException, register: str | None, run_id: str) -> None:
    """After Ctrl-C (``exc`` caused by an interrupt) the KILLED run ``run_id`` leaves no version of
    ``register`` behind: delete the one it registered; nothing otherwise."""
    from fairltr.interrupts import caused_by_interrupt
    from fairltr.tracking.models.digests import withdraw_registration

    if register and caused_by_interrupt(exc):
        withdraw_registration(register, run_id)


def _heading(model: Ranker, title: str | None) -> str:
    """The report's and the version description's heading: ``title``, else the ranker and its weight."""
    return title or declaration_of(model).heading(model)


def _input_example(model: Ranker, train_df: pd.DataFrame) -> pd.DataFrame:
    """The model's input example: the first 5 rows of the query, feature and group columns it reads
    (the group column types the signature's optional input)."""
    keep = [c for c in dict.fromkeys([model.query_, *model.feature_names_, model.columns_.group])
            if c is not None and c in train_df.columns]
    return train_df[keep].head(5)


def _log_model(run_id: str, model: Ranker, example: pd.DataFrame, *, register: str | None,
               serving: Mapping[str, Any]) -> Any:
    """Log the pyfunc model (registered as ``register`` when given; ``serving``: the
    :func:`log_ranker_model` serving options), then the training history linked to it, and tag
    the run with its URI; returns MLflow's ``ModelInfo``."""
    import mlflow

    from fairltr.tracking.models.pyfunc import log_ranker_model

    info = log_ranker_model(model, name="model", input_example=example, register=register, **serving)
    log_history(model.history, run_id, model_id=info.model_id)
    mlflow.set_tag("fairltr.model_uri", info.model_uri)
    return info


def _record_version(client: Any, register: str, info: Any, description: str) -> None:
    """Tag the run with the registered model and version ``info`` made, and describe that version."""
    import mlflow

    version = str(info.registered_model_version)
    mlflow.set_tags({"fairltr.registered_model": register, "fairltr.registered_version": version})
    client.update_model_version(register, version, description=description)


def _log_inputs(run_id: str, model: Ranker, train_df: pd.DataFrame, test_df: pd.DataFrame | None,
                paths: Mapping[str, str | Path], *, params: Mapping[str, Any] | None, title: str | None,
                tags: Mapping[str, str] | None, rename: bool, train_sample: bool, serve_rerank: str | None,
                serving: Mapping[str, str | None] | None = None) -> dict[str, Any]:
    """The params (:func:`run_params` + ``params`` + ``serve_rerank``), the run's tags and the
    training (and test) table as datasets; returns the params."""
    import mlflow

    from fairltr.tracking.runs.life_cycle import log_params

    all_params = run_params(model, train_df, paths)
    all_params.update(params or {})
    if serve_rerank:
        all_params["serve_rerank"] = serve_rerank
    from fairltr.redaction import redact_uri

    all_params.update({k: redact_uri(v) for k, v in (serving or {}).items() if v})
    log_params(run_id, all_params)
    run_tags = {"fairltr.model": declaration_of(model).label}
    if model.fairness_loss is not None:
        run_tags["fairltr.fairness_loss"] = model.fairness_loss
    if title and rename:
        run_tags["mlflow.runName"] = title
    run_tags.update(tags or {})
    mlflow.set_tags(run_tags)
    log_dataset(train_df, role="train", context="training", path=paths.get("train"), sample=train_sample)
    if test_df is not None:
        log_dataset(test_df, role="test", context="testing", path=paths.get("test"))
    return all_params


def _log_results(run_id: str, model: Ranker, frame: pd.DataFrame, train_df: pd.DataFrame, split: str, *,
                 heading: str, data_name: str, test_metrics: Mapping[str, float] | None,
                 all_params: Mapping[str, Any], audits: Mapping[int, Any] | None = None,
                 audit_k: int | None = None) -> dict[str, float]:
    """The finite metrics (:func:`log_result_metrics`), the run description (unless the run has
    one), then the figures on ``frame``, the audit's files (``audits``), ``metric_counts.json``,
    ``fairness_report.html`` and the training profile of ``fairltr monitor``, uploaded in one
    call; returns the logged metrics."""
    import mlflow

    from fairltr.tracking.evaluation.audit_artifacts import POSITION_CAPTION, binary_of, write_audit_artifacts
    from fairltr.tracking.evaluation.report import fairness_report_html, split_counts
    from fairltr.tracking.job_logging.monitoring import log_training_profile

    figs = _figures(model, frame, split)
    with tempfile.TemporaryDirectory(prefix="fairltr-run-") as tmp:
        logged = log_result_metrics(run_id, test_metrics or {}, tmp)
        audit, chart = write_audit_artifacts(Path(tmp), audits or {}, audit_k)
        binary = binary_of(frame, model.columns_.group)
        if logged and "mlflow.note.content" not in mlflow.MlflowClient().get_run(run_id).data.tags:
            mlflow.set_tag("mlflow.note.content", metrics_description({**(test_metrics or {}), **logged}, split=split,
                                                                      binary=binary, audit=audit))
        for name, png in figs.items():
            (Path(tmp) / name).write_bytes(png)
        captions = {"exposure_by_position.png": f"{POSITION_CAPTION}, {split} split",
                    "training_curve.png": declaration_of(model).curve_caption or "Training objective per iteration"}
        report = fairness_report_html(
            heading, subtitle=f"{_model_words(model, heading)} · run {run_id} · metrics on {data_name}",
            metrics=logged, counts=split_counts(test_metrics or {})[1], params=all_params,
            figures={**chart, **{captions.get(k, k): v for k, v in figs.items()}},
            notes=None if logged else "No test metrics were given for this run.",
            audit=None if audit is None else audit.table, interval=None if audit is None else audit.interval,
            binary=binary, audit_k=audit_k if audit is not None else None,
        )
        (Path(tmp) / "fairness_report.html").write_text(report, encoding="utf-8")
        log_training_profile(train_df, model.columns_.groups, model.feature_names_, Path(tmp))  # fairltr monitor's baseline
        mlflow.log_artifacts(tmp)  # one upload call for the figures, the counts and the report
    return logged


def version_description(title: str, model: Ranker, metrics: Mapping[str, float], split: str,
                        serve_rerank: str | None = None, serve_overrides: str | None = None) -> str:
    """One line for a newly registered version: what it is, its fairness on ``split`` and the
    serving policy it applies (when one was recorded)."""
    from fairltr.tracking.evaluation.report import HEADLINE_METRICS

    shown = [k for k in HEADLINE_METRICS if k in metrics][:4]
    values = ", ".join(f"{k} {metrics[k]:.3g}" for k in shown)
    return (f"Registered from run '{title}' ({_model_words(model, title)})"
            + (f"; {split} split: {values}" if values else "")
            + (f". Served with post-processing {serve_rerank} (request overrides allowed: {serve_overrides or 'none'})"
               if serve_rerank and serve_rerank != "none" else "")
            + ". No promotion decision yet.")
