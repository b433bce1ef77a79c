"""Relevance metrics over padded queries, vectorised (docs/spec.md §3). Undefined values are NaN.

* precision_at_k = |top-k(pred) ∩ top-k(truth)| / k (docs/spec.md §3, also for n_q < k), truth = order by judgment.
* kendall_tau = Kendall's tau-b between predicted positions and judgments (ties in
  judgments are ties); NaN for n_q < 2 or all-equal judgments.
* ndcg_at_k: gains 2^rel - 1, discount 1 / log2(1 + r); rel = judgment, shifted by the query's
  minimum when a query holds negative judgments; NaN when the ideal DCG is 0.
* mrr_at_k / recall_at_k: relevant = judgment > 0; NaN for a query without relevant items.
"""

from __future__ import annotations

import torch

from fairltr.metrics.ordering import order_by, ranks_from_order

__all__ = ["precision_at_k", "kendall_tau", "ndcg_at_k", "mrr_at_k", "recall_at_k"]

_NAN = float("nan")


def precision_at_k(pred_ranks: torch.Tensor, true_ranks: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    both = (pred_ranks <= k) & (true_ranks <= k) & mask
    n = mask.sum(-1)
    return torch.where(n > 0, both.sum(-1).to(torch.float64) / k, _NAN)


def kendall_tau(
    pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, block: int = 2**22
) -> torch.Tensor:
    """tau-b = sum_ij sx_ij sy_ij / sqrt(sum_ij |sx_ij| * sum_ij |sy_ij|), computed in row blocks."""
    q, n = mask.shape
    x = (-pred_ranks).to(torch.float64)
    y = judgments.to(torch.float64)
    s = torch.zeros(q, dtype=torch.float64, device=mask.device)
    nx = torch.zeros_like(s)
    ny = torch.zeros_like(s)
    rows = max(1, block // max(1, q * n))
    for start in range(0, n, rows):  # blocks over the first index bound memory, not a per-query loop
        stop = min(n, start + rows)
        pair_mask = (mask[:, start:stop, None] & mask[:, None, :]).to(torch.float64)
        sx = torch.sign(x[:, start:stop, None] - x[:, None, :]) * pair_mask
        sy = torch.sign(y[:, start:stop, None] - y[:, None, :]) * pair_mask
        s += (sx * sy).sum((1, 2))
        nx += sx.abs().sum((1, 2))
        ny += sy.abs().sum((1, 2))
    denom = torch.sqrt(nx * ny)
    return torch.where(denom > 0, s / denom.clamp(min=1e-300), _NAN)


def _gains(judgments: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    rel = judgments.to(torch.float64)
    qmin = rel.masked_fill(~mask, float("inf")).min(-1, keepdim=True).values
    shift = torch.where(qmin < 0, qmin, torch.zeros_like(qmin))
    return (torch.pow(2.0, rel - shift) - 1.0).masked_fill(~mask, 0.0)


def ndcg_at_k(pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    gains = _gains(judgments, mask)
    disc = 1.0 / torch.log2(1.0 + pred_ranks.to(torch.float64))
    dcg = (gains * disc * ((pred_ranks <= k) & mask)).sum(-1)
    ideal_ranks = ranks_from_order(order_by(gains, mask))
    idisc = 1.0 / torch.log2(1.0 + ideal_ranks.to(torch.float64))
    idcg = (gains * idisc * ((ideal_ranks <= k) & mask)).sum(-1)
    return torch.where(idcg > 0, dcg / idcg.clamp(min=1e-300), _NAN)


def mrr_at_k(pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    rel = (judgments > 0) & mask
    hit = rel & (pred_ranks <= k)
    big = pred_ranks.max() + 1 if pred_ranks.numel() else 1
    first = torch.where(hit, pred_ranks, torch.full_like(pred_ranks, big)).min(-1).values
    rr = torch.where(first <= k, 1.0 / first.to(torch.float64), torch.zeros_like(first, dtype=torch.float64))
    return torch.where(rel.any(-1), rr, _NAN)


def recall_at_k(pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    rel = (judgments > 0) & mask
    n_rel = rel.sum(-1).to(torch.float64)
    found = (rel & (pred_ranks <= k)).sum(-1).to(torch.float64)
    return torch.where(n_rel > 0, found / n_rel.clamp(min=1), _NAN)
