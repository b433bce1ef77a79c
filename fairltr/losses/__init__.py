"""Losses: ListNet, DELTR's exposure penalty, merit-proportional exposure, Plackett-Luce policies, LaKDA,
and the fairness-loss registry.

The registry and the built-in entries load without torch; the torch functions are lazy exports
(:mod:`fairltr.lazy`).
"""

from fairltr.lazy import lazy_exports, moved_modules

moved_modules(__name__, {"registry": "plugins"})  # the loss plugins' old module name
from fairltr.losses.builtin import ALPHA, GAMMA, LAMBDA
from fairltr.losses.plugins import (
    ENTRY_POINT_GROUP,
    FUSED_VARIANTS,
    RETRIEVAL_INPUTS,
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

__all__ = [
    "ObjectiveTerms", "deltr_objective", "ranking_loss_options", "LinearDELTRObjective", "fused_variant", "masked_moments",
    "V1", "GAMMA", "ALPHA", "LAMBDA", "disparate_treatment_hinge",
    "DISPARITIES", "ESTIMATORS", "PLObjectiveTerms", "expected_dcg", "pl_policy_objective", "plrank_gradient",
    "policy_disparity", "reinforce_surrogate", "sample_rankings", "sampled_exposure", "ENTRY_POINT_GROUP", "FUSED_VARIANTS", "RETRIEVAL_INPUTS",
    "FairnessLoss", "HyperParam", "available_losses", "get_loss", "register_loss", "reload_entry_points",
    "unregister_loss", "temporary_loss", "registry_snapshot",
    "listnet_loss", "masked_log_softmax", "top_one_probability",
    "exposure_disparity", "exposure_hinge", "exposure_symmetric", "group_exposure",
    "lakda_kl", "mse_align", "sampled_ranks", "request_seed",
]

lazy_exports(__name__, {
    **dict.fromkeys(["V1", "exposure_disparity", "exposure_hinge", "exposure_symmetric", "group_exposure"],
                    "fairltr.losses.exposure"),
    **dict.fromkeys(["LinearDELTRObjective", "fused_variant", "masked_moments"], "fairltr.losses.linear"),
    **dict.fromkeys(["listnet_loss", "masked_log_softmax", "top_one_probability"], "fairltr.losses.listnet"),
    **dict.fromkeys(["ObjectiveTerms", "deltr_objective", "ranking_loss_options"], "fairltr.losses.objective"),
    **dict.fromkeys(["lakda_kl", "mse_align"], "fairltr.losses.retrieval"),
    "disparate_treatment_hinge": "fairltr.losses.merit",
    **dict.fromkeys(["DISPARITIES", "ESTIMATORS", "PLObjectiveTerms", "expected_dcg", "pl_policy_objective",
                     "plrank_gradient", "policy_disparity", "reinforce_surrogate", "sample_rankings",
                     "sampled_exposure"], "fairltr.losses.plackett_luce"),
    **dict.fromkeys(["sampled_ranks", "request_seed"], "fairltr.losses.pl_serving"),
})
