"""The compute functions of the built-in per-query metrics, named by their declarations in
:data:`fairltr.metrics.registry.METRICS` (``compute="fairltr.metrics.per_query_builtins:ndcg"``).

Contract of a per-query metric (built-in or plugin): ``fn(view, k)`` for a metric that takes a
cut-off, ``fn(view)`` otherwise, where ``view`` is the :class:`RankingView` of one padded batch;
it returns a (Q,) float64 tensor (NaN where undefined for a query) or a dict of such tensors
keyed by full metric key (a metric computed together with its companions: the exposure terms).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fairltr.metrics.exposure import exposure_per_query
from fairltr.metrics.ordering import TiedRanks
from fairltr.metrics.parity import exposure_disparity as _disparity
from fairltr.metrics.parity import exposure_shortfall as _shortfall
from fairltr.metrics.parity import selection_ratio_at_k
from fairltr.metrics.relevance import Ranks, kendall_tau as _kendall, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = ["RankingView", "tied_share"]


@dataclass
class RankingView:
    """What a per-query metric sees of one padded batch (Q queries x N slots): ``scores``,
    ``judgments``, ``groups`` (codes: 0 = reference, >= 1 protected), ``mask`` (real slots),
    ``pred`` (the predicted ranks: :class:`~fairltr.metrics.ordering.TiedRanks` when tied scores
    are unordered), ``true`` (ranks by judgment), ``tied`` (the score ties, always as
    TiedRanks), ``exposure_k`` (exposure's cut-off, None = the whole list) and ``done`` (the
    values computed so far, by key: derived metrics read them)."""

    scores: torch.Tensor
    judgments: torch.Tensor
    groups: torch.Tensor
    mask: torch.Tensor
    pred: Ranks
    true: Ranks
    tied: TiedRanks
    exposure_k: int | None = None
    done: dict[str, torch.Tensor] = field(default_factory=dict)


def ndcg(view: RankingView, k: int) -> torch.Tensor:
    return ndcg_at_k(view.pred, view.judgments, view.mask, k)


def ndcg_linear(view: RankingView, k: int) -> torch.Tensor:
    return ndcg_at_k(view.pred, view.judgments, view.mask, k, gain="linear")


def precision(view: RankingView, k: int) -> torch.Tensor:
    return precision_at_k(view.pred, view.true, view.mask, k)


def selection_ratio(view: RankingView, k: int) -> torch.Tensor:
    return selection_ratio_at_k(view.pred, view.groups, view.mask, k)


def mrr(view: RankingView, k: int) -> torch.Tensor:
    return mrr_at_k(view.pred, view.judgments, view.mask, k)


def recall(view: RankingView, k: int) -> torch.Tensor:
    return recall_at_k(view.pred, view.judgments, view.mask, k)


def kendall_tau(view: RankingView) -> torch.Tensor:
    return _kendall(view.pred, view.judgments, view.mask)


def tied_share(tied: TiedRanks, mask: torch.Tensor) -> torch.Tensor:
    """Per query (Q,): the share of its candidates whose score equals another candidate's of the
    query (1.0 = every score tied, a constant model: its ranking is arbitrary); NaN with < 2 candidates."""
    n = mask.sum(-1).to(torch.float64)
    shared = (tied.tied & mask).sum(-1).to(torch.float64)
    return torch.where(n >= 2, shared / n.clamp(min=1), float("nan"))


def tied_score_share(view: RankingView) -> torch.Tensor:
    return tied_share(view.tied, view.mask)


def exposure(view: RankingView) -> dict[str, torch.Tensor]:
    """``exposure_protected``, ``exposure_nonprotected``, ``exposure_ratio``, ``exposure_gap``."""
    return exposure_per_query(view.pred, view.groups, view.mask, view.exposure_k)


def exposure_disparity(view: RankingView) -> torch.Tensor:
    """Each query's own 1 - min(R, 1/R) of its exposure ratio (the average reports it from the
    averaged ratio instead: :func:`fairltr.metrics.aggregate`)."""
    return _disparity(view.done["exposure_ratio"])


def exposure_shortfall(view: RankingView) -> torch.Tensor:
    return _shortfall(view.done["exposure_ratio"])
