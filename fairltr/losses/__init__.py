"""Losses: ListNet, DELTR's exposure penalty, merit-proportional exposure, Plackett-Luce policies, LaKDA,
and the fairness-loss registry."""

from fairltr.losses.builtin import ALPHA, GAMMA, LAMBDA
from fairltr.losses.exposure import (
    V1,
    exposure_disparity,
    exposure_hinge,
    exposure_symmetric,
    group_exposure,
)
from fairltr.losses.linear import LinearDELTRObjective, fused_variant
from fairltr.losses.merit import disparate_treatment_hinge
from fairltr.losses.plackett_luce import (
    DISPARITIES,
    ESTIMATORS,
    PLObjectiveTerms,
    expected_dcg,
    pl_policy_objective,
    plrank_gradient,
    policy_disparity,
    reinforce_surrogate,
    sample_rankings,
    sampled_exposure,
)
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
    "V1", "GAMMA", "ALPHA", "LAMBDA", "disparate_treatment_hinge",
    "DISPARITIES", "ESTIMATORS", "PLObjectiveTerms", "expected_dcg", "pl_policy_objective", "plrank_gradient",
    "policy_disparity", "reinforce_surrogate", "sample_rankings", "sampled_exposure", "ENTRY_POINT_GROUP", "FUSED_VARIANTS",
    "FairnessLoss", "HyperParam", "available_losses", "get_loss", "register_loss", "reload_entry_points",
    "unregister_loss", "temporary_loss", "registry_snapshot",
    "listnet_loss", "masked_log_softmax", "top_one_probability",
    "exposure_disparity", "exposure_hinge", "exposure_symmetric", "group_exposure",
    "lakda_kl", "mse_align",
]
