"""MLflow adapter: tracked runs, the registrable "fairltr ranker" pyfunc, the ``fair_ranking``
evaluator plugin, fairness-gated promotion, figures and the HTML report.

Names are loaded on first use (PEP 562), so ``import fairltr.tracking`` stays cheap and MLflow
is imported only by the functions that need it.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    # config
    "DEFAULT_EXPERIMENT": "config", "default_tracking_uri": "config", "tracking_uri": "config",
    "configure": "config", "logger_target": "config",
    # logging
    "log_deltr_run": "ranker_logging", "run_params": "ranker_logging", "log_history": "ranker_logging",
    "log_metrics_finite": "ranker_logging", "frame_fingerprint": "ranker_logging", "file_fingerprint": "ranker_logging",
    "log_retrieval_run": "retrieval_logging", "log_ranker_into_run": "ranker_logging",
    "log_result_metrics": "ranker_logging", "log_dataset": "ranker_logging", "dataset_of": "ranker_logging",
    "metrics_description": "ranker_logging", "version_description": "ranker_logging",
    # model
    "FairltrRanker": "pyfunc", "log_ranker_model": "pyfunc", "predict_frame": "pyfunc",
    "ranker_pip_requirements": "pyfunc",
    # retriever model
    "FairltrRetriever": "retriever", "RetrieverEncoder": "retriever", "build_retriever_package": "retriever",
    "log_retriever_model": "retriever", "model_kind": "retriever", "retriever_pip_requirements": "retriever",
    "read_retriever_settings": "retriever", "read_retriever_index": "retriever",
    # evaluator
    "FairRankingEvaluator": "evaluator", "evaluate_frame": "evaluator", "metrics_with_counts": "evaluator",
    "report_title": "evaluator",
    "FairRetrievalEvaluator": "retrieval_evaluator", "evaluate_retriever": "retrieval_evaluator",
    # the gate language (the core's fairltr.gates, re-exported) and promotion
    "Gate": "fairltr.gates", "GateResult": "fairltr.gates", "parse_gate": "fairltr.gates",
    "check_gates": "fairltr.gates", "Bound": "fairltr.gates", "GatePreset": "fairltr.gates",
    "GATE_PRESETS": "fairltr.gates", "expand_preset": "fairltr.gates", "gate_cutoffs": "fairltr.gates",
    "PromotionDecision": "registry.decision", "promote": "registry.promotion",
    "current_champion": "registry.sources", "evaluate_model_uri": "registry.sources",
    # verified models (content digests) and the promotion lock
    "open_verified": "verify", "fetch_verified": "verify", "load_verified": "verify", "folder_digest": "verify",
    "ModelRejected": "verify", "acquire_lock": "registry.lock", "LockTimeout": "registry.lock",
    # run life cycle
    "job_run": "runs", "child_run": "runs", "log_params": "runs", "log_metrics": "runs", "mark_run": "runs",
    "redact_uri": "config", "redact_text": "config", "check_tracking_uri": "config", "init_store": "config",
    # comparison of runs (DELTR Figure 1)
    "runs_table": "compare", "log_runs_comparison": "compare",
    # figures and report
    "exposure_by_position": "plots", "position_shares": "plots", "relevance_fairness_scatter": "plots",
    "mrc_heatmap": "plots", "training_curve": "plots", "save_figure": "plots",
    "fairness_report_html": "report", "figure_to_png": "plots", "exposure_headline": "report",
    "ordered_metric_keys": "report", "metric_sort_key": "report", "split_counts": "report",
    "HEADLINE_METRICS": "report",
    "aligned_ranks": "ranks",
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
