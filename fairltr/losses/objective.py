"""DELTR's objective over a padded batch: sum_q L_q + gamma * U_q (docs/spec.md §2)."""

from __future__ import annotations

from typing import NamedTuple

import torch

from fairltr.errors import ConfigError
from fairltr.losses.builtin import GAMMA
from fairltr.losses.listnet import listnet_loss
from fairltr.losses.registry import get_loss

__all__ = ["ObjectiveTerms", "deltr_objective"]


class ObjectiveTerms(NamedTuple):
    """Summed over queries: ``total = listnet + gamma * exposure``."""

    total: torch.Tensor
    listnet: torch.Tensor
    exposure: torch.Tensor


def deltr_objective(
    scores: torch.Tensor,
    judgments: torch.Tensor,
    groups: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    *,
    fairness_loss: str = "exposure_hinge",
    reduce: str = "max",
    n_groups: int | None = None,
) -> ObjectiveTerms:
    """ListNet plus ``gamma`` times the registered ranking fairness loss, summed over queries
    (``gamma`` checked by :data:`~fairltr.losses.builtin.GAMMA`)."""
    gamma = GAMMA.validate(gamma)
    listnet = listnet_loss(scores, judgments, mask).sum()
    loss = get_loss(fairness_loss)
    if loss.kind != "ranking":
        raise ConfigError(f"fairness loss {fairness_loss!r} is a {loss.kind} loss, not a ranking loss")
    extra = {"judgments": judgments} if loss.needs_judgments else {}
    if loss.fn is None or gamma == 0:
        exposure = torch.zeros((), dtype=scores.dtype, device=scores.device)
        if loss.fn is not None:
            with torch.no_grad():
                exposure = loss.fn(scores, groups, mask, reduce=reduce, n_groups=n_groups, **extra).sum()
        return ObjectiveTerms(listnet, listnet, exposure)
    exposure = loss.fn(scores, groups, mask, reduce=reduce, n_groups=n_groups, **extra).sum()
    return ObjectiveTerms(listnet + gamma * exposure, listnet, exposure)
