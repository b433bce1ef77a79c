"""Compiled fail probability of a multinomial mtable (numba, the ``[fast]`` extra; :mod:`fairltr.compiled`).

:func:`fail_probability_kernel` is :func:`fairltr.fair.multinomial._fail_numpy`'s programme (the
same box of count vectors, the same cuts, the same dropped slices) for any number of groups g:
the live box is a flat C-order array with a zero border of one cell on every side, so a cell's
new mass is ``p0 A[f] + sum_j p_j A[f - S_j]`` (S_j the stride of group j) with no bounds test;
rows run along the last group. Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["fail_probability_kernel"]


@njit(cache=True, nogil=True, boundscheck=False)
def _strides(dims):  # pragma: no cover - compiled
    g = len(dims)
    s = np.ones(g, np.int64)
    for j in range(g - 2, -1, -1):
        s[j] = s[j + 1] * dims[j + 1]
    return s


@njit(cache=True, nogil=True, boundscheck=False)
def _slice_sum(a, strides, w, axis, at, zero):  # pragma: no cover - compiled
    """Sum (and, with ``zero``, clear) the interior cells whose coordinate ``axis`` is ``at``."""
    g = len(w)
    x = np.zeros(g, np.int64)
    x[axis] = at
    total = 0.0
    while True:
        f = 0
        for j in range(g):
            f += (x[j] + 1) * strides[j]
        total += a[f]
        if zero:
            a[f] = 0.0
        j = g - 1
        while j >= 0:
            if j == axis:
                j -= 1
                continue
            x[j] += 1
            if x[j] < w[j]:
                break
            x[j] = 0
            j -= 1
        if j < 0:
            return total


@njit(cache=True, nogil=True, boundscheck=False)
def _kernel(m, p, p0, tau):  # pragma: no cover - compiled
    """The whole programme in one compiled function (Long because splitting the position loop
    into calls would pass the box's arrays and strides back and forth for every position)."""
    k, g = m.shape
    lo = np.zeros(g, np.int64)
    w = np.ones(g, np.int64)
    a = np.zeros(3 ** g)
    s = _strides(np.full(g, 3, np.int64))
    a[s.sum()] = 1.0
    cut = np.zeros(g, np.int64)
    nw = np.zeros(g, np.int64)
    x = np.zeros(g, np.int64)
    fail = 0.0
    dropped = 0.0
    last = g - 1
    p_last = p[last]
    p_first = p[0]
    for i in range(k):
        for j in range(g):
            cut[j] = max(m[i, j] - lo[j], 0)
            nw[j] = w[j] + 1 - cut[j]
            if nw[j] <= 0:
                return 1.0, dropped
        t_strides = _strides(nw + 2)
        size = 1
        for j in range(g):
            size *= nw[j] + 2
        b = np.zeros(size)
        for j in range(g):
            x[j] = 0
        inner = w[last] + 1
        c_in = cut[last]
        while True:  # one row of the grown box per pass: outer coordinates x[0..g-2]
            fa = 1
            fb = 1
            row_cut = False
            for j in range(last):
                fa += (x[j] + 1) * s[j]
                if x[j] < cut[j]:
                    row_cut = True
                else:
                    fb += (x[j] - cut[j] + 1) * t_strides[j]
            start = inner if row_cut else min(c_in, inner)
            for t in range(start):  # below a minimum: the mass fails here
                f = fa + t
                v = p0 * a[f] + p_last * a[f - 1]
                for j in range(last):
                    v += p[j] * a[f - s[j]]
                fail += v
            off = fb - c_in
            if last == 0:
                for t in range(start, inner):
                    b[off + t] = p0 * a[fa + t] + p_last * a[fa + t - 1]
            elif last == 1:
                s0 = s[0]
                for t in range(start, inner):
                    f = fa + t
                    b[off + t] = p0 * a[f] + p_last * a[f - 1] + p_first * a[f - s0]
            else:
                for t in range(start, inner):
                    f = fa + t
                    v = p0 * a[f] + p_last * a[f - 1]
                    for j in range(last):
                        v += p[j] * a[f - s[j]]
                    b[off + t] = v
            j = last - 1
            while j >= 0:
                x[j] += 1
                if x[j] <= w[j]:
                    break
                x[j] = 0
                j -= 1
            if j < 0:
                break
        for j in range(g):
            lo[j] += cut[j]
            w[j] = nw[j]
        a = b
        s = t_strides
        for j in range(g):  # drop upper edge slices of negligible mass (the numpy path's order)
            while w[j] > 1:
                top = _slice_sum(a, s, w, j, w[j] - 1, False)
                if top >= tau:
                    break
                dropped += _slice_sum(a, s, w, j, w[j] - 1, True)
                w[j] -= 1
    return min(fail, 1.0), dropped


def fail_probability_kernel(m: np.ndarray, p: np.ndarray, p0: float, tau: float) -> tuple[float, float]:
    """(fail probability, dropped mass) of a validated (k, g) int64 table ``m`` with group
    probabilities ``p`` (g,) and non-protected probability ``p0``."""
    fail, dropped = _kernel(m, p, float(p0), float(tau))
    return float(fail), float(dropped)
