"""Compiled loops of the Geyik re-rankers (numba, the ``[fast]`` extra; :mod:`fairltr.compiled`).

* :func:`move_up_columns`: DetConstSort's move-up, the rule of
  :func:`fairltr.fair.geyik._move_up_one` for every query column of the entry arrays at once:
  entrants in entry order; each one moves up past the candidates above it that score lower while
  each one passed can move down one place and stay within its max index (+ slack).
* :func:`rank_the_rest`: after a walk, the rows it left unranked follow in score order.
* :func:`constsort_bucket`: DetConstSort for every query of a length bucket from its rows in
  score order: per query one pass splits the candidates by category, a merge of the categories'
  entry streams by (insertion round, score place) gives the entry sequence
  (:func:`fairltr.fair.geyik._insertion_rounds`' arithmetic, the order of
  :func:`fairltr.fair.geyik._entry_order`), then the move-up and the ranks: the numpy path's
  result without its ~40 array operations per bucket (their fixed cost dominates one long list).

Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np
from fairltr.compiled import njit  # numba.njit, cached in the user cache folder

__all__ = ["move_up_columns", "rank_the_rest", "constsort_bucket"]


@njit(cache=True, nogil=True, boundscheck=False)
def _move_up(rows, scores, maxi, slack):  # pragma: no cover - compiled
    T, Q = rows.shape
    for q in range(Q):
        for step in range(1, T):
            at = step
            x = scores[at, q]
            while at > 0 and scores[at - 1, q] < x and maxi[at - 1, q] + slack > at:
                rows[at - 1, q], rows[at, q] = rows[at, q], rows[at - 1, q]
                scores[at - 1, q], scores[at, q] = scores[at, q], scores[at - 1, q]
                maxi[at - 1, q], maxi[at, q] = maxi[at, q], maxi[at - 1, q]
                at -= 1


def move_up_columns(rows: np.ndarray, scores: np.ndarray, maxi: np.ndarray, slack: int) -> None:
    """In place, per column q of the (T, Q) arrays (row id, score, max index per entry place; a
    column's unused places score -inf and never move): every entrant's move-up, in entry order."""
    _move_up(rows, scores, maxi, np.int64(slack))


@njit(cache=True, nogil=True, boundscheck=False)
def _rank_the_rest(rows_sorted, rank):  # pragma: no cover - compiled
    Q, W = rows_sorted.shape
    for q in range(Q):
        placed = 0
        for p in range(W):
            row = rows_sorted[q, p]
            if row >= 0 and rank[row] > 0:
                placed += 1
        for p in range(W):
            row = rows_sorted[q, p]
            if row >= 0 and rank[row] == 0:
                placed += 1
                rank[row] = placed


def rank_the_rest(rows_sorted: np.ndarray, rank: np.ndarray) -> None:
    """In place: per query row of ``rows_sorted`` (Q, W) (row ids in score order, -1 padding),
    the rows with ``rank`` 0 get the ranks after the query's ranked ones, in score order."""
    _rank_the_rest(np.ascontiguousarray(rows_sorted, dtype=np.int64), rank)


@njit(cache=True, nogil=True, boundscheck=False)
def _insertion_round(c, p):  # pragma: no cover - compiled
    """The least r >= 1 with floor(r p) >= c (``c`` a 1-based count as a double, p > 0), in the
    floating point of :func:`fairltr.fair.geyik._insertion_rounds` (inf where c / p is not finite)."""
    r = np.ceil(c / p)
    if not np.isfinite(r):
        return np.inf
    r = max(r, 1.0)
    for _ in range(3):  # the same fix-ups of the division's rounding, both ways
        if r > 1.0 and np.floor((r - 1.0) * p) >= c:
            r -= 1.0
        if np.floor(r * p) < c:
            r += 1.0
    return r


@njit(cache=True, nogil=True, boundscheck=False)
def _constsort_entries(rows_sorted, gcodes, s, p, kq, n_g, strict, lrow, lsc, lmax, n_in):  # pragma: no cover
    """Per query q: its entrants in entry order in column q of ``lrow`` / ``lsc`` / ``lmax`` (row,
    score, max index = insertion round) and their count in ``n_in[q]`` (-1 if the arrays were
    too short). Category g's c-th candidate (c <= k_q + G + 1) enters in round
    min{r : floor(r p_g) >= c}; a round's entrants by score place; strict: the first k_q
    entrants, else whole rounds that start with at most k_q placed. Long because it is one compiled
    pass per query: a call per round would pass the per-category cursors back and forth."""
    Q, W = rows_sorted.shape
    T = lrow.shape[0]
    cap = 0
    for q in range(Q):
        cap = max(cap, kq[q] + n_g + 1)
    lists = np.empty((n_g, cap), dtype=np.int64)
    places = np.empty((n_g, cap), dtype=np.int64)
    cnt = np.zeros(n_g, dtype=np.int64)
    ptr = np.zeros(n_g, dtype=np.int64)
    upcoming = np.empty(n_g)
    for q in range(Q):
        cap_q = kq[q] + n_g + 1
        for g in range(n_g):
            cnt[g] = 0
            ptr[g] = 0
        for w in range(W):
            row = rows_sorted[q, w]
            if row < 0:
                continue
            g = gcodes[row]
            c = cnt[g]
            if c < cap_q:
                lists[g, c] = row
                places[g, c] = w
                cnt[g] = c + 1
        for g in range(n_g):
            upcoming[g] = _insertion_round(1.0, p[q, g]) if cnt[g] > 0 and p[q, g] > 0 else np.inf
        t = 0
        round_now = -1.0
        round_start = 0
        limit = kq[q]
        while True:
            best = -1
            for g in range(n_g):
                if upcoming[g] < np.inf and (best < 0 or upcoming[g] < upcoming[best] or (
                        upcoming[g] == upcoming[best] and places[g, ptr[g]] < places[best, ptr[best]])):
                    best = g
            if best < 0:
                break
            rnd = upcoming[best]
            if rnd != round_now:
                round_now = rnd
                round_start = t
            if (t >= limit) if strict else (round_start > limit):
                break
            if t == T:
                t = -1
                break
            row = lists[best, ptr[best]]
            lrow[t, q] = row
            lsc[t, q] = s[row]
            lmax[t, q] = np.int64(rnd)
            t += 1
            ptr[best] += 1
            upcoming[best] = _insertion_round(np.float64(ptr[best] + 1), p[q, best]) if ptr[best] < cnt[best] else np.inf
        n_in[q] = t


def constsort_bucket(rows_sorted: np.ndarray, gcodes: np.ndarray, s: np.ndarray, p: np.ndarray, kq: np.ndarray,
                     rank: np.ndarray, strict: bool) -> None:
    """DetConstSort of every query row of ``rows_sorted`` (Q, W) (row ids in score order, ties by
    earlier row; -1 padding), ``gcodes`` and scores ``s`` per row, shares ``p`` (Q, G), top
    ``kq`` (Q,): writes the 1-based ``rank`` of every row of the bucket in place (the entrants
    placed first, the rest after in score order), as :func:`fairltr.fair.geyik._constsort` and
    the walk's remainder do."""
    rows_sorted = np.ascontiguousarray(rows_sorted, dtype=np.int64)
    p = np.ascontiguousarray(p, dtype=np.float64)
    kq = np.ascontiguousarray(kq, dtype=np.int64)
    n_q, n_g = p.shape
    room = (int(kq.max()) if n_q else 0) + n_g + 2  # strict: <= k; else <= k + one entrant per category
    lrow = np.full((room, n_q), -1, dtype=np.int64)
    lsc = np.full((room, n_q), -np.inf)
    lmax = np.zeros((room, n_q), dtype=np.int64)
    n_in = np.zeros(n_q, dtype=np.int64)
    _constsort_entries(rows_sorted, gcodes, s, p, kq, np.int64(n_g), bool(strict), lrow, lsc, lmax, n_in)
    if (n_in < 0).any():  # a share above 1 could enter two of a category in one round
        raise RuntimeError("DetConstSort: more entrants than the entry arrays hold (shares must be <= 1)")
    big_t = int(n_in.max()) if n_q else 0
    lrow, lsc, lmax = lrow[:big_t], lsc[:big_t], lmax[:big_t]
    move_up_columns(lrow, lsc, lmax, 0 if strict else 1)
    pi, qi = np.nonzero(np.arange(big_t)[:, None] < np.minimum(n_in, kq)[None, :])
    rank[lrow[pi, qi]] = pi + 1
    rank_the_rest(rows_sorted, rank)


@njit(cache=True, nogil=True, boundscheck=False)
def _det_walk(rows_sorted, gcodes, s, p, kq, n_g, method, rank):  # pragma: no cover - compiled
    """Per query q: split its rows (in score order) by category, keeping the first k_q of each, then
    walk positions j = 1..k_q (method 0 DetGreedy, 1 DetCons, 2 DetRelaxed) writing ``rank``."""
    Q, W = rows_sorted.shape
    cap = 1
    for q in range(Q):
        cap = max(cap, kq[q])
    lists = np.empty((n_g, cap), dtype=np.int64)
    cnt = np.zeros(n_g, dtype=np.int64)
    ptr = np.zeros(n_g, dtype=np.int64)
    for q in range(Q):
        k = kq[q]
        for g in range(n_g):
            cnt[g] = 0
            ptr[g] = 0
        for w in range(W):
            row = rows_sorted[q, w]
            if row < 0:
                continue
            g = gcodes[row]
            if cnt[g] < k:
                lists[g, cnt[g]] = row
                cnt[g] += 1
        for t in range(k):
            j = np.float64(t + 1)
            b_min, b_max, b_any = -1, -1, -1
            u_max = np.inf
            for g in range(n_g):
                c = ptr[g]
                if c >= cnt[g]:
                    continue
                row = lists[g, c]
                pg = p[q, g]
                lo = np.floor(j * pg)
                hi = np.ceil(j * pg)
                if b_any < 0 or s[row] > s[lists[b_any, ptr[b_any]]] or (
                        s[row] == s[lists[b_any, ptr[b_any]]] and row < lists[b_any, ptr[b_any]]):
                    b_any = g
                if c < lo:
                    if b_min < 0 or s[row] > s[lists[b_min, ptr[b_min]]] or (
                            s[row] == s[lists[b_min, ptr[b_min]]] and row < lists[b_min, ptr[b_min]]):
                        b_min = g
                elif c < hi:
                    u = 0.0 if method == 0 else (hi / pg if method == 1 else np.ceil(hi / pg))
                    if b_max < 0 or u < u_max or (u == u_max and (
                            s[row] > s[lists[b_max, ptr[b_max]]] or (
                                s[row] == s[lists[b_max, ptr[b_max]]] and row < lists[b_max, ptr[b_max]]))):
                        b_max = g
                        u_max = u
            g = b_min if b_min >= 0 else (b_max if b_max >= 0 else b_any)
            if g < 0:
                break
            rank[lists[g, ptr[g]]] = t + 1
            ptr[g] += 1


def det_walk_bucket(rows_sorted: np.ndarray, gcodes: np.ndarray, s: np.ndarray, p: np.ndarray, kq: np.ndarray,
                    rank: np.ndarray, method: str) -> None:
    """DetGreedy / DetCons / DetRelaxed (``method``) of every query row of ``rows_sorted`` (Q, W) (row
    ids in score order, ties by earlier row; -1 padding): writes the 1-based ``rank`` of every row of
    the bucket in place (the walk's top k_q, the rest after in score order), as
    :func:`fairltr.fair.geyik._det_walk` and the walk's remainder do."""
    rows_sorted = np.ascontiguousarray(rows_sorted, dtype=np.int64)
    code = {"detgreedy": 0, "detcons": 1, "detrelaxed": 2}[method]
    _det_walk(rows_sorted, np.ascontiguousarray(gcodes, dtype=np.int64), np.ascontiguousarray(s, dtype=np.float64),
              np.ascontiguousarray(p, dtype=np.float64), np.ascontiguousarray(kq, dtype=np.int64),
              np.int64(p.shape[1]), np.int64(code), rank)
    rank_the_rest(rows_sorted, rank)
