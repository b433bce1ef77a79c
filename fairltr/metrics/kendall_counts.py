"""The pair counts of Kendall's tau-b per query, O(n log n), vectorised over queries (numpy).

For each query (row of a padded (Q, N) table): n0 = n (n - 1) / 2, n1 / n2 the pairs tied in x / in
y, n3 the pairs tied in both, n_d the discordant pairs (x and y ordered oppositely). Method: dense
ranks of x and y (one quicksort per row), the items sorted by (x, y) (one integer quicksort per row),
then n_d = the strict inversions of y in that order. The inversions are counted by
:mod:`fairltr.metrics.kendall_kernels` (a Fenwick tree per row, numba) where the compiled kernels
pay (:func:`fairltr.compiled.pays`), else by a most-significant-bit-first radix pass in numpy:
O(N) per bit of y's rank (a few bits for graded judgments, log2 N for continuous ones). Counts are
symmetric in x and y, so the variable with fewer distinct values plays y. Padded slots rank last in
both variables and add no pair.
"""

from __future__ import annotations

import numpy as np

from fairltr.compiled import pays

__all__ = ["pair_counts", "strict_inversions", "KERNELS"]

KERNELS = "fairltr.metrics.kendall_kernels"


def _dense_integer_ranks(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int] | None:
    """:func:`_dense_ranks` without a sort when the real values are integers spanning fewer than
    4 N + 16 (plain ranks, graded or binary judgments): a per-row presence table and its cumsum."""
    q, n = values.shape
    real = values[mask]
    if real.size == 0 or not np.isfinite(real).all():
        return None
    lo, hi = real.min(), real.max()
    span = hi - lo + 1
    if span >= 4 * n + 16 or q * span > 8 * q * n + 1024 or not (real == np.round(real)).all():
        return None
    span = int(span)
    offset = np.where(mask, values - lo, 0).astype(np.int64) + np.arange(q, dtype=np.int64)[:, None] * span
    present = np.zeros(q * span, dtype=np.int64)
    present[offset[mask]] = 1
    dense_of = (np.cumsum(present.reshape(q, span), axis=1) - 1).ravel()
    dense = dense_of[offset]
    pad = int(dense[mask].max()) + 1
    return np.where(mask, dense, pad), pad


def _dense_ranks(values: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, int]:
    """0-based dense rank of each real slot by increasing value (equal values share one) and the rank
    given to padding: one more than the largest real rank over all queries."""
    fast = _dense_integer_ranks(values, mask)
    if fast is not None:
        return fast
    key = np.where(mask, values, np.inf)
    order = np.argsort(key, axis=1)
    sorted_values = np.take_along_axis(key, order, axis=1)
    sorted_mask = np.take_along_axis(mask, order, axis=1)
    new_value = np.ones(key.shape, dtype=np.int64)
    new_value[:, 1:] = sorted_values[:, 1:] != sorted_values[:, :-1]
    dense = np.cumsum(new_value, axis=1) - 1
    pad = int(np.where(sorted_mask, dense, -1).max(initial=-1)) + 1
    dense = np.where(sorted_mask, dense, pad)
    out = np.empty_like(dense)
    np.put_along_axis(out, order, dense, axis=1)
    return out, pad


def _tied_pairs_by_count(ranks: np.ndarray, pad: int) -> np.ndarray:
    """Per row: sum over distinct ranks < pad of c (c - 1) / 2, c the rank's count."""
    q = ranks.shape[0]
    counts = np.bincount((np.arange(q)[:, None] * (pad + 1) + ranks).ravel(), minlength=q * (pad + 1))
    counts = counts.reshape(q, pad + 1)[:, :pad].astype(np.float64)
    return (counts * (counts - 1) / 2).sum(axis=1)


def _tied_sorted_pairs(sorted_keys: np.ndarray, pad_key: int) -> np.ndarray:
    """Per row of sorted keys: pairs of equal keys, the padding key left out."""
    n = sorted_keys.shape[1]
    idx = np.broadcast_to(np.arange(n), sorted_keys.shape)
    start = np.ones(sorted_keys.shape, dtype=bool)
    start[:, 1:] = sorted_keys[:, 1:] != sorted_keys[:, :-1]
    run_start = np.maximum.accumulate(np.where(start, idx, 0), axis=1)
    return ((idx - run_start) * (sorted_keys != pad_key)).sum(axis=1).astype(np.float64)


def strict_inversions(ranks: np.ndarray, top: int) -> np.ndarray:
    """#{(i, j): i < j, ranks_i > ranks_j} per row of the (Q, N) int64 ``ranks`` in [0, top], numpy.

    MSB first: before bit b the slots are stably ordered by (row, ranks >> (b + 1)), so every group of
    equal prefix is contiguous; a pair is counted at the first bit where its ranks differ (a 1 before
    a 0: the 1s earlier in the group, summed over the group's 0s), then each group is stably split
    into its 0s and its 1s, which is the order by (row, ranks >> b). O(N) a bit."""
    q, n = ranks.shape
    total = q * n
    bits = max(1, int(top).bit_length())
    cur = np.ascontiguousarray(ranks, dtype=np.int64).ravel()
    idx = np.arange(total, dtype=np.int64)
    first = np.zeros(total, dtype=bool)
    first[::n] = True  # each row is one group before the first bit
    inversions = np.zeros(q, dtype=np.float64)
    for b in reversed(range(bits)):
        gid = np.cumsum(first) - 1
        firsts = np.flatnonzero(first)
        start = firsts[gid]
        bit = (cur >> b) & 1
        ones_excl = np.cumsum(bit) - bit
        ones_before = ones_excl - ones_excl[start]  # 1s earlier in the same group
        inversions += (ones_before * (1 - bit)).reshape(q, n).sum(axis=1)
        sizes = np.diff(np.append(firsts, total))
        zeros = sizes - np.add.reduceat(bit, firsts)
        position = start + np.where(bit == 1, zeros[gid] + ones_before, idx - start - ones_before)
        new = np.empty_like(cur)
        new[position] = cur
        cur = new
        split = (zeros > 0) & (zeros < sizes)
        first[firsts[split] + zeros[split]] = True  # the 1s of a group start a group of their own
    return inversions


def pair_counts(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, ...]:
    """(n0, n1, n2, n3, n_d) per row (float64) of the (Q, N) float64 ``x``, ``y`` and bool ``mask``."""
    q, n = mask.shape
    if n == 0:
        zero = np.zeros(q)
        return zero, zero, zero, zero, zero
    x_rank, x_pad = _dense_ranks(x, mask)
    y_rank, y_pad = _dense_ranks(y, mask)
    swapped = x_pad < y_pad  # symmetric counts: the inversions in the variable with fewer distinct values
    if swapped:
        x_rank, x_pad, y_rank, y_pad = y_rank, y_pad, x_rank, x_pad
    width = y_pad + 1
    valid = mask.sum(axis=1).astype(np.float64)
    n0 = valid * (valid - 1) / 2
    n1 = _tied_pairs_by_count(x_rank, x_pad)
    n2 = _tied_pairs_by_count(y_rank, y_pad)
    if not n1.any():  # x has no ties: its dense ranks 0..n_q - 1 are the places in x order
        rows, cols = np.nonzero(mask)
        y_sorted = np.full((q, n), y_pad, dtype=np.int64)  # padding last (largest y rank): no pair
        y_sorted[rows, x_rank[rows, cols]] = y_rank[rows, cols]
        n3 = np.zeros(q)
    else:
        joint = x_rank * width + y_rank  # padding carries the largest rank in both: sorts last, adds no pair
        joint_sorted = np.sort(joint, axis=1)
        y_sorted = joint_sorted - (joint_sorted // width) * width
        n3 = _tied_sorted_pairs(joint_sorted, x_pad * width + y_pad)
    bits = max(1, int(y_pad).bit_length())
    if pays(KERNELS, 1.2e-9 * 30 * q * n * bits):
        from fairltr.metrics.kendall_kernels import strict_inversions_rows

        n_d = strict_inversions_rows(np.ascontiguousarray(y_sorted), y_pad)
    else:
        n_d = strict_inversions(y_sorted, y_pad)
    if swapped:
        n1, n2 = n2, n1
    return n0, n1, n2, n3, n_d
