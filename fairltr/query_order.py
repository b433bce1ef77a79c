"""Queries as integer codes, and positions and ranks within a query (numpy, vectorised over
every row of a table at once)."""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["query_codes", "positions_in_query", "score_order", "rank_within_query"]


def query_codes(df: pd.DataFrame, query: str) -> tuple[np.ndarray, list]:
    """Integer code per row (queries numbered by first appearance) and the ordered query ids."""
    codes, uniques = pd.factorize(df[query], sort=False)
    return codes.astype(np.int64), list(uniques)


def positions_in_query(codes: np.ndarray, n_queries: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(slots, sizes): the 0-based position of every row inside its query, counting the query's
    rows in row order, and the number of rows of each query. ``codes[r]`` is row r's query
    (0..Q-1, e.g. from :func:`query_codes`); ``n_queries`` defaults to max code + 1. The one
    implementation of "position within query": padding slots, ranks of a sorted table
    (:func:`rank_within_query`) and FA*IR's layout all use it."""
    codes = np.asarray(codes, dtype=np.int64)
    if n_queries is None:
        n_queries = int(codes.max()) + 1 if len(codes) else 0
    sizes = np.bincount(codes, minlength=n_queries)
    starts = np.cumsum(sizes) - sizes
    if len(codes) < 2 or bool(np.all(codes[1:] >= codes[:-1])):  # rows already grouped by query
        return np.arange(len(codes), dtype=np.int64) - starts[codes], sizes
    order = np.argsort(codes, kind="stable")
    slots = np.empty(len(codes), dtype=np.int64)
    slots[order] = np.arange(len(codes), dtype=np.int64) - starts[codes[order]]
    return slots, sizes


def score_order(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row permutation that groups the queries (in code order) and sorts each by decreasing
    score; ties keep row order."""
    codes = np.asarray(codes, dtype=np.int64)
    return np.lexsort((np.arange(len(codes)), -np.asarray(scores, dtype=np.float64).reshape(-1), codes))


def rank_within_query(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """1-based rank of every row inside its query by decreasing score (ties: the earlier row
    first), in the rows' own order (not sorted)."""
    order = score_order(codes, scores)
    slots, _ = positions_in_query(np.asarray(codes, dtype=np.int64)[order])
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = slots + 1
    return ranks
