"""The audit's per-(query, category) sufficient statistics (docs/spec.md sections 3b and 3c),
built with sparse matrices over category codes (no per-query Python loop):

    n(q, c)      candidates of category c in query q
    sel(q, c)    of them ranked within the top k (with tied scores: P(rank <= k))
    exp(q, c)    sum of v(rank) = 1 / ln(1 + rank) (with tied scores: its mean over the tie group)
    merit(q, c)  sum of judgments
    above(q, c)  of them scoring above the median (section 3c's scoring rate; equal is not above)

A row whose category is unknown in a block (code -1) adds to none of that block's categories.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
from scipy import sparse
from scipy.special import rel_entr

from fairltr.errors import ConfigError
from fairltr.metrics.audit_blocks import Block
from fairltr.metrics.ordering import expected_discount, expected_in_top

__all__ = ["N_STATS", "STAT", "MEDIANS", "above_median", "stat_matrices", "ndkl_per_query"]

N_STATS = 5
STAT = {"n": 0, "selected": 1, "exposure": 2, "merit": 3, "above": 4}
"""Index of each statistic along the last axis."""
MEDIANS = ("none", "sample", "per-query")
"""Where a scoring rate's median comes from: no scoring rate, the whole audited sample, each query."""


def above_median(scores: np.ndarray, qcodes: np.ndarray, median: str) -> np.ndarray:
    """1.0 where a row's score is above the median (every audited row counts in the median,
    unknown categories included; equal scores are not above), else 0.0; zeros for ``"none"``."""
    if median not in MEDIANS:
        raise ConfigError(f"the scoring rate's median must be one of {MEDIANS}, got {median!r}")
    if median == "none":
        return np.zeros(len(scores))
    if median == "sample":
        return (scores > np.median(scores)).astype(np.float64)
    med = pd.Series(scores).groupby(qcodes).transform("median").to_numpy()
    return (scores > med).astype(np.float64)


def stat_matrices(blocks: Sequence[Block], qcodes: np.ndarray, n_q: int, first: np.ndarray, size: np.ndarray,
                  y: np.ndarray, above: np.ndarray, k: int) -> tuple[sparse.csr_matrix, sparse.csr_matrix]:
    """Per row (R, Q * C * S) and per query (Q, C * S) sparse statistics (module docstring) of every
    category C of every block, S = :data:`N_STATS`: columns (q * C + c) * S + stat."""
    n_rows, n_cat, s_n = len(qcodes), sum(b.size for b in blocks), N_STATS
    selected = expected_in_top(first, size, k)
    exposure = expected_discount(first, size, lambda r: 1.0 / np.log1p(r))
    values = np.stack([np.ones(n_rows), selected, exposure, y, above], axis=1)  # (R, S)
    rows_idx, cols_idx, vals = [], [], []
    for b in blocks:
        keep = np.flatnonzero(b.codes >= 0)
        base = (qcodes[keep] * n_cat + b.offset + b.codes[keep]) * s_n
        for stat in range(s_n):
            rows_idx.append(keep)
            cols_idx.append(base + stat)
            vals.append(values[keep, stat])
    r_i, c_i, v = np.concatenate(rows_idx), np.concatenate(cols_idx), np.concatenate(vals)
    row_stats = sparse.csr_matrix((v, (r_i, c_i)), shape=(n_rows, n_q * n_cat * s_n))
    query_stats = sparse.csr_matrix((v, (qcodes[r_i], c_i - qcodes[r_i] * n_cat * s_n)), shape=(n_q, n_cat * s_n))
    return row_stats, query_stats


def ndkl_per_query(qcodes: np.ndarray, first: np.ndarray, size: np.ndarray, sizes: np.ndarray, codes: np.ndarray,
                   n_cat: int, k: int) -> np.ndarray:
    """Per-query NDKL at k of one attribute, (Q,): (1/Z) sum_{i<=min(k, n_q)} KL(D_i || D) / log2(i + 1),
    Z = sum_{i<=min(k, n_q)} 1 / log2(i + 1); D_i the category mix of the top i, D the query's. With
    tied scores D_i is the expected mix over the orders of the ties (a row of a tie group of size m
    starting at f counts 1/m at each position f .. f + m - 1): docs/spec.md section 3, "Ties". An
    unknown category (code -1) is one more category of the mix (it holds places in the ranking)."""
    if (codes < 0).any():
        codes = np.where(codes < 0, n_cat, codes)
        n_cat += 1
    q = len(sizes)
    kk = int(min(k, sizes.max())) if q else 0
    last = first + size - 1
    w = 1.0 / size
    on = first <= kk
    off = on & (last < kk)
    width = kk + 1
    flat = np.concatenate([(qcodes[on] * width + (first[on] - 1)) * n_cat + codes[on],
                           (qcodes[off] * width + last[off]) * n_cat + codes[off]])
    weights = np.concatenate([w[on], -w[off]])
    diff = np.bincount(flat, weights=weights, minlength=q * width * n_cat).reshape(q, width, n_cat)[:, :kk]
    prefix = np.cumsum(np.cumsum(diff, axis=1), axis=1)  # expected count of each category in the top i
    i = np.arange(1, kk + 1, dtype=np.float64)
    d_i = np.clip(prefix, 0.0, None) / i[None, :, None]
    pool = np.bincount(qcodes * n_cat + codes, minlength=q * n_cat).reshape(q, 1, n_cat) / sizes[:, None, None]
    kl = rel_entr(d_i, pool).sum(axis=-1)  # (Q, kk); 0 * log 0 = 0
    valid = i[None, :] <= sizes[:, None]
    disc = np.where(valid, 1.0 / np.log2(i + 1.0)[None, :], 0.0)
    return (kl * disc).sum(axis=1) / disc.sum(axis=1)
