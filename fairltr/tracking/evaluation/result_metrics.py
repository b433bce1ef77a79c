"""Log evaluation metrics into a run the way a person reads them (headline first, counts as a
table), for every job that evaluates: the two evaluator plugins and the training loggers."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, Mapping

import numpy as np

__all__ = ["log_result_metrics", "COUNTS_ARTIFACT"]

COUNTS_ARTIFACT = "metric_counts.json"


def log_result_metrics(run_id: str, metrics: Mapping[str, Any], artifact_dir: str | Path | None = None
                       ) -> dict[str, float]:
    """Log evaluation metrics the way a person reads them: the finite values in presentation
    order (:func:`~fairltr.tracking.evaluation.report.ordered_metric_keys`: headline, fairness, relevance),
    the bootstrap interval metadata (``ci_level``, ``ci_n_boot``, ``ci_seed``, ``ci_unit``,
    ``ci_method``) and the relevance conventions (``empty_queries``) as params,
    the headline set in a first call so that it heads the run page's list; the
    ``<metric>_n_queries`` counts are not metrics but one JSON table ``metric_counts.json``
    written into ``artifact_dir`` (the caller uploads it with its other files). Returns the
    logged values."""
    from fairltr.tracking.evaluation.report import HEADLINE_METRICS, ordered_metric_keys, split_counts
    from fairltr.tracking.runs.life_cycle import finite_metrics, log_metrics

    from fairltr.metrics.audit_jobs import INTERVAL_KEYS
    from fairltr.metrics.conventions import CONVENTION_KEYS

    values, counts = split_counts(metrics)
    interval = {k: values.pop(k) for k in (*INTERVAL_KEYS, *CONVENTION_KEYS) if k in values}
    if interval:  # how intervals were made, how empty queries count: params, not metrics
        from fairltr.tracking.runs.life_cycle import log_params

        log_params(run_id, interval)
    finite = finite_metrics(values)
    order = ordered_metric_keys(list(finite))
    head = [k for k in order if k in HEADLINE_METRICS]
    logged = log_metrics(run_id, {k: finite[k] for k in head})
    logged.update(log_metrics(run_id, {k: finite[k] for k in order if k not in head}))
    if artifact_dir is not None and counts:
        table = {k: _plain(counts[k]) for k in ordered_metric_keys(list(counts))}
        (Path(artifact_dir) / COUNTS_ARTIFACT).write_text(
            json.dumps({"what": "number of queries each metric's average is over", "n_queries": table}, indent=1),
            encoding="utf-8")
    return {k: logged[k] for k in ordered_metric_keys(list(logged))}


def _plain(v: Any) -> Any:
    """A count as a JSON number (int when whole, None when not finite)."""
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer, np.floating)):
        return v
    f = float(v)
    return None if not math.isfinite(f) else int(f) if f.is_integer() else f
