"""The compute functions of the built-in per-query metrics, named by their declarations in
:data:`fairltr.metrics.plugins.METRICS` (``compute="fairltr.metrics.per_query_builtins:ndcg"``).

Contract of a per-query metric (built-in or plugin): ``fn(view, k)`` for a metric that takes a
cut-off, ``fn(view)`` otherwise, where ``view`` is the :class:`RankingView` of one padded batch;
it returns a (Q,) float64 tensor (NaN where undefined for a query) or a dict of such tensors
keyed by full metric key (a metric computed together with its companions: the exposure terms).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from fairltr.metrics.awrf import CUTOFF as _TREC_CUTOFF
from fairltr.metrics.exposure import exposure_per_query
from fairltr.metrics.ordering import TiedRanks
from fairltr.metrics.parity import exposure_disparity as _disparity
from fairltr.metrics.parity import exposure_shortfall as _shortfall
from fairltr.metrics.parity import selection_ratio_at_k
from fairltr.metrics.relevance import Ranks, kendall_tau as _kendall, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = ["RankingView", "tied_share", "awrf", "ndcg_awrf", "iaa"]


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


def _expected(pred: Ranks, g) -> torch.Tensor:
    """E[g(rank)] of every slot (float64): g of the rank, or its mean over the tie group's positions."""
    return pred.expected(g) if isinstance(pred, TiedRanks) else g(pred.to(torch.float64))


def _trec_discount(r: torch.Tensor) -> torch.Tensor:
    """The TREC Fair 2022 discount ``1 / log2(max(r, 2))``, 0 below the track's cut-off (500)."""
    return torch.where(r <= _TREC_CUTOFF, 1.0 / torch.log2(r.clamp(min=2.0)), 0.0)


def _shares(weights: torch.Tensor, groups: torch.Tensor, n_groups: int) -> torch.Tensor:
    """(Q, G): per query the sum of ``weights`` (0 on padded slots) of each group code."""
    out = torch.zeros(weights.shape[0], n_groups, dtype=torch.float64, device=weights.device)
    return out.scatter_add_(1, groups.long().clamp(min=0), weights)


def awrf(view: RankingView) -> torch.Tensor:
    """AWRF (TREC Fair 2022, :mod:`fairltr.metrics.awrf`) with each candidate's alignment its group
    (one category per group code) and the query's target the groups' shares among its relevant
    candidates (judgment > 0): ``1 - JS(D, target)`` in nats, D the discount-weighted group
    distribution of the top 500. Tied scores: each candidate's expected discount over the tie
    orders. NaN for a query without a relevant candidate."""
    mask = view.mask
    n_groups = max(int(view.groups[mask].max()) + 1 if bool(mask.any()) else 1, 2)
    w = torch.where(mask, _expected(view.pred, _trec_discount), 0.0)
    rel = (mask & (view.judgments > 0)).to(torch.float64)
    dist, tgt = _shares(w, view.groups, n_groups), _shares(rel, view.groups, n_groups)
    dist = dist / dist.sum(1, keepdim=True)
    tgt = tgt / tgt.sum(1, keepdim=True)
    mid = 0.5 * (dist + tgt)

    def kl(p: torch.Tensor) -> torch.Tensor:
        return torch.where(p > 0, p * torch.log(p / mid), 0.0).sum(1)

    return torch.where(rel.sum(1) > 0, 1.0 - 0.5 * (kl(dist) + kl(tgt)), float("nan"))


def ndcg_awrf(view: RankingView) -> torch.Tensor:
    """The TREC Fair 2022 task-1 score nDCG x AWRF per query: the track's binary nDCG (judgment > 0
    relevant; discount and cut-off as :func:`awrf`; the ideal over min(500, R) relevant candidates)
    times :func:`awrf`. NaN for a query without a relevant candidate."""
    mask = view.mask
    rel = mask & (view.judgments > 0)
    dcg = torch.where(rel, _expected(view.pred, _trec_discount), 0.0).sum(1)
    n = mask.shape[1]
    cum = torch.zeros(n + 1, dtype=torch.float64, device=mask.device)
    cum[1:] = torch.cumsum(_trec_discount(torch.arange(1, n + 1, device=mask.device, dtype=torch.float64)), 0)
    ideal = cum[rel.sum(1).clamp(max=_TREC_CUTOFF)]
    aw = view.done["awrf"] if "awrf" in view.done else awrf(view)
    return torch.where(ideal > 0, dcg / ideal.clamp(min=1e-300), float("nan")) * aw


def iaa(view: RankingView) -> torch.Tensor:
    """Inequity of amortized attention (Biega et al. 2018, :mod:`fairltr.metrics.iaa`) of the one
    ranking per query: ``sum_i |a_i - r_i|`` with attention ``1 / log2(1 + rank)`` and relevance
    max(judgment, 0), each scaled to sum to 1 over the query's candidates (in [0, 2]). Tied scores:
    each candidate's expected attention over the tie orders. NaN when the relevance sums to 0."""
    mask = view.mask
    att = torch.where(mask, _expected(view.pred, lambda r: 1.0 / torch.log2(1.0 + r)), 0.0)
    rel = torch.where(mask, view.judgments.to(torch.float64).clamp(min=0.0), 0.0)
    total = rel.sum(1, keepdim=True)
    out = (att / att.sum(1, keepdim=True).clamp(min=1e-300) - rel / total.clamp(min=1e-300)).abs().sum(1)
    return torch.where(total[:, 0] > 0, out, float("nan"))
