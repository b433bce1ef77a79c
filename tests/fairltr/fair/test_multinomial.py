"""Multinomial FA*IR's test (fairltr.fair.multinomial): the exact fail probability against brute-force
enumeration of every ranking of group labels, the exactness of the alpha adjustment, the exact
reduction to binomial FA*IR at one protected group (docs/spec.md §4 reference values), and the
parameter checks."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from fairltr.compiled import compiled_enabled
from fairltr.errors import ConfigError
from fairltr.fair import adjust_alpha, fail_probability, is_fair, mtable
from fairltr.fair.multinomial import (
    _fail_numpy, _joint_table_at, check_multinomial_params, first_violation, multinomial_adjust_alpha,
    multinomial_fail_probability, multinomial_is_fair, multinomial_mtable,
)


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(tmp_path / "cache"))


def brute_force_fail(m: np.ndarray, p) -> float:
    """Sum over all (g + 1)^k label sequences that violate m (some prefix i with fewer than
    m_j(i) of group j) of their probability prod_i p_{label_i} (label 0 = non-protected)."""
    k, g = m.shape
    probs = np.array([1.0 - math.fsum(p), *p])
    seqs = np.array(list(itertools.product(range(g + 1), repeat=k)), dtype=np.int64)  # (S, k)
    counts = np.cumsum(seqs[:, :, None] == np.arange(1, g + 1)[None, None, :], axis=1)  # (S, k, g)
    fails = (counts < m[None, :, :]).any(axis=(1, 2))
    prob = np.prod(probs[seqs], axis=1)
    return math.fsum(prob[fails])


CASES = [((0.3, 0.2), 7), ((0.1, 0.5), 8), ((0.2, 0.2, 0.2), 6), ((0.45,), 10), ((0.05, 0.9), 7),
         ((0.25, 0.25, 0.25), 6)]


@pytest.mark.parametrize("p,k", CASES)
@pytest.mark.parametrize("alpha_c", [0.05, 0.2, 0.45])
def test_fail_probability_matches_enumeration_on_quantile_tables(p, k, alpha_c):
    m = _joint_table_at(k, p, alpha_c)
    want = brute_force_fail(m, p)
    assert multinomial_fail_probability(m, p) == pytest.approx(want, rel=1e-12, abs=1e-15)
    got, dropped = _fail_numpy(m, p)
    assert got == pytest.approx(want, rel=1e-12, abs=1e-15) and dropped == 0.0


def test_fail_probability_matches_enumeration_on_arbitrary_tables():
    """Any integer table with 0 <= m_j(i) <= i (jumps of several, infeasible sums), not only
    quantile ones; both the numpy and the compiled programme."""
    rng = np.random.default_rng(3)
    for _ in range(40):
        g = int(rng.integers(1, 4))
        k = int(rng.integers(1, 8 if g < 3 else 6))
        p = tuple(rng.dirichlet(np.ones(g + 1))[:g] * 0.98)
        m = np.minimum(rng.integers(0, 3, size=(k, g)).cumsum(axis=0) * (rng.random((k, g)) < 0.7),
                       np.arange(1, k + 1)[:, None])
        m = np.maximum.accumulate(m, axis=0)
        want = brute_force_fail(m, p)
        assert _fail_numpy(m, p)[0] == pytest.approx(want, rel=1e-12, abs=1e-15)
        if compiled_enabled():
            from fairltr.fair.multinomial_kernels import fail_probability_kernel

            got = fail_probability_kernel(m.astype(np.int64), np.array(p), 1.0 - math.fsum(p), 1e-30)[0]
            assert got == pytest.approx(want, rel=1e-12, abs=1e-15)


@pytest.mark.skipif(not compiled_enabled(), reason="numba not installed or FAIRLTR_COMPILED=0")
@pytest.mark.parametrize("p,k,alpha_c", [((0.2, 0.3), 400, 0.006), ((0.1, 0.2, 0.3), 80, 0.01),
                                         ((0.4,), 900, 0.02), ((0.05, 0.05), 300, 0.01)])
def test_compiled_programme_equals_numpy(p, k, alpha_c):
    """Long tables, where slices are dropped: the same probability and the same dropped mass
    (tiny: the error bound) from both programmes."""
    from fairltr.fair.multinomial_kernels import fail_probability_kernel

    m = _joint_table_at(k, p, alpha_c)
    want, dropped = _fail_numpy(m, p)
    got, got_dropped = fail_probability_kernel(m, np.array(p), 1.0 - math.fsum(p), 1e-30)
    assert got == pytest.approx(want, rel=1e-12)
    assert dropped < 1e-25 and got_dropped == pytest.approx(dropped, rel=1e-6, abs=1e-40)


# ------------------------------------------------------------------ the adjustment
@pytest.mark.parametrize("p,k,alpha", [((0.3, 0.2), 7, 0.1), ((0.1, 0.5), 8, 0.2), ((0.2, 0.2, 0.2), 6, 0.15),
                                       ((0.45,), 10, 0.1), ((0.25, 0.25, 0.25), 6, 0.3), ((0.3, 0.3), 8, 0.05)])
def test_adjusted_alpha_is_the_largest_passing_double(p, k, alpha):
    """By enumeration: the returned alpha_c's table fails with probability <= alpha and the next
    larger double's table fails with probability > alpha (so no larger alpha_c passes: the tables
    grow with alpha_c in every entry)."""
    a = multinomial_adjust_alpha(k, p, alpha)
    assert brute_force_fail(_joint_table_at(k, p, a), p) <= alpha
    assert brute_force_fail(_joint_table_at(k, p, np.nextafter(a, 1.0)), p) > alpha
    assert np.array_equal(multinomial_mtable(k, p, alpha), _joint_table_at(k, p, a))


def test_adjusted_table_fails_at_most_alpha_at_length_1000():
    p = (0.2, 0.3)
    m = multinomial_mtable(1000, p, 0.1)
    f = multinomial_fail_probability(m, p)
    assert 0.09 < f <= 0.1
    assert np.all(np.diff(m, axis=0) >= 0)
    a = multinomial_adjust_alpha(1000, p, 0.1)
    assert multinomial_fail_probability(_joint_table_at(1000, p, np.nextafter(a, 1.0)), p) > 0.1


def test_adjustment_is_stricter_than_each_group_alone():
    """Every group's column alone is a binomial FA*IR test, so the family-wise alpha_c is at most
    each group's own adjusted alpha_c (here strictly: the groups' failures add up)."""
    for p in [(0.2, 0.3), (0.1, 0.1, 0.4)]:
        a = multinomial_adjust_alpha(60, p, 0.1)
        assert all(a < adjust_alpha(60, pj, 0.1) for pj in p)


# ------------------------------------------------------------------ one protected group = binomial FA*IR
SPEC = [  # docs/spec.md §4: (k, p, alpha, adjust, m, fail probability)
    (10, 0.2, 0.15, False, [0, 0, 0, 0, 0, 0, 0, 0, 1, 1], 0.134218),
    (20, 0.25, 0.1, False, [0] * 8 + [1] * 6 + [2] * 5 + [3], 0.146887),
    (20, 0.25, 0.1, True, [0] * 9 + [1] * 6 + [2] * 5, 0.089722),
    (10, 0.5, 0.1, False, [0, 0, 0, 1, 1, 1, 2, 2, 3, 3], 0.128906),
    (10, 0.5, 0.1, True, [0, 0, 0, 0, 1, 1, 2, 2, 2, 3], 0.089844),
]


@pytest.mark.parametrize("k,p,alpha,adjust,m,fail", SPEC)
def test_one_group_reproduces_spec_reference_values(k, p, alpha, adjust, m, fail):
    got = multinomial_mtable(k, [p], alpha, adjust=adjust)
    assert got.shape == (k, 1) and got[:, 0].tolist() == m
    assert multinomial_fail_probability(got, [p]) == pytest.approx(fail, abs=1e-6)


def test_one_group_k100_reference():
    m = multinomial_mtable(100, [0.3], 0.05)
    assert int(m.sum()) == 852
    assert multinomial_fail_probability(m, [0.3]) == pytest.approx(0.049952, abs=1e-6)


@pytest.mark.parametrize("k,p,alpha", [(10, 0.2, 0.15), (20, 0.25, 0.1), (10, 0.5, 0.1), (100, 0.3, 0.05),
                                       (1, 0.3, 0.2), (3, 0.5, 0.1), (57, 0.02, 0.1), (300, 0.77, 0.01),
                                       (1000, 0.5, 0.1)])
def test_one_group_equals_binomial_fair_exactly(k, p, alpha):
    """The same alpha_c to the bit, the same tables, the same fail probability (1e-12) and the same
    verdicts as fairltr.fair's binomial functions."""
    assert multinomial_adjust_alpha(k, [p], alpha) == adjust_alpha(k, p, alpha)
    for adjust in (True, False):
        m = multinomial_mtable(k, [p], alpha, adjust=adjust)
        assert np.array_equal(m[:, 0], mtable(k, p, alpha, adjust=adjust))
        assert multinomial_fail_probability(m, [p]) == pytest.approx(fail_probability(m[:, 0], p), rel=1e-12)
    rng = np.random.default_rng(k)
    for _ in range(20):
        groups = (rng.random(k) < p + 0.1 * rng.standard_normal()).astype(int)
        assert multinomial_is_fair(groups, [p], alpha) == is_fair(groups, p, alpha)


# ------------------------------------------------------------------ the test of a ranking
def test_is_fair_and_first_violation():
    p = (0.3, 0.3)
    m = multinomial_mtable(10, p, 0.1)
    rng = np.random.default_rng(0)
    for _ in range(200):
        groups = rng.integers(0, 3, 10)
        counts = np.stack([np.cumsum(groups == 1), np.cumsum(groups == 2)], axis=1)
        bad = np.argwhere(counts < m)
        want = None if len(bad) == 0 else (int(bad[0, 0]) + 1, int(bad[0, 1]) + 1)
        assert first_violation(groups, m) == want
        assert multinomial_is_fair(groups, p, 0.1) == (want is None)
    assert multinomial_is_fair([], p, 0.1)
    with pytest.raises(ConfigError, match="integers 0..2"):
        multinomial_is_fair([0, 3, 1], p, 0.1)
    with pytest.raises(ConfigError, match="positions"):
        first_violation([0, 1], m)


# ------------------------------------------------------------------ parameter checks
@pytest.mark.parametrize("p,msg", [
    ((0.6, 0.5), "sum to 1.1; they must sum to less than 1"),
    ((0.5, 0.5), "sum to 1; they must sum to less than 1"),
    ((), "at least one"),
    ((0.2, 1.2), r"p of protected group 2 must be in the open interval \(0, 1\), got 1.2"),
    ((0.2, 0.0), r"p of protected group 2 must be in the open interval \(0, 1\)"),
    ((0.2, float("nan")), "p of protected group 2"),
    ("0.2", "list of minimum proportions"),
    (0.2, "list of minimum proportions"),
    ((0.01,) * 9, "at most 8 protected groups"),
])
def test_p_checks(p, msg):
    with pytest.raises(ConfigError, match=msg):
        multinomial_mtable(10, p, 0.1)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "10"])
def test_k_checks(k):
    with pytest.raises(ConfigError, match=">= 1"):
        multinomial_mtable(k, (0.2, 0.3), 0.1)


@pytest.mark.parametrize("alpha", [0.0, 1.0, -0.1, "x"])
def test_alpha_checks(alpha):
    with pytest.raises(ConfigError, match="alpha must be"):
        check_multinomial_params(10, (0.2,), alpha)


def test_table_checks():
    with pytest.raises(ConfigError, match=r"\(k, 2\) array"):
        multinomial_fail_probability(np.zeros((4, 3)), (0.2, 0.3))
    with pytest.raises(ConfigError, match=r"m_2\(1\) = 2 is outside 0..1"):
        multinomial_fail_probability(np.array([[0, 2], [0, 0]]), (0.2, 0.3))
    with pytest.raises(ConfigError, match="integers"):
        multinomial_fail_probability(np.array([[0, 0.5]]), (0.2, 0.3))
    assert multinomial_fail_probability(np.array([0, 1]), (0.5,)) == pytest.approx(0.25)  # 1-d when g = 1


def test_tables_are_fresh_copies():
    a = multinomial_mtable(30, (0.2, 0.3), 0.1)
    a[:] = 99
    assert multinomial_mtable(30, (0.2, 0.3), 0.1).max() < 30
