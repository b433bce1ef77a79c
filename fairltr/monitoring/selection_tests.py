"""Significance of a failing four-fifths line, and the error rate of a whole monitoring run.

A selection-rate gate (``impact_ratio_at_<k> >= tau``, ``four_fifths``, ``scoring_impact_ratio >=
tau``) says of every audited category c: p_c >= tau * p_r for every other category r (the impact
ratio is p_c over the LARGEST rate). Its test, per window and ordered pair (c, r):

    H0: p_c >= tau * p_r (fair enough)   against   H1: p_c < tau * p_r,

with the pooled counts of the window (x selected of n candidates per category), by the score
statistic of Farrington & Manning (1990) for a ratio of two binomial proportions:

    Z = (x_c/n_c - tau x_r/n_r) / sqrt(q_c (1 - q_c) / n_c + tau^2 q_r (1 - q_r) / n_r),

q_r the maximum-likelihood p_r under p_c = tau p_r (the root of a quadratic, :func:`restricted_mle`)
and q_c = tau q_r; the one-sided p-value is Phi(Z). The gate's null for c (every pair holds) is
rejected as soon as one of its pairs is: every pair of every category, gate and window of a run
is one hypothesis of ONE family, and Holm's step-down procedure (:func:`holm`) keeps the chance of
any false FAIL in the run at most 1 - confidence. Holm, not an anytime-valid confidence sequence:
a monitoring run audits a fixed, finite set of windows (the table given), every window is judged
on its own rows, and Holm is uniformly more powerful than Bonferroni for that finite family; a
stream judged window by window as it arrives would need the sequential guarantee instead.

Candidates are the trials: within one ranking exactly k are selected, which makes the counts of
different categories negatively dependent and their variance smaller than the binomial one (the
test is conservative there); rankings of a window are independent. A pair is *testable* when both
categories expect at least :data:`MIN_EXPECTED` selections at the window's pooled rate (the usual
n p >= 5 condition of a normal approximation); a window with an untestable compared category
says "insufficient evidence", never "fail".
"""

from __future__ import annotations

import numpy as np
from scipy import stats

__all__ = ["restricted_mle", "ratio_test_pvalues", "holm", "MIN_EXPECTED", "VERDICTS"]

MIN_EXPECTED = 5.0
"""Expected selections (n_c times the window's pooled selection rate) a category needs for its
pairs to be tested."""

VERDICTS = ("pass", "fail", "insufficient evidence")


def restricted_mle(x_c, n_c, x_r, n_r, tau: float) -> np.ndarray:
    """The maximum-likelihood p_r of two binomials (x_c of n_c, x_r of n_r) under p_c = tau p_r,
    vectorised: the root in [0, min(1, 1/tau)] of a N tau p^2 - (n_c tau + x_c + n_r + x_r tau) p +
    (x_c + x_r) = 0 (N = n_c + n_r)."""
    x_c, n_c, x_r, n_r = (np.asarray(v, dtype=np.float64) for v in (x_c, n_c, x_r, n_r))
    a = (n_c + n_r) * tau
    b = -(n_c * tau + x_c + n_r + x_r * tau)
    c = x_c + x_r
    disc = np.sqrt(np.maximum(b * b - 4 * a * c, 0.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.where(a > 0, (-b - disc) / (2 * a), 0.0)
    return np.clip(root, 0.0, min(1.0, 1.0 / tau))


def ratio_test_pvalues(x_c, n_c, x_r, n_r, tau: float) -> np.ndarray:
    """One-sided p-values of H0: p_c >= tau p_r against p_c < tau p_r (Farrington-Manning score
    test, module docstring), element-wise; 1.0 where a side has no candidates or the variance is 0
    (nothing can be concluded)."""
    x_c, n_c, x_r, n_r = (np.asarray(v, dtype=np.float64) for v in (x_c, n_c, x_r, n_r))
    q_r = restricted_mle(x_c, n_c, x_r, n_r, tau)
    q_c = tau * q_r
    with np.errstate(divide="ignore", invalid="ignore"):
        var = q_c * (1 - q_c) / n_c + tau * tau * q_r * (1 - q_r) / n_r
        z = (x_c / n_c - tau * x_r / n_r) / np.sqrt(var)
    ok = (n_c > 0) & (n_r > 0) & (var > 0) & np.isfinite(z)
    return np.where(ok, stats.norm.cdf(np.where(ok, z, 0.0)), 1.0)


def holm(pvalues, alpha: float) -> np.ndarray:
    """Holm's step-down rejections (a boolean per p-value) at family-wise level ``alpha``: sorted
    ascending, p_(i) is rejected when every p_(j), j <= i, is <= alpha / (m - j + 1)."""
    p = np.asarray(pvalues, dtype=np.float64).reshape(-1)
    m = len(p)
    if m == 0:
        return np.zeros(0, dtype=bool)
    order = np.argsort(p, kind="stable")
    ok = p[order] <= alpha / (m - np.arange(m))
    passed = np.cumprod(ok).astype(bool)  # stops at the first acceptance
    out = np.zeros(m, dtype=bool)
    out[order] = passed
    return out
