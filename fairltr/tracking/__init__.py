"""MLflow adapter: tracked runs, the registrable "fairltr ranker" pyfunc, the ``fair_ranking``
evaluator plugin, fairness-gated promotion, figures and the HTML report.

Names are loaded on first use (PEP 562), so ``import fairltr.tracking`` stays cheap and MLflow
is imported only by the functions that need it.
"""

from __future__ import annotations

import importlib
from typing import Any

from fairltr.lazy import moved_modules

moved_modules(__name__, {"registry": "model_registry"})  # the MLflow model registry's old name

_EXPORTS = {
    # runs and configuration (runs/)
    **dict.fromkeys(("DEFAULT_EXPERIMENT", "default_tracking_uri", "tracking_uri", "resolve_tracking_uri",
                     "configure", "logger_target",
                     "redact_uri", "redact_text", "check_tracking_uri", "init_store"), "runs.config"),
    **dict.fromkeys(("job_run", "child_run", "log_params", "log_metrics", "mark_run"), "runs.life_cycle"),
    # model formats (models/): the ranker and retriever pyfuncs, digests and verified loading
    **dict.fromkeys(("FairltrRanker", "log_ranker_model", "predict_frame", "ranker_pip_requirements"), "models.pyfunc"),
    **dict.fromkeys(("FairltrRetriever", "RetrieverEncoder", "build_retriever_package", "log_retriever_model",
                     "model_kind", "retriever_pip_requirements", "read_retriever_settings", "read_retriever_index"),
                    "models.retriever"),
    **dict.fromkeys(("open_verified", "fetch_verified", "load_verified", "folder_digest", "ModelRejected"),
                    "models.verify"),
    "aligned_ranks": "models.ranks", "served_model": "models.serving",
    # evaluation (evaluation/): the two evaluator plugins, figures, reports, comparison of runs
    **dict.fromkeys(("FairRankingEvaluator", "evaluate_frame", "metrics_with_counts", "report_title"),
                    "evaluation.evaluator"),
    **dict.fromkeys(("FairRetrievalEvaluator", "evaluate_retriever"), "evaluation.retrieval_evaluator"),
    **dict.fromkeys(("log_result_metrics",), "evaluation.result_metrics"),
    **dict.fromkeys(("runs_table", "log_runs_comparison"), "evaluation.compare"),
    **dict.fromkeys(("exposure_by_position", "position_shares", "relevance_fairness_scatter", "mrc_heatmap",
                     "training_curve", "save_figure", "figure_to_png"), "evaluation.plots"),
    **dict.fromkeys(("fairness_report_html", "exposure_headline", "ordered_metric_keys", "metric_sort_key",
                     "split_counts", "HEADLINE_METRICS"), "evaluation.report"),
    # what a job logs into its run (job_logging/)
    **dict.fromkeys(("log_deltr_run", "run_params", "log_history", "log_metrics_finite", "frame_fingerprint",
                     "file_fingerprint", "log_ranker_into_run", "log_dataset", "dataset_of", "metrics_description",
                     "version_description"), "job_logging.ranker_logging"),
    "log_retrieval_run": "job_logging.retrieval_logging",
    # the sweep's MLflow mirror: one parent run per Optuna study, one nested run per COMPLETE trial
    **dict.fromkeys(("SweepTracker", "PARENT_ATTR", "CREATED_AT_ATTR", "sqlite_wal"), "job_logging.sweep_runs"),
    # the gate language (the core's fairltr.gates, re-exported) and the MLflow model registry (model_registry/)
    **dict.fromkeys(("Gate", "GateResult", "parse_gate", "check_gates", "Bound", "GatePreset", "GATE_PRESETS",
                     "expand_preset", "gate_cutoffs"), "fairltr.gates"),
    "PromotionDecision": "model_registry.decision", "promote": "model_registry.promotion",
    "current_champion": "model_registry.sources", "evaluate_model_uri": "model_registry.sources",
    "acquire_lock": "model_registry.lock", "LockTimeout": "model_registry.lock",
    # the served decisions and the provenance columns of every served ranking
    **dict.fromkeys(("read_decision_log", "open_decision_log"), "models.decision_log"),
    "PROVENANCE_COLUMNS": "models.pyfunc",
    # alias integrity: verify-alias's checks and the registry-webhook receiver
    **dict.fromkeys(("AliasCheck", "check_alias", "check_version"), "model_registry.alias_check"),
    **dict.fromkeys(("AliasEventReceiver", "register_webhook"), "model_registry.webhook_receiver"),
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fairltr.tracking' has no attribute {name!r}")
    path = module if module.startswith("fairltr.") else f"fairltr.tracking.{module}"  # absolute: a core name
    value = getattr(importlib.import_module(path), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
