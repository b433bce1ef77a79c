"""Paired comparison of two rankings of ONE table (docs/spec.md section 3b): the bootstrap
interval of a metric's difference (a - b; candidate - champion) over the SAME resampled
queries (or, below 30 queries, the same resampled candidates) for both.

The interval machinery is :mod:`fairltr.metrics.resampling`; the statistics are the audit's
(:mod:`fairltr.metrics.audit`) and the per-query metrics of :func:`fairltr.metrics.evaluate_ranking`.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.metrics.audit import AuditConfig, prepare_audit, resampled_figures, run_bootstrap
from fairltr.metrics.evaluate import (
    DEFAULT_K, _metric_columns, aggregate, per_query_extra, per_query_metrics, plan_order, score_buckets,
)
from fairltr.metrics.plugins import metric_info
from fairltr.data import numeric_column
from fairltr.metrics.audit import finite_scores
from fairltr.metrics.resampling import canonical_row_order, query_weights, resolve_unit  # noqa: F401  (re-exported)

__all__ = ["paired_difference", "query_weights"]


def _side(df: pd.DataFrame, scores: Any, c: RankingColumns, config: AuditConfig, k: tuple[int, ...]):
    """The audit plan, per-query metrics (in the plan's query order), point figures and scores of one ranking."""
    plan = prepare_audit(df, scores, columns=c, config=config)
    buckets, s = score_buckets(df, scores, columns=c)
    per_q = per_query_metrics(s, buckets, k=k)
    point = aggregate(per_q)
    point.update(plan.point()[1])
    order = plan_order(buckets, plan)
    return plan, {key: v[torch.as_tensor(order)] for key, v in per_q.items()}, point, finite_scores(df, scores, c)


def paired_difference(
    df: pd.DataFrame,
    scores_a: Sequence[float] | np.ndarray | pd.Series | str,
    scores_b: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    metric: str,
    config: AuditConfig = AuditConfig(),
) -> dict[str, Any]:
    """``{"metric", "difference", "a", "b", "ci_low", "ci_high", "level", "n_boot", "seed", "unit",
    "method"}``: the point difference ``metric(a) - metric(b)`` and its paired-bootstrap interval.

    ``metric``: any key :func:`fairltr.metrics.evaluate_ranking` returns with ``audit=config``
    (``impact_ratio_at_10``, ``impact_ratio_at_10.race``, ``ndcg_at_10``, ``exposure_ratio``,
    ...). Each resample draws the queries once and evaluates both score vectors on it, so the
    interval holds the correlation between the two models' errors. Under the candidates unit
    (fewer than 30 queries) rank-based relevance metrics and NDKL have no interval (NaN bounds).
    """
    if config.ci == 0:
        raise ConfigError("a paired comparison needs a confidence level > 0 (ci)")
    try:
        metric_info(metric)
    except KeyError as exc:
        raise ConfigError(str(exc).strip("'\"")) from None
    c = _metric_columns(columns)
    k = tuple(sorted(set(DEFAULT_K) | {config.k}))
    plan_a, per_a, point_a, s_a = _side(df, scores_a, c, config, k)
    plan_b, per_b, point_b, s_b = _side(df, scores_b, c, config, k)
    # rows interchangeable for both rankings: same stratum, both scores and the judgment equal
    plan_a.row_order = canonical_row_order(plan_a.strata, -s_a, -s_b, numeric_column(df, c.judgment, query=c.query))
    if metric not in point_a:
        raise ConfigError(f"metric {metric!r} is not computed here; known: {sorted(point_a)[:40]}...")
    unit = resolve_unit(config.unit, plan_a.n_queries)
    fa = resampled_figures(plan_a, unit, per_query_extra(per_a, [metric]) if unit == "queries" else None)
    fb = resampled_figures(plan_b, unit, per_query_extra(per_b, [metric]) if unit == "queries" else None)

    def statistic(w: np.ndarray) -> np.ndarray:
        ma, mb = fa(w)[0], fb(w)[0]
        if metric not in ma or metric not in mb:
            return np.full((1, w.shape[0]), np.nan)
        return (ma[metric] - mb[metric])[None, :]

    low, high = run_bootstrap(plan_a, statistic, unit)
    a, b = float(point_a[metric]), float(point_b[metric])
    info = config.interval(plan_a.n_queries) or {}
    return {"metric": metric, "difference": a - b if not (math.isnan(a) or math.isnan(b)) else math.nan,
            "a": a, "b": b, "ci_low": float(low[0]), "ci_high": float(high[0]), **info}

