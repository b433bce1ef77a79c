"""What Optuna does not compute for a two-objective front: its hypervolume against a stated
reference point, and the best trade-off on it. The front itself is Optuna's
``study.best_trials`` (feasible trials only when the study has constraints).

Every function takes raw objective values (one row per trial) and a direction per objective
(``"maximize"`` / ``"minimize"``); internally values are turned into losses (maximised
objectives negated) so that "smaller is better" everywhere.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np

from fairltr.errors import ConfigError

__all__ = [
    "as_losses",
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


def hypervolume_2d(values, directions: Sequence[str], reference: Sequence[float]) -> float:
    """Area dominated by the points and bounded by ``reference`` (given in objective units).

    With losses l (maximised objectives negated) and reference loss r, the hypervolume is the
    area of the union of the boxes [l1, r1] x [l2, r2] over points with l < r in both
    coordinates; points not strictly better than the reference contribute nothing, and so do
    dominated points (the front and all trials give the same area).

    Optuna's hypervolume is private (``optuna._hypervolume``); this is the core's batched
    :func:`fairltr.metrics.front_bootstrap.hypervolume_2d_batch` on one set (one implementation for
    the report and its bootstrap intervals).
    """
    from fairltr.metrics.front_bootstrap import hypervolume_2d_batch

    v = _check(values, directions)
    if v.shape[1] != 2:
        raise ConfigError(f"hypervolume_2d needs 2 objectives, got {v.shape[1]}")
    return float(hypervolume_2d_batch(v[None], list(directions), reference)[0])


def best_tradeoff_index(front_values, directions: Sequence[str]) -> int | None:
    """Row index of the best trade-off among the rows of a front (e.g. ``study.best_trials``'
    values): the point closest to the ideal point.

    Each loss is min-max normalised over the given rows (0 = the best value on the front, 1 = the
    worst); the chosen row minimises the Euclidean distance to (0, ..., 0). Ties go to the lower
    row index. ``None`` for no (finite) row. Optuna has no notion of a single best trade-off of a
    multi-objective study.
    """
    loss = as_losses(front_values, directions)
    ok = np.flatnonzero(np.all(np.isfinite(loss), axis=1))
    if ok.size == 0:
        return None
    loss = loss[ok]
    lo, hi = loss.min(0), loss.max(0)
    span = np.where(hi > lo, hi - lo, 1.0)
    dist = np.sqrt((((loss - lo) / span) ** 2).sum(1))
    return int(ok[int(np.argmin(dist))])
