"""Merit-proportional exposure ("disparate treatment", Singh & Joachims, KDD 2018) as a DELTR penalty.

With DELTR's top-one exposure Exp(i) = P_s(i) / ln 2 and the merit U(G_p) = mean judgment of
group p's items in the query (judgments >= 0), the constraint is Exp(G_0)/U(G_0) = Exp(G_p)/U(G_p);
its squared hinge (DELTR's asymmetry: only a protected group's deficit per unit of merit counts):

    U_q = reduce_{p>=1} max(0, Exp(G_0)/U(G_0) - Exp(G_p)/U(G_p))^2

A pair whose groups are not both present, or where one has zero merit, adds 0.
"""

from __future__ import annotations

import torch

from fairltr.errors import ConfigError, DataError
from fairltr.losses.exposure import V1
from fairltr.losses.listnet import top_one_probability
from fairltr.losses.plackett_luce import group_means

__all__ = ["disparate_treatment_hinge", "check_merits"]


def check_merits(judgments: torch.Tensor, mask: torch.Tensor) -> None:
    """Merit-proportional exposure needs judgments >= 0 on every real item."""
    if mask.any() and float(judgments[mask].min()) < 0:
        raise DataError(f"merit-proportional exposure needs judgments >= 0 (merit); got {float(judgments[mask].min()):g}")


def disparate_treatment_hinge(scores: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor, *,
                              judgments: torch.Tensor, reduce: str = "max", n_groups: int | None = None
                              ) -> torch.Tensor:
    """Per-query U_q of the module docstring, (Q,)."""
    if reduce not in ("max", "mean"):
        raise ConfigError(f"reduce must be 'max' or 'mean', got {reduce!r}")
    check_merits(judgments, mask)
    exposure = top_one_probability(scores, mask) * V1
    means, counts = group_means(exposure, groups, mask, n_groups)
    merits, _ = group_means(judgments.to(exposure.dtype), groups, mask, means.shape[1])
    present = (counts > 0) & (merits > 0)
    ratio = means / torch.where(present, merits, torch.ones_like(merits))
    valid = present[:, :1] & present[:, 1:]
    per_group = torch.clamp(ratio[:, :1] - ratio[:, 1:], min=0.0).square().masked_fill(~valid, 0.0)
    if reduce == "max":
        return per_group.max(dim=1).values
    return per_group.sum(dim=1) / valid.sum(dim=1).clamp(min=1).to(per_group.dtype)
