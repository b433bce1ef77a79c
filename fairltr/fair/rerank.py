"""FA*IR top-k re-ranking of every query at once (docs/spec.md §4).

Walk positions i = 1..k; if the protected count so far is below m(i), take the best remaining
protected candidate, else the best remaining candidate of either group. Within each group
candidates are taken by decreasing score (ties: earlier input row first), whatever the input
order. Queries are processed together on padded (Q, N) arrays, one array per length bucket
(:func:`fairltr.buckets.length_buckets`: padded slots <= 2 x rows, so one very long query does
not pad every other to its length); the only Python loop is over positions.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from fairltr.buckets import bucket_rows, length_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import ORIGIN_KEY, category_codes, check_table, positions_in_query, query_codes
from fairltr.errors import ConfigError, DataError
from fairltr.fair.mtable import cached_mtable, check_params

__all__ = ["rerank", "required_counts", "resolve_scores"]


def resolve_scores(df: pd.DataFrame, scores: Sequence[float] | np.ndarray | pd.Series | str, query: str) -> np.ndarray:
    """Scores as a finite float array of one value per row (``scores`` may name a column)."""
    if isinstance(scores, str):
        if scores not in df.columns:
            raise DataError(f"score column {scores!r} not in the table; columns: {list(df.columns)}")
        scores = df[scores]
    try:
        s = np.asarray(scores, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise DataError("scores must be numbers (one per row)") from None
    if len(s) != len(df):
        raise DataError(f"got {len(s)} scores for {len(df)} rows")
    bad = ~np.isfinite(s)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise DataError(f"score at row {row} is {s[row]} (query {df[query].iloc[row]!r}); scores must be finite")
    return s


def required_counts(table: np.ndarray) -> np.ndarray:
    """The protected count each prefix must reach so that every later prefix can still pass:
    m'(i) = max_{j >= i} (m(j) - (j - i)). Equals m when m grows by at most one per position
    (always, up to floating-point lag of scipy's quantile)."""
    m = np.asarray(table, dtype=np.int64)
    idx = np.arange(len(m))
    return np.maximum.accumulate((m - idx)[::-1])[::-1] + idx


def _group_lists(rows_sorted: np.ndarray, member: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """From (Q, N) rows in score order keep those with ``member`` (same shape), left-aligned:
    (Q, width + 1) row indices padded with -1 (one spare column for a pointer past the end)
    and the per-query counts."""
    n_q = rows_sorted.shape[0]
    pos = np.cumsum(member, axis=1) - 1
    out = np.full((n_q, width + 1), -1, dtype=np.int64)
    qi, si = np.nonzero(member)
    out[qi, pos[qi, si]] = rows_sorted[qi, si]
    return out, member.sum(axis=1)


MULTI_GROUP_HINT = ("for several categories give each protected one its minimum share (multinomial FA*IR: "
                    "fairltr rerank --p 'A=0.2,B=0.1') or use a multi-group re-ranker (DetGreedy, DetCons, "
                    "DetRelaxed, DetConstSort of Geyik et al. 2019: fairltr rerank --method detconstsort)")


def binary_group_codes(df: pd.DataFrame, columns) -> np.ndarray:
    """FA*IR's two groups: 0 = non-protected, 1 = protected, from ONE group attribute of at most
    two categories (integers: 0 vs 1; strings: the less frequent category is protected, see
    :func:`fairltr.data.category_codes`). Several attributes or more than two categories are a
    one-line :class:`ConfigError` naming the multi-group re-rankers."""
    if len(columns.groups) > 1:
        raise ConfigError(f"FA*IR re-ranks on one binary group attribute; got {len(columns.groups)} "
                          f"({', '.join(columns.groups)}): {MULTI_GROUP_HINT}")
    codes, categories = category_codes(df[columns.group])
    if len(categories) > 2:
        shown = ", ".join(str(cat) for cat in categories[:8]) + (", ..." if len(categories) > 8 else "")
        raise ConfigError(f"FA*IR is binary (protected vs non-protected), but group column {columns.group!r} has "
                          f"{len(categories)} categories ({shown}); {MULTI_GROUP_HINT}")
    return (codes >= 1).astype(np.int64)


def rerank(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    k: int | None = None,
    p: float | None = None,
    alpha: float = 0.1,
    query: str = UNSET,
    group: str = UNSET,
    adjust: bool = True,
    *,
    columns: RankingColumns | None = None,
) -> pd.DataFrame:
    """FA*IR re-ranking of every query in ``df`` by ``scores`` (an array, one per row, or a
    column name).

    Each query's top ``k_q = min(k, n_q)`` (``k=None``: ``k_q = n_q``) satisfies the ranked group
    fairness test with the mtable of (k_q, p, alpha[, adjusted]); the remaining candidates follow in
    score order. Returns every row exactly once, queries in order of first appearance, with
    ``score`` (the given scores), 1-based ``rank`` and ``fair_feasible`` (False for a query whose
    protected candidates ran out before the table was met; its ranking is then filled with the
    best remaining candidates). Group values >= 1 count as protected. ``columns`` names the
    query and group columns (default :data:`~fairltr.columns.DEFAULT_COLUMNS`; ``query`` and
    ``group`` override it); judgment and item columns are carried along unchecked.
    """
    c = resolve_columns(columns, query=query, group=group).require("group", purpose="FA*IR re-ranking")
    if p is None:
        raise ConfigError("p (the target proportion of protected candidates) is required, in (0, 1)")
    k, p, alpha = check_params(k, p, alpha)
    check_table(df, c.replace(judgment=None, item=None))
    group_codes = binary_group_codes(df, c)
    s = resolve_scores(df, scores, c.query)
    n = len(df)
    codes, uniques = query_codes(df, c.query)
    n_q = len(uniques)
    prot = group_codes >= 1

    slot, sizes = positions_in_query(codes, n_q)
    kq = sizes if k is None else np.minimum(sizes, k)
    rank = np.zeros(n, dtype=np.int64)  # 0: not (yet) ranked
    feasible = np.ones(n_q, dtype=bool)
    tables: dict[int, np.ndarray] = {}  # required counts per distinct k_q (adjusted tables depend on k)
    buckets = length_buckets(sizes)
    for queries in buckets:
        rows, local = bucket_rows(codes, queries, n_q, whole=len(buckets) == 1)
        feasible[queries] = _rerank_bucket(rows, local, slot[rows], sizes[queries], kq[queries], s, prot, rank,
                                           tables, p, alpha, adjust)

    # output: queries in order of first appearance, each in rank order
    start = np.cumsum(sizes) - sizes
    final = np.empty(n, dtype=np.int64)
    final[start[codes] + rank - 1] = np.arange(n)
    out = df.iloc[final].copy()
    out["score"] = s[final]
    out["rank"] = rank[final]
    out["fair_feasible"] = feasible[codes[final]]
    out.attrs.pop(ORIGIN_KEY, None)  # rows re-ordered and re-indexed: the reader's line map no longer applies
    return out.reset_index(drop=True)


def _rerank_bucket(
    row_ids: np.ndarray, codes: np.ndarray, slot: np.ndarray, sizes: np.ndarray, kq: np.ndarray, s: np.ndarray,
    prot: np.ndarray, rank: np.ndarray, tables: dict[int, np.ndarray], p: float, alpha: float, adjust: bool,
) -> np.ndarray:
    """FA*IR over the queries of one bucket: ``row_ids`` (frame rows), their bucket-local query
    ``codes`` and ``slot``; ``sizes`` and ``kq`` per bucket query. Writes the 1-based ``rank`` of
    every row in place and returns the bucket's per-query feasibility flags."""
    n_q = len(sizes)
    width = int(sizes.max())
    big_k = int(kq.max())
    # padded (Q, N) layout; each query's candidates by decreasing score, ties by input order
    rows = np.full((n_q, width), -1, dtype=np.int64)
    rows[codes, slot] = row_ids
    padded_scores = np.full((n_q, width), np.inf)
    padded_scores[codes, slot] = -s[row_ids]
    rows_sorted = np.take_along_axis(rows, np.argsort(padded_scores, axis=1, kind="stable"), axis=1)
    del rows, padded_scores
    valid = rows_sorted >= 0
    is_prot = valid & prot[np.maximum(rows_sorted, 0)]
    p_rows, n_prot = _group_lists(rows_sorted, is_prot, width)
    u_rows, n_unprot = _group_lists(rows_sorted, valid & ~is_prot, width)
    del is_prot
    s_ext = np.append(s, -np.inf)  # row -1 (past a group's end) scores -inf
    p_flat, u_flat = p_rows.ravel(), u_rows.ravel()

    lengths, table_of = np.unique(kq, return_inverse=True)
    table = np.zeros((len(lengths), big_k), dtype=np.int64)
    for d, length in enumerate(lengths):
        if int(length) not in tables:
            tables[int(length)] = required_counts(cached_mtable(int(length), p, alpha, bool(adjust)))
        table[d, :length] = tables[int(length)]

    ip = np.arange(n_q) * (width + 1)  # flat pointers into p_rows / u_rows
    iu = ip.copy()
    p_end = ip + n_prot
    u_end = iu + n_unprot
    taken_p = np.zeros(n_q, dtype=np.int64)
    feasible = np.ones(n_q, dtype=bool)
    for t in range(big_k):
        active = t < kq
        need = taken_p < table[table_of, t]
        has_p = ip < p_end
        has_u = iu < u_end
        pr, ur = p_flat[ip], u_flat[iu]
        ps, us = s_ext[pr], s_ext[ur]
        p_first = ~has_u | (ps > us) | ((ps == us) & (pr < ur))
        take_p = has_p & (need | p_first)
        feasible &= ~(active & need & ~has_p)
        chosen = np.where(take_p, pr, ur)
        rank[chosen[active]] = t + 1
        step_p = take_p & active
        ip += step_p
        taken_p += step_p
        iu += active & ~take_p

    # the others follow in score order: rank = k_q + their position among the unpicked
    rest = valid & (rank[np.maximum(rows_sorted, 0)] == 0)
    qi, si = np.nonzero(rest)
    rank[rows_sorted[qi, si]] = kq[qi] + np.cumsum(rest, axis=1)[qi, si]
    return feasible
