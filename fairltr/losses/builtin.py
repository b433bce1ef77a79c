"""The built-in losses' registry entries and the declarations of their weights.

``GAMMA`` weighs DELTR's exposure penalty (every check of a gamma calls ``GAMMA.validate``);
``ALPHA`` weighs the bi-encoders' language-alignment losses.
"""

from __future__ import annotations

from fairltr.losses.exposure import exposure_hinge, exposure_symmetric
from fairltr.losses.merit import disparate_treatment_hinge
from fairltr.losses.plackett_luce import policy_disparity
from fairltr.losses.registry import FairnessLoss, HyperParam, register_loss
from fairltr.losses.retrieval import lakda_kl, mse_align

__all__ = ["GAMMA", "ALPHA", "LAMBDA"]

GAMMA = HyperParam(
    "gamma", default=1e5, low=1e2, high=1e7, log=True, include_zero=True,
    description="weight of the exposure penalty (0 = standard ListNet)",
)
ALPHA = HyperParam(
    "alpha", default=0.5, low=1e-2, high=10.0, log=True, include_zero=True,
    description="weight of the language-alignment loss (LaKDA paper: 0.5)",
)

LAMBDA = HyperParam(
    "lambda", default=10.0, low=1e-1, high=1e3, log=True, include_zero=True,
    description="weight of the expected-exposure disparity of a Plackett-Luce policy (0 = plain E[DCG])",
)

register_loss(FairnessLoss(
    "none", "ranking", None, (), "no fairness term (plain ListNet / DPR)",
))
register_loss(FairnessLoss(
    "exposure_hinge", "ranking", exposure_hinge, (GAMMA,),
    "DELTR: squared hinge on Exp(G0) - Exp(Gp); 0 when the protected group has at least equal exposure",
    {"reduce": "max"}, fused="hinge",
))
register_loss(FairnessLoss(
    "exposure_symmetric", "ranking", exposure_symmetric, (GAMMA,),
    "squared exposure difference in both directions (the DELTR authors' Octave code)",
    {"reduce": "max"}, fused="symmetric",
))
register_loss(FairnessLoss(
    "disparate_treatment_hinge", "ranking", disparate_treatment_hinge, (GAMMA,),
    "merit-proportional exposure (Singh & Joachims 2018): squared hinge on Exp(G0)/U(G0) - Exp(Gp)/U(Gp), "
    "U = mean judgment",
    {"reduce": "max"}, needs_judgments=True,
))
register_loss(FairnessLoss(
    "plrank", "policy", policy_disparity, (LAMBDA,),
    "Plackett-Luce policy (Fair-PG-Rank / PL-Rank): E[DCG] - lambda * disparity of expected group exposure "
    "(squared or hinge, optionally per unit of merit)",
    {"disparity": "squared", "merit": False, "reduce": "max"}, needs_judgments=True,
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
