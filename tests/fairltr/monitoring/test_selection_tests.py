"""The four-fifths significance test and Holm's procedure (fairltr.monitoring.selection_tests)
against independent computations: the restricted maximum likelihood by numerical optimisation,
the p-value's calibration on the null's boundary by simulation, Holm by its definition."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import optimize, stats

from fairltr.monitoring.selection_tests import holm, ratio_test_pvalues, restricted_mle


@pytest.mark.parametrize("x_c,n_c,x_r,n_r,tau", [(3, 40, 12, 50, 0.8), (10, 20, 2, 30, 0.8), (0, 15, 7, 15, 0.8),
                                               (5, 60, 5, 60, 0.5), (30, 35, 28, 30, 0.9)])
def test_restricted_mle_maximises_the_likelihood_under_the_null(x_c, n_c, x_r, n_r, tau):
    def nll(p):
        q = tau * p
        return -(stats.binom.logpmf(x_c, n_c, q) + stats.binom.logpmf(x_r, n_r, p))

    best = optimize.minimize_scalar(nll, bounds=(1e-12, min(1.0, 1 / tau) - 1e-12), method="bounded",
                                    options={"xatol": 1e-12})
    assert float(restricted_mle(x_c, n_c, x_r, n_r, tau)) == pytest.approx(best.x, abs=1e-6)


def test_the_p_value_is_calibrated_on_the_null_boundary():
    """p_c = 0.8 p_r exactly: rejections at 5% in about 5% of draws (asymptotic test: 3-7.5%)."""
    rng = np.random.default_rng(0)
    n_c, n_r, p_r = 200, 300, 0.4
    x_c = rng.binomial(n_c, 0.8 * p_r, 20_000)
    x_r = rng.binomial(n_r, p_r, 20_000)
    rate = float((ratio_test_pvalues(x_c, n_c, x_r, n_r, 0.8) <= 0.05).mean())
    assert 0.03 <= rate <= 0.075, rate
    # well inside the null (a fair ranker: p_c = p_r) it almost never rejects; far outside it does
    fair = ratio_test_pvalues(rng.binomial(n_c, p_r, 5000), n_c, rng.binomial(n_r, p_r, 5000), n_r, 0.8)
    assert float((fair <= 0.05).mean()) < 0.005
    biased = ratio_test_pvalues(rng.binomial(n_c, 0.4 * p_r, 5000), n_c, rng.binomial(n_r, p_r, 5000), n_r, 0.8)
    assert float((biased <= 0.05).mean()) > 0.99


def test_nothing_can_be_concluded_without_candidates_or_selections():
    p = ratio_test_pvalues([0, 0, 3], [0, 10, 10], [4, 0, 5], [10, 10, 0], 0.8)
    assert p.tolist() == [1.0, 1.0, 1.0]


def _holm_by_definition(p: np.ndarray, alpha: float) -> np.ndarray:
    """Reject H_i iff every intersection hypothesis containing i is rejected by Bonferroni (the
    closed-testing form of Holm), checked over every subset."""
    m = len(p)
    out = np.zeros(m, dtype=bool)
    for i in range(m):
        out[i] = all(min(p[j] for j in subset) <= alpha / len(subset)
                     for size in range(1, m + 1) for subset in itertools.combinations(range(m), size) if i in subset)
    return out


@pytest.mark.parametrize("seed", range(6))
def test_holm_equals_closed_bonferroni_testing(seed):
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.uniform(0, 0.03, 3), rng.uniform(0, 1, 5)])
    rng.shuffle(p)
    assert holm(p, 0.05).tolist() == _holm_by_definition(p, 0.05).tolist()
    assert holm([], 0.05).tolist() == []
