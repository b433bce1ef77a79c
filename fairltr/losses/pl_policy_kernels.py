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
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["policy_rows", "add_tail_terms", "disparity_terms", "store_prefixes", "SELECT_MAX"]

SELECT_MAX = 32
"""Cut-offs up to this are served by selection (a scan with an insertion into K sorted slots);
longer ones by sorting the rows."""


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def _row_prefix(keys, row, low, n_slots, k_eff, n, select, er, base, stride, top, top_keys, e):  # pragma: no cover
    """The row's first ``k_eff`` items into ``top``; returns the tail sum of e (the items past
    k_eff). ``keys[row + j]``: the row's keys; e of item d at ``er[(base + d) * stride]`` and at
    ``e[base + d]`` (contiguous: the selection's tail sum reads it in slot order)."""
    one = np.uint64(1)
    if select:  # the k_eff smallest keys of the row's slots (real items' keys are below every padded slot's)
        big = np.int64(9223372036854775807)
        for k in range(k_eff):
            top_keys[k] = big
        threshold = big
        for j in range(n_slots):  # slot j holds item j's key (padding: +inf bits, never selected)
            key = keys[row + np.uint64(j)]
            if key < threshold:  # rare after the first few: a branch-free pass through the K sorted slots
                for k in range(k_eff):
                    kept = top_keys[k]
                    top_keys[k] = min(kept, key)
                    key = max(kept, key)
                threshold = top_keys[k_eff - 1]
        for k in range(k_eff):
            top[k] = np.uint64(top_keys[k]) & low
        return _tail_of_selection(keys, row, n_slots, threshold, e, base)
    tail = 0.0
    for k in range(k_eff):
        top[k] = np.uint64(keys[row + np.uint64(k)]) & low
    k = np.uint64(n)
    while k > np.uint64(k_eff):
        k -= one
        tail += er[(base + (np.uint64(keys[row + k]) & low)) * stride]
    return tail


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath=True)
def _tail_of_selection(keys, row, n_slots, threshold, e, base):  # pragma: no cover - compiled
    """The sum of e over the row's slots whose key is above ``threshold`` (the K-th smallest: the
    items not displayed; padding has e = 0); a separate loop without the selection's branches, so
    that it vectorises (fastmath: the order of the sum is free)."""
    tail = 0.0
    for j in range(n_slots):
        tail += e[base + np.uint64(j)] if keys[row + np.uint64(j)] > threshold else 0.0
    return tail


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def policy_rows(keys, low, select, cutoff, er, e, theta, spread, carry, v, n_real, rsum, floor,
                grad, residual, exposure, dcg, tail_a, tail_c, tails, baseline):  # pragma: no cover - compiled
    """Adds the terms of the rows ``keys`` (B, Q, W) int64 (item = key & low; sorted rows, or
    unsorted with ``select``) to ``grad`` (Q, N, C), ``exposure`` (Q, N) and ``dcg`` (Q,) (both
    skipped when ``exposure`` has no columns), ``tail_a`` (Q,) and ``tail_c`` (Q, C) (see the
    module docstring). ``er`` (Q, N, 1 + C): e_d then the C rewards of item d (``e``: e alone,
    (Q, N)); ``theta``, ``v``
    (N,): DCG and exposure weights; ``spread`` (Q, N): Theta_{>k} / (n - k) of the baseline
    (zeros: no baseline); ``carry`` (Q, N, C): the carried part of the baseline at each position
    (zeros: none); ``residual`` (Q, N, C) accumulates R_{k+1} - Theta_{>k} m_k at each displayed
    position (the next call's carry, once averaged); ``rsum`` (Q, C): each channel's sum over the
    query's real items (``baseline``: whether spread and carry are not zeros); Z is floored at
    ``floor``; ``tails`` (B, Q): each row's sum of e past its
    K displayed items when the rows hold only those (:func:`store_prefixes`; no columns: the
    rows are whole, or selected). Per row: one backward pass for the Z_k, their
    reciprocals, then per channel R_0 and the forward pass, with their sums in registers. Flat
    arrays with unsigned offsets (no negative-index fix-ups). Long because the rows run in one
    compiled parallel loop; its body is the per-row dispatch."""
    B, Q, W = keys.shape
    N = er.shape[1]
    C = er.shape[2] - 1
    flat_keys = keys.reshape(-1)
    flat_er = er.reshape(-1)
    flat_e = e.reshape(-1)
    flat_grad = grad.reshape(-1)
    flat_spread = spread.reshape(-1)
    flat_carry = carry.reshape(-1)
    flat_residual = residual.reshape(-1)
    flat_exposure = exposure.reshape(-1)
    with_exposure = exposure.shape[1] > 0
    top = np.empty(max(N, 1), dtype=np.uint64)
    top_keys = np.empty(max(N, 1), dtype=np.int64)
    inv_z = np.empty(max(N, 1))
    stride = np.uint64(C + 1)
    cs = np.uint64(C)
    ulow = np.uint64(low)
    all_bits = np.uint64(18446744073709551615)
    one = np.uint64(1)
    for q in range(Q):
        n = n_real[q]
        if n == 0:
            continue
        k_eff = min(cutoff, n)
        base = np.uint64(q) * np.uint64(N)
        for b in range(B):
            row = (np.uint64(b) * np.uint64(Q) + np.uint64(q)) * np.uint64(W)
            if C == 1:  # the common case, every sum in a register
                if tails.shape[1] > 0:  # stored prefixes and their tails
                    a, c_last, gain = _sorted_row(flat_keys, row, ulow, k_eff, n, tails[b, q], True, flat_er, base,
                                                  theta, flat_spread, flat_carry, rsum[q, 0], floor, flat_grad,
                                                  flat_residual, inv_z, v, flat_exposure, with_exposure, baseline)
                elif select:
                    z = _row_prefix(flat_keys, row, ulow, N, k_eff, n, True, flat_er, base, stride, top, top_keys,
                                    flat_e)
                    a, c_last, gain = _sorted_row(top, np.uint64(0), all_bits, k_eff, n, z, True, flat_er, base,
                                                  theta, flat_spread, flat_carry, rsum[q, 0], floor, flat_grad,
                                                  flat_residual, inv_z, v, flat_exposure, with_exposure, baseline)
                else:
                    a, c_last, gain = _sorted_row(flat_keys, row, ulow, k_eff, n, 0.0, False, flat_er, base, theta,
                                                  flat_spread, flat_carry, rsum[q, 0], floor, flat_grad,
                                                  flat_residual, inv_z, v, flat_exposure, with_exposure, baseline)
                if with_exposure:
                    dcg[q] += gain
                if k_eff < n:
                    tail_a[q] += a
                    tail_c[q, 0] += c_last
                continue
            if tails.shape[1] > 0:  # stored prefixes: the first k_eff items and their tail
                for k in range(k_eff):
                    top[k] = np.uint64(flat_keys[row + np.uint64(k)]) & ulow
                z = tails[b, q]
            else:
                z = _row_prefix(flat_keys, row, ulow, N, k_eff, n, select, flat_er, base, stride, top, top_keys,
                                flat_e)
            k = np.uint64(k_eff)
            while k > 0:  # from the last displayed position: Z_k is a suffix sum
                k -= one
                z += flat_er[(base + top[k]) * stride]
                inv_z[k] = z
            for j in range(k_eff):
                inv_z[j] = 1.0 / max(inv_z[j], floor)
            shown = k_eff < n
            a = 0.0
            for c in range(C):
                a, c_last, gain = _channel_forward(top, k_eff, flat_er, base, stride, cs, np.uint64(c), theta,
                                                   flat_spread, flat_carry, rsum[q, c], inv_z, flat_grad,
                                                   flat_residual, v, flat_exposure, with_exposure and c == 0, shown)
                if shown:
                    tail_c[q, c] += c_last
                if with_exposure and c == 0:
                    dcg[q] += gain
            if shown:
                tail_a[q] += a


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def _sorted_row(keys, row, low, k_eff, n, tail, given_tail, er, base, theta, spread, carry, rsum, floor, grad,
                residual, inv_z, v, exposure, with_exposure, baseline):  # pragma: no cover - compiled
    """One row, one reward channel (``er`` (Q, N, 2)): its displayed items in order at
    ``keys[row + k] & low`` (a sorted row, a stored prefix or a selection), read again in each
    pass; every sum in a register; the forward loop without the baseline's loads and stores when
    there is none. The tail past K is ``tail`` when ``given_tail``, else summed from the sorted
    row. Returns (a_{K-1}, c_{K-1}, DCG@K); with K < n each displayed item's share of the
    not-displayed term is taken back (as :func:`_channel_forward`). Long because every sum lives
    in a register across the passes of one row; calls would spill them."""
    one = np.uint64(1)
    two = np.uint64(2)
    z = tail
    k = np.uint64(n) if not given_tail else np.uint64(k_eff)
    while k > np.uint64(k_eff):  # the tail past the displayed positions
        k -= one
        z += er[(base + (np.uint64(keys[row + k]) & low)) * two]
    total = 0.0
    while k > 0:  # Z_k and R_0 are suffix sums
        k -= one
        at = (base + (np.uint64(keys[row + k]) & low)) * two
        z += er[at]
        inv_z[k] = z
        total += theta[k] * er[at + one]
    for j in range(k_eff):
        inv_z[j] = 1.0 / max(inv_z[j], floor)
    placed = 0.0
    a = 0.0
    cc = 0.0
    gain = 0.0
    if baseline:
        before = 0.0
        for j in range(k_eff):
            d = np.uint64(keys[row + np.uint64(j)]) & low
            at = (base + d) * two
            e_d = er[at]
            rho_d = er[at + one]
            iz = inv_z[j]
            th = theta[j]
            at_j = base + np.uint64(j)
            own = spread[at_j] * (rsum - before)
            b_j = own + carry[at_j]
            cc += (total - placed - b_j) * iz
            placed += th * rho_d
            before += rho_d
            a += th * iz
            grad[base + d] += (total - placed) - b_j + e_d * (rho_d * a - cc)
            residual[at_j] += (total - placed) - own
            if with_exposure:
                exposure[base + d] += v[j]
                gain += th * rho_d
    else:
        for j in range(k_eff):
            d = np.uint64(keys[row + np.uint64(j)]) & low
            at = (base + d) * two
            e_d = er[at]
            rho_d = er[at + one]
            iz = inv_z[j]
            th = theta[j]
            cc += (total - placed) * iz
            placed += th * rho_d
            a += th * iz
            grad[base + d] += (total - placed) + e_d * (rho_d * a - cc)
            if with_exposure:
                exposure[base + d] += v[j]
                gain += th * rho_d
    if k_eff < n:
        for j in range(k_eff):
            d = np.uint64(keys[row + np.uint64(j)]) & low
            at = (base + d) * two
            grad[base + d] -= er[at] * (er[at + one] * a - cc)
    return a, cc, gain


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy", fastmath={"contract"})
def _channel_forward(top, k_eff, er, base, stride, cs, c, theta, spread, carry, rsum, inv_z, grad,
                     residual, v, exposure, with_exposure, shown):  # pragma: no cover - compiled
    """The forward pass of one row for reward channel ``c`` (``inv_z`` holds 1/Z_k); returns
    (a_{K-1}, c_{K-1}, the row's DCG@K of this channel). With ``shown`` (K < n) each displayed
    item's share of the not-displayed term, e_d (rho_d a_{K-1} - c_{K-1}), is taken back afterwards.
    R_0 comes first, in a loop of its own (a sum in a register)."""
    r_at = np.uint64(1) + c
    total = 0.0
    for j in range(k_eff):
        total += theta[j] * er[(base + top[j]) * stride + r_at]
    placed = 0.0
    before = 0.0
    a = 0.0
    cc = 0.0
    gain = 0.0
    for j in range(k_eff):
        d = top[j]
        at = (base + d) * stride
        e_d = er[at]
        rho_d = er[at + r_at]
        iz = inv_z[j]
        th = theta[j]
        at_j = base + np.uint64(j)
        own = spread[at_j] * (rsum - before)
        b_j = own + carry[at_j * cs + c]
        cc += (total - placed - b_j) * iz
        placed += th * rho_d
        before += rho_d
        a += th * iz
        grad[(base + d) * cs + c] += (total - placed) - b_j + e_d * (rho_d * a - cc)
        residual[at_j * cs + c] += (total - placed) - own
        if with_exposure:
            exposure[base + d] += v[j]
            gain += th * rho_d
    if shown:
        for j in range(k_eff):
            d = top[j]
            at = (base + d) * stride
            grad[(base + d) * cs + c] -= er[at] * (er[at + r_at] * a - cc)
    return a, cc, gain


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


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def disparity_terms(exposure, codes, mask, scale, present, squared, use_max, d, kappa):  # pragma: no cover
    """The group disparity D_q (``d``, (Q,)) of the expected ``exposure`` (Q, N) and kappa_qp =
    dD_q/dExp_i for the items of group p (``kappa``, (Q, G)), in closed form
    (:func:`fairltr.losses.pl_objective.disparity_gradient`'s): a_p = (sum of the exposure of group
    p's items) / ``scale`` (n_p U_p); the pair (0, p) counts where ``present`` both; d(x) = x^2 or
    max(0, x); ``use_max``: D is the first largest pair's d, else the mean over the valid pairs."""
    Q, N = exposure.shape
    G = scale.shape[1]
    a = np.empty(G)
    for q in range(Q):
        for p in range(G):
            a[p] = 0.0
            kappa[q, p] = 0.0
        for k in range(N):
            if mask[q, k]:
                a[codes[q, k]] += exposure[q, k]
        for p in range(G):
            a[p] /= scale[q, p]
        best, best_at, total, n_valid = -1.0, -1, 0.0, 0
        for p in range(1, G):
            if present[q, 0] and present[q, p]:
                x = a[0] - a[p]
                val = x * x if squared else max(x, 0.0)
                n_valid += 1
                total += val
                if val > best:
                    best, best_at = val, p
        if n_valid == 0:
            d[q] = 0.0
            continue
        d[q] = best if use_max else total / n_valid
        for p in range(1, G):
            if not (present[q, 0] and present[q, p]) or (use_max and p != best_at):
                continue
            x = a[0] - a[p]
            slope = 2.0 * x if squared else (1.0 if x > 0 else 0.0)
            w = 1.0 if use_max else 1.0 / n_valid
            kappa[q, 0] += w * slope
            kappa[q, p] -= w * slope
        for p in range(G):
            kappa[q, p] /= scale[q, p]


@njit(cache=True, nogil=True, boundscheck=False, error_model="numpy")
def store_prefixes(keys, low, select, cutoff, er, e, v, theta, n_real, prefixes, tails, exposure,
                   dcg):  # pragma: no cover - compiled
    """The first pass of two: each row's K displayed items (sorted rows, or selected with
    ``select``) into ``prefixes`` (B, Q, K) (any integer type), the sum of e past them into
    ``tails`` (B, Q), their exposure v_k into ``exposure`` (Q, N) and their DCG@K of the rewards
    ``er[..., 1]`` into ``dcg`` (Q,). The second pass (:func:`policy_rows` with ``tails``) reads
    them back once the rewards are known (they depend on this pass's exposure)."""
    B, Q, W = keys.shape
    N = er.shape[1]
    flat_keys = keys.reshape(-1)
    flat_er = er.reshape(-1)
    flat_e = e.reshape(-1)
    stride = np.uint64(er.shape[2])
    ulow = np.uint64(low)
    top = np.empty(max(N, 1), dtype=np.uint64)
    top_keys = np.empty(max(N, 1), dtype=np.int64)
    K = prefixes.shape[2]
    for q in range(Q):
        n = n_real[q]
        if n == 0:
            continue
        k_eff = min(cutoff, n)
        base = np.uint64(q) * np.uint64(N)
        gain = 0.0
        for b in range(B):
            row = (np.uint64(b) * np.uint64(Q) + np.uint64(q)) * np.uint64(W)
            tails[b, q] = _row_prefix(flat_keys, row, ulow, N, k_eff, n, select, flat_er, base, stride, top, top_keys,
                                      flat_e)
            for k in range(k_eff):
                d = top[k]
                prefixes[b, q, k] = d
                exposure[q, d] += v[k]
                gain += theta[k] * flat_er[(base + d) * stride + np.uint64(1)]
            for k in range(k_eff, K):
                prefixes[b, q, k] = 0
        dcg[q] += gain
