"""Fast sorts of int64 rows (numba, the ``[fast]`` extra): numpy's sorting network on runs of 256,
merged by a compiled loop; and an exact stable argsort of float rows built on it.

numpy sorts an int64 row of <= 256 elements with a SIMD network (about 1.7 ns per element here);
longer rows go to its quicksort, whose partition step is slow on some CPUs (AMD EPYC here: 9 ns
per element at 500, 60 ns at 10^5). :func:`sort_rows` sorts runs of :data:`RUN` with the network
and merges them (about 1.7 ns per element per merge level). :func:`stable_argsort_rows` orders
float rows by packing each element's index into the low bits of an order-preserving int64 image
of the value, sorting those, and checking the adjacent pairs whose images agree in all but the
index bits against the exact values (rows that fail fall back to numpy's stable argsort):
the result is exactly ``np.argsort(values, axis=-1, kind="stable")``.
"""

from __future__ import annotations

import numpy as np
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["RUN", "key_width", "sort_rows", "stable_argsort_rows"]

# rows wider than this are sorted in runs of RUN and merged (numpy's network sorts <= 256 wide)
RUN = 256


_BIG = np.iinfo(np.int64).max
_SMALL = np.iinfo(np.int64).min


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _merge_runs(keys, run, length, scratch):  # pragma: no cover - compiled
    """Bottom-up merge of the first ``length`` columns of every row of ``keys`` (R, W), whose
    runs of ``run`` are each sorted, into one sorted prefix (columns past ``length`` are left as
    they are; ``scratch``: at least W + 4 int64; keys distinct, as packed keys are). Each merge
    copies its two runs A, B into ``scratch`` between sentinels (int64 min and max), finds by
    binary search how many of the smaller half of the outputs come from A (the merge path), and
    writes the two halves back merged from both of their ends: four independent branch-free
    chains with no bound test. Long because the four chains share their cursors in registers."""
    R, W = keys.shape
    flat = keys.reshape(-1)
    for r in range(R):
        base = np.uint64(r) * np.uint64(W)
        width = run
        while width < length:
            for lo in range(0, length - width, 2 * width):
                mid = lo + width
                hi = min(lo + 2 * width, length)
                la = mid - lo
                lb = hi - mid
                scratch[0] = _SMALL
                for x in range(la):
                    scratch[1 + x] = flat[base + np.uint64(lo + x)]
                scratch[1 + la] = _BIG
                sb = la + 2  # B's sentinel; B[x] at sb + 1 + x
                scratch[sb] = _SMALL
                for x in range(lb):
                    scratch[sb + 1 + x] = flat[base + np.uint64(mid + x)]
                scratch[sb + 1 + lb] = _BIG
                h1 = (la + lb) // 2  # outputs of the first half; the second half has the rest
                h2 = la + lb - h1
                low_i = max(0, h1 - lb)
                high_i = min(h1, la)
                while low_i < high_i:  # the first half takes A[:i] and B[:h1 - i]
                    i = (low_i + high_i) // 2
                    if scratch[1 + i] < scratch[sb + h1 - i]:
                        low_i = i + 1
                    else:
                        high_i = i
                cut_a = low_i
                cut_b = h1 - low_i
                front1_a, front1_b = 1, sb + 1                         # half 1 from its smallest
                back1_a, back1_b = cut_a, sb + cut_b                   # half 1 from its largest
                front2_a, front2_b = 1 + cut_a, sb + 1 + cut_b         # half 2 from its smallest
                back2_a, back2_b = la, sb + lb                         # half 2 from its largest
                n1f = h1 // 2
                n1b = h1 - n1f
                n2f = h2 // 2
                n2b = h2 - n2f
                for t in range(max(n1b, n2b)):
                    if t < n1f:
                        a = scratch[front1_a]
                        b = scratch[front1_b]
                        take_b = b < a
                        flat[base + np.uint64(lo + t)] = b if take_b else a
                        front1_b += take_b
                        front1_a += 1 - take_b
                    if t < n1b:
                        a = scratch[back1_a]
                        b = scratch[back1_b]
                        take_a = a > b
                        flat[base + np.uint64(lo + h1 - 1 - t)] = a if take_a else b
                        back1_a -= take_a
                        back1_b -= 1 - take_a
                    if t < n2f:
                        a = scratch[front2_a]
                        b = scratch[front2_b]
                        take_b = b < a
                        flat[base + np.uint64(lo + h1 + t)] = b if take_b else a
                        front2_b += take_b
                        front2_a += 1 - take_b
                    if t < n2b:
                        a = scratch[back2_a]
                        b = scratch[back2_b]
                        take_a = a > b
                        flat[base + np.uint64(hi - 1 - t)] = a if take_a else b
                        back2_a -= take_a
                        back2_b -= 1 - take_a
            width *= 2


def sort_rows(keys: np.ndarray, length: int) -> None:
    """Sort every row of the int64 ``keys`` (..., W) in place (keys strictly between int64 min and
    max, distinct within a row): W <= RUN, or W a multiple of RUN whose columns past ``length``
    hold int64 max (they stay last)."""
    width = keys.shape[-1]
    if width <= RUN:
        keys.sort(axis=-1)
        return
    rows = keys.reshape(-1, width)
    rows.reshape(-1, RUN).sort(axis=-1)
    _merge_runs(rows, RUN, length, np.empty(width + 4, dtype=np.int64))  # the merge's sentinel scratch


def key_width(n: int) -> int:
    """The stored row width for rows of n candidates: n, or n rounded up to a multiple of RUN."""
    return n if n <= RUN else -(-n // RUN) * RUN


def stable_argsort_rows(values: np.ndarray) -> np.ndarray:
    """``np.argsort(values, axis=-1, kind="stable")`` for float64 ``values`` (Q, n) without NaN
    (+-inf allowed), int64. Rows of <= RUN elements go to numpy directly (its network is fast)."""
    values = np.ascontiguousarray(values, dtype=np.float64)
    q, n = values.shape
    if n <= RUN or n >= 1 << 40:
        return np.argsort(values, axis=-1, kind="stable")
    bits = max(1, (n - 1).bit_length())
    width = key_width(n)
    keys = np.empty((q, width), dtype=np.int64)
    _order_keys(values, np.int64((1 << bits) - 1), keys)
    sort_rows(keys, n)
    order = np.empty((q, n), dtype=np.int64)
    bad = np.zeros(q, dtype=np.bool_)
    _unpack_and_check(keys, np.int64((1 << bits) - 1), values, order, bad)
    if bad.any():
        order[bad] = np.argsort(values[bad], axis=-1, kind="stable")
    return order


@njit(cache=True, nogil=True, boundscheck=False)
def _order_keys(values, low, keys):  # pragma: no cover - compiled
    """keys[q, k] = an int64 that orders as values[q, k] (the IEEE bits; for a negative double
    every bit but the sign flipped, so that the int order is the value order; -0.0 read as +0.0),
    its low bits replaced by k (so the keys are distinct, strictly between int64 min and max);
    columns past n get int64 max."""
    Q, n = values.shape
    width = keys.shape[1]
    high = ~low
    for q in range(Q):
        for k in range(n):
            x = np.float64(values[q, k] + 0.0)
            bits = x.view(np.int64)
            ordered = bits ^ ((bits >> np.int64(63)) & np.int64(9223372036854775807))
            keys[q, k] = (ordered & high) | k
        for k in range(n, width):
            keys[q, k] = 9223372036854775807


@njit(cache=True, nogil=True, boundscheck=False)
def _unpack_and_check(keys, low, values, order, bad):  # pragma: no cover - compiled
    """order = keys & low; bad[q] when two adjacent keys of row q share their high bits (the
    value's image without the index bits) and their values are out of order. Keys whose high bits
    differ are ordered as their values (the image is monotone); equal values share the high bits
    and are in index order already (the low bits), so only those pairs are read back."""
    Q, n = order.shape
    high = ~low
    for q in range(Q):
        prev = keys[q, 0]
        order[q, 0] = prev & low
        for k in range(1, n):
            cur = keys[q, k]
            order[q, k] = cur & low
            if (cur & high) == (prev & high) and values[q, prev & low] > values[q, cur & low]:
                bad[q] = True
            prev = cur
