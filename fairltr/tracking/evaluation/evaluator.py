"""The ``fair_ranking`` MLflow evaluator plugin (entry point ``mlflow.model_evaluator``).

Usage (MLflow 3.17 needs a ``model_type`` or ``extra_metrics``; use ``"fair_ranking"``)::

    mlflow.models.evaluate("models:/ranker@champion", test_df, model_type="fair_ranking",
                           evaluators=["fair_ranking"],
                           evaluator_config={"fair_ranking": {"query": "query_id",
                                                              "group": "protected",
                                                              "judgment": "judgment"}})

Metrics are computed by :func:`fairltr.metrics.evaluate_ranking` (one implementation per
formula); undefined (NaN) averages are not logged nor returned, so a gate on them fails closed.
The result's ``metrics`` (which MLflow also logs on the evaluated logged model) and the run's
metric list hold the values, fairness first; the ``<metric>_n_queries`` counts are the table
``metric_counts.json`` (the result's ``metric_counts`` artifact; :func:`metrics_with_counts`
merges them back).
Config keys ``empty_queries`` (``"skip"``, the default, or ``"zero"``: trec_eval's convention for
a query without a relevant item) and ``linear_ndcg`` (add ``ndcg_linear_at_<k>``, linear gains)
choose the relevance conventions (:mod:`fairltr.metrics.conventions`); ``empty_queries`` is
logged as a param and stated in the report.
Artifacts: ``exposure_by_position.png`` (DELTR Figure 2), ``per_query_relevance_exposure.png``
(Figure 1 drawn per query), ``per_query_metrics.csv``, ``metric_counts.json`` and
``fairness_report.html`` (titled by the config's ``title``, else by its ``model_uri`` and
``data`` keys).

MLflow's ``extra_metrics`` and ``custom_artifacts`` are honoured
(:mod:`fairltr.tracking.evaluation.extras`): their metrics join the result and the run, their
artifacts the result and the run's artifacts.

It answers ``can_evaluate`` with yes only when asked: ``model_type == "fair_ranking"`` or an
evaluator config naming one of ``query`` / ``group`` / ``judgment``; so evaluations of
regressors and classifiers never run it.
"""

from __future__ import annotations

import json
import math
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np
import pandas as pd

from mlflow.models.evaluation.base import EvaluationResult, ModelEvaluator

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError, DataError

__all__ = ["FairRankingEvaluator", "MODEL_TYPE", "CONFIG_KEYS", "scores_from_output", "evaluate_frame", "report_title",
           "metrics_with_counts", "COUNTS_KEY", "config_columns", "model_scores", "audit_frame", "AUDIT_ARTIFACT"]

MODEL_TYPE = "fair_ranking"
COUNTS_KEY = "metric_counts"  # the result's artifact holding the number of queries behind each metric
CONFIG_KEYS = ("query", "group", "judgment")
_DEFAULTS = {"query": DEFAULT_COLUMNS.query, "group": DEFAULT_COLUMNS.group, "judgment": DEFAULT_COLUMNS.judgment}
from fairltr.tracking.evaluation.audit_artifacts import AUDIT_ARTIFACT  # noqa: E402  (re-exported)


def config_columns(config: Mapping[str, Any]):
    """The column contract of an evaluator config: ``group`` one column name or a list of
    attributes (``["race", "sex"]``: the audit covers each and their intersection)."""
    from fairltr.columns import RankingColumns

    q, g, j = (config.get(key, _DEFAULTS[key]) for key in CONFIG_KEYS)
    if isinstance(g, (list, tuple)):
        g = tuple(g) if len(g) > 1 else (g[0] if g else None)
    return RankingColumns(q, g, j)


def model_scores(model, df: pd.DataFrame, column: str = "score") -> np.ndarray:
    """A loaded pyfunc model's scores of ``df`` (its signature columns), one per row."""
    return scores_from_output(model.predict(signature_columns(model, df)), len(df), column)


def audit_frame(df: pd.DataFrame, scores: np.ndarray, config: Mapping[str, Any]):
    """SPEC 3b's audit of the config's ``audit`` settings (None without them or without a group):
    (metrics incl. ``_ci_low`` / ``_ci_high`` and the ``ci_*`` metadata, {k: AuditResult})."""
    from fairltr.metrics.audit_jobs import audit_cutoffs_in, audit_evaluation, audit_from_config

    audit = audit_from_config(config.get("audit"))
    columns = config_columns(config)
    if audit is None or not columns.groups:
        return None
    k = tuple(int(x) for x in config.get("k", (10,)))
    extra = [kk for kk in audit_cutoffs_in(str(x) for x in config.get("audit_metrics", ()))]
    required = True if config.get("audit_metrics") else None  # gates read the audit: never skipped
    from fairltr.metrics.conventions import conventions_from_config

    metrics, results = audit_evaluation(df, scores, columns=columns, k=k, audit=audit, extra_ks=extra, required=required,
                                        conventions=conventions_from_config(config))
    return (metrics, results) if results else None


def scores_from_output(output: Any, n_rows: int, column: str = "score") -> np.ndarray:
    """Scores from a model's output: a DataFrame's ``column``, a Series, or a 1-D array."""
    if isinstance(output, pd.DataFrame):
        if column in output.columns:
            values = output[column]
        elif output.shape[1] == 1:
            values = output.iloc[:, 0]
        else:
            raise DataError(f"model output has columns {list(output.columns)}; expected a {column!r} column")
    else:
        values = output
    s = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(s) != n_rows:
        raise DataError(f"model returned {len(s)} scores for {n_rows} rows")
    return s


def evaluate_frame(
    df: pd.DataFrame, scores: np.ndarray, config: Mapping[str, Any]
) -> tuple[dict[str, float], pd.DataFrame]:
    """The metrics over queries (finite values only) and the per-query metric table, from one
    pass of the per-query metrics (:func:`fairltr.metrics.evaluate_with_table`)."""
    from fairltr.metrics import DEFAULT_K, evaluate_with_table

    columns = config_columns(config)
    q, g, j = columns.query, columns.group, columns.judgment
    missing = [c for c in (q, *columns.groups, j) if c not in df.columns]
    if missing:
        raise DataError(
            f"fair_ranking evaluator: column(s) {missing} not in the evaluation data; columns: {list(df.columns)} "
            f"(set evaluator_config={{'fair_ranking': {{'query': ..., 'group': ..., 'judgment': ...}}}})"
        )
    from fairltr.metrics.conventions import conventions_from_config

    k = tuple(int(x) for x in config.get("k", DEFAULT_K))
    metrics, table = evaluate_with_table(df, scores, columns=RankingColumns(query=q, group=g, judgment=j), k=k,
                                         exposure_k=config.get("exposure_k"),
                                         retrieval=bool(config.get("retrieval", False)),
                                         conventions=conventions_from_config(config))
    audited = audit_frame(df, scores, config)
    if audited is not None:  # the audit's figures and every headline metric's interval
        metrics = {**metrics, **{key: v for key, v in audited[0].items() if key not in metrics
                                 or key.endswith(("_ci_low", "_ci_high"))}}
    finite = {name: float(v) for name, v in metrics.items()
              if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)}
    if audited is not None:
        from fairltr.metrics.audit_jobs import interval_metadata

        finite = {k: v for k, v in finite.items() if not k.startswith("ci_")}
        table.attrs["audit"] = audited[1]
        table.attrs["interval"] = interval_metadata(audited[0])
    return finite, table


def signature_columns(model, df: pd.DataFrame, *, require_all: bool = True) -> pd.DataFrame:
    """``df`` cut to the model's input-signature columns (quiet, exact input for MLflow's schema
    check): all of them (``require_all``; else ``df`` unchanged), or those ``df`` has (optional
    inputs such as a retriever's ``lang``); each converted to its recorded type where that changes
    no value (:func:`fairltr.tracking.models.signature_types.conform_to_schema`: an integer column
    scored by a model whose signature says double, and the reverse)."""
    from fairltr.tracking.models.signature_types import conform_to_schema

    try:
        schema = model.metadata.get_input_schema()
        names = schema.input_names() if schema is not None and schema.has_input_names() else None
    except AttributeError:
        schema = names = None
    if not names:
        return df
    present = [n for n in names if n in df.columns]
    if require_all and len(present) < len(names):
        return conform_to_schema(df, schema)
    return conform_to_schema(df[present], schema)


def metrics_with_counts(result: EvaluationResult) -> dict[str, float]:
    """The evaluation's metrics with their ``<metric>_n_queries`` counts (which the
    ``metric_counts`` artifact of the result holds; they are not run metrics)."""
    out = {k: float(v) for k, v in result.metrics.items()}
    artifact = (result.artifacts or {}).get(COUNTS_KEY)
    content = getattr(artifact, "content", None) if artifact is not None else None
    for key, n in ((content or {}).get("n_queries") or {}).items():
        if isinstance(n, (int, float)) and not isinstance(n, bool):
            out[f"{key}_n_queries"] = float(n)
    return out


def report_title(config: Mapping[str, Any], n_rows: int, n_queries: int) -> tuple[str, str]:
    """(title, subtitle) of the evaluation report: ``config["title"]``, else "Evaluation of
    <model_uri> on <data>" from the config's ``model_uri`` and ``data`` (a file path) keys."""
    model = config.get("model_uri")
    data = config.get("data")
    data_name = Path(str(data)).name if data else None
    title = config.get("title") or (f"Evaluation of {model or 'the model'}" + (f" on {data_name}" if data_name else ""))
    bits = [f"model {model}" if model else "", f"data {data}" if data else "",
            f"{n_rows} rows, {n_queries} queries", "fair_ranking evaluator"]
    return str(title), " · ".join(b for b in bits if b)


def ranking_eval_df(df: pd.DataFrame, scores: np.ndarray, config: Mapping[str, Any]) -> pd.DataFrame:
    """The ``eval_df`` of the user's extra metrics and custom artifacts: ``prediction`` (the
    scores), ``target`` (the judgments), and the query and group columns under their names."""
    columns = config_columns(config)
    out = pd.DataFrame({"prediction": np.asarray(scores, dtype=np.float64),
                        "target": df[columns.judgment].to_numpy()})
    for c in (columns.query, *columns.groups):
        if c not in out.columns:
            out[c] = df[c].to_numpy()
    return out


@dataclass
class _Evaluation:
    """What one evaluation computed, for logging it into a run."""

    df: pd.DataFrame
    scores: np.ndarray
    metrics: dict[str, float]
    per_query: pd.DataFrame
    config: dict[str, Any]
    audits: dict
    interval: dict

    def main_audit(self):
        """The audit at the config's ``audit.k`` (10), else the first one computed."""
        main_k = int((self.config.get("audit") or {}).get("k", 10))
        return self.audits.get(main_k) or next(iter(self.audits.values()))


def _artifact_kinds() -> dict[str, Any]:
    from mlflow.models.evaluation.artifacts import (
        CsvEvaluationArtifact, ImageEvaluationArtifact, TextEvaluationArtifact,
    )

    return {".png": ImageEvaluationArtifact, ".csv": CsvEvaluationArtifact, ".html": TextEvaluationArtifact}


class FairRankingEvaluator(ModelEvaluator):
    """relevance (docs/spec.md §3) and group-exposure metrics of a ranker, with DELTR's plots."""

    @classmethod
    def can_evaluate(cls, *, model_type=None, evaluator_config=None, **kwargs) -> bool:
        if model_type == MODEL_TYPE:
            return True
        return isinstance(evaluator_config, Mapping) and any(key in evaluator_config for key in CONFIG_KEYS)

    def evaluate(
        self,
        *,
        model_type=None,
        dataset=None,
        run_id=None,
        evaluator_config=None,
        model=None,
        extra_metrics=None,
        custom_artifacts=None,
        predictions=None,
        **kwargs,
    ) -> EvaluationResult:
        """The metrics (with the user's ``extra_metrics``, :mod:`~fairltr.tracking.evaluation.extras`)
        and, in run ``run_id``, the artifacts (with the user's ``custom_artifacts``)."""
        from mlflow.models.evaluation.artifacts import JsonEvaluationArtifact

        from fairltr.tracking.evaluation.extras import extra_metric_values, unlogged_custom_artifacts
        from fairltr.tracking.evaluation.report import split_counts

        config = dict(evaluator_config or {})
        df = self._frame(dataset, config)
        scores = self._scores(model, dataset, df, predictions, config)
        metrics, per_query = evaluate_frame(df, scores, config)
        audits = per_query.attrs.pop("audit", None) or {}
        interval = per_query.attrs.pop("interval", None) or {}
        eval_df = ranking_eval_df(df, scores, config)
        metrics.update(extra_metric_values(extra_metrics, eval_df, df, split_counts(metrics)[0], config,
                                           evaluator=MODEL_TYPE))
        prefix = str(config.get("metric_prefix", ""))
        metrics = {f"{prefix}{k}": v for k, v in metrics.items()}
        values, counts = split_counts(metrics)
        if run_id is None:
            artifacts = unlogged_custom_artifacts(custom_artifacts, eval_df, values, evaluator=MODEL_TYPE)
            artifacts[COUNTS_KEY] = JsonEvaluationArtifact(uri="", content={"n_queries": counts})
        else:
            evaluation = _Evaluation(df, scores, metrics, per_query, config, audits, interval)
            artifacts = self._log_into_run(run_id, evaluation, eval_df, custom_artifacts)
        # the result's metrics are what MLflow logs as the run's metrics (and on the evaluated
        # logged model): the values only; the counts are the metric_counts artifact
        return EvaluationResult(metrics=values, artifacts=artifacts, run_id=run_id)

    def _log_into_run(self, run_id: str, ev: _Evaluation, eval_df: pd.DataFrame, custom_artifacts) -> dict[str, Any]:
        """Log the metrics (fairness first, counts as ``metric_counts.json``), the interval
        settings, the audit table, the figures, the report and the custom artifacts into
        ``run_id`` in one upload; returns the result's artifacts."""
        from mlflow import MlflowClient
        from mlflow.models.evaluation.artifacts import JsonEvaluationArtifact

        from fairltr.tracking.evaluation.extras import artifact_entry, write_custom_artifacts
        from fairltr.tracking.evaluation.report import split_counts
        from fairltr.tracking.evaluation.result_metrics import COUNTS_ARTIFACT, log_result_metrics

        client = MlflowClient()
        base = client.get_run(run_id).info.artifact_uri.rstrip("/")
        artifacts: dict[str, Any] = {}
        with tempfile.TemporaryDirectory(prefix="fairltr-eval-") as tmp:
            out = Path(tmp)
            log_result_metrics(run_id, ev.metrics, out)  # fairness first; the *_n_queries counts to a table
            from fairltr.metrics.conventions import conventions_from_config
            from fairltr.tracking.runs.life_cycle import log_params

            log_params(run_id, conventions_from_config(ev.config).metadata(), client=client)  # how empty queries count
            if ev.interval:  # how the intervals were made: params of the run (level, resamples, seed, unit)
                from fairltr.tracking.runs.life_cycle import log_params

                log_params(run_id, ev.interval, client=client)
            if ev.audits and not ev.config.get("log_artifacts", True):  # else written with the figures below
                from fairltr.metrics.audit_jobs import write_audit_table

                write_audit_table(ev.main_audit(), out / AUDIT_ARTIFACT)
            if ev.config.get("log_artifacts", True):
                paths = self._write_artifacts(out, ev.df, ev.scores, ev.metrics, ev.per_query, ev.config, ev.audits,
                                              ev.interval)
                artifacts.update({p.stem: _artifact_kinds()[p.suffix](uri=f"{base}/{p.name}") for p in paths
                                  if p.name != AUDIT_ARTIFACT})
            if ev.audits:
                artifacts["audit_table"] = artifact_entry(out / AUDIT_ARTIFACT, f"{base}/{AUDIT_ARTIFACT}")
            if (out / COUNTS_ARTIFACT).is_file():
                content = json.loads((out / COUNTS_ARTIFACT).read_text(encoding="utf-8"))
                artifacts[COUNTS_KEY] = JsonEvaluationArtifact(uri=f"{base}/{COUNTS_ARTIFACT}", content=content)
            custom = write_custom_artifacts(custom_artifacts, eval_df, split_counts(ev.metrics)[0], out,
                                            evaluator=MODEL_TYPE, taken=[*artifacts, COUNTS_KEY])
            artifacts.update({name: artifact_entry(path, f"{base}/{path.name}") for name, path in custom.items()})
            if any(out.iterdir()):
                client.log_artifacts(run_id, tmp)  # one upload call
        return artifacts

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _frame(dataset, config: Mapping[str, Any]) -> pd.DataFrame:
        """The evaluation table: features plus the judgment (taken from ``targets`` if needed)."""
        features = dataset.features_data
        if not isinstance(features, pd.DataFrame):
            raise ConfigError("the fair_ranking evaluator needs a pandas DataFrame with named columns")
        df = features.reset_index(drop=True)
        judgment = config.get("judgment", _DEFAULTS["judgment"])
        if judgment not in df.columns and dataset.labels_data is not None:
            df = df.assign(**{judgment: np.asarray(dataset.labels_data)})
        return df

    @staticmethod
    def _scores(model, dataset, df: pd.DataFrame, predictions, config: Mapping[str, Any]) -> np.ndarray:
        column = predictions or config.get("score", "score")
        if model is not None:
            return scores_from_output(model.predict(signature_columns(model, df)), len(df), column)
        if getattr(dataset, "predictions_data", None) is not None:
            return scores_from_output(dataset.predictions_data, len(df))
        if column in df.columns:
            return scores_from_output(df[column], len(df))
        raise ConfigError("fair_ranking evaluator: give a model, or data with a predictions/score column")

    @staticmethod
    def _write_artifacts(tmp: Path, df, scores, metrics, per_query, config, audits=None, interval=None) -> list[Path]:
        from fairltr.tracking.evaluation.audit_artifacts import POSITION_CAPTION, binary_of
        from fairltr.tracking.evaluation.plots import exposure_by_position, figure_to_png, relevance_fairness_scatter
        from fairltr.metrics.conventions import conventions_from_config
        from fairltr.tracking.evaluation.report import fairness_report_html

        columns = config_columns(config)
        q, g = columns.query, columns.group
        title, subtitle = report_title(config, len(df), df[q].nunique())
        threshold = float(config.get("audit_threshold", 0.8))  # the gate's (four_fifths: 0.8)
        confidence = bool(config.get("audit_confidence", False))  # verdicts on the interval's low end
        paths = []
        figures: dict[str, bytes] = {}
        if g is not None and g in df.columns:  # the binary figure: the reference category vs the others
            fig = exposure_by_position(df, scores, query=q, group=g, bucket=config.get("bucket"))
            png_exposure = figure_to_png(fig)
            (tmp / "exposure_by_position.png").write_bytes(png_exposure)
            paths.append(tmp / "exposure_by_position.png")
            figures[POSITION_CAPTION] = png_exposure
        relevance = next((c for c in ("kendall_tau", "ndcg_at_10") if c in per_query and per_query[c].notna().any()), None)
        if relevance is not None and "exposure_ratio" in per_query and per_query["exposure_ratio"].notna().any():
            fig = relevance_fairness_scatter(per_query, relevance=relevance, label=None,
                                             title="Per query: relevance vs exposure ratio")
            png = figure_to_png(fig)
            (tmp / "per_query_relevance_exposure.png").write_bytes(png)
            paths.append(tmp / "per_query_relevance_exposure.png")
            figures[f"Per query: {relevance} vs exposure ratio (DELTR Fig. 1 axes)"] = png
        per_query.to_csv(tmp / "per_query_metrics.csv", index=False)
        paths.append(tmp / "per_query_metrics.csv")
        audit = None
        if audits:  # the audit's files, as a tracked training run writes them
            from fairltr.tracking.evaluation.audit_artifacts import IMPACT_CHART, write_audit_artifacts

            audit, chart = write_audit_artifacts(tmp, audits, int((config.get("audit") or {}).get("k", 10)),
                                                 threshold=threshold, confidence=confidence)
            paths += [tmp / AUDIT_ARTIFACT, tmp / IMPACT_CHART]
            figures = {**chart, **figures}
        html = fairness_report_html(title, subtitle=subtitle, metrics=metrics, figures=figures,
                                    params={k: v if isinstance(v, (str, int, float)) else ", ".join(map(str, v))
                                            for k, v in config.items()
                                            if isinstance(v, (str, int, float, list, tuple))},
                                    audit=None if audit is None else audit.table, interval=interval,
                                    binary=binary_of(df, g), threshold=threshold, confidence=confidence,
                                    conventions=conventions_from_config(config),
                                    audit_k=int((config.get("audit") or {}).get("k", 10)) if audit is not None else None)
        (tmp / "fairness_report.html").write_text(html, encoding="utf-8")
        paths.append(tmp / "fairness_report.html")
        return paths
