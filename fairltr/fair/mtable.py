"""FA*IR's ranked group fairness test (docs/spec.md §4): the mtable, its exact fail probability, and the
multiple-testing adjustment of alpha.

* ``m(i) = F^-1(alpha_c; i, p)`` (binomial quantile, ``scipy.stats.binom.ppf``): the fewest
  protected items the top ``i`` must hold. Computed with the two ufuncs ``scipy.stats.binom``
  itself calls (``scipy.special._ufuncs._binom_ppf`` / ``_binom_cdf``, Boost), so the numbers are
  scipy.stats' own without its 1.5 s import (``tests/fairltr/fair/test_mtable.py`` checks that they
  agree); a scipy without them falls back to ``scipy.stats``, imported on first use.
* fail probability of an mtable: P(some prefix i has fewer than m(i) protected items) when each
  position is protected independently with probability ``p`` — an exact dynamic programme over
  (position, protected count).
* adjusted alpha_c: the largest alpha_c whose mtable fails with probability <= alpha. The mtable
  changes only at the binomial CDF values F(j; i, p) (the *breakpoints*), so the search runs over
  those values (then over single doubles, for scipy's rounding) and is exact.
* adjusted tables are cached in the process and on disk, in the user's cache folder
  (:mod:`fairltr.fair.table_cache`: ``$FAIRLTR_CACHE_DIR``, else ``$XDG_CACHE_HOME/fairltr``, else
  ``~/.cache/fairltr``), so a second process reads k = 10^5 instead of searching again; an entry
  holds the table that the search computed, so its results are the same.
"""

from __future__ import annotations

import functools

import numpy as np

from fairltr.errors import ConfigError
from fairltr.fair import table_cache

__all__ = ["mtable", "cached_mtable", "fail_probability", "adjust_alpha", "is_fair", "check_params", "clear_caches"]


# ---------------------------------------------------------------------------- the binomial distribution
def _scipy_ufuncs():
    try:  # what scipy.stats.binom._ppf / ._cdf call (scipy >= 1.9): scipy.special loads in ~0.3 s
        from scipy.special._ufuncs import _binom_cdf, _binom_ppf
    except ImportError:  # pragma: no cover - a scipy that moved them: the public (slow-import) path
        from scipy import stats

        return stats.binom.ppf, stats.binom.cdf
    return _binom_ppf, _binom_cdf


_ufuncs: tuple | None = None


def _binom():
    global _ufuncs
    if _ufuncs is None:
        _ufuncs = _scipy_ufuncs()
    return _ufuncs


def binom_ppf(q: float, n: np.ndarray, p: float) -> np.ndarray:
    """``scipy.stats.binom.ppf(q, n, p)`` for 0 < q < 1, n >= 1, 0 < p < 1 (float array)."""
    return np.asarray(_binom()[0](q, n, p), dtype=np.float64)


def binom_cdf(j: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """``scipy.stats.binom.cdf(j, n, p)`` for integer j, n >= 1, 0 < p < 1: 0 below 0, 1 from n on,
    else the CDF clipped to [0, 1] (as rv_discrete.cdf does)."""
    j, n = np.broadcast_arrays(np.asarray(j), np.asarray(n))
    inside = (j >= 0) & (j < n)
    out = np.where(j >= n, 1.0, 0.0)
    if inside.any():
        out[inside] = np.clip(_binom()[1](j[inside], n[inside], p), 0.0, 1.0)
    return out


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

    This is *the* definition of the mtable (docs/spec.md §4), floating-point quirks of scipy included:
    near a CDF value scipy's quantile may lag the exact one by one for a few ulps of alpha_c.
    """
    if alpha_c <= 0.0:
        return np.zeros(k, dtype=np.int64)
    i = np.arange(1, k + 1)
    if alpha_c >= 1.0:
        return i
    return np.maximum(binom_ppf(alpha_c, i, p), 0).astype(np.int64)


def _cdf(j: np.ndarray, i: np.ndarray, p: float) -> np.ndarray:
    """F(j; i, p) with F(-1) = 0 and F(j >= i) = 1."""
    return binom_cdf(j, i, p)


def _exact_table(k: int, p: float, alpha_c: float) -> tuple[np.ndarray, float, float]:
    """The exact quantile table m(i) = smallest j with F(j; i, p) >= alpha_c (scipy's ppf corrected
    by one where it disagrees with scipy's CDF), and the interval (left, right] of alpha_c on which
    this table is the same: m_i = j exactly when F(j-1; i) < alpha_c <= F(j; i), so
    left = max_i F(m_i - 1; i) and right = min_i F(m_i; i)."""
    i = np.arange(1, k + 1)
    j = _table_at(k, p, alpha_c)
    upper = _cdf(j, i, p)
    lower = _cdf(j - 1, i, p)
    while True:  # rarely more than one pass, touching a few positions
        up = upper < alpha_c
        down = (j > 0) & (lower >= alpha_c)
        fix = up | down
        if not fix.any():
            break
        j = j + up - down
        upper[fix] = _cdf(j[fix], i[fix], p)
        lower[fix] = _cdf(j[fix] - 1, i[fix], p)
    return j, float(lower.max()), float(upper.min())


def _fail_probability(m: np.ndarray, p: float) -> float:
    """Exact P(fail) of a validated mtable (integers, 0 <= m(i) <= i; any shape).

    a_i[c] = P(c protected among the first i positions and no prefix failed so far);
    a_{i+1}[c] = q a_i[c] + p a_i[c-1], then the mass at counts c < m(i+1) moves to ``fail``.
    Stored scaled, a = b * scale, so one step is b[c] += (p/q) b[c-1] (two passes, no
    temporaries); only the live window of counts [m(i), top] is touched, where ``top`` stops
    growing once the upper tail underflows to 0.
    """
    q = 1.0 - p
    r = p / q
    k = len(m)
    b = np.zeros(k + 2)
    b[0] = 1.0
    tmp = np.empty(k + 2)
    scale = 1.0
    lo, hi = 0, 0  # live window of counts [lo, hi]; outside it the mass is exactly 0
    fail = 0.0
    for step in range(k):
        n = hi - lo + 1
        t = tmp[:n]
        np.multiply(b[lo : hi + 1], r, out=t)
        window = b[lo + 1 : hi + 2]
        np.add(window, t, out=window)  # b[hi + 1] was 0
        scale *= q
        if b[hi + 1] * scale != 0.0:
            hi += 1
        else:
            b[hi + 1] = 0.0
        # counts below m(i) fail here (for a binomial table m grows by at most one per position,
        # so this removes at most the single count m(i) - 1)
        mi = int(m[step])
        while lo < mi and lo <= hi:
            fail += b[lo] * scale
            b[lo] = 0.0
            lo += 1
        if lo > hi:  # every path failed
            return 1.0
        if scale < 1e-200:
            b[lo : hi + 1] *= scale
            scale = 1.0
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
    vals = binom_cdf(np.repeat(j_lo, counts) + offs, ii, p)
    return np.unique(vals[(vals > lo) & (vals <= hi)])


def _count_breakpoints(k: int, p: float, lo: float, hi: float) -> int:
    """Upper bound on the number of breakpoints in (lo, hi] (two quantile calls)."""
    return int((_table_at(k, p, hi) - _table_at(k, p, lo) + 3).sum())


_ENUMERATE_BELOW = 1 << 17


class _Bracket:
    """Search state of :func:`_exact_search`: ``lo`` passes (fail ``f_lo``); every alpha_c above
    ``hi`` fails; the last failing table seen failed with ``f_hi`` on (``x_hi``, ...]."""

    def __init__(self, lo: float, f_lo: float, hi: float) -> None:
        self.lo, self.f_lo, self.hi = lo, f_lo, hi
        self.x_hi, self.f_hi = hi, float("nan")
        self.same_side = 0
        self.last_side = 0

    def update(self, good: bool, fail: float, left: float, right: float) -> None:
        side = 1 if good else -1
        self.same_side = self.same_side + 1 if side == self.last_side else 1
        self.last_side = side
        if good:
            self.lo, self.f_lo = right, fail
        else:
            self.hi, self.x_hi, self.f_hi = left, left, fail

    def guess(self, alpha: float) -> float | None:
        """Next trial alpha_c in (lo, hi] by log-log interpolation of the fail probability between
        the two sides; None (= bisect) when that is undefined or the same side moved twice in a
        row, so the bracket at least halves every other step."""
        if self.same_side >= 2 or not (self.f_lo > 0 and self.f_hi > alpha and self.lo > 0):
            return None
        t = (np.log(alpha) - np.log(self.f_lo)) / (np.log(self.f_hi) - np.log(self.f_lo))
        x = float(np.exp(np.log(self.lo) + t * (np.log(self.x_hi) - np.log(self.lo))))
        return x if self.lo < x <= self.hi else None


def _exact_search(k: int, p: float, alpha: float) -> float:
    """Largest CDF value alpha_c whose exact table fails with probability <= alpha.

    Invariant: the answer lies in [lo, hi], ``lo`` a breakpoint whose table passes. Start:
    alpha / k passes (union bound: fail <= sum_i P(X_i < m_i) < k * alpha_c), and any alpha_c
    above the smallest CDF value exceeding alpha fails (that prefix alone fails with
    probability > alpha). Each trial snaps the bracket to the ends of the trial's interval of
    constant table; trials are interpolated (safeguarded by bisection), over the continuum while
    many breakpoints remain, then over the enumerated breakpoints.
    """
    def test(a: float) -> tuple[bool, float, float, float]:
        table, left, right = _exact_table(k, p, a)
        fail = _fail_probability(table, p)
        return fail <= alpha, fail, left, right

    good, fail, _, right = test(alpha / k)
    i = np.arange(1, k + 1)
    above = _exact_table(k, p, alpha)[0]
    vals = _cdf(above, i, p)
    vals = np.where(vals > alpha, vals, _cdf(above + 1, i, p))
    lo = right if good else 0.0
    br = _Bracket(lo, fail if good else 0.0, max(float(vals.min()), lo))
    while br.hi > br.lo:
        if _count_breakpoints(k, p, br.lo, br.hi) <= max(_ENUMERATE_BELOW, 4 * k):
            cand = _breakpoints_between(k, p, br.lo, br.hi)
            a, b = 0, len(cand)  # the answer is lo or one of cand[a:b]
            while a < b:
                g = br.guess(alpha)
                trial = (a + b) // 2 if g is None else int(np.searchsorted(cand, g, side="left"))
                trial = min(max(trial, a), b - 1)
                good, fail, left, right = test(float(cand[trial]))
                br.update(good, fail, left, right)
                if good:
                    a = int(np.searchsorted(cand, right, side="right"))
                else:
                    b = int(np.searchsorted(cand, left, side="right"))
            return float(br.lo)
        g = br.guess(alpha)
        br.update(*test(0.5 * (br.lo + br.hi) if g is None else g))
    return float(br.lo)


def _bits(x: float) -> int:
    """Position of a positive double in the ordered set of doubles."""
    return int(np.array(x, dtype=np.float64).view(np.int64))


def _from_bits(n: int) -> float:
    return float(np.array(n, dtype=np.int64).view(np.float64))


def _search_alpha(k: int, p: float, alpha: float) -> float:
    """Largest double alpha_c with fail(binom.ppf table at alpha_c) <= alpha.

    The exact search gives the answer for the exact quantile; scipy's quantile may lag it by a
    few ulps of alpha_c right after a CDF value (tables in between mix old and new entries,
    the (10, 0.5, 0.1) example of docs/spec.md §4), so finish with a doubling + bisection over the doubles.
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


@functools.lru_cache(maxsize=256)
def _adjusted_entry(k: int, p: float, alpha: float) -> tuple[float, np.ndarray]:
    """(adjusted alpha_c, its read-only table): from the disk cache when a valid entry exists
    (:mod:`fairltr.fair.table_cache`), else searched and written there."""
    hit = table_cache.load("binomial", k, p, alpha)
    if hit is not None:
        alpha_c, table = hit
    else:
        alpha_c = _search_alpha(k, p, alpha)
        table = _table_at(k, p, alpha_c)
        table_cache.store("binomial", k, p, alpha, alpha_c, table)
    table.setflags(write=False)
    return alpha_c, table


def _adjust_alpha_cached(k: int, p: float, alpha: float) -> float:
    """Largest double alpha_c with fail(binom.ppf table at alpha_c) <= alpha (cached)."""
    return _adjusted_entry(k, p, alpha)[0]


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
def cached_mtable(k: int, p: float, alpha: float, adjust: bool) -> np.ndarray:
    """:func:`mtable` without the parameter checks (call :func:`check_params` first) and without
    the copy: the cached, read-only array itself, for callers that look up many tables."""
    if adjust:
        return _adjusted_entry(k, p, alpha)[1]
    table = _table_at(k, p, alpha)
    table.setflags(write=False)
    return table


def mtable(k: int, p: float, alpha: float, adjust: bool = True) -> np.ndarray:
    """m(i) for positions i = 1..k: the fewest protected items the top i must hold.

    ``m(i) = binom.ppf(alpha_c, i, p)`` with ``alpha_c = adjust_alpha(k, p, alpha)`` when
    ``adjust`` else ``alpha``. Returns a fresh int64 array of length k (cached underneath).
    """
    k, p, alpha = check_params(k, p, alpha)
    return cached_mtable(k, p, alpha, bool(adjust)).copy()


def clear_caches() -> None:
    """Forget the in-process cached mtables and adjusted alphas (for benchmarks; the disk cache
    stays: ``FAIRLTR_MTABLE_CACHE=0`` bypasses it)."""
    cached_mtable.cache_clear()
    _adjusted_entry.cache_clear()


def is_fair(groups_in_rank_order, p: float, alpha: float, adjust: bool = True) -> bool:
    """Whether a ranking passes the ranked group fairness test: every prefix i holds at least
    m(i) protected items (group >= 1 counts as protected); k = the ranking's length."""
    g = np.asarray(groups_in_rank_order).reshape(-1)
    _, p, alpha = check_params(None, p, alpha)
    if len(g) == 0:
        return True
    if not np.all(np.isfinite(g.astype(np.float64))):
        raise ConfigError("groups must be finite integers (0 = non-protected, >= 1 protected)")
    table = cached_mtable(len(g), p, alpha, bool(adjust))
    return bool(np.all(np.cumsum(g >= 1) >= table))

