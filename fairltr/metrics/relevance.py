"""Relevance metrics over padded queries, vectorised (docs/spec.md §3). Undefined values are NaN.

* precision_at_k = |top-k(pred) ∩ top-k(truth)| / k (docs/spec.md §3, also for n_q < k), truth = order by judgment.
* kendall_tau = Kendall's tau-b between predicted positions and judgments (ties in
  judgments are ties), O(n log n) per query (the discordant pairs are inversions counted by a radix pass or a
  Fenwick tree: :mod:`fairltr.metrics.kendall_counts`); NaN for n_q < 2 or all-equal judgments.
* ndcg_at_k: gains 2^rel - 1, discount 1 / log2(1 + r); rel = judgment, shifted by the query's
  minimum when a query holds negative judgments; NaN when the ideal DCG is 0. ``gain="linear"``:
  gains max(rel, 0), trec_eval's ``ndcg_cut`` (judgments <= 0 gain nothing, no shift).
* mrr_at_k / recall_at_k: relevant = judgment > 0; NaN for a query without relevant items.
"""

from __future__ import annotations

import torch

from typing import Union

from fairltr.metrics.kendall_counts import pair_counts
from fairltr.metrics.ordering import TiedRanks, order_by, ranks_from_order

__all__ = ["precision_at_k", "kendall_tau", "kendall_pair_counts", "ndcg_at_k", "NDCG_GAINS", "mrr_at_k", "recall_at_k", "Ranks"]

_NAN = float("nan")


Ranks = Union[torch.Tensor, TiedRanks]
"""A predicted ranking: 1-based ranks (one order, no ties) or :class:`TiedRanks` (tied scores
unordered: every metric is then its expectation over the orders of the ties)."""


def _in_top(ranks: Ranks, k: int) -> torch.Tensor:
    """P(rank <= k) per slot (0/1 for plain ranks). (Q, N) float64."""
    if isinstance(ranks, TiedRanks):
        return ranks.in_top(k)
    return (ranks <= k).to(torch.float64)


def _expected(ranks: Ranks, g) -> torch.Tensor:
    """E[g(rank)] per slot (g(rank) for plain ranks). (Q, N) float64."""
    if isinstance(ranks, TiedRanks):
        return ranks.expected(g)
    return g(ranks.to(torch.float64))


def precision_at_k(pred_ranks: Ranks, true_ranks: Ranks, mask: torch.Tensor, k: int) -> torch.Tensor:
    """|top-k(pred) ∩ top-k(truth)| / k; with tie groups on either side, its expectation over
    independent random orders of the ties: sum_i P(i in pred top k) P(i in true top k) / k."""
    both = (_in_top(pred_ranks, k) * _in_top(true_ranks, k)).masked_fill(~mask, 0.0)
    n = mask.sum(-1)
    return torch.where(n > 0, both.sum(-1) / k, _NAN)


def kendall_tau(
    pred_ranks: Ranks, judgments: torch.Tensor, mask: torch.Tensor, block: int | None = None
) -> torch.Tensor:
    """Kendall's tau-b per query in O(n log n) (:func:`kendall_pair_counts`), vectorised over queries. (Q,) float64.

    tau_b = (n0 - n1 - n2 + n3 - 2 n_d) / sqrt((n0 - n1) (n0 - n2)) with n0 = n (n - 1) / 2, n1 / n2 the
    pairs tied in x = -pred_ranks / in y = judgments, n3 the pairs tied in both and n_d the discordant
    pairs. With :class:`TiedRanks` (tied scores), the expectation of tau-b over the random orders of
    the ties: a pair tied in score is concordant or discordant with probability 1/2 each, and the
    ranking it becomes has no ties, so E[tau] = (n0 - n1 - n2 + n3 - 2 n_d) / sqrt(n0 (n0 - n2)).
    A constant model scores 0, as the mean over random rankings does. NaN where the denominator is
    0 (n_q < 2, all-equal judgments, or all-equal plain ranks). ``block`` is accepted and unused."""
    del block
    tied = isinstance(pred_ranks, TiedRanks)
    x = -(pred_ranks.first if tied else pred_ranks).to(torch.float64)
    n0, n1, n2, n3, n_d = kendall_pair_counts(x, judgments.to(torch.float64), mask)
    denom = torch.sqrt(n0 * (n0 - n2)) if tied else torch.sqrt((n0 - n1) * (n0 - n2))
    tau = torch.where(denom > 0, (n0 - n1 - n2 + n3 - 2 * n_d) / denom.clamp(min=1e-300), _NAN)
    # today's NaN policy: a NaN among a query's real ranks or judgments makes its tau NaN
    bad = ((x.isnan() | judgments.to(torch.float64).isnan()) & mask).any(-1)
    return tau.masked_fill(bad, _NAN)


def kendall_pair_counts(x: torch.Tensor, y: torch.Tensor, mask: torch.Tensor
                        ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    """Per query (Q,) float64: n0 = n (n - 1) / 2, n1 / n2 the pairs tied in ``x`` / in ``y``, n3
    the pairs tied in both, n_d the discordant pairs (x and y ordered oppositely), padded slots left
    out: :func:`fairltr.metrics.kendall_counts.pair_counts` (numpy; the strict inversions of y once
    the items are sorted by (x, y), O(n log n))."""
    counts = pair_counts(x.detach().to(torch.float64).cpu().numpy(), y.detach().to(torch.float64).cpu().numpy(),
                         mask.detach().cpu().numpy().astype(bool))
    return tuple(torch.as_tensor(c, dtype=torch.float64, device=mask.device) for c in counts)  # type: ignore[return-value]


def _kendall_tau_pairwise(
    pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, block: int = 2**22
) -> torch.Tensor:
    """The former O(n^2) reference: tau-b = sum_ij sx_ij sy_ij / sqrt(sum_ij |sx_ij| * sum_ij |sy_ij|),
    in row blocks. Kept for the tests and benchmarks/bench_kendall.py."""
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


NDCG_GAINS = ("exponential", "linear")
"""nDCG's gain of a judgment rel: ``"exponential"`` 2^rel - 1 (Burges et al.; the default, with
negative judgments shifted by the query's minimum) or ``"linear"`` max(rel, 0) (trec_eval's and
ir-measures' ``nDCG@k``)."""


def _gains(judgments: torch.Tensor, mask: torch.Tensor, gain: str = "exponential") -> torch.Tensor:
    rel = judgments.to(torch.float64)
    if gain == "linear":
        return rel.clamp(min=0.0).masked_fill(~mask, 0.0)
    if gain != "exponential":
        raise ValueError(f"gain must be one of {NDCG_GAINS}, got {gain!r}")
    qmin = rel.masked_fill(~mask, float("inf")).min(-1, keepdim=True).values
    shift = torch.where(qmin < 0, qmin, torch.zeros_like(qmin))
    return (torch.pow(2.0, rel - shift) - 1.0).masked_fill(~mask, 0.0)


def ndcg_at_k(pred_ranks: Ranks, judgments: torch.Tensor, mask: torch.Tensor, k: int,
              gain: str = "exponential") -> torch.Tensor:
    """DCG@k / ideal DCG@k, gains 2^rel - 1 (``gain="linear"``: max(rel, 0), see
    :data:`NDCG_GAINS`), discount 1 / log2(1 + r); with tie groups, the expected DCG (each item's
    gain times the mean discount over its group's positions, cut at k)."""
    gains = _gains(judgments, mask, gain)
    dcg = (gains * _expected(pred_ranks, lambda r: torch.where(r <= k, 1.0 / torch.log2(1.0 + r), 0.0))
           ).masked_fill(~mask, 0.0).sum(-1)
    ideal_ranks = ranks_from_order(order_by(gains, mask))
    idisc = 1.0 / torch.log2(1.0 + ideal_ranks.to(torch.float64))
    idcg = (gains * idisc * ((ideal_ranks <= k) & mask)).sum(-1)
    return torch.where(idcg > 0, dcg / idcg.clamp(min=1e-300), _NAN)


def mrr_at_k(pred_ranks: Ranks, judgments: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    """1 / (rank of the first relevant item) if it is within k, else 0; NaN without a relevant item.
    With tie groups, the exact expectation: the first group holding a relevant item (r relevant
    of its m members, starting at position f) puts its first relevant member at f - 1 + j with
    probability C(m - j, r - 1) / C(m, r), j = 1 .. m - r + 1."""
    rel = (judgments > 0) & mask
    if not isinstance(pred_ranks, TiedRanks):
        hit = rel & (pred_ranks <= k)
        big = pred_ranks.max() + 1 if pred_ranks.numel() else 1
        first = torch.where(hit, pred_ranks, torch.full_like(pred_ranks, big)).min(-1).values
        rr = torch.where(first <= k, 1.0 / first.to(torch.float64), torch.zeros_like(first, dtype=torch.float64))
        return torch.where(rel.any(-1), rr, _NAN)
    n = mask.shape[-1]
    big = n + 2
    f = torch.where(rel, pred_ranks.first, torch.full_like(pred_ranks.first, big)).min(-1, keepdim=True).values
    in_group = (pred_ranks.first == f) & mask  # the members of that first group
    m = in_group.sum(-1, keepdim=True).to(torch.float64)
    r = (in_group & rel).sum(-1, keepdim=True).to(torch.float64)
    j = torch.arange(1, n + 1, device=mask.device, dtype=torch.float64).expand(mask.shape[0], n)
    ok = (j <= m - r + 1) & (r > 0)
    # log C(m - j, r - 1) - log C(m, r), zero probability outside j <= m - r + 1
    lg = torch.lgamma
    log_p = (lg(m - j + 1) - lg(r) - lg((m - j - r + 2).clamp(min=1))) - (lg(m + 1) - lg(r + 1) - lg(m - r + 1))
    pos = f.to(torch.float64) - 1 + j
    rr = torch.where(ok & (pos <= k), torch.exp(log_p) / pos, 0.0).sum(-1)
    return torch.where(rel.any(-1), rr, _NAN)


def recall_at_k(pred_ranks: Ranks, judgments: torch.Tensor, mask: torch.Tensor, k: int) -> torch.Tensor:
    """Relevant items in the top k / relevant items (expected over the orders of tied scores)."""
    rel = (judgments > 0) & mask
    n_rel = rel.sum(-1).to(torch.float64)
    found = (_in_top(pred_ranks, k) * rel).sum(-1)
    return torch.where(n_rel > 0, found / n_rel.clamp(min=1), _NAN)
