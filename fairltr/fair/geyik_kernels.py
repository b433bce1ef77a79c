"""Compiled loops of the Geyik re-rankers (numba, the ``[fast]`` extra; :mod:`fairltr.compiled`).

* :func:`move_up_columns`: DetConstSort's move-up, the rule of
  :func:`fairltr.fair.geyik._move_up_one` for every query column of the entry arrays at once:
  entrants in entry order; each one moves up past the candidates above it that score lower while
  each one passed can move down one place and stay within its max index (+ slack).
* :func:`rank_the_rest`: after a walk, the rows it left unranked follow in score order.

Importing this module imports numba.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["move_up_columns", "rank_the_rest"]


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
