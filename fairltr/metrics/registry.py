"""Declarations of every metric: direction and degenerate-query policy (SPEC §3, §6)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MetricInfo", "METRICS", "metric_info", "higher_is_better"]


@dataclass(frozen=True)
class MetricInfo:
    """What a metric is: its base name (k appended as ``_at_<k>``), direction and degenerate policy."""

    name: str
    higher_is_better: bool
    degenerate: str
    takes_k: bool = False
    kind: str = "relevance"  # "relevance" or "fairness"


METRICS: dict[str, MetricInfo] = {m.name: m for m in [
    MetricInfo("ndcg", True, "query left out when its ideal DCG is 0", True),
    MetricInfo("precision", True, "never undefined for a non-empty query", True),
    MetricInfo("mrr", True, "query left out when it has no item with judgment > 0", True),
    MetricInfo("recall", True, "query left out when it has no item with judgment > 0", True),
    MetricInfo("kendall_tau", True, "query left out with < 2 items or all-equal judgments"),
    MetricInfo("exposure_protected", True, "query left out without a protected item", kind="fairness"),
    MetricInfo("exposure_nonprotected", False, "query left out without a non-protected item", kind="fairness"),
    MetricInfo("exposure_ratio", True, "query left out unless both groups are present", kind="fairness"),
    MetricInfo("exposure_gap", False, "query left out unless both groups are present", kind="fairness"),
    MetricInfo("mrc", True, "parallel group left out with fewer than 2 languages", True, kind="fairness"),
]}


def metric_info(key: str) -> MetricInfo:
    """Info for a full metric key such as ``ndcg_at_10`` or ``exposure_ratio_at_10``."""
    base = key[: -len("_n_queries")] if key.endswith("_n_queries") else key
    if base in METRICS:
        return METRICS[base]
    if "_at_" in base:
        head, _, tail = base.rpartition("_at_")
        if tail.isdigit() and head in METRICS:
            return METRICS[head]
    raise KeyError(f"unknown metric {key!r}; known: {sorted(METRICS)} (append _at_<k> where k applies)")


def higher_is_better(key: str) -> bool:
    """Direction of a metric key (used by Optuna objectives and promotion gates)."""
    return metric_info(key).higher_is_better
