"""Bootstrap intervals of Pareto-front hypervolumes (docs/sweeps.md, "One front for the field").

A sweep's front is a set of trials, each a ranking of the same test table. One resample of the
test table (docs/spec.md section 3b: queries drawn with replacement from 30 queries up, else
candidates drawn within each query x category stratum) changes every trial's objectives, so the
front and its hypervolume. The interval is the percentile interval of the hypervolume over the
resamples; every front of one table is evaluated on the SAME resamples (one statistic returns
all of them), so their intervals are comparable.

The objectives are recomputed exactly as :func:`fairltr.metrics.evaluate_ranking` defines them:

* ``kendall_tau``: mean over the queries where it is defined of each query's Kendall tau-b
  between the predicted order and the judgments. Under the candidate unit a resample is a
  multiset: a candidate drawn w times counts w times; the pairs of two copies of one candidate
  are tied in both orders, so with S = sum_{i before j} w_i w_j sign(y_i - y_j),
  N = sum w, n0 = N (N - 1) / 2, n1 = sum w_i (w_i - 1) / 2, n2 = sum over judgment values v of
  W_v (W_v - 1) / 2 (W_v the weight of the candidates judged v): tau_b = S / sqrt((n0 - n1) (n0 - n2)),
  which is the plain tau-b when every w is 1;
  With tied scores (``RankedFolds.score``) the pairs of one tie group count 0 in S (docs/spec.md
  section 3, "Ties": the expectation over the orders of the ties; the denominator keeps every
  pair, as the tied group becomes some order);
* ``exposure_ratio``: mean over queries of Exp(protected) / Exp(non-protected), Exp(group) the
  weighted mean of v(rank) = 1 / ln(1 + rank) over the group's candidates (ranks of the
  evaluated list; with tied scores the mean of v over the tie group's positions);
  ``exposure_disparity`` = 1 - min(R, 1/R) of that mean R;
* several folds (TREC): each objective is the mean over the folds where it is defined, the
  disparity taken from the mean ratio (:func:`fairltr.workflows.sweep.mean_over_folds`).

The 2-D hypervolume here is the one of ``tuning.pareto.hypervolume_2d`` (the area of the union
of the boxes between each point and the reference), vectorised over resamples.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np
from scipy import sparse

from fairltr.errors import ConfigError
from fairltr.metrics.resampling import bootstrap_candidates, bootstrap_queries, resolve_unit

__all__ = ["hypervolume_2d_batch", "RankedFolds", "resampled_objectives", "front_hypervolume_intervals"]


def hypervolume_2d_batch(points: np.ndarray, directions: Sequence[str], reference: Sequence[float]) -> np.ndarray:
    """Hypervolume of each set of 2-D points: ``points`` (..., T, 2) -> (...).

    ``directions``: ``"maximize"`` / ``"minimize"`` per objective; ``reference``: the bound, in
    objective units. A point with a NaN, or not strictly better than the reference in both
    objectives, adds nothing. One sort and a running best per set (no loop over sets)."""
    p = np.asarray(points, dtype=np.float64)
    if p.shape[-1] != 2 or len(directions) != 2 or len(reference) != 2:
        raise ConfigError(f"hypervolume_2d_batch needs 2 objectives, got points {p.shape} and {list(directions)}")
    sign = np.array([1.0 if d == "maximize" else -1.0 for d in directions])
    ref = np.asarray(reference, dtype=np.float64) * sign
    if not np.all(np.isfinite(ref)):
        raise ConfigError(f"the hypervolume reference point must be finite, got {list(reference)}")
    g = p * sign  # both maximised now
    ok = np.isfinite(g).all(-1) & (g > ref).all(-1)
    x = np.where(ok, g[..., 0], ref[0])
    y = np.where(ok, g[..., 1], ref[1])
    order = np.argsort(-x, axis=-1, kind="stable")
    x = np.take_along_axis(x, order, -1)
    y = np.maximum.accumulate(np.take_along_axis(y, order, -1), axis=-1)
    next_x = np.concatenate([x[..., 1:], np.full(x.shape[:-1] + (1,), ref[0])], axis=-1)
    return ((x - next_x) * (y - ref[1])).sum(-1)


@dataclass(frozen=True)
class RankedFolds:
    """One trial's evaluated test lists, every fold's rows concatenated (fold by fold):
    ``fold``, ``query`` (codes unique over all folds), ``group`` (0 = non-protected, >= 1
    protected), ``judgment`` and ``rank`` (1-based, in the evaluated list) per row; ``row``: the
    row's number in the concatenated test tables (the resampling unit's identity, the same for
    every trial of the table)."""

    fold: np.ndarray
    query: np.ndarray
    group: np.ndarray
    judgment: np.ndarray
    rank: np.ndarray
    row: np.ndarray
    score: np.ndarray | None = None  # the evaluated scores: equal ones form tie groups (None: no ties)


def _padded(values: np.ndarray, query: np.ndarray, rank: np.ndarray, n_queries: int, width: int, fill) -> np.ndarray:
    out = np.full((n_queries, width), fill, dtype=np.asarray(values).dtype)
    out[query, rank - 1] = values
    return out


def resampled_objectives(trial: RankedFolds, weights: np.ndarray, unit: str) -> np.ndarray:
    """(batch, 2): ``kendall_tau`` and ``exposure_disparity`` of ``trial`` on each resample.

    ``weights``: (batch, units) multiplicities from the resampling of docs/spec.md 3b; ``unit``
    ``"queries"`` (units = query codes) or ``"candidates"`` (units = ``trial.row``). A weight of
    all ones gives the point values of :func:`fairltr.metrics.evaluate_ranking`."""
    w_all = np.asarray(weights, dtype=np.float64)
    n_q = int(trial.query.max()) + 1
    width = int(trial.rank.max())
    mask = _padded(np.ones(len(trial.rank), bool), trial.query, trial.rank, n_q, width, False)
    y = _padded(trial.judgment.astype(np.float64), trial.query, trial.rank, n_q, width, np.nan)
    g = _padded(trial.group.astype(np.int64), trial.query, trial.rank, n_q, width, -1)
    if unit == "queries":  # each query's own values (every candidate once), re-averaged with the query weights
        w = mask[None].astype(np.float64)
        wq = w_all[:, :n_q]
    elif unit == "candidates":
        rows = _padded(trial.row.astype(np.int64), trial.query, trial.rank, n_q, width, 0)
        w = w_all[:, rows] * mask  # (batch, Q, N)
        wq = None
    else:
        raise ConfigError(f"unit must be 'queries' or 'candidates', got {unit!r}")
    ties = None if trial.score is None else _padded(_tie_ids(trial), trial.query, trial.rank, n_q, width, -1)
    tau = np.broadcast_to(_weighted_tau_b(y, mask, w, ties), (w_all.shape[0], n_q))  # (batch, Q)
    ratio = np.broadcast_to(_weighted_exposure_ratio(g, mask, w, ties), (w_all.shape[0], n_q))
    fold_of_query = np.zeros(n_q, dtype=np.int64)
    fold_of_query[trial.query] = trial.fold
    folds = np.unique(trial.fold)
    taus, ratios = [], []
    for f in folds:  # a handful of folds (TREC: 6)
        sel = fold_of_query == f
        taus.append(_mean_over_queries(tau[:, sel], None if wq is None else wq[:, sel]))
        ratios.append(_mean_over_queries(ratio[:, sel], None if wq is None else wq[:, sel]))
    with np.errstate(all="ignore"):
        t = np.nanmean(np.stack(taus), axis=0) if len(folds) > 1 else taus[0]
        r = np.nanmean(np.stack(ratios), axis=0) if len(folds) > 1 else ratios[0]
        disparity = np.where(r >= 1, 1 - 1 / np.maximum(r, 1), 1 - r)
    return np.stack([t, disparity], axis=-1)


def _mean_over_queries(values: np.ndarray, query_weights: np.ndarray | None) -> np.ndarray:
    """(batch,): mean over the queries where ``values`` is finite, each counted by its weight
    (queries unit) or once (candidates unit: every query is in every resample)."""
    ok = np.isfinite(values)
    w = np.ones_like(values) if query_weights is None else query_weights
    w = np.where(ok, w, 0.0)
    with np.errstate(all="ignore"):
        return np.where(w.sum(-1) > 0, (w * np.where(ok, values, 0.0)).sum(-1) / w.sum(-1), np.nan)


BLOCK = 128
"""Slots per block of :func:`_weighted_tau_b`'s sweep down the ranking."""


def _tie_ids(trial: RankedFolds) -> np.ndarray:
    """Per row, the rank of the first row of its tie group (equal scores within one query of one
    fold form a group; they are contiguous in the rank order)."""
    score = np.asarray(trial.score, dtype=np.float64)
    order = np.lexsort((trial.rank, trial.query))
    q, s, r = trial.query[order], score[order], trial.rank[order]
    new = np.ones(len(order), dtype=bool)
    new[1:] = (q[1:] != q[:-1]) | (s[1:] != s[:-1])
    first = r[new][np.cumsum(new) - 1]
    out = np.empty(len(order), dtype=np.int64)
    out[order] = first
    return out


_WITHIN_CELLS = 4_000_000
"""(resample x slot x judgment value) cells per chunk of :func:`_within_ties` (its memory bound)."""


def _within_ties(y: np.ndarray, mask: np.ndarray, w: np.ndarray, ties: np.ndarray) -> np.ndarray:
    """(batch, Q) sum over pairs i before j of ONE tie group of w_i w_j sign(y_i - y_j): the part
    of S that the expectation over the orders of the ties removes. Tie groups are contiguous runs
    of slots, so a group's earlier slots are its run's: cumulative weights per judgment value
    restart at each group's first slot (vectorised over queries and slots; resamples in chunks)."""
    q, n = y.shape
    levels, codes = np.unique(np.where(mask, y, np.nanmin(y)), return_inverse=True)
    codes = codes.reshape(q, n)
    onehot = np.zeros((q, n, len(levels)))
    np.put_along_axis(onehot, codes[..., None], 1.0, axis=-1)
    onehot *= mask[..., None]
    start = np.ones((q, n), dtype=bool)
    start[:, 1:] = ties[:, 1:] != ties[:, :-1]
    first_idx = np.maximum.accumulate(np.where(start, np.arange(n)[None, :], 0), axis=1)  # each slot's run start
    prev = np.maximum(first_idx - 1, 0)[..., None]
    has_prev = (first_idx > 0)[..., None]
    out = np.zeros(w.shape[:2])
    step = max(1, _WITHIN_CELLS // max(1, q * n * len(levels)))
    for b0 in range(0, w.shape[0], step):  # chunks of resamples: bounded memory, no loop over queries
        wb = w[b0:b0 + step]
        contrib = wb[..., None] * onehot  # (chunk, Q, N, L)
        cum = np.cumsum(contrib, axis=2)
        before = np.where(has_prev[None], np.take_along_axis(cum, np.broadcast_to(prev[None], (wb.shape[0], q, n, 1)),
                                                             axis=2), 0.0)
        earlier = cum - contrib - before  # weight per value of the earlier slots of the same run
        below = np.cumsum(earlier, axis=-1) - earlier
        above = earlier.sum(-1, keepdims=True) - below - earlier
        idx = np.broadcast_to(codes[None, :, :, None], wb.shape + (1,))
        out[b0:b0 + step] = (wb * (np.take_along_axis(above, idx, -1)[..., 0]
                                   - np.take_along_axis(below, idx, -1)[..., 0])).sum(-1)
    return out


def _weighted_tau_b(y: np.ndarray, mask: np.ndarray, w: np.ndarray, ties: np.ndarray | None = None) -> np.ndarray:
    """(batch, Q) tau-b of the module docstring; ``y`` (Q, N) judgments in rank order, ``w``
    (batch, Q, N) weights (0 on padding).

    S = sum_{i before j} w_i w_j sign(y_i - y_j) in one sweep down the ranking in blocks of
    :data:`BLOCK` slots: pairs inside a block by a (block x block) sign matrix, pairs with an
    earlier slot from the weight of each judgment value seen so far (its cumulative sums give
    the weight above and below y_j), so memory and time are O(batch Q N (BLOCK + values))."""
    q, n = y.shape
    batch = w.shape[0]
    levels, codes = np.unique(np.where(mask, y, np.nanmin(y)), return_inverse=True)
    codes = codes.reshape(q, n)
    n_lv = len(levels)
    acc = np.zeros((batch, q, n_lv))  # weight of each judgment value among the slots swept so far
    s = np.zeros((batch, q))
    for start in range(0, n, BLOCK):
        stop = min(n, start + BLOCK)
        wb = w[:, :, start:stop]
        cb = codes[:, start:stop]
        mb = mask[:, start:stop]
        yb = np.where(mb, y[:, start:stop], 0.0)
        pos = np.arange(stop - start)
        a = np.sign(yb[:, :, None] - yb[:, None, :]) * (pos[:, None] < pos[None, :]) * (mb[:, :, None] & mb[:, None, :])
        s += np.einsum("bqi,qij,bqj->bq", wb, a, wb, optimize=True)
        below = np.cumsum(acc, axis=-1) - acc  # weight of the earlier slots with a smaller judgment value
        above = acc.sum(-1, keepdims=True) - below - acc
        idx = np.broadcast_to(cb[None], wb.shape)
        s += (wb * (np.take_along_axis(above, idx, -1) - np.take_along_axis(below, idx, -1))).sum(-1)
        # each slot adds its weight to its own (query, value) cell: a sparse one-hot product
        cells = (np.arange(q)[:, None] * n_lv + cb).ravel()
        onehot = sparse.csr_matrix((mb.ravel().astype(np.float64), (np.arange(cells.size), cells)),
                                   shape=(cells.size, q * n_lv))
        acc += (onehot.T @ wb.reshape(batch, -1).T).T.reshape(batch, q, n_lv)
    if ties is not None:  # pairs of one tie group: concordant or discordant with probability 1/2 each
        s -= _within_ties(y, mask, w, ties)
    total = w.sum(-1)
    n0 = total * (total - 1) / 2
    n1 = (w * (w - 1) / 2).sum(-1)
    n2 = (acc * (acc - 1) / 2).sum(-1)
    with np.errstate(all="ignore"):
        denom = np.sqrt((n0 - n1) * (n0 - n2))
        return np.where(denom > 0, s / np.where(denom > 0, denom, 1.0), np.nan)


def _weighted_exposure_ratio(g: np.ndarray, mask: np.ndarray, w: np.ndarray, ties: np.ndarray | None = None
                             ) -> np.ndarray:
    """(batch, Q) Exp(protected) / Exp(non-protected) with weighted group means of v(rank) (with
    ``ties``: of the mean of v over each tie group's positions)."""
    n = g.shape[1]
    v = 1.0 / np.log1p(np.arange(1, n + 1, dtype=np.float64))
    if ties is not None:  # each slot's v: the mean over its tie group's positions
        pos = np.arange(1, n + 1)
        first = np.where(ties > 0, ties, pos[None, :])
        run_start = np.ones(first.shape, dtype=bool)
        run_start[:, 1:] = first[:, 1:] != first[:, :-1]
        run_id = np.cumsum(run_start, axis=1) - 1
        sizes = np.zeros(first.shape, dtype=np.int64)
        np.add.at(sizes, (np.broadcast_to(np.arange(first.shape[0])[:, None], first.shape), run_id), 1)
        size = np.take_along_axis(sizes, run_id, axis=1)
        cum = np.concatenate([[0.0], np.cumsum(v)])
        v = (cum[first - 1 + size] - cum[first - 1]) / size
    prot = ((g >= 1) & mask).astype(np.float64)
    nprot = ((g == 0) & mask).astype(np.float64)
    with np.errstate(all="ignore"):
        exp_p = (w * prot * v).sum(-1) / (w * prot).sum(-1)
        exp_n = (w * nprot * v).sum(-1) / (w * nprot).sum(-1)
        return np.where(exp_n > 0, exp_p / exp_n, np.nan)


def front_hypervolume_intervals(
    fronts: Sequence[Sequence[RankedFolds]], *, directions: Sequence[str], reference: Sequence[float],
    strata: np.ndarray, n_queries: int, unit: str = "auto", level: float = 0.95, n_boot: int = 1000, seed: int = 0,
    objectives: Callable[[RankedFolds, np.ndarray, str], np.ndarray] = resampled_objectives,
) -> tuple[np.ndarray, np.ndarray, str]:
    """(low, high, unit): the percentile interval of each front's hypervolume (``fronts``: one
    list of trials per method, all ranking the same test table), every front on the same
    resamples. ``strata``: the candidate unit's stratum (query x category) of every row;
    ``n_queries``: the table's queries (over all folds), which decides ``unit="auto"``."""
    unit = resolve_unit(unit, n_queries)

    def statistic(weights: np.ndarray) -> np.ndarray:
        out = []
        for trials in fronts:
            if not trials:
                out.append(np.full(weights.shape[0], np.nan))
                continue
            pts = np.stack([objectives(t, weights, unit) for t in trials], axis=1)  # (batch, T, 2)
            out.append(hypervolume_2d_batch(pts, directions, reference))
        return np.stack(out)

    if unit == "queries":
        low, high = bootstrap_queries(statistic, n_queries, level=level, n_boot=n_boot, seed=seed)
    else:
        low, high = bootstrap_candidates(statistic, strata, level=level, n_boot=n_boot, seed=seed)
    return low, high, unit
