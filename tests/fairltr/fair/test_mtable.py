"""The ranked group fairness test: docs/spec.md §4 reference values, the exact fail probability against
brute-force enumeration, and the exactness of the alpha adjustment."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from fairltr.errors import ConfigError
from fairltr.fair import adjust_alpha, clear_caches, fail_probability, is_fair, mtable


def brute_force_fail(m: np.ndarray, p: float) -> float:
    """Sum of p^c (1-p)^(k-c) over all 2^k group sequences that violate m at some prefix."""
    k = len(m)
    seqs = np.array(list(itertools.product((0, 1), repeat=k)), dtype=np.int64)
    prefix = np.cumsum(seqs, axis=1)
    fails = (prefix < np.asarray(m)[None, :]).any(axis=1)
    c = seqs.sum(axis=1)
    prob = p ** c * (1 - p) ** (k - c)
    return float(prob[fails].sum())


def breakpoints(k: int, p: float) -> np.ndarray:
    """All binomial CDF values F(j; i, p), i = 1..k, j = 0..i-1 (where the mtable can change)."""
    return np.unique(np.concatenate([stats.binom.cdf(np.arange(i), i, p) for i in range(1, k + 1)]))


# ------------------------------------------------------------------ the binomial functions against scipy.stats
@pytest.mark.parametrize("p", [0.02, 0.2, 0.5, 0.77, 0.98])
def test_binom_ppf_and_cdf_are_scipy_stats_own(p):
    """fairltr.fair.mtable computes the quantile and the CDF without importing scipy.stats (start-up
    time); they must be scipy.stats.binom's numbers: the quantile exactly (integers), the CDF to
    1e-15 relative, on every (j, n) with n <= 200, the edges j < 0 and j >= n included, and at
    q = every CDF value and its neighbouring doubles (where a quantile is most fragile)."""
    from fairltr.fair.mtable import binom_cdf, binom_ppf

    n = np.repeat(np.arange(1, 201), np.arange(1, 201) + 3)
    j = np.concatenate([np.arange(-1, i + 2) for i in range(1, 201)])
    np.testing.assert_allclose(binom_cdf(j, n, p), stats.binom.cdf(j, n, p), rtol=1e-15, atol=0)
    qs = np.unique(stats.binom.cdf(np.arange(0, 40), 40, p))
    qs = np.concatenate([qs, np.nextafter(qs, 0), np.nextafter(qs, 1), [1e-9, 0.1, 0.5, 0.9]])
    qs = qs[(qs > 0) & (qs < 1)]
    for q in qs:
        got = binom_ppf(q, np.arange(1, 201), p)
        assert np.array_equal(got, stats.binom.ppf(q, np.arange(1, 201), p)), q


# ------------------------------------------------------------------ docs/spec.md §4 reference values
def test_reference_k10_p02():
    m = mtable(10, 0.2, 0.15, adjust=False)
    assert m.tolist() == [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]
    assert fail_probability(m, 0.2) == pytest.approx(0.134218, abs=1e-6)


def test_reference_k20_p025():
    m = mtable(20, 0.25, 0.1, adjust=False)
    assert m.tolist() == [0] * 8 + [1] * 6 + [2] * 5 + [3]
    assert fail_probability(m, 0.25) == pytest.approx(0.146887, abs=1e-6)
    adj = mtable(20, 0.25, 0.1)
    assert adj.tolist() == [0] * 9 + [1] * 6 + [2] * 5
    assert fail_probability(adj, 0.25) == pytest.approx(0.089722, abs=1e-6)
    assert adjust_alpha(20, 0.25, 0.1) == pytest.approx(0.07508, abs=1e-4)


def test_reference_k10_p05():
    m = mtable(10, 0.5, 0.1, adjust=False)
    assert m.tolist() == [0, 0, 0, 1, 1, 1, 2, 2, 3, 3]
    assert fail_probability(m, 0.5) == pytest.approx(0.128906, abs=1e-6)
    adj = mtable(10, 0.5, 0.1)
    assert adj.tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 2, 3]
    assert fail_probability(adj, 0.5) == pytest.approx(0.089844, abs=1e-6)
    assert adjust_alpha(10, 0.5, 0.1) == pytest.approx(0.0625, abs=1e-9)
    # fairsearchcore 1.0.4's table for this case is not fair at alpha (docs/spec.md §4)
    assert fail_probability([0, 0, 0, 1, 1, 1, 2, 2, 2, 3], 0.5) == pytest.approx(0.111328, abs=1e-6)


def test_reference_k100_p03():
    adj = mtable(100, 0.3, 0.05)
    assert int(adj.sum()) == 852
    assert fail_probability(adj, 0.3) == pytest.approx(0.049952, abs=1e-6)


# ------------------------------------------------------------------ fail probability
@pytest.mark.parametrize("k", [1, 2, 5, 9, 12, 14])
def test_fail_probability_matches_brute_force_binomial_tables(k):
    rng = np.random.default_rng(k)
    for _ in range(3):
        p = float(rng.uniform(0.05, 0.95))
        alpha = float(rng.uniform(0.02, 0.5))
        for adjust in (False, True):
            m = mtable(k, p, alpha, adjust=adjust)
            assert fail_probability(m, p) == pytest.approx(brute_force_fail(m, p), abs=1e-12)


@pytest.mark.parametrize("k", [3, 8, 14])
def test_fail_probability_matches_brute_force_arbitrary_tables(k):
    """Any table 0 <= m(i) <= i, also with jumps and decreases (not just binomial ones)."""
    rng = np.random.default_rng(100 + k)
    for _ in range(5):
        p = float(rng.uniform(0.05, 0.95))
        m = np.array([rng.integers(0, i + 1) // 2 for i in range(1, k + 1)])
        assert fail_probability(m, p) == pytest.approx(brute_force_fail(m, p), abs=1e-12)


def naive_fail(m: np.ndarray, p: float) -> float:
    """Plain DP over the full count vector (no window, no scaling)."""
    a = np.zeros(len(m) + 1)
    a[0] = 1.0
    fail = 0.0
    for i, mi in enumerate(m):
        new = a * (1 - p)
        new[1:] += a[:-1] * p
        fail += new[:mi].sum()
        new[:mi] = 0.0
        a = new
    return fail


@pytest.mark.parametrize("p", [0.05, 0.5, 0.93])
def test_fail_probability_long_tables_match_plain_dp(p):
    """Long tables exercise the rescaling and the underflow window of the fast DP."""
    for alpha in (0.01, 0.3):
        m = mtable(1500, p, alpha, adjust=False)
        assert fail_probability(m, p) == pytest.approx(naive_fail(m, p), rel=1e-10, abs=1e-300)


def test_fail_probability_extremes():
    assert fail_probability(np.zeros(50, dtype=int), 0.3) == 0.0
    assert fail_probability(np.arange(1, 21), 0.5) == pytest.approx(1 - 0.5 ** 20, abs=1e-15)
    assert fail_probability([1], 0.2) == pytest.approx(0.8)


def test_fail_probability_rejects_bad_tables():
    with pytest.raises(ConfigError, match="outside 0..2"):
        fail_probability([0, 3], 0.5)
    with pytest.raises(ConfigError, match="integers"):
        fail_probability([0, 0.5], 0.5)
    with pytest.raises(ConfigError, match="non-empty"):
        fail_probability([], 0.5)
    with pytest.raises(ConfigError, match=r"\(0, 1\)"):
        fail_probability([0, 1], 1.0)


# ------------------------------------------------------------------ alpha adjustment
@pytest.mark.parametrize(
    "k,p,alpha", [(10, 0.5, 0.1), (20, 0.25, 0.1), (25, 0.1, 0.05), (30, 0.7, 0.2), (200, 0.3, 0.1), (500, 0.5, 0.05)]
)
def test_adjusted_table_is_fair_and_maximal(k, p, alpha):
    alpha_c = adjust_alpha(k, p, alpha)
    m = mtable(k, p, alpha)
    assert np.array_equal(m, stats.binom.ppf(alpha_c, np.arange(1, k + 1), p).astype(int))
    assert fail_probability(m, p) <= alpha
    # the next double, and the next CDF breakpoint above alpha_c, both give a table failing > alpha
    nxt = float(np.nextafter(alpha_c, 1.0))
    assert fail_probability(mtable(k, p, nxt, adjust=False), p) > alpha
    bp = breakpoints(k, p)
    above = bp[bp > alpha_c]
    assert fail_probability(mtable(k, p, float(above[0]), adjust=False), p) > alpha


@pytest.mark.parametrize("k,p,alpha", [
    (12, 0.3, 0.1), (18, 0.5, 0.05), (24, 0.15, 0.1),
    # extremes: the answer is alpha_c = 1 (m(i) = i) or the smallest breakpoint (m = 0)
    (1, 0.5, 0.5), (2, 0.5, 0.75), (5, 0.5, 0.99), (3, 0.99, 0.999), (4, 0.001, 0.5), (10, 0.5, 1e-12),
])
def test_adjustment_equals_exhaustive_search_over_breakpoints(k, p, alpha):
    """Independent check: try every breakpoint (and the double just above it) and keep the
    largest alpha_c whose table fails with probability <= alpha."""
    best = 0.0
    for b in np.append(breakpoints(k, p), 1.0):
        for a in (float(b), float(np.nextafter(b, 1.0))):
            if a <= 1 and fail_probability(stats.binom.ppf(a, np.arange(1, k + 1), p).astype(int), p) <= alpha:
                best = max(best, a)
    got = adjust_alpha(k, p, alpha)
    table = stats.binom.ppf(best, np.arange(1, k + 1), p).astype(int)
    assert np.array_equal(mtable(k, p, alpha), table)
    assert best <= got <= 1.0


def test_adjust_alpha_large_k_is_fair():
    m = mtable(2000, 0.4, 0.1)
    f = fail_probability(m, 0.4)
    assert 0.09 < f <= 0.1
    assert np.all(np.diff(m) >= 0) and np.all(np.diff(m) <= 1)


def test_mtable_cache_returns_copies():
    clear_caches()
    a = mtable(30, 0.4, 0.1)
    a[:] = 99
    assert mtable(30, 0.4, 0.1).max() < 30


# ------------------------------------------------------------------ is_fair
def test_is_fair():
    # m for (10, 0.5, 0.1) adjusted: [0,0,0,0,1,1,2,2,2,3]
    ok = [0, 0, 0, 0, 1, 0, 1, 0, 0, 1]
    assert is_fair(ok, 0.5, 0.1)
    assert not is_fair([0, 0, 0, 0, 0, 1, 1, 1, 1, 1], 0.5, 0.1)  # fails at position 5
    assert is_fair(np.array([2, 0, 0, 0, 0, 0, 3, 0, 0, 1]), 0.5, 0.1)  # groups >= 1 are protected
    assert is_fair([1, 0, 0, 0, 0, 1, 0, 0, 0, 1], 0.5, 0.1)
    assert not is_fair([1, 0, 0, 0, 0, 1, 0, 0, 0, 1], 0.5, 0.1, adjust=False)  # unadjusted m(9) = 3
    assert is_fair([], 0.5, 0.1)


# ------------------------------------------------------------------ domain errors
@pytest.mark.parametrize("k", [0, -3, 2.5, True, "10"])
def test_k_domain(k):
    with pytest.raises(ConfigError, match=">= 1"):
        mtable(k, 0.5, 0.1)


@pytest.mark.parametrize("name,args", [
    ("p", (10, 0.0, 0.1)), ("p", (10, 1.0, 0.1)), ("p", (10, -0.2, 0.1)), ("p", (10, float("nan"), 0.1)),
    ("alpha", (10, 0.5, 0.0)), ("alpha", (10, 0.5, 1.0)), ("alpha", (10, 0.5, 2)),
])
def test_p_alpha_domain(name, args):
    for fn in (mtable, adjust_alpha):
        with pytest.raises(ValueError, match=rf"{name} must be in the open interval \(0, 1\)"):
            fn(*args)
    with pytest.raises(ConfigError):
        is_fair([0, 1], args[1], args[2])
