"""Multinomial FA*IR (Zehlike, Sühr, Baeza-Yates, Bonchi, Castillo, Hajian, IPM 2022): the ranked
group fairness test for g protected groups with minimum proportions p_1..p_g (sum < 1; the rest,
1 - sum p, is the share of everything else, the non-protected categories), its exact fail
probability and the multiple-testing adjustment of alpha. docs/fair.md ("Several protected
groups") says what is tested and why it differs from the authors' tree of minimum-count tuples.

* mtable (k, g): ``m_j(i) = F^-1(alpha_c; i, p_j)``, the binomial quantile of group j alone
  (:func:`fairltr.fair.mtable.binom_ppf`, scipy's), the fewest candidates of group j the top i
  must hold. At g = 1 it is the binomial mtable itself.
* test: a ranking passes when every prefix i holds at least m_j(i) candidates of every group j.
* fail probability: P(some prefix i and group j with fewer than m_j(i)) when every position is
  group j with probability p_j and non-protected with 1 - sum p, independently. A dynamic
  programme over (position, count vector): the mass of the count vectors still alive moves one
  position on (stay, or one more of group j), the vectors below a minimum move to ``fail``. It is
  exact up to the count vectors whose mass is too small to matter: an upper edge slice of the
  live box whose whole mass is below ``TAU`` = 1e-30 is dropped (these vectors are far above
  every minimum); the dropped mass is summed and bounds the error (below 2 g k TAU).
* adjusted alpha_c: the largest alpha_c whose table fails with probability <= alpha. Every
  column only changes at its group's binomial CDF values, so the search runs over the union of
  those breakpoints (exact, as the binomial search), then over single doubles for scipy's
  rounding; the table grows with alpha_c in every entry, so the fail probability is monotone.

The count-vector programme costs about (14 sigma)^g cells per position (sigma ~ sqrt(k p q)), so
three categories (g = 2) reach k = 1,000 in well under a second with the compiled kernel
(:mod:`fairltr.fair.multinomial_kernels`, numba, the ``[fast]`` extra) and four (g = 3) a few
hundred positions; benchmarks/bench_multinomial.py measures it.
"""

from __future__ import annotations

import functools
import math
from typing import Sequence

import numpy as np

from fairltr.compiled import compiled_enabled
from fairltr.errors import ConfigError
from fairltr.fair import table_cache
from fairltr.fair.mtable import (
    _ENUMERATE_BELOW, _Bracket, _bits, _breakpoints_between, _check_k, _check_unit, _count_breakpoints, _exact_table,
    _from_bits, _table_at, binom_cdf,
)
from fairltr.fair.mtable import _fail_probability as _binomial_fail

__all__ = [
    "TAU", "MAX_GROUPS", "check_multinomial_params", "multinomial_mtable", "multinomial_fail_probability",
    "multinomial_adjust_alpha", "multinomial_is_fair", "first_violation", "clear_multinomial_caches",
]

TAU = 1e-30
"""An upper edge slice of the live count-vector box whose total mass is below this is dropped."""

MAX_GROUPS = 8
"""More protected groups than this are refused (the exact programme grows as sigma^g)."""

COMPILED_FROM_K = 64
"""The compiled fail-probability kernel runs from this ranking length up (below it numpy is as fast
and nothing has to be compiled)."""


# ---------------------------------------------------------------------------- parameter checks
def _check_p(p: object) -> tuple[float, ...]:
    if isinstance(p, (str, bytes)) or not hasattr(p, "__len__"):
        raise ConfigError(f"p must be a list of minimum proportions, one per protected group, got {p!r}")
    values = list(p)  # type: ignore[arg-type]
    if not values:
        raise ConfigError("p must name at least one protected group's minimum proportion, got an empty list")
    if len(values) > MAX_GROUPS:
        raise ConfigError(f"at most {MAX_GROUPS} protected groups are supported (the exact fail probability "
                          f"grows exponentially with their number), got {len(values)}")
    out = [_check_unit(f"p of protected group {j + 1}", v) for j, v in enumerate(values)]
    total = math.fsum(out)
    if not total < 1.0:
        raise ConfigError(f"minimum proportions sum to {total:g}; they must sum to less than 1 (the rest is "
                          f"the non-protected candidates' share)")
    return tuple(out)


def check_multinomial_params(k: int | None, p: Sequence[float], alpha: float) -> tuple[int | None, tuple, float]:
    """Validate: ``k >= 1`` (or None), each ``p_j`` in (0, 1) with ``sum p < 1``, ``0 < alpha < 1``."""
    return (None if k is None else _check_k(k)), _check_p(p), _check_unit("alpha", alpha)


# ---------------------------------------------------------------------------- tables
def _joint_table_at(k: int, p: tuple, alpha_c: float) -> np.ndarray:
    """(k, g) int64: column j = the binomial table of p_j at alpha_c (scipy's quantile)."""
    return np.stack([_table_at(k, pj, alpha_c) for pj in p], axis=1)


def _joint_exact_table(k: int, p: tuple, alpha_c: float) -> tuple[np.ndarray, float, float]:
    """The exact-quantile (k, g) table and the interval (left, right] of alpha_c on which it is
    the same (the intersection of the columns' intervals)."""
    parts = [_exact_table(k, pj, alpha_c) for pj in p]
    table = np.stack([t for t, _, _ in parts], axis=1)
    return table, max(left for _, left, _ in parts), min(right for _, _, right in parts)


# ---------------------------------------------------------------------------- fail probability
def _fail_numpy(m: np.ndarray, p: tuple) -> tuple[float, float]:
    """(fail probability, dropped mass) of a validated (k, g) table: numpy over the live box."""
    k, g = m.shape
    pv = np.asarray(p, dtype=np.float64)
    p0 = 1.0 - math.fsum(p)
    a = np.ones((1,) * g)
    lo = np.zeros(g, dtype=np.int64)  # absolute count at box index 0, per group
    fail = dropped = 0.0
    for i in range(k):
        b = np.zeros(tuple(s + 1 for s in a.shape))
        old = tuple(slice(0, s) for s in a.shape)
        b[old] = a * p0
        for j in range(g):  # one more of group j
            shifted = list(old)
            shifted[j] = slice(1, a.shape[j] + 1)
            b[tuple(shifted)] += a * pv[j]
        for j in range(g):  # count vectors below group j's minimum fail here
            cut = int(m[i, j] - lo[j])
            if cut <= 0:
                continue
            if cut >= b.shape[j]:
                return 1.0, dropped
            below = [slice(None)] * g
            below[j] = slice(0, cut)
            fail += float(b[tuple(below)].sum())
            below[j] = slice(cut, None)
            b = b[tuple(below)]
            lo[j] += cut
        for j in range(g):  # drop upper edge slices of negligible mass
            while b.shape[j] > 1:
                top = [slice(None)] * g
                top[j] = b.shape[j] - 1
                s = float(b[tuple(top)].sum())
                if s >= TAU:
                    break
                dropped += s
                top[j] = slice(0, b.shape[j] - 1)
                b = b[tuple(top)]
        a = b
    return min(fail, 1.0), dropped


def _fail_dp(m: np.ndarray, p: tuple) -> tuple[float, float]:
    """(fail probability, dropped mass): the compiled kernel when enabled and k is large enough."""
    if len(m) >= COMPILED_FROM_K and compiled_enabled():
        from fairltr.fair.multinomial_kernels import fail_probability_kernel

        return fail_probability_kernel(np.ascontiguousarray(m, dtype=np.int64), np.asarray(p, dtype=np.float64),
                                       1.0 - math.fsum(p), TAU)
    return _fail_numpy(m, p)


def _validate_table(mtable: object, g: int) -> np.ndarray:
    arr = np.asarray(mtable)
    if arr.ndim == 1 and g == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] != g:
        raise ConfigError(f"mtable must be a (k, {g}) array (k >= 1, one column per protected group), got shape "
                          f"{arr.shape}")
    if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
        raise ConfigError("mtable entries must be integers")
    arr = arr.astype(np.int64)
    pos = np.arange(1, len(arr) + 1)[:, None]
    bad = (arr < 0) | (arr > pos)
    if bad.any():
        i, j = (int(x) for x in np.argwhere(bad)[0])
        raise ConfigError(f"mtable entry m_{j + 1}({i + 1}) = {arr[i, j]} is outside 0..{i + 1}")
    return arr


def multinomial_fail_probability(mtable: np.ndarray, p: Sequence[float]) -> float:
    """P(a random ranking fails ``mtable``): every position is protected group j with probability
    p_j (non-protected with 1 - sum p), independently, and the ranking fails when some prefix i
    holds fewer than m_j(i) of some group j. Exact dynamic programme over count vectors (error
    below 2 g k 1e-30). ``mtable``: (k, g) integers with 0 <= m_j(i) <= i (a 1-d table when g = 1)."""
    _, p, _ = check_multinomial_params(None, p, 0.5)
    return _fail_dp(_validate_table(mtable, len(p)), p)[0]


# ---------------------------------------------------------------------------- adjustment
class _Search:
    """Fail probabilities of the tables tried during one adjustment, memoised by table content
    (the search and the final walk over doubles meet the same tables again)."""

    def __init__(self, k: int, p: tuple, alpha: float) -> None:
        self.k, self.p, self.alpha = k, p, alpha
        self.seen: dict[bytes, float] = {}

    def fail(self, table: np.ndarray) -> float:
        key = table.tobytes()
        if key not in self.seen:
            self.seen[key] = _fail_dp(table, self.p)[0]
        return self.seen[key]

    def exact(self, a: float) -> tuple[bool, float, float, float]:
        table, left, right = _joint_exact_table(self.k, self.p, a)
        f = self.fail(table)
        return f <= self.alpha, f, left, right

    def scipy_passes(self, a: float) -> bool:
        return a <= 1.0 and self.fail(_joint_table_at(self.k, self.p, a)) <= self.alpha

    def breakpoints(self, lo: float, hi: float) -> np.ndarray:
        return np.unique(np.concatenate([_breakpoints_between(self.k, pj, lo, hi) for pj in self.p]))

    def n_breakpoints(self, lo: float, hi: float) -> int:
        return sum(_count_breakpoints(self.k, pj, lo, hi) for pj in self.p)


def _exact_search(s: _Search) -> float:
    """Largest breakpoint alpha_c (a CDF value of some group) whose exact table passes.

    The binomial search of :mod:`fairltr.fair.mtable` over the union of the groups' breakpoints.
    Start: alpha / (k g) passes (union bound over the k g tests, each failing with probability
    < alpha_c); any alpha_c above the smallest CDF value exceeding alpha fails (that single test
    fails with probability > alpha). Trials snap the bracket to the ends of their interval of
    constant table; log-log interpolation, safeguarded by bisection."""
    k, p, alpha = s.k, s.p, s.alpha
    # alpha / (k g) passes without a programme; its fail probability is at most the sum of the
    # columns' binomial ones (a union over groups), good enough for the first interpolation
    start, _, right = _joint_exact_table(k, p, alpha / (k * len(p)))
    fail = min(alpha, math.fsum(_binomial_fail(start[:, j], pj) for j, pj in enumerate(p)))
    i = np.arange(1, k + 1)
    hi = 1.0
    for pj in p:
        above = _exact_table(k, pj, alpha)[0]
        vals = binom_cdf(above, i, pj)
        vals = np.where(vals > alpha, vals, binom_cdf(above + 1, i, pj))
        hi = min(hi, float(vals.min()))
    br = _Bracket(right, fail, max(hi, right))
    while br.hi > br.lo:
        if s.n_breakpoints(br.lo, br.hi) <= max(_ENUMERATE_BELOW, 4 * k * len(p)):
            cand = s.breakpoints(br.lo, br.hi)
            a, b = 0, len(cand)  # the answer is lo or one of cand[a:b]
            while a < b:
                g = br.guess(alpha)
                trial = (a + b) // 2 if g is None else int(np.searchsorted(cand, g, side="left"))
                trial = min(max(trial, a), b - 1)
                good, fail, left, right = s.exact(float(cand[trial]))
                br.update(good, fail, left, right)
                if good:
                    a = int(np.searchsorted(cand, right, side="right"))
                else:
                    b = int(np.searchsorted(cand, left, side="right"))
            return float(br.lo)
        g = br.guess(alpha)
        br.update(*s.exact(0.5 * (br.lo + br.hi) if g is None else g))
    return float(br.lo)


def _largest_double(s: _Search, start: float) -> float:
    """From the exact answer, the largest double alpha_c whose scipy-quantile table passes
    (scipy's quantile may lag the CDF by a few ulps right after a breakpoint)."""
    ilo = _bits(start)
    step = 1
    while ilo > 0 and not s.scipy_passes(_from_bits(ilo)):
        ilo, step = max(ilo - step, 0), step * 2
    step = 1
    ihi = ilo + step
    while s.scipy_passes(_from_bits(ihi)):
        ilo, step = ihi, step * 2
        ihi = ilo + step
    while ihi - ilo > 1:  # invariant: ilo passes, ihi fails
        mid = (ilo + ihi) // 2
        if s.scipy_passes(_from_bits(mid)):
            ilo = mid
        else:
            ihi = mid
    return _from_bits(ilo)


@functools.lru_cache(maxsize=128)
def _adjusted(k: int, p: tuple, alpha: float) -> tuple[float, np.ndarray]:
    """(adjusted alpha_c, its read-only table): the user's disk cache first (docs/fair.md)."""
    hit = table_cache.load("multinomial", k, p, alpha)
    if hit is not None:
        alpha_c, table = hit
    else:
        s = _Search(k, p, alpha)
        alpha_c = _largest_double(s, _exact_search(s))
        table = _joint_table_at(k, p, alpha_c)
        table_cache.store("multinomial", k, p, alpha, alpha_c, table)
    table.setflags(write=False)
    return alpha_c, table


def multinomial_adjust_alpha(k: int, p: Sequence[float], alpha: float) -> float:
    """Largest alpha_c whose multinomial mtable fails with probability <= alpha (exact over the
    groups' binomial CDF breakpoints, then over single doubles); the next larger double's table
    fails with probability > alpha. At one group it equals :func:`fairltr.fair.adjust_alpha`."""
    k, p, alpha = check_multinomial_params(k, p, alpha)
    return _adjusted(k, p, alpha)[0]


@functools.lru_cache(maxsize=256)
def cached_multinomial_mtable(k: int, p: tuple, alpha: float, adjust: bool) -> np.ndarray:
    """:func:`multinomial_mtable` without the checks and the copy (the cached read-only array)."""
    if adjust:
        return _adjusted(k, p, alpha)[1]
    table = _joint_table_at(k, p, alpha)
    table.setflags(write=False)
    return table


def multinomial_mtable(k: int, p: Sequence[float], alpha: float, adjust: bool = True) -> np.ndarray:
    """(k, g) int64: m_j(i), the fewest candidates of protected group j the top i must hold,
    ``binom.ppf(alpha_c, i, p_j)`` with ``alpha_c`` = :func:`multinomial_adjust_alpha` (``adjust``)
    or ``alpha``. A fresh array (cached underneath)."""
    k, p, alpha = check_multinomial_params(k, p, alpha)
    return cached_multinomial_mtable(k, p, alpha, bool(adjust)).copy()


def clear_multinomial_caches() -> None:
    """Forget the in-process multinomial tables (the disk cache stays; for benchmarks)."""
    cached_multinomial_mtable.cache_clear()
    _adjusted.cache_clear()


# ---------------------------------------------------------------------------- the test of a ranking
def _prefix_counts(groups: object, g: int) -> np.ndarray:
    """(n, g) counts of protected groups 1..g in every prefix of a ranking's group codes 0..g."""
    codes = np.asarray(groups).reshape(-1)
    if len(codes) and (not np.all(np.isfinite(codes.astype(np.float64)))
                       or np.any(codes != np.round(codes)) or codes.min() < 0 or codes.max() > g):
        raise ConfigError(f"group codes must be integers 0..{g} (0 = non-protected, j = protected group j)")
    codes = codes.astype(np.int64)
    return np.cumsum(codes[:, None] == np.arange(1, g + 1)[None, :], axis=0)


def first_violation(groups_in_rank_order: object, mtable: np.ndarray) -> tuple[int, int] | None:
    """(1-based position i, 1-based group j) of the first prefix holding fewer than m_j(i) of group
    j (the smallest j at that position), or None when the ranking passes. The ranking's length
    must equal the table's k."""
    table = np.asarray(mtable)
    table = table[:, None] if table.ndim == 1 else table
    counts = _prefix_counts(groups_in_rank_order, table.shape[1])
    if len(counts) != len(table):
        raise ConfigError(f"the ranking has {len(counts)} positions but the mtable {len(table)}")
    short = counts < table
    if not short.any():
        return None
    i, j = np.argwhere(short)[0]
    return int(i) + 1, int(j) + 1


def multinomial_is_fair(groups_in_rank_order: object, p: Sequence[float], alpha: float, adjust: bool = True) -> bool:
    """Whether a ranking passes the multinomial ranked group fairness test: every prefix i holds at
    least m_j(i) of every protected group j. Groups are coded 0 (non-protected) and 1..g (p's
    order); k = the ranking's length (an empty ranking passes)."""
    _, p, alpha = check_multinomial_params(None, p, alpha)
    n = len(np.asarray(groups_in_rank_order).reshape(-1))
    if n == 0:
        return True
    return first_violation(groups_in_rank_order, cached_multinomial_mtable(n, p, alpha, bool(adjust))) is None
