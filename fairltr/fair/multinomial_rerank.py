"""Multinomial FA*IR top-k re-ranking of every query at once (docs/fair.md, "Several protected groups").

The protected groups are the categories named in ``p`` (``"A=0.2,B=0.1"`` or a mapping), every
other category of the group column is non-protected. Each query's top ``k_q`` must pass the
multinomial test of :mod:`fairltr.fair.multinomial`: at least m_j(i) of group j in every prefix i.

The walk (positions 1..k_q, every query of a length bucket at once): with counts c after t
places, the minimums still to meet can all be met exactly when, for every later prefix l,
``need(l) = sum_j max(0, m_j(l) - c_j) <= l - t`` (each place adds one candidate). The next place
goes to the best remaining candidate if that keeps this true; else (some l is tight, need(l) =
l - t) to the best remaining candidate among the groups still short at the first tight l, which
keeps it true (earliest deadline first). At one group this is FA*IR's "take a protected
candidate when the protected count is below the (required) table" of :mod:`fairltr.fair.rerank`.
When a group runs out of candidates its minimums are dropped from ``need`` (the other groups'
still count) and the query is flagged: ``fair_feasible`` is False exactly when its top k_q fails
the test. Ties go to the earlier row; the candidates below k_q follow in score order.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.buckets import bucket_rows, length_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import ORIGIN_KEY, check_table, positions_in_query, query_codes
from fairltr.errors import ConfigError
from fairltr.fair.multinomial import cached_multinomial_mtable, check_multinomial_params
from fairltr.fair.rerank import resolve_scores
from fairltr.fair.target import category_codes

__all__ = ["parse_min_shares", "protected_codes", "rerank_multinomial"]

_FAR = np.iinfo(np.int32).max // 4  # "no requirement" (a deadline or slack beyond every k)


def parse_min_shares(p: Mapping[object, float] | str) -> dict[str, float]:
    """``"A=0.2,B=0.1"`` (``:`` also separates) or a mapping -> {category: minimum share}, each in
    (0, 1), together below 1; one-line :class:`ConfigError` otherwise."""
    if isinstance(p, str):
        if not p.strip():
            raise ConfigError("p must name the protected categories and their minimum shares, like 'A=0.2,B=0.1'")
        shares: dict[str, float] = {}
        for part in p.split(","):
            entry = part.strip()
            sep = "=" if "=" in entry else ":"
            name, found, value = entry.rpartition(sep)
            name = name.strip()
            if not found or not name:
                raise ConfigError(f"p {p!r}: {entry!r} is not 'category=share'")
            try:
                share = float(value)
            except ValueError:
                raise ConfigError(f"p {p!r}: share {value.strip()!r} of {name!r} is not a number") from None
            if name in shares:
                raise ConfigError(f"p {p!r}: category {name!r} given twice")
            shares[name] = share
    elif isinstance(p, Mapping):
        shares = {str(name): share for name, share in p.items()}
        if len(shares) != len(p):
            raise ConfigError(f"p {dict(p)!r}: two categories have the same text")
    else:
        raise ConfigError(f"p must be a mapping or a string like 'A=0.2,B=0.1', got {p!r}")
    if not shares:
        raise ConfigError("p must name at least one protected category")
    for name, share in shares.items():
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not (0.0 < share < 1.0):
            raise ConfigError(f"p: the minimum share of {name!r} must be in the open interval (0, 1), got {share!r}")
    total = math.fsum(shares.values())
    if not total < 1.0:
        raise ConfigError(f"p: minimum shares sum to {total:g}; they must sum to less than 1 (the rest is the "
                          f"non-protected categories' share)")
    return shares


def protected_codes(values: pd.Series, shares: Mapping[str, float], group: str) -> tuple[np.ndarray, tuple]:
    """(code per row: 0 = non-protected, j = the j-th category of ``shares``; the shares in that
    order). A category of ``shares`` the column lacks is a :class:`ConfigError`; categories are
    matched by their text (``"1"`` matches the integer 1)."""
    codes, categories = category_codes(values.to_frame(), group)
    by_text = {str(c): i for i, c in enumerate(categories)}
    lookup = np.zeros(len(categories), dtype=np.int64)
    for j, name in enumerate(shares, start=1):
        if name not in by_text:
            raise ConfigError(f"p names category {name!r}, which does not occur in group column {group!r}; "
                              f"categories: {[str(c) for c in categories]}")
        lookup[by_text[name]] = j
    return lookup[codes], tuple(float(v) for v in shares.values())


def rerank_multinomial(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    p: Mapping[object, float] | str,
    k: int | None = None,
    alpha: float = 0.1,
    query: str = UNSET,
    group: str = UNSET,
    adjust: bool = True,
    *,
    columns: RankingColumns | None = None,
) -> pd.DataFrame:
    """Multinomial FA*IR re-ranking of every query of ``df`` by ``scores`` (an array or a column).

    ``p``: the protected categories of the group column and their minimum shares
    (``"A=0.2,B=0.1"`` or ``{"A": 0.2, "B": 0.1}``). Each query's top ``k_q = min(k, n_q)``
    (``k=None``: whole lists) passes the multinomial test of (k_q, p, alpha[, adjusted]) whenever its
    candidates allow; the rest follow in score order. Returns every row once, queries in order of
    first appearance, with ``score``, 1-based ``rank`` and ``fair_feasible`` (False where the top
    k_q fails the test: some protected group ran out of candidates).
    """
    c = resolve_columns(columns, query=query, group=group).require("group", purpose="multinomial FA*IR re-ranking")
    if len(c.groups) > 1:
        raise ConfigError(f"multinomial FA*IR re-ranks on one group attribute; got {len(c.groups)} "
                          f"({', '.join(c.groups)}): name one, or combine them into one column first")
    shares = parse_min_shares(p)
    k, p_tuple, alpha = check_multinomial_params(k, tuple(shares.values()), alpha)
    check_table(df, c.replace(judgment=None, item=None))
    gcode, _ = protected_codes(df[c.group], shares, c.group)
    s = resolve_scores(df, scores, c.query)
    n = len(df)
    codes, uniques = query_codes(df, c.query)
    n_q = len(uniques)
    slot, sizes = positions_in_query(codes, n_q)
    kq = sizes if k is None else np.minimum(sizes, k)
    rank = np.zeros(n, dtype=np.int64)
    feasible = np.ones(n_q, dtype=bool)
    tables: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    buckets = length_buckets(sizes)
    for qs in buckets:
        rows, local = bucket_rows(codes, qs, n_q, whole=len(buckets) == 1)
        feasible[qs] = _rerank_bucket(rows, local, slot[rows], sizes[qs], kq[qs], s, gcode, rank,
                                      lambda length: _table(tables, length, p_tuple, alpha, adjust))
    start = np.cumsum(sizes) - sizes
    final = np.empty(n, dtype=np.int64)
    final[start[codes] + rank - 1] = np.arange(n)
    out = df.iloc[final].copy()
    out["score"] = s[final]
    out["rank"] = rank[final]
    out["fair_feasible"] = feasible[codes[final]]
    out.attrs.pop(ORIGIN_KEY, None)
    return out.reset_index(drop=True)


def _table(tables: dict, length: int, p: tuple, alpha: float, adjust: bool) -> tuple[np.ndarray, np.ndarray]:
    """(mtable (length, g), deadlines (g, V)): deadline[j, v-1] = the first 1-based prefix l with
    m_j(l) >= v (the place by which group j's v-th candidate must be in), _FAR past the table."""
    if length not in tables:
        m = cached_multinomial_mtable(int(length), p, alpha, bool(adjust))
        top = int(m[-1].max()) + 2
        v = np.arange(1, top + 1)
        dl = np.stack([np.searchsorted(m[:, j], v, side="left") + 1 for j in range(m.shape[1])])
        tables[length] = (m, np.where(dl > length, _FAR, dl))
    return tables[length]


def _left_aligned(member: np.ndarray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """(Q, width + 1) score-order places of the ``member`` slots, left-aligned, padded with
    ``width`` (= none), and their counts."""
    q_n = member.shape[0]
    out = np.full((q_n, width + 1), width, dtype=np.int64)
    qi, si = np.nonzero(member)
    out[qi, (np.cumsum(member, axis=1) - 1)[qi, si]] = si
    return out, member.sum(axis=1)


def _rerank_bucket(row_ids, codes, slot, sizes, kq, s, gcode, rank, table_of) -> np.ndarray:  # noqa: C901
    """The walk of the module docstring over the queries of one bucket. Writes ``rank`` in place;
    returns the per-query feasibility. 60+ lines: one step of the walk is one block of array
    operations over the bucket's queries, kept together so the bookkeeping reads in one place."""
    n_q, width, big_k = len(sizes), int(sizes.max()), int(kq.max())
    rows = np.full((n_q, width), -1, dtype=np.int64)
    rows[codes, slot] = row_ids
    keys = np.full((n_q, width), np.inf)
    keys[codes, slot] = -s[row_ids]
    rows_sorted = np.take_along_axis(rows, np.argsort(keys, axis=1, kind="stable"), axis=1)
    del rows, keys
    valid = rows_sorted >= 0
    gs = np.where(valid, gcode[np.maximum(rows_sorted, 0)], -1)
    lengths, which = np.unique(kq, return_inverse=True)
    tabs = [table_of(int(length)) for length in lengths]
    g = tabs[0][0].shape[1]
    lists, counts = zip(*(_left_aligned(gs == x, width) for x in range(g + 1)))
    lists, counts = np.stack(lists), np.stack(counts)  # (g + 1, Q, width + 1), (g + 1, Q)
    m_pad = np.zeros((len(lengths), big_k, g), dtype=np.int64)  # m_j(l) per table, 0 past k_q
    dl = np.full((len(lengths), g, max(t[1].shape[1] for t in tabs)), _FAR, dtype=np.int64)
    for d, (m, deadline) in enumerate(tabs):
        m_pad[d, : len(m)] = m
        dl[d, :, : deadline.shape[1]] = deadline
    mq = m_pad[which]  # (Q, K, g)
    larange = np.arange(1, big_k + 1)
    # u(l) = l - need(l); tight at step t when u(l) <= t. Groups without candidates never count.
    u = larange[None, :] - (mq * (counts[1:].T > 0)[:, None, :]).sum(axis=2)
    u = np.where(larange[None, :] <= kq[:, None], u, _FAR).astype(np.int32)
    ptr = np.zeros((g + 1, n_q), dtype=np.int64)
    c = np.zeros((n_q, g), dtype=np.int64)
    qidx = np.arange(n_q)
    for t in range(big_k):
        active = t < kq
        heads = lists[np.arange(g + 1)[:, None], qidx[None, :], ptr]  # (g + 1, Q) places, width = none
        tight = u[:, t:] <= t
        any_tight = tight.any(axis=1)
        lstar = np.where(any_tight, t + 1 + tight.argmax(axis=1), _FAR + 1)
        nxt = dl[which[:, None], np.arange(g)[None, :], np.minimum(c, dl.shape[2] - 1)]  # (Q, g) next deadlines
        elig = heads < width
        elig[0] &= ~any_tight
        elig[1:] &= (nxt <= lstar[:, None]).T
        best = heads.argmin(axis=0)
        chosen = np.where(elig.any(axis=0), np.where(elig, heads, width + 1).argmin(axis=0), best)
        place = heads[chosen, qidx]
        act = active & (place < width)
        rank[rows_sorted[qidx[act], place[act]]] = t + 1
        ptr[chosen[act], qidx[act]] += 1
        prot = act & (chosen > 0)
        j = np.maximum(chosen - 1, 0)
        thr = np.where(prot, nxt[qidx, j], _FAR)
        u[:, t:] += larange[None, t:] >= thr[:, None]  # earlier prefixes are behind the walk
        c[qidx[prot], j[prot]] += 1
        gone = prot & (ptr[chosen, qidx] >= counts[chosen, qidx])
        if gone.any():  # this group ran out: its remaining minimums no longer count
            qg, jg = qidx[gone], j[gone]
            u[qg] += np.maximum(mq[qg, :, jg] - c[qg, jg][:, None], 0).astype(np.int32)
    rest = valid & (rank[np.maximum(rows_sorted, 0)] == 0)
    qi, si = np.nonzero(rest)
    rank[rows_sorted[qi, si]] = kq[qi] + np.cumsum(rest, axis=1)[qi, si]
    return _passes(rows_sorted, gs, rank, kq, mq)


def _passes(rows_sorted, gs, rank, kq, mq) -> np.ndarray:
    """Per query: its top k_q holds at least m_j(l) of every group j in every prefix l."""
    n_q, big_k, g = mq.shape
    by_rank = np.zeros((n_q, big_k + 1), dtype=np.int64)  # group code at 1-based rank, 0 elsewhere
    valid = rows_sorted >= 0
    r = np.where(valid, rank[np.maximum(rows_sorted, 0)], big_k + 1)
    top = valid & (r <= kq[:, None])
    qi, si = np.nonzero(top)
    by_rank[qi, r[qi, si]] = gs[qi, si]
    counts = np.cumsum(by_rank[:, 1:, None] == np.arange(1, g + 1)[None, None, :], axis=1)
    ok = (counts >= mq) | (np.arange(1, big_k + 1)[None, :, None] > kq[:, None, None])
    return ok.all(axis=(1, 2))
