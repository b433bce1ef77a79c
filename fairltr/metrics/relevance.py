"""Relevance metrics over padded queries, vectorised (docs/spec.md §3). Undefined values are NaN.

* precision_at_k = |top-k(pred) ∩ top-k(truth)| / k (docs/spec.md §3, also for n_q < k), truth = order by judgment.
* kendall_tau = Kendall's tau-b between predicted positions and judgments (ties in
  judgments are ties), O(n log n) per query (Knight's algorithm); NaN for n_q < 2 or all-equal judgments.
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
    pred_ranks: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor, block: int | None = None
) -> torch.Tensor:
    """Kendall's tau-b per query in O(n log n) (Knight's algorithm), vectorised over queries. (Q,) float64.

    tau_b = (n0 - n1 - n2 + n3 - 2 n_d) / sqrt((n0 - n1) (n0 - n2)) with n0 = n (n - 1) / 2, n1 / n2 the
    pairs tied in x = -pred_ranks / in y = judgments, n3 the pairs tied in both and n_d the discordant
    pairs: the strict inversions of y once the items are sorted by (x, y), counted bit by bit of y's
    dense rank (the variable with fewer distinct values plays y). NaN where the denominator is
    0 (n_q < 2, all-equal judgments or all-equal ranks). ``block`` is accepted and unused (the pairwise
    version's memory bound; this one holds O(Q N))."""
    del block
    q, n = mask.shape
    device = mask.device
    if n == 0:
        return torch.full((q,), _NAN, dtype=torch.float64, device=device)
    x_rank, x_pad = _dense_ranks((-pred_ranks).to(torch.float64), mask)
    y_rank, y_pad = _dense_ranks(judgments.to(torch.float64), mask)
    if x_pad < y_pad:  # tau is symmetric: count inversions in the variable with fewer distinct values
        x_rank, x_pad, y_rank, y_pad = y_rank, y_pad, x_rank, x_pad
    # sort by (x, y); padded slots carry the largest rank in both, so they sort last and add no inversion
    width = y_pad + 1
    joint = x_rank * width + y_rank
    order = torch.sort(joint, dim=-1).indices
    y_sorted = y_rank.gather(-1, order)
    valid = mask.sum(-1).to(torch.float64)
    n0 = valid * (valid - 1) / 2
    n1 = _tied_pairs_by_count(x_rank, x_pad)
    n2 = _tied_pairs_by_count(y_rank, y_pad)
    n3 = _tied_pairs(joint.gather(-1, order), x_pad * width + y_pad)
    n_d = _strict_inversions(y_sorted, y_pad)
    denom = torch.sqrt((n0 - n1) * (n0 - n2))
    tau = torch.where(denom > 0, (n0 - n1 - n2 + n3 - 2 * n_d) / denom.clamp(min=1e-300), _NAN)
    # today's NaN policy: a NaN among a query's real ranks or judgments makes its tau NaN
    bad = ((pred_ranks.to(torch.float64).isnan() | judgments.to(torch.float64).isnan()) & mask).any(-1)
    return tau.masked_fill(bad, _NAN)


def _dense_ranks(values: torch.Tensor, mask: torch.Tensor) -> tuple[torch.Tensor, int]:
    """0-based dense rank of each real slot by increasing value (equal values share one) and the rank
    given to padding: one more than the largest real rank over all queries."""
    key = values.masked_fill(~mask, float("inf"))
    sorted_values, order = torch.sort(key, dim=-1, stable=True)
    sorted_mask = mask.gather(-1, order)
    new_value = torch.ones_like(sorted_mask)
    new_value[..., 1:] = sorted_values[..., 1:] != sorted_values[..., :-1]
    dense = torch.cumsum(new_value.to(torch.int64), dim=-1) - 1
    pad = int(dense.masked_fill(~sorted_mask, -1).max()) + 1 if dense.numel() else 0
    dense = dense.masked_fill(~sorted_mask, pad)
    return torch.empty_like(dense).scatter_(-1, order, dense), pad


def _run_starts(sorted_keys: torch.Tensor) -> torch.Tensor:
    """Index of the first slot of each slot's run of equal keys (keys sorted along the last dim)."""
    n = sorted_keys.shape[-1]
    idx = torch.arange(n, device=sorted_keys.device).expand_as(sorted_keys)
    start = torch.ones_like(sorted_keys, dtype=torch.bool)
    start[..., 1:] = sorted_keys[..., 1:] != sorted_keys[..., :-1]
    return torch.cummax(torch.where(start, idx, torch.zeros_like(idx)), dim=-1).values


def _tied_pairs(sorted_keys: torch.Tensor, pad: int) -> torch.Tensor:
    """sum over runs of equal keys of t (t - 1) / 2 = sum over slots of the equal slots before it;
    slots holding the padding key ``pad`` are left out. (Q,) float64."""
    idx = torch.arange(sorted_keys.shape[-1], device=sorted_keys.device)
    before = (idx - _run_starts(sorted_keys)) * (sorted_keys != pad)
    return before.sum(-1).to(torch.float64)


def _tied_pairs_by_count(ranks: torch.Tensor, pad: int) -> torch.Tensor:
    """sum over distinct ranks of c (c - 1) / 2 with c the rank's count per row; padding left out."""
    counts = torch.zeros(ranks.shape[0], pad + 1, dtype=torch.int64, device=ranks.device)
    counts.scatter_add_(-1, ranks, torch.ones_like(ranks))
    counts = counts[:, :pad]
    return (counts * (counts - 1) // 2).sum(-1).to(torch.float64)


def _strict_inversions(ranks: torch.Tensor, n: int) -> torch.Tensor:
    """#{(i, j): i < j, ranks_i > ranks_j} per row, for integer ranks in [0, n]. (Q,) float64.

    A most-significant-bit-first radix pass: at bit b the slots are ordered by (ranks >> (b + 1),
    position), so every run of equal prefix is contiguous; each pair is counted at the first bit
    where its ranks differ (a 1 before a 0), then each run is stably split into its 0s and its 1s.
    Every bit costs O(N) (cumulative sums and one scatter), so the count is O(N log n), n + 1 the
    number of distinct ranks (a few bits for graded judgments, log N at most)."""
    q, length = ranks.shape
    idx = torch.arange(length, device=ranks.device).expand(q, length)
    inversions = torch.zeros(q, dtype=torch.int64, device=ranks.device)
    current = ranks.clone()
    for b in reversed(range(max(1, int(n).bit_length()))):
        bit = (current >> b) & 1
        start = _run_starts(current >> (b + 1))
        ones_incl = torch.cumsum(bit, dim=-1)
        ones_before_run = (ones_incl - bit).gather(-1, start)
        ones_before = ones_incl - bit - ones_before_run  # 1s earlier in the same run
        inversions += (ones_before * (1 - bit)).sum(-1)
        # run totals at the run's last slot: the next run's start - 1 (or the row's end)
        run_end = torch.flip(torch.cummin(torch.flip(torch.where(
            torch.cat([start[:, 1:] != start[:, :-1], torch.ones_like(start[:, :1], dtype=torch.bool)], -1),
            idx, torch.full_like(idx, length)), [-1]), dim=-1).values, [-1])
        ones_in_run = ones_incl.gather(-1, run_end) - ones_before_run
        zeros_in_run = run_end - start + 1 - ones_in_run
        zeros_before = idx - start - ones_before
        position = start + torch.where(bit == 0, zeros_before, zeros_in_run + ones_before)
        current = torch.empty_like(current).scatter_(-1, position, current)
    return inversions.to(torch.float64)


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
