"""Ranking metrics: relevance, group exposure, parity (exposure disparity, selection ratio),
the audit of any number of group attributes with bootstrap intervals (docs/audit.md), the
metric registry (directions, ideal values, HEADLINE_METRICS) and evaluate_ranking."""

from fairltr.metrics.audit import AuditConfig, AuditResult, audit_ranking
from fairltr.metrics.bootstrap import paired_difference

from fairltr.metrics.evaluate import (
    CI_METADATA_KEYS, DEFAULT_K, aggregate, evaluate_batch, evaluate_ranking, evaluate_ranking_audit,
    evaluate_with_table, per_query_metrics, per_query_table, score_buckets,
)
from fairltr.metrics.exposure import exposure_per_query, position_bias
from fairltr.metrics.ordering import order_by, ranks_by, ranks_from_order
from fairltr.metrics.parity import derive_from_ratio, exposure_disparity, exposure_shortfall, selection_ratio_at_k
from fairltr.metrics.registry import (
    AUDIT_METRICS, CI_SUFFIXES, DIRECTIONS, HEADLINE_METRICS, METRICS, MetricInfo, direction, direction_label, distance_from_ideal, higher_is_better, ideal,
    headline_metrics, is_better, is_metric_key, metric_info, optimisation_direction,
)
from fairltr.metrics.relevance import kendall_tau, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = [
    "DEFAULT_K", "DIRECTIONS", "METRICS", "MetricInfo", "aggregate", "derive_from_ratio", "direction",
    "direction_label", "distance_from_ideal", "evaluate_batch", "evaluate_ranking", "exposure_disparity",
    "exposure_per_query", "exposure_shortfall", "higher_is_better", "ideal", "is_better", "is_metric_key",
    "kendall_tau", "metric_info", "mrr_at_k", "ndcg_at_k", "optimisation_direction", "order_by",
    "per_query_metrics", "position_bias", "precision_at_k", "ranks_by", "ranks_from_order", "recall_at_k",
    "selection_ratio_at_k", "evaluate_with_table", "per_query_table", "score_buckets",
    "AuditConfig", "AuditResult", "audit_ranking", "evaluate_ranking_audit", "paired_difference", "HEADLINE_METRICS",
    "headline_metrics", "AUDIT_METRICS", "CI_SUFFIXES", "CI_METADATA_KEYS",
]
