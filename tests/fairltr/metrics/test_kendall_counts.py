"""fairltr.metrics.kendall_counts: the radix and the compiled inversion counts against brute force,
and the pair counts with and without the compiled kernels against scipy's tau-b."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from fairltr.metrics.kendall_counts import pair_counts, strict_inversions


def _brute(row):
    return sum(1 for i in range(len(row)) for j in range(i + 1, len(row)) if row[i] > row[j])


@pytest.mark.parametrize("top", [1, 4, 37, 300])
def test_radix_and_compiled_inversions_equal_brute_force(top):
    rng = np.random.default_rng(top)
    ranks = rng.integers(0, top + 1, size=(7, 53))
    want = [_brute(r.tolist()) for r in ranks]
    assert strict_inversions(ranks, top).tolist() == want
    pytest.importorskip("numba")
    from fairltr.metrics.kendall_kernels import strict_inversions_rows

    assert strict_inversions_rows(ranks, top).tolist() == want


@pytest.mark.parametrize("compiled", ["0", "1"])
@pytest.mark.parametrize("kind", ["graded", "binary", "continuous", "tied_x"])
def test_pair_counts_give_scipy_tau_b(monkeypatch, compiled, kind):
    if compiled == "1":
        pytest.importorskip("numba")
    monkeypatch.setenv("FAIRLTR_COMPILED", compiled)
    rng = np.random.default_rng(len(kind))
    q, n = 9, 120
    mask = rng.random((q, n)) < 0.85
    y = {"graded": rng.integers(0, 5, (q, n)).astype(float), "binary": rng.integers(0, 2, (q, n)).astype(float),
         "continuous": rng.random((q, n)), "tied_x": rng.random((q, n))}[kind]
    x = np.round(rng.random((q, n)), 1) if kind == "tied_x" else rng.permutation(q * n).reshape(q, n).astype(float)
    n0, n1, n2, n3, nd = pair_counts(x, y, mask)
    tau = (n0 - n1 - n2 + n3 - 2 * nd) / np.sqrt((n0 - n1) * (n0 - n2))
    want = [kendalltau(x[i][mask[i]], y[i][mask[i]]).statistic for i in range(q)]
    np.testing.assert_allclose(tau, want, rtol=0, atol=1e-12)
