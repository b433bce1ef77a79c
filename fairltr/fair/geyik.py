"""Geyik, Ambler, Kenthapadi (KDD 2019): the multi-category re-rankers DetGreedy, DetCons,
DetRelaxed and DetConstSort of LinkedIn Talent Search, for every query of a table at once.

A group column holds any number of categories a_1..a_G (integers or strings); a target share
p_g per category (the query's own candidate mix by default, or given). At prefix length j the
minimum count of a_g is floor(j p_g) and the maximum ceil(j p_g). Within a category candidates are
taken by decreasing score (ties: earlier input row).

* ``detgreedy``: at position j, if some category is below its minimum, take the best next
  candidate among those; else the best next candidate among the categories below their maximum.
* ``detcons``: as DetGreedy, but when no category is below its minimum take the category below
  its maximum with the smallest ceil(j p_g) / p_g (the one that would reach its maximum first;
  ties: the better next candidate).
* ``detrelaxed``: as DetCons with ceil(ceil(j p_g) / p_g) (ties: the better next candidate).
* ``detconstsort``: rounds r = 1, 2, ...: every category whose minimum floor(r p_g) grew gets
  its next candidate appended (best score first) with max index r, and the new candidate moves up
  past lower-scored candidates while each one passed can move down one place and stay at or
  above its own max index. The top k holds every minimum at every prefix when the candidates
  suffice. ``strict=False`` reads the paper's pseudo-code literally with 0-based arrays, as
  FairRankTune does: a passed candidate may end one place BELOW its max index, and rounds run
  until more than k candidates are placed (see docs/fair.md, "Reference implementations").

When a category runs out, it is skipped and the others continue (the best remaining fill in
when none qualifies). ``fair_feasible`` says per query whether every prefix j <= k holds at
least floor(j p_g) candidates of every category (False: the target could not be met there,
for lack of candidates, or because DetGreedy does not guarantee it).

Speed: all four walk positions (DetConstSort: rounds and the at most G insertions of a round)
in a Python loop of O(k) steps, each one numpy operation over all queries of a length bucket
(:func:`fairltr.buckets.length_buckets`); DetConstSort's move-up is a loop over places, also
vectorised over queries, whose total length is bounded by the number of swaps. The algorithms
are sequential over positions; there is no per-query Python loop.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.buckets import length_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import ORIGIN_KEY, check_table, positions_in_query, query_codes
from fairltr.errors import ConfigError
from fairltr.fair.rerank import _group_lists, resolve_scores
from fairltr.fair.target import category_codes, target_shares

__all__ = ["GEYIK_METHODS", "rerank_geyik", "prefix_feasible"]

GEYIK_METHODS = ("detgreedy", "detcons", "detrelaxed", "detconstsort")
_BIG = np.iinfo(np.int64).max


def _check_k(k: int | None) -> int | None:
    if k is None:
        return None
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def rerank_geyik(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    method: str = "detconstsort",
    target: Mapping[object, float] | str | None = None,
    k: int | None = None,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str = UNSET,
    strict: bool = True,
) -> pd.DataFrame:
    """Re-rank every query of ``df`` by ``scores`` (one per row, or a column name) with Geyik et
    al.'s ``method`` (one of :data:`GEYIK_METHODS`).

    ``target``: None (each query's own category mix), a mapping ``{category: share}`` or a string
    ``"race=Black:0.3,White:0.5,Asian:0.2"`` (shares sum to 1; a category of the table left out
    gets 0; one the table lacks is an error). ``k``: re-rank each query's top ``min(k, n_q)``
    (None: whole lists); the others follow in score order. ``columns`` names the query and group
    columns (any category values). Returns every row once, queries in order of first appearance,
    with ``score``, 1-based ``rank`` and ``fair_feasible`` (see the module docstring), like
    :func:`fairltr.fair.rerank`.
    """
    if method not in GEYIK_METHODS:
        raise ConfigError(f"method must be one of {list(GEYIK_METHODS)}, got {method!r}")
    c = resolve_columns(columns, query=query, group=group).require("group", purpose=f"{method} re-ranking")
    k = _check_k(k)
    check_table(df, c.replace(group=None, judgment=None))
    s = resolve_scores(df, scores, c.query)
    gcodes, cats = category_codes(df, c.group)
    n_g = len(cats)
    codes, uniques = query_codes(df, c.query)
    n_q, n = len(uniques), len(df)
    slot, sizes = positions_in_query(codes, n_q)
    kq = sizes if k is None else np.minimum(sizes, k)
    if target is None:
        counts = np.bincount(codes * n_g + gcodes, minlength=n_q * n_g).reshape(n_q, n_g)
        shares = counts / sizes[:, None]
    else:
        shares = np.broadcast_to(target_shares(target, cats, str(c.group)), (n_q, n_g))

    rank = np.zeros(n, dtype=np.int64)
    buckets = length_buckets(sizes)
    for queries in buckets:
        if len(buckets) == 1:
            rows, local = np.arange(n), codes
        else:
            to_local = np.full(n_q, -1, dtype=np.int64)
            to_local[queries] = np.arange(len(queries))
            local = to_local[codes]
            rows = np.flatnonzero(local >= 0)
            local = local[rows]
        _rerank_bucket(rows, local, slot[rows], sizes[queries], kq[queries], s, gcodes, n_g,
                       np.ascontiguousarray(shares[queries]), rank, method, strict)
    feasible = prefix_feasible(rank, codes, gcodes, kq, shares)

    start = np.cumsum(sizes) - sizes
    final = np.empty(n, dtype=np.int64)
    final[start[codes] + rank - 1] = np.arange(n)
    out = df.iloc[final].copy()
    out["score"] = s[final]
    out["rank"] = rank[final]
    out["fair_feasible"] = feasible[codes[final]]
    out.attrs.pop(ORIGIN_KEY, None)
    return out.reset_index(drop=True)


def prefix_feasible(rank: np.ndarray, codes: np.ndarray, gcodes: np.ndarray, kq: np.ndarray,
                    shares: np.ndarray) -> np.ndarray:
    """Per query: every prefix j <= k_q holds >= floor(j p_g) candidates of every category g
    (``rank``: 1-based per row; ``shares``: (Q, G))."""
    n_q, n_g = shares.shape
    big_k = int(kq.max()) if len(kq) else 0
    at = np.full((n_q, big_k), -1, dtype=np.int64)
    top = rank <= kq[codes]
    at[codes[top], rank[top] - 1] = gcodes[top]
    j = np.arange(1, big_k + 1, dtype=np.float64)
    inside = j[None, :] <= kq[:, None]
    ok = np.ones(n_q, dtype=bool)
    for g in range(n_g):
        need = np.floor(j[None, :] * shares[:, g:g + 1])
        ok &= ~((np.cumsum(at == g, axis=1) < need) & inside).any(axis=1)
    return ok


def _rerank_bucket(
    row_ids: np.ndarray, codes: np.ndarray, slot: np.ndarray, sizes: np.ndarray, kq: np.ndarray, s: np.ndarray,
    gcodes: np.ndarray, n_g: int, p: np.ndarray, rank: np.ndarray, method: str, strict: bool,
) -> None:
    """One length bucket: per query and category the candidates in score order, then the walk.
    Writes the 1-based ``rank`` of every row of the bucket in place."""
    n_q = len(sizes)
    width = int(sizes.max())
    rows = np.full((n_q, width), -1, dtype=np.int64)
    rows[codes, slot] = row_ids
    padded = np.full((n_q, width), np.inf)
    padded[codes, slot] = -s[row_ids]
    rows_sorted = np.take_along_axis(rows, np.argsort(padded, axis=1, kind="stable"), axis=1)
    del rows, padded
    valid = rows_sorted >= 0
    g_sorted = np.where(valid, gcodes[np.maximum(rows_sorted, 0)], -1)
    lists = np.empty((n_q, n_g, width + 1), dtype=np.int64)
    cnt = np.empty((n_q, n_g), dtype=np.int64)
    for g in range(n_g):  # G is the number of categories, not of queries
        lists[:, g], cnt[:, g] = _group_lists(rows_sorted, g_sorted == g, width)
    flat = lists.reshape(-1)
    base = (np.arange(n_q)[:, None] * n_g + np.arange(n_g)[None, :]) * (width + 1)
    s_ext = np.append(s, -np.inf)  # row -1 (past a category's end) scores -inf
    if method == "detconstsort":
        _constsort(flat, base, cnt, p, kq, s_ext, rank, strict)
    else:
        _det_walk(flat, base, cnt, p, kq, s_ext, rank, method)
    # the others follow in score order
    rest = valid & (rank[np.maximum(rows_sorted, 0)] == 0)
    qi, si = np.nonzero(rest)
    rank[rows_sorted[qi, si]] = kq[qi] + np.cumsum(rest, axis=1)[qi, si]


def _best(choose: np.ndarray, sc: np.ndarray, row: np.ndarray) -> np.ndarray:
    """Per query the category in ``choose`` whose next candidate scores best (ties: earlier row)."""
    ms = np.where(choose, sc, -np.inf)
    cand = choose & (ms == ms.max(axis=1, keepdims=True))
    return np.where(cand, row, _BIG).argmin(axis=1)


def _det_walk(flat, base, cnt, p, kq, s_ext, rank, method: str) -> None:
    """DetGreedy / DetCons / DetRelaxed: one step per position, vectorised over queries."""
    ptr = np.zeros_like(cnt)  # = candidates of each category placed so far
    positive = p > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        for t in range(int(kq.max())):
            j = t + 1
            active = t < kq
            avail = ptr < cnt
            row = flat[base + ptr]
            sc = s_ext[row]
            lo, hi = np.floor(j * p), np.ceil(j * p)
            below_min = (ptr < lo) & avail
            below_max = (ptr >= lo) & (ptr < hi) & avail
            any_min = below_min.any(axis=1, keepdims=True)
            any_max = below_max.any(axis=1, keepdims=True)
            if method == "detgreedy":
                second = below_max
            else:
                urgency = np.ceil(hi / p) if method == "detrelaxed" else hi / p
                urgency = np.where(below_max & positive, urgency, np.inf)
                second = below_max & (urgency == urgency.min(axis=1, keepdims=True))
            choose = np.where(any_min, below_min, np.where(any_max, second, avail))
            g = _best(choose, sc, row)
            a = np.flatnonzero(active)
            rank[row[a, g[a]]] = j
            ptr[a, g[a]] += 1


def _constsort(flat, base, cnt, p, kq, s_ext, rank, strict: bool) -> None:
    """DetConstSort: rounds of insertions with move-up, vectorised over queries."""
    n_q, n_g = cnt.shape
    cap = int(kq.max()) + n_g + 1
    lrow = np.full((n_q, cap), -1, dtype=np.int64)
    lsc = np.full((n_q, cap), -np.inf)
    lmax = np.zeros((n_q, cap), dtype=np.int64)
    last = np.zeros(n_q, dtype=np.int64)
    ptr = np.zeros_like(cnt)
    prevmin = np.zeros_like(cnt)
    total = cnt.sum(axis=1)
    positive = p > 0
    slack = 0 if strict else 1  # literal reading: a passed candidate may sit one below its max index
    r = 0
    while True:
        done = last >= kq if strict else (last > kq) | (last >= total)
        done |= ~((ptr < cnt) & positive).any(axis=1)
        if done.all():
            break
        r += 1
        minr = np.floor(r * p).astype(np.int64)
        changed = (minr > prevmin) & (ptr < cnt) & ~done[:, None]
        has = changed.any(axis=1)
        if not has.any():
            # no category's minimum grows this round: jump to just before the next round where one does
            live = (ptr < cnt) & positive & ~done[:, None]
            with np.errstate(divide="ignore"):
                nxt = np.where(live, np.floor((prevmin + 1) / np.where(positive, p, 1.0)) - 1, np.inf).min()
            if np.isfinite(nxt) and nxt > r:
                r = int(nxt) - 1
            continue
        prevmin = np.where(has[:, None], minr, prevmin)
        row = flat[base + ptr]
        sc = s_ext[row]
        order = np.lexsort((row, np.where(changed, -sc, np.inf)), axis=1)
        n_changed = changed.sum(axis=1)
        for step in range(int(n_changed.max())):
            act = step < n_changed
            if strict:
                act &= last < kq
            qa = np.flatnonzero(act)
            if len(qa) == 0:
                break
            ga = order[qa, step]
            pos = last[qa].copy()
            lrow[qa, pos] = row[qa, ga]
            lsc[qa, pos] = sc[qa, ga]
            lmax[qa, pos] = r
            last[qa] += 1
            ptr[qa, ga] += 1
            qm, pm = qa, pos
            while len(qm):  # move up: a loop over places, all moving queries at once
                up = pm - 1
                ok = up >= 0
                upc = np.maximum(up, 0)
                ok &= (lmax[qm, upc] + slack >= pm + 1) & (lsc[qm, upc] < lsc[qm, pm])
                qm, pm, up = qm[ok], pm[ok], up[ok]
                if len(qm) == 0:
                    break
                for arr in (lrow, lsc, lmax):
                    arr[qm, up], arr[qm, pm] = arr[qm, pm], arr[qm, up].copy()
                pm = up
    take = np.arange(cap)[None, :] < np.minimum(last, kq)[:, None]
    qi, pi = np.nonzero(take)
    rank[lrow[qi, pi]] = pi + 1
