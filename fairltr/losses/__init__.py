"""Losses: ListNet, DELTR's exposure penalty, LaKDA, and the fairness-loss registry."""

from fairltr.losses.builtin import ALPHA, GAMMA
from fairltr.losses.exposure import (
    V1,
    exposure_disparity,
    exposure_hinge,
    exposure_symmetric,
    group_exposure,
)
from fairltr.losses.linear import LinearDELTRObjective, fused_variant
from fairltr.losses.listnet import listnet_loss, masked_log_softmax, top_one_probability
from fairltr.losses.objective import ObjectiveTerms, deltr_objective
from fairltr.losses.registry import (
    ENTRY_POINT_GROUP,
    FUSED_VARIANTS,
    FairnessLoss,
    HyperParam,
    available_losses,
    get_loss,
    register_loss,
    registry_snapshot,
    reload_entry_points,
    temporary_loss,
    unregister_loss,
)
from fairltr.losses.retrieval import lakda_kl, mse_align

__all__ = [
    "ObjectiveTerms", "deltr_objective", "LinearDELTRObjective", "fused_variant",
    "V1", "GAMMA", "ALPHA", "ENTRY_POINT_GROUP", "FUSED_VARIANTS",
    "FairnessLoss", "HyperParam", "available_losses", "get_loss", "register_loss", "reload_entry_points",
    "unregister_loss", "temporary_loss", "registry_snapshot",
    "listnet_loss", "masked_log_softmax", "top_one_probability",
    "exposure_disparity", "exposure_hinge", "exposure_symmetric", "group_exposure",
    "lakda_kl", "mse_align",
]
