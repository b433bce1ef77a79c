"""DELTR's disparate-exposure penalty over padded queries (docs/spec.md §2).

Exp(i) = P_s(i) / ln 2;  Exp(G_p) = mean of Exp(i) over group p's items in the query.
hinge:      U_q = reduce_{p>=1} max(0, Exp(G_0) - Exp(G_p))^2   (DELTR, asymmetric)
symmetric:  U_q = reduce_{p>=1} (Exp(G_0) - Exp(G_p))^2         (the authors' Octave code)
A protected group absent from the query (or an absent group 0) contributes nothing;
a query without any (G_0, G_p) pair has U_q = 0.
"""

from __future__ import annotations

import math
from typing import Literal

import torch

from fairltr.errors import ConfigError
from fairltr.losses.listnet import top_one_probability

__all__ = ["V1", "group_exposure", "exposure_disparity", "exposure_hinge", "exposure_symmetric"]

V1 = 1.0 / math.log(2.0)  # position bias of rank 1, v_j = 1 / ln(1 + j)


def check_group_ids(index: torch.Tensor, n_groups: int) -> None:
    """Raise :class:`ConfigError` unless every group id lies in [0, n_groups)."""
    if index.numel() and (int(index.max()) >= n_groups or int(index.min()) < 0):
        raise ConfigError(
            f"group ids must lie in [0, {n_groups}) (n_groups={n_groups}); got "
            f"{int(index.min())}..{int(index.max())}"
        )


def group_exposure(
    scores: torch.Tensor, groups: torch.Tensor, mask: torch.Tensor, n_groups: int | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mean expected exposure per group, (Q, G), and group sizes, (Q, G)."""
    if n_groups is None:
        n_groups = int(groups[mask].max().item()) + 1 if mask.any() else 1
    n_groups = max(n_groups, 2)
    index = groups.masked_fill(~mask, 0).long()  # padded slots add 0 to group 0
    check_group_ids(index, n_groups)
    exposure = top_one_probability(scores, mask) * V1  # 0 on padding
    shape = (scores.shape[0], n_groups)
    counts = torch.zeros(shape, dtype=exposure.dtype, device=scores.device)
    counts = counts.scatter_add(1, index, mask.to(exposure.dtype))
    sums = torch.zeros(shape, dtype=exposure.dtype, device=scores.device).scatter_add(1, index, exposure)
    return sums / counts.clamp(min=1.0), counts


def exposure_disparity(
    scores: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    *,
    variant: Literal["hinge", "symmetric"] = "hinge",
    reduce: Literal["max", "mean"] = "max",
    n_groups: int | None = None,
) -> torch.Tensor:
    """Per-query U_q, shape (Q,)."""
    if variant not in ("hinge", "symmetric"):
        raise ConfigError(f"variant must be 'hinge' or 'symmetric', got {variant!r}")
    if reduce not in ("max", "mean"):
        raise ConfigError(f"reduce must be 'max' or 'mean', got {reduce!r}")
    means, counts = group_exposure(scores, groups, mask, n_groups)
    diff = means[:, :1] - means[:, 1:]  # Exp(G_0) - Exp(G_p), (Q, G-1)
    if variant == "hinge":
        diff = torch.clamp(diff, min=0.0)
    per_group = diff.square()
    valid = (counts[:, :1] > 0) & (counts[:, 1:] > 0)
    per_group = per_group.masked_fill(~valid, 0.0)
    if reduce == "max":
        return per_group.max(dim=1).values
    n_valid = valid.sum(dim=1).clamp(min=1).to(per_group.dtype)
    return per_group.sum(dim=1) / n_valid


def exposure_hinge(scores, groups, mask, *, reduce="max", n_groups=None) -> torch.Tensor:
    """DELTR's asymmetric squared hinge, per query."""
    return exposure_disparity(scores, groups, mask, variant="hinge", reduce=reduce, n_groups=n_groups)


def exposure_symmetric(scores, groups, mask, *, reduce="max", n_groups=None) -> torch.Tensor:
    """The symmetric squared difference of the authors' Octave code, per query."""
    return exposure_disparity(scores, groups, mask, variant="symmetric", reduce=reduce, n_groups=n_groups)
