"""Pareto analysis of two-objective sweeps: non-dominated front, 2-D hypervolume, best trade-off.

Every function takes the raw objective values (one row per trial) and a direction per
objective (``"maximize"`` / ``"minimize"``); internally values are turned into losses
(maximised objectives negated) so that "smaller is better" everywhere.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairltr.errors import ConfigError

__all__ = [
    "as_losses",
    "dominates",
    "pareto_mask",
    "hypervolume_2d",
    "best_tradeoff_index",
]

_DIRECTIONS = ("maximize", "minimize")


def _check(values: np.ndarray | Sequence[Sequence[float]], directions: Sequence[str]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    if v.ndim != 2:
        v = v.reshape(-1, len(directions)) if v.size else np.empty((0, len(directions)))
    if v.shape[1] != len(directions):
        raise ConfigError(f"got {v.shape[1]} objective values per trial for {len(directions)} directions")
    bad = [d for d in directions if d not in _DIRECTIONS]
    if bad:
        raise ConfigError(f"directions must be 'maximize' or 'minimize', got {bad}")
    return v


def as_losses(values, directions: Sequence[str]) -> np.ndarray:
    """Objective values as losses: column j negated where ``directions[j] == "maximize"``."""
    v = _check(values, directions)
    sign = np.array([-1.0 if d == "maximize" else 1.0 for d in directions])
    return v * sign


def dominates(a_loss: np.ndarray, b_loss: np.ndarray) -> bool:
    """Pareto dominance of loss vectors: a <= b everywhere and a < b somewhere."""
    return bool(np.all(a_loss <= b_loss) and np.any(a_loss < b_loss))


def pareto_mask(values, directions: Sequence[str], feasible: Sequence[bool] | None = None) -> np.ndarray:
    """Boolean mask of the non-dominated rows among the feasible, finite rows.

    A row is on the front iff no other eligible row dominates it. Duplicated points are all
    kept (neither dominates the other). O(n log n): sort by the first loss, sweep the second
    (for 2 objectives); a pairwise O(n^2) comparison otherwise.
    """
    loss = as_losses(values, directions)
    n = loss.shape[0]
    ok = np.all(np.isfinite(loss), axis=1)
    if feasible is not None:
        ok &= np.asarray(feasible, dtype=bool)
    mask = np.zeros(n, dtype=bool)
    idx = np.flatnonzero(ok)
    if idx.size == 0:
        return mask
    pts = loss[idx]
    if pts.shape[1] == 2:
        order = np.lexsort((pts[:, 1], pts[:, 0]))
        best_y = np.inf
        i = 0
        while i < len(order):
            # a block of rows with the same first loss: only its smallest second loss can survive
            j = i
            x = pts[order[i], 0]
            while j < len(order) and pts[order[j], 0] == x:
                j += 1
            block = order[i:j]
            y_min = pts[block[0], 1]
            if y_min < best_y:
                keep = block[pts[block, 1] == y_min]
                mask[idx[keep]] = True
                best_y = y_min
            i = j
        return mask
    le = np.all(pts[:, None, :] <= pts[None, :, :], axis=2)
    lt = np.any(pts[:, None, :] < pts[None, :, :], axis=2)
    dominated = np.any(le & lt, axis=0)
    mask[idx[~dominated]] = True
    return mask


def hypervolume_2d(values, directions: Sequence[str], reference: Sequence[float]) -> float:
    """Area dominated by the points and bounded by ``reference`` (given in objective units).

    With losses l (maximised objectives negated) and reference loss r, the hypervolume is the
    area of the union of the boxes [l1, r1] x [l2, r2] over points with l < r in both
    coordinates; points not strictly better than the reference contribute nothing.
    """
    loss = as_losses(values, directions)
    if loss.shape[1] != 2:
        raise ConfigError(f"hypervolume_2d needs 2 objectives, got {loss.shape[1]}")
    ref = as_losses(np.asarray(reference, dtype=np.float64).reshape(1, 2), directions)[0]
    if not np.all(np.isfinite(ref)):
        raise ConfigError(f"the hypervolume reference point must be finite, got {list(reference)}")
    pts = loss[np.all(np.isfinite(loss), axis=1)]
    pts = pts[np.all(pts < ref, axis=1)]
    if pts.size == 0:
        return 0.0
    pts = pts[np.lexsort((pts[:, 1], pts[:, 0]))]
    area = 0.0
    best_y = ref[1]
    for x, y in pts:  # x increasing; each point adds the strip between its y and the best y so far
        if y < best_y:
            area += (ref[0] - x) * (best_y - y)
            best_y = y
    return float(area)


def best_tradeoff_index(values, directions: Sequence[str], feasible: Sequence[bool] | None = None) -> int | None:
    """Row index of the best trade-off: the feasible front point closest to the ideal point.

    Each loss is min-max normalised over the feasible front (0 = the best value on the front,
    1 = the worst); the chosen point minimises the Euclidean distance to (0, ..., 0). Ties go
    to the lower row index. ``None`` when no feasible finite row exists.
    """
    mask = pareto_mask(values, directions, feasible)
    idx = np.flatnonzero(mask)
    if idx.size == 0:
        return None
    loss = as_losses(values, directions)[idx]
    lo, hi = loss.min(0), loss.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    dist = np.sqrt((((loss - lo) / span) ** 2).sum(1))
    return int(idx[int(np.argmin(dist))])
