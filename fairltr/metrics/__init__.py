"""Ranking metrics (SPEC §3): relevance, group exposure, and evaluate_ranking."""

from fairltr.metrics.evaluate import DEFAULT_K, aggregate, evaluate_batch, evaluate_ranking, per_query_metrics
from fairltr.metrics.exposure import exposure_per_query, position_bias
from fairltr.metrics.ordering import order_by, ranks_by, ranks_from_order
from fairltr.metrics.registry import METRICS, MetricInfo, higher_is_better, metric_info
from fairltr.metrics.relevance import kendall_tau, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = [
    "DEFAULT_K", "METRICS", "MetricInfo", "aggregate", "evaluate_batch", "evaluate_ranking",
    "exposure_per_query", "higher_is_better", "kendall_tau", "metric_info", "mrr_at_k", "ndcg_at_k",
    "order_by", "per_query_metrics", "position_bias", "precision_at_k", "ranks_by", "ranks_from_order",
    "recall_at_k",
]
