"""Compiled strict-inversion count for Kendall's tau (numba, the ``[fast]`` extra; see
:mod:`fairltr.metrics.kendall_counts`). Importing this module imports numba."""

from __future__ import annotations

import numpy as np

from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["strict_inversions_rows"]


@njit(cache=True, nogil=True, boundscheck=False)
def _inversions(ranks, top, out):  # pragma: no cover - compiled
    q, n = ranks.shape
    tree = np.zeros(top + 2, dtype=np.int64)  # Fenwick tree over ranks 0..top (1-based inside)
    for r in range(q):
        tree[:] = 0
        inv = 0
        for j in range(n):
            v = ranks[r, j] + 1
            # earlier items with rank <= this one
            i, le = v, 0
            while i > 0:
                le += tree[i]
                i -= i & (-i)
            inv += j - le
            i = v
            while i <= top + 1:
                tree[i] += 1
                i += i & (-i)
        out[r] = inv


def strict_inversions_rows(ranks: np.ndarray, top: int) -> np.ndarray:
    """#{(i, j): i < j, ranks_i > ranks_j} per row of the (Q, N) int64 ``ranks`` in [0, top] (float64)."""
    out = np.zeros(ranks.shape[0], dtype=np.int64)
    _inversions(np.ascontiguousarray(ranks, dtype=np.int64), np.int64(top), out)
    return out.astype(np.float64)
