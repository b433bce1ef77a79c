"""How relevance metrics treat queries without a relevant item, and which nDCG gain they report.

fairltr's default leaves a query without any item of judgment > 0 out of the nDCG, MRR and
recall means (its value is undefined: NaN, counted in ``<metric>_n_queries``). trec_eval, ranx and
ir-measures count such a query as 0 instead; ``empty_queries="zero"`` does the same. The
convention in use is part of every evaluation's output (the ``empty_queries`` key: a param in
MLflow, a line in the CLI and the report), so that two figures are never compared across
conventions unknowingly.

``linear_ndcg=True`` adds ``ndcg_linear_at_<k>``: nDCG with trec_eval's linear gains max(rel, 0)
(ir-measures' ``nDCG@k``), beside the exponential-gain ``ndcg_at_<k>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import torch

from fairltr.errors import ConfigError

__all__ = ["RelevanceConventions", "conventions_from_config", "EMPTY_QUERY_POLICIES", "CONVENTION_KEYS", "TREC_CONVENTIONS"]

EMPTY_QUERY_POLICIES = ("skip", "zero")
"""A query without a relevant item: ``"skip"`` (left out of the mean: the default) or ``"zero"``
(counted as 0, as trec_eval, ranx and ir-measures do)."""

CONVENTION_KEYS = ("empty_queries",)
"""Keys of an evaluation dictionary that state its conventions (strings, logged as params)."""



@dataclass(frozen=True)
class RelevanceConventions:
    """``empty_queries`` in :data:`EMPTY_QUERY_POLICIES`; ``linear_ndcg``: also report
    ``ndcg_linear_at_<k>`` (linear gains)."""

    empty_queries: str = "skip"
    linear_ndcg: bool = False

    def __post_init__(self) -> None:
        if self.empty_queries not in EMPTY_QUERY_POLICIES:
            raise ConfigError(f"empty_queries must be one of {list(EMPTY_QUERY_POLICIES)} (skip: queries without a "
                              f"relevant item are left out of nDCG/MRR/recall; zero: they count 0, as trec_eval "
                              f"does), got {self.empty_queries!r}")
        if not isinstance(self.linear_ndcg, bool):
            raise ConfigError(f"linear_ndcg must be true or false, got {self.linear_ndcg!r}")

    def metadata(self) -> dict[str, str]:
        """The keys that name the conventions in an evaluation dictionary."""
        return {"empty_queries": self.empty_queries}

    def describe(self) -> str:
        """One line for a table or report."""
        empty = ("left out of the nDCG/MRR/recall means" if self.empty_queries == "skip"
                 else "counted as 0 in nDCG/MRR/recall (trec_eval's convention)")
        return f"queries without a relevant item: {empty} (empty_queries={self.empty_queries})"

    def apply(self, per_query: dict[str, torch.Tensor], n_candidates: torch.Tensor) -> dict[str, torch.Tensor]:
        """``per_query`` with the undefined values of the metrics declared ``needs_relevant``
        (:class:`~fairltr.metrics.plugins.MetricInfo`: nDCG, MRR, recall, plugins that say so) set
        to 0 for every query that has candidates (``n_candidates`` (Q,)), when ``empty_queries="zero"``."""
        if self.empty_queries == "skip":
            return per_query
        from fairltr.metrics.plugins import is_metric_key, metric_info

        has = n_candidates > 0
        out = dict(per_query)
        for name, values in per_query.items():
            if is_metric_key(name) and metric_info(name).needs_relevant:
                out[name] = torch.where(torch.isnan(values) & has.to(values.device), torch.zeros_like(values), values)
        return out


def conventions_from_config(config: Mapping[str, Any]) -> RelevanceConventions:
    """The conventions of a plain config (an evaluator config, a job's settings): keys
    ``empty_queries`` ("skip" / "zero") and ``linear_ndcg`` (bool); absent keys take the defaults."""
    return RelevanceConventions(empty_queries=str(config.get("empty_queries", "skip")),
                                linear_ndcg=config.get("linear_ndcg", False))


TREC_CONVENTIONS = RelevanceConventions(empty_queries="zero", linear_ndcg=True)
"""trec_eval's conventions: empty queries count 0, and linear-gain nDCG reported."""
