"""Means over queries of per-query metric values, with cluster-bootstrap intervals over queries
(docs/spec.md section 3b) for metrics that come as one value per query (AWRF, nDCG x AWRF, IAA).

A query whose value is NaN (undefined) is left out of the mean and counted in ``n_queries``; a
resample draws queries with replacement (:func:`fairltr.metrics.resampling.bootstrap_queries`,
scipy.stats.bootstrap underneath) and re-averages the defined values with their multiplicities.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from fairltr.errors import ConfigError
from fairltr.metrics.resampling import bootstrap_queries

__all__ = ["mean_with_intervals"]


def mean_with_intervals(per_query: Mapping[str, np.ndarray], *, level: float = 0.95, n_boot: int = 2000,
                        seed: int = 0, method: str = "percentile") -> dict[str, float]:
    """``{name: mean, name_ci_low, name_ci_high, name_n_queries}`` for every (Q,) array of
    ``per_query`` (all over the same Q queries; NaN = undefined for that query). The intervals of
    all metrics come from the same resampled queries. ``level = 0`` gives the means only."""
    if not per_query:
        raise ConfigError("per_query must hold at least one metric")
    names = list(per_query)
    if len({np.asarray(per_query[n]).size for n in names}) != 1:
        raise ConfigError("every metric must give one value per query, for the same queries")
    values = np.stack([np.asarray(per_query[n], dtype=np.float64).reshape(-1) for n in names])
    if not (level == 0 or 0.0 < level < 1.0):
        raise ConfigError(f"level must be 0 (no interval) or in the open interval (0, 1), got {level!r}")
    defined = np.isfinite(values)
    filled = np.where(defined, values, 0.0)
    counts = defined.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = filled.sum(axis=1) / counts
    out: dict[str, float] = {}
    for name, mean, count in zip(names, means, counts):
        out[name] = float(mean) if count else float("nan")
        out[f"{name}_n_queries"] = int(count)
    if level == 0:
        return out

    def statistic(w: np.ndarray) -> np.ndarray:  # (batch, Q) multiplicities -> (M, batch)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (filled @ w.T) / (defined.astype(np.float64) @ w.T)

    low, high = bootstrap_queries(statistic, values.shape[1], level=level, n_boot=n_boot, seed=seed, method=method)
    for name, lo, hi in zip(names, low, high):
        out[f"{name}_ci_low"], out[f"{name}_ci_high"] = float(lo), float(hi)
    return out
