"""FA*IR's ranked group fairness test (SPEC §4): the mtable, its exact fail probability, and the
multiple-testing adjustment of alpha.

* ``m(i) = F^-1(alpha_c; i, p)`` (binomial quantile, ``scipy.stats.binom.ppf``): the fewest
  protected items the top ``i`` must hold.
* fail probability of an mtable: P(some prefix i has fewer than m(i) protected items) when each
  position is protected independently with probability ``p`` — an exact dynamic programme over
  (position, protected count).
* adjusted alpha_c: the largest alpha_c whose mtable fails with probability <= alpha. The mtable
  changes only at the binomial CDF values F(j; i, p) (the *breakpoints*), so the search runs over
  those values (then over single doubles, for scipy's rounding) and is exact.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import stats

from fairltr.errors import ConfigError

__all__ = ["mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches"]


# ---------------------------------------------------------------------------- parameter checks
def _check_k(k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _check_unit(name: str, value: object) -> float:
    try:
        v = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ConfigError(f"{name} must be a number in the open interval (0, 1), got {value!r}") from None
    if not (0.0 < v < 1.0):
        raise ConfigError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return v


def check_params(k: int | None, p: float, alpha: float) -> tuple[int | None, float, float]:
    """Validate FA*IR parameters: ``k >= 1`` (or None), ``0 < p < 1``, ``0 < alpha < 1``."""
    return (None if k is None else _check_k(k)), _check_unit("p", p), _check_unit("alpha", alpha)


# ---------------------------------------------------------------------------- core math
def _table_at(k: int, p: float, alpha_c: float) -> np.ndarray:
    """m(i) = binom.ppf(alpha_c, i, p) for i = 1..k (int64; alpha_c <= 0 gives zeros).

    This is *the* definition of the mtable (SPEC §4), floating-point quirks of scipy included:
    near a CDF value scipy's quantile may lag the exact one by one for a few ulps of alpha_c.
    """
    if alpha_c <= 0.0:
        return np.zeros(k, dtype=np.int64)
    i = np.arange(1, k + 1)
    if alpha_c >= 1.0:
        return i
    return np.maximum(stats.binom.ppf(alpha_c, i, p), 0).astype(np.int64)


def _cdf(j: np.ndarray, i: np.ndarray, p: float) -> np.ndarray:
    """F(j; i, p) with F(-1) = 0 and F(j >= i) = 1."""
    return np.where(j < 0, 0.0, stats.binom.cdf(np.maximum(j, 0), i, p))


def _exact_table(k: int, p: float, alpha_c: float) -> np.ndarray:
    """The exact quantile: smallest j with F(j; i, p) >= alpha_c (scipy's ppf corrected by +-1
    against scipy's CDF, so tables are constant exactly between consecutive CDF values)."""
    i = np.arange(1, k + 1)
    j = _table_at(k, p, alpha_c)
    j = np.where(_cdf(j, i, p) < alpha_c, j + 1, j)
    return np.where((j > 0) & (_cdf(j - 1, i, p) >= alpha_c), j - 1, j)


def _interval(k: int, p: float, table: np.ndarray) -> tuple[float, float]:
    """The alpha_c interval (lo, hi] on which the exact table equals ``table``: m_i = j exactly
    when F(j-1; i) < alpha_c <= F(j; i), so lo = max_i F(m_i - 1; i), hi = min_i F(m_i; i)."""
    i = np.arange(1, k + 1)
    return float(_cdf(table - 1, i, p).max()), float(_cdf(table, i, p).min())


def _fail_probability(m: np.ndarray, p: float) -> float:
    """Exact P(fail) of a validated mtable (integers, 0 <= m(i) <= i; any shape)."""
    q = 1.0 - p
    k = len(m)
    # a[c] = P(count of protected after this position == c and no violation so far)
    a = np.zeros(k + 2)
    a[0] = 1.0
    lo, hi = 0, 0  # live window of counts [lo, hi]; outside it the mass is exactly 0
    fail = 0.0
    tmp = np.empty(k + 2)
    for step in range(k):
        mi = int(m[step])
        # transition: new[c] = q * a[c] + p * a[c-1] for c in [lo, hi+1]
        n = hi - lo + 1
        t = tmp[: n + 1]
        t[:n] = a[lo : hi + 1]
        t[n] = 0.0
        t *= q
        t[1:] += p * a[lo : hi + 1]
        a[lo : hi + 2] = t
        if a[hi + 1] != 0.0:
            hi += 1
        # counts below m(i) fail here (for a binomial table m grows by at most one per position,
        # so this removes at most the single count m(i) - 1)
        while lo < mi:
            fail += a[lo]
            a[lo] = 0.0
            lo += 1
        if lo > hi:  # every path failed
            return 1.0
    return min(fail, 1.0)


def _validate_table(m: np.ndarray) -> np.ndarray:
    arr = np.asarray(m)
    if arr.ndim != 1 or len(arr) == 0:
        raise ConfigError(f"mtable must be a non-empty 1-d array, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ConfigError("mtable entries must be integers")
    arr = arr.astype(np.int64)
    pos = np.arange(1, len(arr) + 1)
    if np.any(arr < 0) or np.any(arr > pos):
        bad = int(np.flatnonzero((arr < 0) | (arr > pos))[0])
        raise ConfigError(f"mtable entry m({bad + 1}) = {arr[bad]} is outside 0..{bad + 1}")
    return arr


def fail_probability(mtable: np.ndarray, p: float) -> float:
    """P(a random ranking fails ``mtable``): positions are protected i.i.d. with probability ``p``
    and the ranking fails when some prefix i holds fewer than m(i) protected items.

    Exact dynamic programme over (position, protected count): O(k * window) numpy work.
    Any integer table with 0 <= m(i) <= i is accepted (not only binomial ones).
    """
    p = _check_unit("p", p)
    return _fail_probability(_validate_table(mtable), p)


# ---------------------------------------------------------------------------- adjustment
def _breakpoints_between(k: int, p: float, lo: float, hi: float) -> np.ndarray:
    """Sorted unique CDF values F(j; i, p) with lo < F <= hi over i = 1..k."""
    i = np.arange(1, k + 1)
    j_lo = np.maximum(_table_at(k, p, lo) - 1, 0)  # scipy's quantile is off by at most one
    j_hi = np.minimum(_table_at(k, p, hi) + 1, i)
    counts = j_hi - j_lo + 1
    total = int(counts.sum())
    ii = np.repeat(i, counts)
    offs = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    vals = stats.binom.cdf(np.repeat(j_lo, counts) + offs, ii, p)
    return np.unique(vals[(vals > lo) & (vals <= hi)])


def _count_breakpoints(k: int, p: float, lo: float, hi: float) -> int:
    """Upper bound on the number of breakpoints in (lo, hi] (two quantile calls)."""
    return int((_table_at(k, p, hi) - _table_at(k, p, lo) + 3).sum())


_ENUMERATE_BELOW = 1 << 17


def _exact_search(k: int, p: float, alpha: float) -> float:
    """Largest CDF value alpha_c whose exact table fails with probability <= alpha.

    Invariant: the answer lies in [lo, hi], ``lo`` a breakpoint whose table passes. Start:
    alpha / k passes (union bound: fail <= sum_i P(X_i < m_i) < k * alpha_c), and any alpha_c
    above the smallest CDF value exceeding alpha fails (that prefix alone fails with
    probability > alpha). Continuous bisection, snapped to interval ends, until few
    breakpoints remain; then bisection over the enumerated breakpoints.
    """
    def test(a: float) -> tuple[bool, float, float]:
        table = _exact_table(k, p, a)
        left, right = _interval(k, p, table)
        return _fail_probability(table, p) <= alpha, left, right

    good, _, right = test(alpha / k)
    lo = right if good else 0.0
    i = np.arange(1, k + 1)
    above = _exact_table(k, p, alpha)
    vals = _cdf(above, i, p)
    vals = np.where(vals > alpha, vals, _cdf(above + 1, i, p))
    hi = max(float(vals.min()), lo)
    while hi > lo:
        if _count_breakpoints(k, p, lo, hi) <= max(_ENUMERATE_BELOW, 4 * k):
            cand = _breakpoints_between(k, p, lo, hi)
            a, b = 0, len(cand)  # the answer is lo or one of cand[a:b]
            while a < b:
                mid = (a + b) // 2
                good, left, right = test(float(cand[mid]))
                if good:
                    lo = right
                    a = int(np.searchsorted(cand, right, side="right"))
                else:
                    b = int(np.searchsorted(cand, left, side="right"))
            return float(lo)
        good, left, right = test(0.5 * (lo + hi))
        if good:
            lo = right
        else:
            hi = left
    return float(lo)


def _bits(x: float) -> int:
    """Position of a positive double in the ordered set of doubles."""
    return int(np.array(x, dtype=np.float64).view(np.int64))


def _from_bits(n: int) -> float:
    return float(np.array(n, dtype=np.int64).view(np.float64))


@functools.lru_cache(maxsize=256)
def _adjust_alpha_cached(k: int, p: float, alpha: float) -> float:
    """Largest double alpha_c with fail(binom.ppf table at alpha_c) <= alpha.

    The exact search gives the answer for the exact quantile; scipy's quantile may lag it by a
    few ulps of alpha_c right after a CDF value (tables in between mix old and new entries,
    SPEC's (10, 0.5, 0.1) example), so finish with a doubling + bisection over the doubles.
    """
    def passes(a: float) -> bool:  # alpha_c lives in (0, 1]
        return a <= 1.0 and _fail_probability(_table_at(k, p, a), p) <= alpha

    ilo = _bits(_exact_search(k, p, alpha))
    step = 1
    while ilo > 0 and not passes(_from_bits(ilo)):  # scipy above the exact quantile: walk down
        ilo, step = max(ilo - step, 0), step * 2
    step = 1
    ihi = ilo + step
    while passes(_from_bits(ihi)):
        ilo, step = ihi, step * 2
        ihi = ilo + step
    while ihi - ilo > 1:  # invariant: ilo passes, ihi fails
        mid = (ilo + ihi) // 2
        if passes(_from_bits(mid)):
            ilo = mid
        else:
            ihi = mid
    return _from_bits(ilo)


def adjust_alpha(k: int, p: float, alpha: float) -> float:
    """Largest alpha_c whose mtable ``m(i) = F^-1(alpha_c; i, p)`` fails with probability <= alpha.

    Exact: the mtable is constant between consecutive binomial CDF values F(j; i, p), so the
    search runs over those breakpoints, then over single doubles where scipy's quantile lags the
    CDF by a few ulps; the result is the largest double with that property (at most 1, where
    m(i) = i). The next larger double's table fails with probability > alpha.
    """
    k, p, alpha = check_params(k, p, alpha)
    return _adjust_alpha_cached(k, p, alpha)


@functools.lru_cache(maxsize=256)
def _mtable_cached(k: int, p: float, alpha: float, adjust: bool) -> np.ndarray:
    alpha_c = _adjust_alpha_cached(k, p, alpha) if adjust else alpha
    table = _table_at(k, p, alpha_c)
    table.setflags(write=False)
    return table


def mtable(k: int, p: float, alpha: float, adjust: bool = True) -> np.ndarray:
    """m(i) for positions i = 1..k: the fewest protected items the top i must hold.

    ``m(i) = binom.ppf(alpha_c, i, p)`` with ``alpha_c = adjust_alpha(k, p, alpha)`` when
    ``adjust`` else ``alpha``. Returns a fresh int64 array of length k (cached underneath).
    """
    k, p, alpha = check_params(k, p, alpha)
    return _mtable_cached(k, p, alpha, bool(adjust)).copy()


def clear_caches() -> None:
    """Forget cached mtables and adjusted alphas (for benchmarks)."""
    _mtable_cached.cache_clear()
    _adjust_alpha_cached.cache_clear()


def is_fair(groups_in_rank_order, p: float, alpha: float, adjust: bool = True) -> bool:
    """Whether a ranking passes the ranked group fairness test: every prefix i holds at least
    m(i) protected items (group >= 1 counts as protected); k = the ranking's length."""
    g = np.asarray(groups_in_rank_order).reshape(-1)
    _, p, alpha = check_params(None, p, alpha)
    if len(g) == 0:
        return True
    if not np.all(np.isfinite(g.astype(np.float64))):
        raise ConfigError("groups must be finite integers (0 = non-protected, >= 1 protected)")
    table = _mtable_cached(len(g), p, alpha, bool(adjust))
    return bool(np.all(np.cumsum(g >= 1) >= table))

