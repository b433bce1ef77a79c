"""Cluster bootstrap machinery of docs/spec.md section 3b (the statistics themselves live in
:mod:`fairltr.metrics.audit`).

Two resampling units:

* ``queries`` (a table of 30 queries or more, by default): queries are drawn with replacement.
  :func:`bootstrap_queries` hands :func:`scipy.stats.bootstrap` the query indices (vectorised,
  in batches of resamples); the statistic turns each resample into per-query multiplicities
  (a (B, Q) weight matrix, :func:`query_weights`) and re-pools per-query sufficient statistics
  with one matrix product, so no Python loop re-evaluates the table B times.
* ``candidates`` (fewer than 30 queries, e.g. the Law data's one list): candidates are drawn
  with replacement within each stratum (query x category), so every stratum keeps its size;
  :func:`stratified_weights` gives the (B, rows) multiplicities and the percentile interval is
  taken over the B statistics (BCa is not offered for this unit: scipy's jackknife has no strata).
"""

from __future__ import annotations

import warnings
from typing import Callable

import numpy as np
from scipy import stats

from fairltr.errors import ConfigError

__all__ = ["MIN_QUERIES_FOR_QUERY_UNIT", "resolve_unit", "query_weights", "bootstrap_queries",
           "stratified_weights", "bootstrap_candidates", "CELLS_PER_BATCH", "canonical_row_order"]

MIN_QUERIES_FOR_QUERY_UNIT = 30
"""``unit="auto"`` resamples queries from this many queries up, candidates below."""

CELLS_PER_BATCH = 20_000_000
"""Resamples are processed in batches of about this many (resample x unit) cells (memory bound)."""


def resolve_unit(unit: str, n_queries: int) -> str:
    """``"queries"`` or ``"candidates"`` for a requested ``unit`` ("auto" decides by the number of queries)."""
    if unit == "auto":
        return "queries" if n_queries >= MIN_QUERIES_FOR_QUERY_UNIT else "candidates"
    if unit not in ("queries", "candidates"):
        raise ConfigError(f"bootstrap unit must be 'auto', 'queries' or 'candidates', got {unit!r}")
    return unit


def query_weights(index: np.ndarray, n_queries: int) -> np.ndarray:
    """Multiplicities (..., Q) float64 of the query indices of each resample (..., n): row b
    counts how often each query was drawn in resample b."""
    index = np.asarray(index, dtype=np.int64)
    lead = index.shape[:-1]
    flat = index.reshape(-1, index.shape[-1])
    offsets = (np.arange(flat.shape[0], dtype=np.int64) * n_queries)[:, None]
    counts = np.bincount((flat + offsets).ravel(), minlength=flat.shape[0] * n_queries)
    return counts.reshape(*lead, n_queries).astype(np.float64)


def bootstrap_queries(
    statistic: Callable[[np.ndarray], np.ndarray], n_queries: int, *, level: float, n_boot: int, seed: int,
    method: str = "percentile",
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of every output of ``statistic`` under the cluster bootstrap over queries.

    ``statistic(weights)`` maps a (batch, Q) multiplicity matrix to an (M, batch) array (NaN
    allowed: that resample's value is undefined). ``method``: ``"percentile"`` or ``"BCa"``
    (scipy.stats.bootstrap's). An output whose bootstrap distribution holds a NaN gets NaN bounds."""
    if method not in ("percentile", "BCa"):
        raise ConfigError(f"bootstrap method must be 'percentile' or 'BCa', got {method!r}")

    def on_indices(index: np.ndarray, axis: int = -1) -> np.ndarray:
        index = np.moveaxis(np.asarray(index), axis, -1)
        lead = index.shape[:-1]
        w = query_weights(index, n_queries).reshape(-1, n_queries)
        out = statistic(w)
        return out.reshape(out.shape[0], *lead)

    batch = max(1, min(n_boot, CELLS_PER_BATCH // max(1, n_queries)))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # degenerate / NaN distributions: NaN bounds, said in the docs
        res = stats.bootstrap((np.arange(n_queries),), on_indices, n_resamples=n_boot, confidence_level=level,
                              method=method, vectorized=True, batch=batch, random_state=np.random.default_rng(seed))
    return np.asarray(res.confidence_interval.low, dtype=np.float64), np.asarray(res.confidence_interval.high,
                                                                                  dtype=np.float64)


def stratified_weights(strata: np.ndarray, n_resamples: int, rng: np.random.Generator,
                       order: np.ndarray | None = None) -> np.ndarray:
    """(n_resamples, rows) multiplicities: in each resample every stratum's rows are drawn with
    replacement as many times as the stratum has rows (so each stratum keeps its size).

    ``order``: the row permutation the draws index, grouped by stratum (default: by stratum, then
    row order). A caller that wants resamples invariant to the table's row order passes an order
    by stratum and then by row content (:func:`canonical_row_order`)."""
    strata = np.asarray(strata, dtype=np.int64)
    n = len(strata)
    order = np.argsort(strata, kind="stable") if order is None else np.asarray(order, dtype=np.int64)
    sorted_strata = strata[order]
    sizes = np.bincount(sorted_strata)
    starts = np.cumsum(sizes) - sizes
    size_of = sizes[sorted_strata].astype(np.float64)
    start_of = starts[sorted_strata]
    u = rng.random((n_resamples, n))
    drawn = start_of[None, :] + np.minimum((u * size_of[None, :]).astype(np.int64), (size_of - 1).astype(np.int64))
    counts = query_weights(drawn, n)  # positions in the sorted order
    weights = np.empty_like(counts)
    weights[:, order] = counts
    return weights


def canonical_row_order(strata: np.ndarray, *keys: np.ndarray) -> np.ndarray:
    """Rows grouped by stratum, then ordered by ``keys`` (the first key most significant): when
    rows tied in every key are interchangeable for the statistic (same stratum, same score and
    judgment), resamples drawn in this order do not depend on the table's row order."""
    return np.lexsort(tuple(np.asarray(k) for k in reversed(keys)) + (np.asarray(strata, dtype=np.int64),))


def bootstrap_candidates(
    statistic: Callable[[np.ndarray], np.ndarray], strata: np.ndarray, *, level: float, n_boot: int, seed: int,
    order: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) percentile bounds of every output of ``statistic(weights)`` ((batch, rows)
    multiplicities -> (M, batch)) under the stratified candidate bootstrap (``order``: see
    :func:`stratified_weights`)."""
    rng = np.random.default_rng(seed)
    n = max(1, len(strata))
    batch = max(1, min(n_boot, CELLS_PER_BATCH // n))
    parts = []
    with np.errstate(all="ignore"):
        for start in range(0, n_boot, batch):
            parts.append(statistic(stratified_weights(strata, min(batch, n_boot - start), rng, order)))
    dist = np.concatenate(parts, axis=1)
    alpha = (1.0 - level) / 2.0
    low, high = np.percentile(dist, [100 * alpha, 100 * (1 - alpha)], axis=1)
    return low, high
