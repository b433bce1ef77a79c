"""Parity metrics: distance of the exposure ratio from 1.0, and selection-rate ratios.

* ``exposure_disparity(R) = 1 - min(R, 1/R)``: symmetric, 0 at parity (R = 1), the same for R
  and 1/R (0.8 and 1.25 both give 0.2), 1 when one group gets no exposure.
* ``exposure_shortfall(R) = max(0, 1 - R)``: DELTR's asymmetric view, 0 once the protected
  group gets at least the non-protected group's exposure.
* ``selection_ratio_at_k``: per query, (protected items in the top k / protected items) divided
  by (non-protected items in the top k / non-protected items); NaN unless both groups are
  present and the non-protected rate is > 0. The four-fifths rule of hiring audits reads
  ``selection_ratio_at_k >= 0.8``.

Protected = every group >= 1, as for the exposure metrics. NaN in gives NaN out.
"""

from __future__ import annotations

import math
from typing import Callable

import torch

from fairltr.metrics.ordering import TiedRanks

__all__ = ["exposure_disparity", "exposure_shortfall", "selection_ratio_at_k", "RATIO_DERIVED", "derive_from_ratio"]


def exposure_disparity(ratio: float | torch.Tensor) -> float | torch.Tensor:
    """``1 - min(R, 1/R)`` for a ratio R >= 0 (a float or a tensor, elementwise)."""
    if isinstance(ratio, torch.Tensor):
        r = ratio.to(torch.float64)
        # 1/r is only taken where r >= 1, so r = 0 gives 1 - 0 = 1 without dividing by zero
        return torch.where(r >= 1.0, 1.0 - 1.0 / r.clamp(min=1.0), 1.0 - r)
    r = float(ratio)
    if math.isnan(r):
        return math.nan
    return 1.0 - 1.0 / r if r >= 1.0 else 1.0 - r


def exposure_shortfall(ratio: float | torch.Tensor) -> float | torch.Tensor:
    """``max(0, 1 - R)`` (a float or a tensor, elementwise)."""
    if isinstance(ratio, torch.Tensor):
        return (1.0 - ratio.to(torch.float64)).clamp(min=0.0)  # clamp keeps NaN
    r = float(ratio)
    if math.isnan(r):
        return math.nan
    return max(0.0, 1.0 - r)


# metrics whose query average is NOT the mean of their per-query values: the aggregate applies
# the formula to the averaged (reported) exposure_ratio
RATIO_DERIVED: dict[str, Callable] = {
    "exposure_disparity": exposure_disparity,
    "exposure_shortfall": exposure_shortfall,
}


def derive_from_ratio(metrics: dict[str, float]) -> dict[str, float]:
    """Set ``exposure_disparity`` and ``exposure_shortfall`` (and their ``_n_queries``) of an
    averaged metric dictionary from its ``exposure_ratio``, in place; returns ``metrics``.

    Use it after any further averaging (over folds, seeds, ...) so the two stay functions of the
    reported ratio; a dictionary without ``exposure_ratio`` is returned unchanged."""
    if "exposure_ratio" in metrics:
        for name, formula in RATIO_DERIVED.items():
            metrics[name] = formula(metrics["exposure_ratio"])
            if "exposure_ratio_n_queries" in metrics:
                metrics[f"{name}_n_queries"] = metrics["exposure_ratio_n_queries"]
    return metrics


def selection_ratio_at_k(
    pred_ranks: torch.Tensor | TiedRanks, groups: torch.Tensor, mask: torch.Tensor, k: int
) -> torch.Tensor:
    """Per-query selection-rate ratio (Q,) of the protected vs the non-protected group in the top k
    (with tie groups, of the expected selections: P(rank <= k) summed per group)."""
    top = (pred_ranks.in_top(k) if isinstance(pred_ranks, TiedRanks)
           else (pred_ranks <= k).to(torch.float64)).masked_fill(~mask, 0.0)
    prot = (groups >= 1) & mask
    nprot = (groups == 0) & mask
    n_p = prot.sum(-1).to(torch.float64)
    n_n = nprot.sum(-1).to(torch.float64)
    rate_p = (top * prot).sum(-1) / n_p.clamp(min=1.0)
    rate_n = (top * nprot).sum(-1) / n_n.clamp(min=1.0)
    ok = (n_p > 0) & (n_n > 0) & (rate_n > 0)
    ratio = rate_p / torch.where(ok, rate_n, torch.ones_like(rate_n))
    return torch.where(ok, ratio, torch.full_like(ratio, math.nan))
