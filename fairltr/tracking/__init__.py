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
    "configure": "config", "lightning_logger": "config",
    # logging
    "log_deltr_run": "logging", "run_params": "logging", "log_history": "logging",
    "log_metrics_finite": "logging", "frame_fingerprint": "logging", "file_fingerprint": "logging",
    "log_retrieval_run": "retrieval_logging",
    # model
    "FairltrRanker": "pyfunc", "log_ranker_model": "pyfunc", "predict_frame": "pyfunc",
    "ranker_pip_requirements": "pyfunc",
    # retriever model
    "FairltrRetriever": "retriever", "RetrieverEncoder": "retriever", "build_retriever_package": "retriever",
    "log_retriever_model": "retriever", "model_kind": "retriever", "retriever_pip_requirements": "retriever",
    "read_retriever_settings": "retriever", "read_retriever_index": "retriever",
    # evaluator
    "FairRankingEvaluator": "evaluator", "evaluate_frame": "evaluator",
    "FairRetrievalEvaluator": "retrieval_evaluator", "evaluate_retriever": "retrieval_evaluator",
    # gates (the gate language) and promotion
    "Gate": "gates", "GateResult": "gates", "parse_gate": "gates", "check_gates": "gates",
    "Bound": "gates", "GatePreset": "gates", "GATE_PRESETS": "gates", "expand_preset": "gates",
    "gate_cutoffs": "gates",
    "PromotionDecision": "promotion", "promote": "promotion", "current_champion": "promotion",
    "evaluate_model_uri": "promotion",
    # verified models (content digests) and the promotion lock
    "open_verified": "verify", "fetch_verified": "verify", "load_verified": "verify", "folder_digest": "verify",
    "ModelRejected": "verify", "acquire_lock": "lock", "LockTimeout": "lock",
    # run life cycle
    "job_run": "runs", "child_run": "runs", "log_params": "runs", "log_metrics": "runs", "mark_run": "runs",
    "redact_uri": "config", "redact_text": "config", "check_tracking_uri": "config", "init_store": "config",
    # comparison of runs (DELTR Figure 1)
    "runs_table": "compare", "log_runs_comparison": "compare",
    # figures and report
    "exposure_by_position": "plots", "position_shares": "plots", "relevance_fairness_scatter": "plots",
    "mrc_heatmap": "plots", "training_curve": "plots", "save_figure": "plots",
    "fairness_report_html": "report", "figure_to_png": "report",
    "aligned_ranks": "ranks",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'fairltr.tracking' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"fairltr.tracking.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
