"""The compiled PL-Rank row pass (numba, the ``[fast]`` extra): one sampled ranking of one query
at a time, every estimate PL-Rank training needs in one loop, for a DCG cut-off and a baseline.

For a row (one sample of query q, n real items, K = min(cutoff, n) displayed positions), with
the items y_0..y_{K-1} at the 0-based positions k < K, e_d = exp(s_d - max s), the DCG weights
theta_k, and C reward channels rho^c (the gains, and one indicator per group for the
exposure term: :func:`fairltr.losses.plackett_luce.pl_policy_objective`):

* Z_k = sum over the items at positions >= k of e (the tail past K summed directly: no
  cancellation); R_k = sum_{k <= x < K} theta_x rho_{y_x};
* baseline (optional): b_k = Theta_{>k} * m_k + beta_k with Theta_{>k} = sum_{k < x < K} theta_x,
  m_k the mean reward of the n - k items not placed before k, and beta_k a carried value that
  does not depend on this sample (the mean of R_{k+1} - Theta_{>k} m_k over the previous call's
  samples: PLRank carries it from one iteration to the next). b_k depends on y_0..y_{k-1} and on
  other samples only, so the estimate stays unbiased; a reward shared by every item contributes
  exactly 0 without a carry;
* a_k = sum_{j<=k} theta_j / Z_j, c_k = sum_{j<=k} (R_j - b_j) / Z_j;
* the item at position k < K gets R_{k+1} - b_k + e_d (rho_d a_k - c_k); every item not displayed
  gets e_d (rho_d a_{K-1} - c_{K-1}). Without a baseline and without a cut-off this is PL-Rank-3
  (Oosterhuis, SIGIR 2022), the authors' ``PL_rank_3`` values; with a cut-off it is their DCG@K
  estimator (their ``--cutoff``, default 5).

The not-displayed term is per-sample scalars times per-item constants, so a row's cost is
O(K) after the ranking: the sums of a_{K-1} and c_{K-1} over a query's samples are kept
(``tail_a``, ``tail_c``), the displayed items' share is taken back, and :func:`add_tail_terms`
adds e_d (rho_d sum a - sum c) to every item once. With ``select`` the row's keys are unsorted
and its top K (the K smallest keys of the exponential race, the same items in the same order as
the sorted row's first K) are selected in one scan that also sums the tail's e; otherwise the
row is sorted. Exposure (v_k = 1 / ln(2 + k), 0 past K) and DCG@K of channel 0 are accumulated
in the same pass when asked for.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["policy_rows", "add_tail_terms", "SELECT_MAX"]

SELECT_MAX = 32
"""Cut-offs up to this are served by selection (a scan with an insertion into K sorted slots);
longer ones by sorting the rows."""


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _row_prefix(keys, row, low, n_slots, k_eff, n, select, er, base, stride, top, top_keys):  # pragma: no cover
    """The row's first ``k_eff`` items into ``top``; returns the tail sum of e (the items past
    k_eff). ``keys[row + j]``: the row's keys; e of item d at ``er[(base + d) * stride]``."""
    tail = 0.0
    one = np.uint64(1)
    if select:  # the k_eff smallest keys of the row's slots (real items' keys are below every padded slot's)
        count = 0
        threshold = np.int64(9223372036854775807)
        for j in range(n_slots):  # slot j holds item j's key (padding: +inf bits, never selected)
            key = keys[row + np.uint64(j)]
            if key < threshold:
                if count == k_eff:
                    tail += er[(base + (np.uint64(top_keys[k_eff - 1]) & low)) * stride]
                    pos = k_eff - 1
                else:
                    pos = count
                    count += 1
                while pos > 0 and top_keys[pos - 1] > key:
                    top_keys[pos] = top_keys[pos - 1]
                    pos -= 1
                top_keys[pos] = key
                if count == k_eff:
                    threshold = top_keys[k_eff - 1]
            else:
                tail += er[(base + np.uint64(j)) * stride]
        for k in range(k_eff):
            top[k] = np.uint64(top_keys[k]) & low
        return tail
    for k in range(k_eff):
        top[k] = np.uint64(keys[row + np.uint64(k)]) & low
    k = np.uint64(n)
    while k > np.uint64(k_eff):
        k -= one
        tail += er[(base + (np.uint64(keys[row + k]) & low)) * stride]
    return tail


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def policy_rows(keys, low, select, cutoff, er, theta, spread, carry, v, n_real, rsum, floor,
                grad, residual, exposure, dcg, tail_a, tail_c):  # pragma: no cover - compiled
    """Adds the terms of the rows ``keys`` (B, Q, W) int64 (item = key & low; sorted rows, or
    unsorted with ``select``) to ``grad`` (Q, N, C), ``exposure`` (Q, N) and ``dcg`` (Q,) (both
    skipped when ``exposure`` has no columns), ``tail_a`` (Q,) and ``tail_c`` (Q, C) (see the
    module docstring). ``er`` (Q, N, 1 + C): e_d then the C rewards of item d; ``theta``, ``v``
    (N,): DCG and exposure weights; ``spread`` (Q, N): Theta_{>k} / (n - k) of the baseline
    (zeros: no baseline); ``carry`` (Q, N, C): the carried part of the baseline at each position
    (zeros: none); ``residual`` (Q, N, C) accumulates R_{k+1} - Theta_{>k} m_k at each displayed
    position (the next call's carry, once averaged); ``rsum`` (Q, C): each channel's sum over the
    query's real items; Z is floored at ``floor``. Flat arrays with unsigned offsets (no negative-index fix-ups); one
    channel keeps its sums in registers (:func:`_one_channel`)."""
    B, Q, W = keys.shape
    N = er.shape[1]
    C = er.shape[2] - 1
    flat_keys = keys.reshape(-1)
    flat_er = er.reshape(-1)
    flat_grad = grad.reshape(-1)
    flat_spread = spread.reshape(-1)
    flat_carry = carry.reshape(-1)
    flat_residual = residual.reshape(-1)
    flat_rsum = rsum.reshape(-1)
    flat_exposure = exposure.reshape(-1)
    flat_tail_c = tail_c.reshape(-1)
    with_exposure = exposure.shape[1] > 0
    top = np.empty(max(N, 1), dtype=np.uint64)
    top_keys = np.empty(max(N, 1), dtype=np.int64)
    inv_z = np.empty(max(N, 1))
    acc = np.empty((4, max(C, 1)))  # per channel: R_0, placed, rewards before k, c_k
    stride = np.uint64(C + 1)
    cs = np.uint64(C)
    ulow = np.uint64(low)
    for q in range(Q):
        n = n_real[q]
        if n == 0:
            continue
        k_eff = min(cutoff, n)
        base = np.uint64(q) * np.uint64(N)
        for b in range(B):
            row = (np.uint64(b) * np.uint64(Q) + np.uint64(q)) * np.uint64(W)
            z = _row_prefix(flat_keys, row, ulow, N, k_eff, n, select, flat_er, base, stride, top, top_keys)
            if C == 1:
                a, gain, c_last = _one_channel(top, k_eff, z, flat_er, base, theta, flat_spread, flat_carry,
                                               flat_rsum[q], floor, flat_grad, flat_residual, inv_z, v,
                                               flat_exposure, with_exposure)
            else:
                a, gain = _channels(top, k_eff, z, flat_er, base, stride, cs, theta, flat_spread, flat_carry,
                                    flat_rsum, np.uint64(q), floor, flat_grad, flat_residual, inv_z, acc, v,
                                    flat_exposure, with_exposure)
                c_last = 0.0
            if with_exposure:
                dcg[q] += gain
            if k_eff < n:  # the not-displayed term: kept as sums, the displayed items' share taken back
                tail_a[q] += a
                for c in range(C):
                    flat_tail_c[np.uint64(q) * cs + np.uint64(c)] += c_last if C == 1 else acc[3, c]
                for k in range(k_eff):
                    at = (base + top[k]) * stride
                    e_d = flat_er[at]
                    for c in range(C):
                        cc = c_last if C == 1 else acc[3, c]
                        flat_grad[(base + top[k]) * cs + np.uint64(c)] -= e_d * (flat_er[at + np.uint64(1 + c)] * a - cc)


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def _one_channel(top, k_eff, z, er, base, theta, spread, carry, rsum, floor, grad, residual, inv_z, v, exposure,
                 with_exposure):  # pragma: no cover - compiled
    """One row, one reward channel (sums in registers); returns (a_{K-1}, DCG@K of the row, c_{K-1})."""
    one = np.uint64(1)
    two = np.uint64(2)
    total = 0.0
    k = np.uint64(k_eff)
    while k > 0:  # from the last displayed position: Z_k and R_0 are suffix sums
        k -= one
        at = (base + top[k]) * two
        z += er[at]
        inv_z[k] = z
        total += theta[k] * er[at + one]
    for j in range(k_eff):
        inv_z[j] = 1.0 / max(inv_z[j], floor)
    placed = 0.0
    before = 0.0
    a = 0.0
    c = 0.0
    gain = 0.0
    for j in range(k_eff):
        d = top[j]
        at = (base + d) * two
        e_d = er[at]
        rho_d = er[at + one]
        iz = inv_z[j]
        th = theta[j]
        at_j = base + np.uint64(j)
        own = spread[at_j] * (rsum - before)
        b_j = own + carry[at_j]
        c += (total - placed - b_j) * iz
        placed += th * rho_d
        before += rho_d
        a += th * iz
        grad[base + d] += (total - placed) - b_j + e_d * (rho_d * a - c)
        residual[at_j] += (total - placed) - own
        if with_exposure:
            exposure[base + d] += v[j]
            gain += th * rho_d
    return a, gain, c


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def _channels(top, k_eff, z, er, base, stride, cs, theta, spread, carry, rsum, q, floor, grad, residual, inv_z,
              acc, v, exposure, with_exposure):  # pragma: no cover - compiled
    """One row, C > 1 reward channels (sums in ``acc``: R_0, placed, before, c); returns
    (a_{K-1}, DCG@K of channel 0) and leaves c_{K-1} of every channel in ``acc[3]``."""
    C = acc.shape[1]
    one = np.uint64(1)
    for c in range(C):
        acc[0, c] = 0.0
        acc[1, c] = 0.0
        acc[2, c] = 0.0
        acc[3, c] = 0.0
    k = np.uint64(k_eff)
    while k > 0:
        k -= one
        at = (base + top[k]) * stride
        z += er[at]
        inv_z[k] = z
        th = theta[k]
        for c in range(C):
            acc[0, c] += th * er[at + np.uint64(1 + c)]
    for j in range(k_eff):
        inv_z[j] = 1.0 / max(inv_z[j], floor)
    a = 0.0
    gain = 0.0
    for j in range(k_eff):
        d = top[j]
        at = (base + d) * stride
        e_d = er[at]
        iz = inv_z[j]
        th = theta[j]
        sp = spread[base + np.uint64(j)]
        a += th * iz
        g_at = (base + d) * cs
        p_at = (base + np.uint64(j)) * cs
        for c in range(C):
            rho_d = er[at + np.uint64(1 + c)]
            own = sp * (rsum[q * cs + np.uint64(c)] - acc[2, c])
            b_j = own + carry[p_at + np.uint64(c)]
            acc[3, c] += (acc[0, c] - acc[1, c] - b_j) * iz
            acc[1, c] += th * rho_d
            acc[2, c] += rho_d
            grad[g_at + np.uint64(c)] += (acc[0, c] - acc[1, c]) - b_j + e_d * (rho_d * a - acc[3, c])
            residual[p_at + np.uint64(c)] += (acc[0, c] - acc[1, c]) - own
        if with_exposure:
            exposure[base + d] += v[j]
            gain += th * er[at + one]
    return a, gain


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def add_tail_terms(er, tail_a, tail_c, grad):  # pragma: no cover - compiled
    """grad[q, d, c] += e_d (rho_d^c tail_a[q] - tail_c[q, c]) for every item (0 on padding: e = 0)."""
    Q, N, C = grad.shape
    for q in range(Q):
        ta = tail_a[q]
        if ta == 0.0:
            continue
        for d in range(N):
            e_d = er[q, d, 0]
            for c in range(C):
                grad[q, d, c] += e_d * (er[q, d, 1 + c] * ta - tail_c[q, c])
