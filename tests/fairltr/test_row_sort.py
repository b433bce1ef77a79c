"""fairltr.row_sort (numba): the run sort + merge against numpy's sort, and the exact stable
argsort against numpy's stable argsort (ties, signed zeros, infinities, near-equal values that
force the fallback)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("numba", reason="the compiled sorts need numba (the [fast] extra)")
from fairltr import row_sort  # noqa: E402


@pytest.mark.parametrize("n", [257, 300, 512, 700, 1000, 1500, 2049])
def test_wide_rows_sort_in_runs_and_merge_like_numpy(n):
    """Rows wider than one run (256) are sorted in runs and merged: numpy's sort of the same
    (distinct, as packed keys are) keys, with the run padding (int64 max) left at the end."""
    rng = np.random.default_rng(n)
    width = row_sort.key_width(n)
    assert width % row_sort.RUN == 0 and width >= n
    keys = np.full((6, width), np.iinfo(np.int64).max, dtype=np.int64)
    keys[:, :n] = rng.permuted(np.tile(np.arange(n, dtype=np.int64) * 7919 + 3, (6, 1)), axis=1)  # distinct
    keys[1, :n] = np.arange(n)[::-1]             # reversed
    keys[2, :n] = np.arange(n)                   # already sorted
    want = np.sort(keys, axis=-1)
    row_sort.sort_rows(keys, n)
    assert np.array_equal(keys, want)



@pytest.mark.parametrize("n", [100, 257, 1000, 5000])
def test_stable_argsort_rows_is_numpys_stable_argsort(n):
    rng = np.random.default_rng(n)
    values = np.stack([
        rng.standard_normal(n),                          # distinct
        np.round(rng.standard_normal(n), 1),             # many ties: index order among equals
        np.where(rng.random(n) < 0.1, np.inf, rng.standard_normal(n) * 1e300),  # huge, +inf
        np.where(rng.random(n) < 0.5, -0.0, 0.0) * rng.integers(0, 2, n),       # +-0.0 are equal
        -np.abs(rng.standard_normal(n)) - np.where(rng.random(n) < 0.1, np.inf, 0),  # negatives, -inf
    ])
    want = np.argsort(values, axis=-1, kind="stable")
    assert np.array_equal(row_sort.stable_argsort_rows(values), want)


def test_values_equal_in_their_high_bits_fall_back_to_numpy():
    """1 + k 2^-52 for k = 0..n-1 differ only in the low mantissa bits that carry the index: the
    packed order is wrong, the check sees it and the row is sorted by numpy instead."""
    n = 600
    values = (1.0 + np.arange(n)[::-1] * 2.0 ** -52)[None, :]
    assert np.array_equal(row_sort.stable_argsort_rows(values), np.argsort(values, axis=-1, kind="stable"))
