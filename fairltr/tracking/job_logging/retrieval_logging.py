"""MLflow logging of a bi-encoder (DPR / LaKDA) run: params, the retrieval metrics, the MRC pair heat map."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any, Mapping

import pandas as pd

__all__ = ["log_retrieval_run"]


def _flat_metrics(metrics: Mapping[str, Any]) -> dict[str, float]:
    """Scalar metrics plus ``mrr_at_100/<lang>``-style per-language values."""
    out = {k: float(v) for k, v in metrics.items() if isinstance(v, (int, float))}
    per_lang = metrics.get("per_language")
    if isinstance(per_lang, Mapping):
        for metric, by_lang in per_lang.items():
            if isinstance(by_lang, Mapping):
                for lang, value in by_lang.items():
                    if isinstance(value, (int, float)) and lang != "all":  # "all" is the headline metric itself
                        out[f"{metric}/{lang}"] = float(value)
    return out


def log_retrieval_run(run_id: str, report: Mapping[str, Any], *, out_dir: str | Path | None = None, k: int = 100,
                      mrc_k: int = 5, split: str | None = None) -> dict[str, float]:
    """Log ``report`` (``params``, ``train_s``, ``metrics`` as written by ``fairltr train dpr``) into
    ``run_id``: params, the finite metrics (headline first, :func:`~fairltr.tracking.evaluation.result_metrics.log_result_metrics`),
    the run description (the verdict: MRC@k, the least consistent language pair, MRR@k, a
    conclusion; :mod:`fairltr.tracking.evaluation.retrieval_report`) unless the run has one, and in one
    upload ``mrc_matrix.png`` (L x L language-pair MRC heat map), ``retrieval_report.html`` and
    ``retrieval_report.json`` (both also written to ``out_dir`` when given). Returns the logged metrics."""
    from mlflow import MlflowClient

    from fairltr.tracking.runs.config import tracking_uri
    from fairltr.tracking.evaluation.result_metrics import log_result_metrics
    from fairltr.tracking.evaluation.plots import figure_to_png, mrc_heatmap
    from fairltr.tracking.evaluation.retrieval_report import retrieval_description, retrieval_report_html
    from fairltr.tracking.runs.life_cycle import log_params

    client = MlflowClient(tracking_uri())
    log_params(run_id, dict(report.get("params", {})), client=client)  # once: Lightning's logger logs none
    metrics = dict(report.get("metrics") or {})
    logged = log_result_metrics(run_id, {**_flat_metrics(metrics), "train_seconds": float(report.get("train_s", 0.0))})
    text = json.dumps(report, indent=1, default=str)
    if out_dir is not None:
        Path(out_dir).mkdir(parents=True, exist_ok=True)
        (Path(out_dir) / "retrieval_report.json").write_text(text)
    params = dict(report.get("params", {}))
    title = f"DPR retriever ({params.get('fairness_loss', 'none')}, alpha={params.get('alpha', 'n/a')})"
    page = retrieval_report_html(title, metrics, k, mrc_k, params=params) if metrics else None
    if metrics and "mlflow.note.content" not in client.get_run(run_id).data.tags:
        client.set_tag(run_id, "mlflow.note.content",
                       retrieval_description(title, metrics, k, mrc_k, params=params, split=split))
    if out_dir is not None and page is not None:
        (Path(out_dir) / "retrieval_report.html").write_text(page, encoding="utf-8")
    with tempfile.TemporaryDirectory(prefix="fairltr-retrieval-") as tmp:
        (Path(tmp) / "retrieval_report.json").write_text(text)
        if page is not None:
            (Path(tmp) / "retrieval_report.html").write_text(page, encoding="utf-8")
        matrix = metrics.get("mrc_matrix")
        if matrix:
            png = figure_to_png(mrc_heatmap(pd.DataFrame(matrix), title=f"MRC@{mrc_k} by language pair", k=mrc_k))
            (Path(tmp) / "mrc_matrix.png").write_bytes(png)
        client.log_artifacts(run_id, tmp)  # one upload call
    return logged
