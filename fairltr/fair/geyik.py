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

Speed: candidates are ordered by one quicksort per bucket (the stable sort only when a query
holds tied scores) and split by category, keeping the first k + G + 1 of each. DetGreedy, DetCons
and DetRelaxed walk positions 1..k, each step a few numpy operations over all queries of a length
bucket (:func:`fairltr.buckets.length_buckets`; one query: :func:`fairltr.fair.det_walk_one.det_walk_one` on Python lists).
DetConstSort's entry sequence does not depend on the moves, so it is one sort for every query;
only the move-up is sequential. With the compiled kernels (numba, :mod:`fairltr.fair.geyik_kernels`)
everything after the score sort is one compiled pass per bucket (tested equal to this numpy path);
they run where they pay (:func:`fairltr.compiled.pays` against :func:`numpy_seconds`, decided once
per call). No per-query Python loop.
"""

from __future__ import annotations

import copy
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.buckets import bucket_rows, length_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.compiled import pays
from fairltr.data import ORIGIN_KEY, check_table, positions_in_query, query_codes
from fairltr.errors import ConfigError
from fairltr.fair.det_walk_one import det_walk_one as _det_walk_one
from fairltr.fair.geyik_methods import GEYIK_METHODS
from fairltr.fair.rerank import resolve_scores
from fairltr.fair.target import category_codes, target_shares

__all__ = ["GEYIK_METHODS", "rerank_geyik", "prefix_feasible"]

KERNELS = "fairltr.fair.geyik_kernels"
_BIG = np.iinfo(np.int64).max


def numpy_seconds(method: str, n_q: int, k: int, width: int, n_g: int) -> float:
    """Estimated seconds of the numpy path on one length bucket (``n_q`` queries of up to ``width``
    candidates, top ``k``), from which :func:`fairltr.compiled.pays` decides whether the compiled
    kernels run (their one-time load costs more than a small input's whole numpy path). Measured
    constants (benchmarks/bench_geyik.py, one list of 10^5 on the numpy path): a vectorised walk
    step costs about 60 us + 15 ns per query and category, a step of one list on Python lists about
    0.5 us at any G (:mod:`fairltr.fair.det_walk_one`, benchmarks/bench_det_walk.py); DetConstSort's
    move-up about 40 us + 10 ns per query a step, 2 us per entrant on one list; the score sort ~30 ns
    a candidate."""
    sort = 30e-9 * n_q * width
    if method == "detconstsort":
        steps = k + n_g
        return sort + (steps * 2e-6 if n_q == 1 else steps * (40e-6 + 10e-9 * n_q))
    return sort + (k * 0.5e-6 if n_q == 1 else k * (60e-6 + 15e-9 * n_q * n_g))


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
    gcodes, cats = _codes(df, c.group, category_codes)
    n_g = len(cats)
    codes, uniques = _codes(df, c.query, query_codes)
    n_q, n = len(uniques), len(df)
    slot, sizes = positions_in_query(codes, n_q)
    kq = sizes if k is None else np.minimum(sizes, k)
    if target is None:
        counts = np.bincount(codes * n_g + gcodes, minlength=n_q * n_g).reshape(n_q, n_g)
        shares = counts / sizes[:, None]
    else:
        shares = np.broadcast_to(target_shares(target, cats, str(c.group)), (n_q, n_g))

    rank = np.zeros(n, dtype=np.int64)
    feasible = np.ones(n_q, dtype=bool)
    buckets = length_buckets(sizes)
    fast = pays(KERNELS, sum(numpy_seconds(method, len(q), int(kq[q].max()), int(sizes[q].max()), n_g)
                             for q in buckets if len(q)))  # decided once per call, from the input's size
    for queries in buckets:
        rows, local = bucket_rows(codes, queries, n_q, whole=len(buckets) == 1)
        bucket_shares = np.ascontiguousarray(shares[queries])
        _rerank_bucket(rows, local, slot[rows], sizes[queries], kq[queries], s, gcodes, n_g, bucket_shares, rank,
                       method, strict, fast)
        feasible[queries] = prefix_feasible(rank[rows], local, gcodes[rows], kq[queries], bucket_shares)

    start = np.cumsum(sizes) - sizes
    final = np.empty(n, dtype=np.int64)
    final[start[codes] + rank - 1] = np.arange(n)
    return _ranked_frame(df, final, {"score": s[final], "rank": rank[final], "fair_feasible": feasible[codes[final]]})


def _codes(df: pd.DataFrame, column: str, general) -> tuple[np.ndarray, list]:
    """``general(df, column)`` (codes by first appearance, the values), short-cut for a plain numpy
    integer column (no missing value possible): factorizing its array skips the Series machinery,
    which dominates a list of 100."""
    values = df[column] if isinstance(column, str) and column in df.columns else None
    if values is None or not (isinstance(values.dtype, np.dtype) and values.dtype.kind in "iu"):
        return general(df, column)
    codes, uniques = pd.factorize(values.to_numpy(), sort=False)
    return codes.astype(np.int64, copy=False), [u.item() for u in uniques]


def _ranked_frame(df: pd.DataFrame, order: np.ndarray, added: dict[str, np.ndarray]) -> pd.DataFrame:
    """``df``'s rows in ``order`` (a fresh RangeIndex) with the ``added`` columns set (replacing
    columns of the same name in place, appended otherwise) and ``df.attrs`` but the origin. Each
    column's array (numpy or extension, so dtypes are kept) is taken once and the frame is built
    from them: 2-2.5x faster than a take plus three column assignments at 10^4-10^5 rows. Frames
    whose labels are not unique or are a MultiIndex take the block-wise path."""
    if df.columns.is_unique and not isinstance(df.columns, pd.MultiIndex):
        new = [name for name in added if name not in df.columns]
        names = list(df.columns) + new
        arrays = [added[name] if name in added else df[name].array.take(order) for name in names]
        try:  # the arrays as they are: 2-3x cheaper than the dict constructor on a list of 100
            columns = df.columns.append(pd.Index(new, dtype=df.columns.dtype)) if new else df.columns
            out = pd.DataFrame._from_arrays(arrays, columns=columns, index=pd.RangeIndex(len(order)))
        except (AttributeError, TypeError, ValueError):  # a pandas without it, or column labels it refuses
            out = pd.DataFrame(dict(zip(names, arrays)))
    else:
        out = df.take(order)
        out.index = pd.RangeIndex(len(order))
        for name, values in added.items():
            out[name] = values
    out.attrs = copy.deepcopy({key: value for key, value in df.attrs.items() if key != ORIGIN_KEY})  # as pandas does
    return out


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
    gcodes: np.ndarray, n_g: int, p: np.ndarray, rank: np.ndarray, method: str, strict: bool, fast: bool,
) -> None:
    """One length bucket: per query and category the candidates in score order, then the walk.
    Writes the 1-based ``rank`` of every row of the bucket in place."""
    rows_sorted = _rows_by_score(row_ids, codes, slot, len(sizes), int(sizes.max()), s, fast)
    if fast:  # the rest of the bucket in one compiled pass
        from fairltr.fair.geyik_kernels import constsort_bucket, det_walk_bucket

        if method == "detconstsort":
            constsort_bucket(rows_sorted, gcodes, s, p, kq, rank, strict)
        else:
            det_walk_bucket(rows_sorted, gcodes, s, p, kq, rank, method)
        return
    if method != "detconstsort" and len(sizes) == 1:  # one list: the walk on Python lists (numpy's per-call
        _det_walk_one(rows_sorted[0], gcodes, s, p[0], int(kq[0]), rank, method)  # cost exceeds a step's work)
        return
    valid = rows_sorted >= 0
    lists, cnt = _category_lists(rows_sorted, valid, gcodes, n_g, int(kq.max()))
    n_q, width = rows_sorted.shape
    keep = lists.shape[2] - 1
    s_ext = np.append(s, -np.inf)  # row -1 (past a category's end) scores -inf
    if method == "detconstsort":
        score_rank = np.zeros(len(s) + 1, dtype=np.int64)  # a row's place in its query's score order
        score_rank[rows_sorted] = np.arange(width)[None, :]  # padding (row -1) writes the spare slot
        _constsort(lists, cnt, p, kq, s_ext, score_rank, rank, strict)
    else:
        flat = lists.reshape(-1)
        base = (np.arange(n_q)[:, None] * n_g + np.arange(n_g)[None, :]) * (keep + 1)
        _det_walk(flat, base, cnt, p, kq, s_ext, rank, method)
    _rank_the_unplaced(rows_sorted, valid, rank)


def _rows_by_score(row_ids: np.ndarray, codes: np.ndarray, slot: np.ndarray, n_q: int, width: int,
                   s: np.ndarray, fast: bool) -> np.ndarray:
    """The bucket's rows as an (n_q, width) matrix, each query's row ids by descending score
    (ties in input order), padded with -1."""
    cell = codes * width + slot  # 1-D scatter: cheaper than a 2-D fancy index
    rows = np.full(n_q * width, -1, dtype=np.int64)
    rows[cell] = row_ids
    padded = np.full(n_q * width, np.inf)
    padded[cell] = -s[row_ids]
    return np.take_along_axis(rows.reshape(n_q, width), _stable_row_argsort(padded.reshape(n_q, width), fast), axis=1)


def _category_lists(rows_sorted: np.ndarray, valid: np.ndarray, gcodes: np.ndarray, n_g: int,
                    k_max: int) -> tuple[np.ndarray, np.ndarray]:
    """(lists, cnt): per query and category the row ids in score order, ``lists`` (n_q, n_g,
    keep + 1) padded with -1, and each category's size ``cnt`` (n_q, n_g). A stable sort of the
    categories (small integers: numpy's radix sort) puts padding (code n_g) last; only the first
    k_max + G + 1 of a category can ever be placed (the walks stop at k_q), so lists keep those."""
    n_q, width = rows_sorted.shape
    g_sorted = np.where(valid, gcodes[np.maximum(rows_sorted, 0)], n_g)
    by_cat = np.argsort(g_sorted.astype(np.int8 if n_g < 127 else np.int64), axis=1, kind="stable")
    cnt = np.bincount((np.arange(n_q)[:, None] * (n_g + 1) + g_sorted).reshape(-1),
                      minlength=n_q * (n_g + 1)).reshape(n_q, n_g + 1)
    cnt = cnt[:, :n_g]
    start = np.cumsum(cnt, axis=1) - cnt
    keep = min(width, k_max + n_g + 1)
    lists = np.full((n_q, n_g, keep + 1), -1, dtype=np.int64)
    if n_g * keep < width:  # long lists, small k: gather the kept entries
        c = np.arange(keep)
        inside = c[None, None, :] < cnt[:, :, None]
        at = np.where(inside, start[:, :, None] + c[None, None, :], 0)
        lists[:, :, :keep] = np.where(inside, rows_sorted[np.arange(n_q)[:, None, None],
                                                          by_cat[np.arange(n_q)[:, None, None], at]], -1)
    else:  # short lists: scatter every candidate to its (query, category, index), 1-D
        g_by = np.take_along_axis(g_sorted, by_cat, axis=1).reshape(-1)
        q_by = np.repeat(np.arange(n_q), width)
        real = g_by < n_g
        q_by, g_by = q_by[real], g_by[real]
        qg = q_by * n_g + g_by
        index = np.arange(n_q * width)[real] - q_by * width - start.reshape(-1)[qg]  # place in its category
        fit = index < keep
        lists.reshape(-1)[qg[fit] * (keep + 1) + index[fit]] = np.take_along_axis(
            rows_sorted, by_cat, axis=1).reshape(-1)[real][fit]
    return lists, cnt


def _rank_the_unplaced(rows_sorted: np.ndarray, valid: np.ndarray, rank: np.ndarray) -> None:
    """The rows the walk left unranked follow in score order (after k_q, or fewer when
    DetConstSort ran out of entrants: every category with a positive share exhausted)."""
    ranked = rank[np.maximum(rows_sorted, 0)] > 0
    rest = valid & ~ranked
    n_ranked = (valid & ranked).sum(axis=1)
    qi, si = np.nonzero(rest)
    rank[rows_sorted[qi, si]] = n_ranked[qi] + np.cumsum(rest, axis=1)[qi, si]


def _stable_row_argsort(keys: np.ndarray, fast: bool = False) -> np.ndarray:
    """``np.argsort(keys, axis=1, kind="stable")`` for the finite keys of each row (+inf padding
    in any order): rows wider than 256 when the compiled kernels run (``fast``), :func:`fairltr.row_sort.stable_argsort_rows`
    (exactly the stable argsort; numpy's wide sort is slow on some CPUs); otherwise numpy's
    (AVX-512) quicksort, and the stable sort only when some row holds equal finite keys (where
    the two may order them differently)."""
    if keys.shape[1] > 256 and fast:
        from fairltr.row_sort import stable_argsort_rows

        return stable_argsort_rows(keys)
    order = np.argsort(keys, axis=1)
    ordered = np.take_along_axis(keys, order, axis=1)
    if keys.shape[1] > 1 and bool(((ordered[:, 1:] == ordered[:, :-1]) & np.isfinite(ordered[:, 1:])).any()):
        return np.argsort(keys, axis=1, kind="stable")
    return order


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


def _insertion_rounds(c: np.ndarray, p: np.ndarray) -> np.ndarray:
    """The round at which a category's c-th candidate (1-based) is inserted: the least r >= 1
    with floor(r p) >= c, in the same floating point as the loop form; inf where p = 0."""
    with np.errstate(divide="ignore", invalid="ignore"):  # p = 0: inf, and inf * 0 below is masked out
        r = np.ceil(c / np.where(p > 0, p, np.nan))
        r = np.where(np.isfinite(r), np.maximum(r, 1.0), np.inf)
        fin = np.isfinite(r)
        for _ in range(3):  # fix-ups of the division's rounding, both ways
            low = fin & (r > 1) & (np.floor((r - 1) * p) >= c)
            r = np.where(low, r - 1, r)
            high = fin & (np.floor(r * p) < c)
            r = np.where(high, r + 1, r)
    return r


def _entry_order(qq: np.ndarray, rnd: np.ndarray, place: np.ndarray) -> np.ndarray:
    """``np.lexsort((place, rnd, qq))`` for non-negative keys whose triples are distinct: one
    argsort of the mixed-radix key qq * R * P + rnd * P + place when it fits in 62 bits (numpy's
    AVX-512 integer sort, several times faster than lexsort)."""
    if len(qq) == 0:
        return np.zeros(0, dtype=np.int64)
    n_r, n_p = int(rnd.max()) + 1, int(place.max()) + 1
    if (int(qq.max()) + 1) * n_r * n_p >= 1 << 62:
        return np.lexsort((place, rnd, qq))
    return np.argsort((qq * n_r + rnd) * n_p + place)


def _constsort(lists: np.ndarray, cnt: np.ndarray, p: np.ndarray, kq: np.ndarray, s_ext: np.ndarray,
               score_rank: np.ndarray, rank: np.ndarray, strict: bool) -> None:
    """DetConstSort. Which candidate enters when does not depend on the moves: category g's c-th
    candidate enters in round r = min{r : floor(r p_g) >= c}, a round's entrants by decreasing
    score (ties: earlier row), with max index r. So the whole entry sequence of every query is one
    sort; only the move-up is sequential: one step per entrant (all queries at once), each
    a loop over the places the entrants move up (vectorised over the queries still moving)."""
    n_q, n_g, w1 = lists.shape
    # at most k_q + G entrants per query are ever placed, so at most that many per category matter
    upto = np.minimum(cnt, (kq + n_g + 1)[:, None])
    width = int(upto.max()) if upto.size else 0
    qq, gg, cc = np.nonzero(np.arange(width)[None, None, :] < upto[:, :, None])  # (query, category, c - 1)
    row = lists[qq, gg, cc]
    rnd = _insertion_rounds(cc + 1.0, p[qq, gg])
    keep = np.isfinite(rnd)
    qq, row, rnd = qq[keep], row[keep], rnd[keep].astype(np.int64)
    # within a round: by decreasing score, ties earlier row = the order of the query's sorted list
    order = _entry_order(qq, rnd, score_rank[row])
    qq, row, rnd = qq[order], row[order], rnd[order]
    sc = s_ext[row]
    sizes = np.bincount(qq, minlength=n_q)
    first = np.cumsum(sizes) - sizes
    t = np.arange(len(qq)) - first[qq]  # place in the query's entry sequence
    if strict:  # AIF360: stop as soon as k are placed
        inside = t < kq[qq]
    else:  # the literal loop "while lastEmpty <= k": whole rounds that start with <= k placed
        new_round = np.ones(len(qq), dtype=bool)
        new_round[1:] = (qq[1:] != qq[:-1]) | (rnd[1:] != rnd[:-1])
        round_start = np.maximum.accumulate(np.where(new_round, np.arange(len(qq)), 0)) - first[qq]
        inside = round_start <= kq[qq]
    qq, row, sc, rnd, t = qq[inside], row[inside], sc[inside], rnd[inside], t[inside]
    n_in = np.bincount(qq, minlength=n_q)
    big_t = int(n_in.max()) if len(n_in) else 0
    # (T, Q): place-major, so one place of every query is one contiguous row
    lrow = np.full((big_t, n_q), -1, dtype=np.int64)
    lsc = np.full((big_t, n_q), -np.inf)
    lmax = np.zeros((big_t, n_q), dtype=np.int64)
    lrow[t, qq], lsc[t, qq], lmax[t, qq] = row, sc, rnd
    slack = 0 if strict else 1  # literal reading: a passed candidate may sit one below its max index
    # an entrant can only move when it outscores the entrant before it, or when that one moved
    # (then someone else sits above it): other steps are skipped without numpy work
    # (with the compiled kernels this function is not called: geyik_kernels.constsort_bucket)
    if n_q == 1:  # one long list: numpy's per-call cost exceeds a step's work, so the steps run on lists
        lrow[:, 0], lsc[:, 0], lmax[:, 0] = _move_up_one(lrow[:, 0].tolist(), lsc[:, 0].tolist(),
                                                         lmax[:, 0].tolist(), slack)
    else:
        outscores = (lsc[1:] > lsc[:-1]).any(axis=1).tolist() if big_t > 1 else []
        # moved together: one gather; the max index is stored plus the slack (one add less per step)
        state = np.stack([lrow.astype(np.float64), lsc, (lmax + slack).astype(np.float64)])
        places = np.arange(2, big_t + 2, dtype=np.float64)[:, None]  # 1-based places after moving down
        moved = False
        for step in range(1, big_t):
            if not (moved or outscores[step - 1]):
                continue
            moved = _move_up(state, step, places)
        lrow = state[0].astype(np.int64)
    take = np.arange(big_t)[:, None] < np.minimum(n_in, kq)[None, :]
    pi, qi = np.nonzero(take)
    rank[lrow[pi, qi]] = pi + 1


def _move_up(state: np.ndarray, step: int, places: np.ndarray) -> bool:
    """Move the entrant at 0-based place ``step`` of every query up past the candidates above it
    that score lower and may move down one place (1-based place j + 1 -> j + 2 needs
    max index + slack >= j + 2); they shift down by one. ``state`` is (3, T, Q): row, score and
    max index + slack per place and query; ``places[j] = j + 2``. All queries at once on a window
    of the last D places (D doubled when some entrant passes the whole window). True if any
    entrant moved."""
    sc, mx = state[1], state[2]
    moving = np.flatnonzero((mx[step - 1] > step) & (sc[step - 1] < sc[step]))
    if len(moving) == 0:
        return False
    depth = min(8, step)
    while True:
        lo = step - depth
        win = state[:, lo:step + 1, moving]  # (3, depth + 1, m); the entrant is the last place
        passes = (win[1, :-1] < win[1, -1]) & (win[2, :-1] >= places[lo:step])
        stop = np.where(passes.all(axis=0), depth, np.argmin(passes[::-1], axis=0))  # candidates passed
        if depth == step or int(stop.max()) < depth:
            break
        depth = min(2 * depth, step)
    # scatter the window to its new offsets: the passed candidates one down, the entrant to new_at
    off = np.arange(depth + 1)[:, None]
    new_at = depth - stop[None, :]
    dest = off + (off >= new_at)
    dest[-1] = new_at[0]
    state[:, lo + dest, moving] = win
    return True


def _move_up_one(rows: list, scores: list, maxi: list, slack: int) -> tuple[list, list, list]:
    """:func:`_move_up` for every step of ONE query, on Python lists (same rule)."""
    for step in range(1, len(rows)):
        at = step
        x = scores[at]
        while at > 0 and scores[at - 1] < x and maxi[at - 1] + slack > at:
            rows[at - 1], rows[at] = rows[at], rows[at - 1]
            scores[at - 1], scores[at] = scores[at], scores[at - 1]
            maxi[at - 1], maxi[at] = maxi[at], maxi[at - 1]
            at -= 1
    return rows, scores, maxi
