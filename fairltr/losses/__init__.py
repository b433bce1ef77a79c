"""Losses: ListNet, DELTR's exposure penalty, LaKDA, and the fairness-loss registry."""

from fairltr.losses.exposure import (
    V1,
    exposure_disparity,
    exposure_hinge,
    exposure_symmetric,
    group_exposure,
)
from fairltr.losses.listnet import listnet_loss, masked_log_softmax, top_one_probability
from fairltr.losses.registry import (
    ENTRY_POINT_GROUP,
    FairnessLoss,
    HyperParam,
    available_losses,
    get_loss,
    register_loss,
    reload_entry_points,
)
from fairltr.losses.retrieval import lakda_kl, mse_align

GAMMA = HyperParam(
    "gamma", default=1e5, low=1e2, high=1e7, log=True, include_zero=True,
    description="weight of the exposure penalty (0 = standard ListNet)",
)
ALPHA = HyperParam(
    "alpha", default=0.5, low=1e-2, high=10.0, log=True, include_zero=True,
    description="weight of the language-alignment loss (LaKDA paper: 0.5)",
)

register_loss(FairnessLoss(
    "none", "ranking", None, (), "no fairness term (plain ListNet / DPR)",
))
register_loss(FairnessLoss(
    "exposure_hinge", "ranking", exposure_hinge, (GAMMA,),
    "DELTR: squared hinge on Exp(G0) - Exp(Gp); 0 when the protected group has at least equal exposure",
    {"reduce": "max"},
))
register_loss(FairnessLoss(
    "exposure_symmetric", "ranking", exposure_symmetric, (GAMMA,),
    "squared exposure difference in both directions (the DELTR authors' Octave code)",
    {"reduce": "max"},
))
register_loss(FairnessLoss(
    "lakda_kl", "retrieval", lakda_kl, (ALPHA,),
    "LaKDA: KL between the document distributions of a query and its parallel translation",
    {"temperature": 1.0, "symmetric": False},
))
register_loss(FairnessLoss(
    "mse_align", "retrieval", mse_align, (ALPHA,),
    "MSE between the embeddings of parallel queries",
))

from fairltr.losses.objective import ObjectiveTerms, deltr_objective  # noqa: E402  (needs the registry filled)
from fairltr.losses.linear import LinearDELTRObjective, fused_variant  # noqa: E402

__all__ = [
    "ObjectiveTerms", "deltr_objective", "LinearDELTRObjective", "fused_variant",
    "V1", "GAMMA", "ALPHA", "ENTRY_POINT_GROUP",
    "FairnessLoss", "HyperParam", "available_losses", "get_loss", "register_loss", "reload_entry_points",
    "listnet_loss", "masked_log_softmax", "top_one_probability",
    "exposure_disparity", "exposure_hinge", "exposure_symmetric", "group_exposure",
    "lakda_kl", "mse_align",
]
