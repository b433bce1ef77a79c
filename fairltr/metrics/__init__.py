"""Ranking metrics: relevance, group exposure, parity (exposure disparity, selection ratio),
the audit of any number of group attributes with bootstrap intervals (docs/audit.md), the
metric registry (directions, ideal values, HEADLINE_METRICS) and evaluate_ranking.

Exports are lazy (:mod:`fairltr.lazy`) except the registry's: reading a metric's direction
loads no torch.
"""

from fairltr.lazy import lazy_exports, moved_modules

moved_modules(__name__, {"registry": "plugins"})  # the metric plugins' old module name
from fairltr.metrics.plugins import (
    AUDIT_METRICS, CI_SUFFIXES, direction, direction_label, DIRECTIONS, distance_from_ideal, HEADLINE_METRICS,
    headline_metrics, higher_is_better, ideal, is_better, is_metric_key, key_part, metric_info, MetricInfo,
    METRICS, optimisation_direction, QUERY_INTERVAL_METRICS,
)

__all__ = [
    "DEFAULT_K", "DIRECTIONS", "METRICS", "MetricInfo", "aggregate", "derive_from_ratio", "direction",
    "direction_label", "distance_from_ideal", "evaluate_batch", "evaluate_ranking", "exposure_disparity",
    "exposure_per_query", "exposure_shortfall", "higher_is_better", "ideal", "is_better", "is_metric_key",
    "kendall_tau", "metric_info", "mrr_at_k", "ndcg_at_k", "optimisation_direction", "order_by",
    "per_query_metrics", "position_bias", "precision_at_k", "ranks_by", "ranks_from_order", "recall_at_k",
    "selection_ratio_at_k", "evaluate_with_table", "per_query_table", "score_buckets", "AuditConfig",
    "AuditResult", "audit_ranking", "evaluate_ranking_audit", "paired_difference", "HEADLINE_METRICS",
    "headline_metrics", "AUDIT_METRICS", "CI_SUFFIXES", "CI_METADATA_KEYS", "ee_from_exposure",
    "expected_exposure", "expected_exposure_metrics", "group_exposure", "rbp_exposure", "target_exposure",
    "key_part", "RankedFolds", "front_hypervolume_intervals", "hypervolume_2d_batch", "resampled_objectives",
    "awrf", "intersect", "rank_discount", "trec_fair_ndcg", "trec_fair_task1", "iaa", "iaa_by_subject",
    "ATTENTION_MODELS", "mean_with_intervals", "QUERY_INTERVAL_METRICS", "TiedRanks", "tied_ranks", "category_verdicts",
    "worst_category", "binary_view", "BinaryView", "GATE_TOLERANCE", "holds",
]

lazy_exports(__name__, {
    **dict.fromkeys(['AuditConfig', 'AuditResult', 'audit_ranking'],
                    'fairltr.metrics.audit'),
    **dict.fromkeys(['paired_difference'],
                    'fairltr.metrics.bootstrap'),
    **dict.fromkeys(['CI_METADATA_KEYS', 'DEFAULT_K', 'aggregate', 'evaluate_batch', 'evaluate_ranking',
                     'evaluate_ranking_audit', 'evaluate_with_table', 'per_query_metrics',
                     'per_query_table', 'score_buckets'],
                    'fairltr.metrics.evaluate'),
    **dict.fromkeys(['ee_from_exposure', 'expected_exposure', 'expected_exposure_metrics', 'group_exposure',
                     'rbp_exposure', 'target_exposure'],
                    'fairltr.metrics.expected_exposure'),
    **dict.fromkeys(['RankedFolds', 'front_hypervolume_intervals', 'hypervolume_2d_batch', 'resampled_objectives'],
                    'fairltr.metrics.front_bootstrap'),
    **dict.fromkeys(['exposure_per_query', 'position_bias'],
                    'fairltr.metrics.exposure'),
    **dict.fromkeys(['order_by', 'ranks_by', 'ranks_from_order', 'TiedRanks', 'tied_ranks'],
                    'fairltr.metrics.ordering'),
    **dict.fromkeys(['awrf', 'intersect', 'rank_discount', 'trec_fair_ndcg', 'trec_fair_task1'],
                    'fairltr.metrics.awrf'),
    **dict.fromkeys(['iaa', 'iaa_by_subject', 'ATTENTION_MODELS'], 'fairltr.metrics.iaa'),
    'mean_with_intervals': 'fairltr.metrics.query_intervals',
    **dict.fromkeys(['category_verdicts', 'worst_category', 'binary_view', 'BinaryView'], 'fairltr.metrics.verdicts'),
    **dict.fromkeys(['GATE_TOLERANCE', 'holds'], 'fairltr.metrics.compare'),
    **dict.fromkeys(['derive_from_ratio', 'exposure_disparity', 'exposure_shortfall', 'selection_ratio_at_k'],
                    'fairltr.metrics.parity'),
    **dict.fromkeys(['kendall_tau', 'mrr_at_k', 'ndcg_at_k', 'precision_at_k', 'recall_at_k'],
                    'fairltr.metrics.relevance'),
})
