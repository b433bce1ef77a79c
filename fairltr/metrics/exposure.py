"""Positional group exposure of a ranking (docs/spec.md §3).

v(r) = 1 / ln(1 + r) (0 below a cut-off k when given); Exp(group) = mean v(r) over the
group's items; protected = every group >= 1. Per query:
exposure_ratio = Exp(protected) / Exp(non-protected); exposure_gap = Exp(non-protected) - Exp(protected).
A query lacking either side gives NaN here (left out of averages by the callers).
"""

from __future__ import annotations

import torch

from fairltr.metrics.ordering import TiedRanks

__all__ = ["position_bias", "expected_position_bias", "exposure_per_query"]


def position_bias(ranks: torch.Tensor, k: int | None = None) -> torch.Tensor:
    """v(r) = 1 / ln(1 + r) for 1-based ranks; 0 for r > k when ``k`` is given."""
    v = 1.0 / torch.log1p(ranks.to(torch.float64))
    if k is not None:
        v = v.masked_fill(ranks > k, 0.0)
    return v


def expected_position_bias(ranks: torch.Tensor | TiedRanks, k: int | None = None) -> torch.Tensor:
    """E[v(rank)] per slot: :func:`position_bias` of plain ranks, or its mean over the positions
    of each slot's tie group (:class:`~fairltr.metrics.ordering.TiedRanks`)."""
    if not isinstance(ranks, TiedRanks):
        return position_bias(ranks, k)

    def v(r: torch.Tensor) -> torch.Tensor:
        out = 1.0 / torch.log1p(r)
        return out if k is None else torch.where(r <= k, out, 0.0)
    return ranks.expected(v)


def exposure_per_query(
    ranks: torch.Tensor | TiedRanks, groups: torch.Tensor, mask: torch.Tensor, k: int | None = None
) -> dict[str, torch.Tensor]:
    """Per-query ``exposure_protected``, ``exposure_nonprotected``, ``exposure_ratio``, ``exposure_gap``
    (with tie groups: of the expected exposure over the orders of the ties)."""
    v = expected_position_bias(ranks, k).masked_fill(~mask, 0.0)
    prot = (groups >= 1) & mask
    nprot = (groups == 0) & mask
    n_p = prot.sum(-1).to(torch.float64)
    n_n = nprot.sum(-1).to(torch.float64)
    nan = torch.tensor(float("nan"), dtype=torch.float64, device=v.device)
    exp_p = torch.where(n_p > 0, (v * prot).sum(-1) / n_p.clamp(min=1), nan)
    exp_n = torch.where(n_n > 0, (v * nprot).sum(-1) / n_n.clamp(min=1), nan)
    ratio = torch.where(exp_n > 0, exp_p / exp_n, nan)
    return {
        "exposure_protected": exp_p,
        "exposure_nonprotected": exp_n,
        "exposure_ratio": ratio,
        "exposure_gap": exp_n - exp_p,
    }
