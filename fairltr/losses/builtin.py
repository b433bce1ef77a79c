"""The built-in losses' registry entries and the declarations of their weights.

``GAMMA`` weighs DELTR's exposure penalty (every check of a gamma calls ``GAMMA.validate``);
``ALPHA`` weighs the bi-encoders' language-alignment losses.

The entries name their torch functions through :func:`torch_loss`, so the registry (the CLI's
``--fairness-loss`` choices, the sweep spaces) is read without importing torch.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable

from fairltr.losses.declaration import FairnessLoss, HyperParam, register_loss

__all__ = ["GAMMA", "ALPHA", "LAMBDA", "torch_loss"]


class torch_loss:  # noqa: N801 - used like a function reference
    """The loss function ``module.name``, imported (with torch) at the first call; picklable
    (its state is the two names)."""

    def __init__(self, module: str, name: str) -> None:
        self.module, self.__name__ = module, name
        self.__qualname__ = name
        self._fn: Callable[..., Any] | None = None

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._fn is None:
            self._fn = getattr(importlib.import_module(self.module), self.__name__)
        return self._fn(*args, **kwargs)

    def __reduce__(self) -> tuple[Any, ...]:
        return torch_loss, (self.module, self.__name__)

    def __repr__(self) -> str:
        return f"<loss {self.module}.{self.__name__}>"


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

REDUCE = {"reduce": ("max", "mean")}  # how the per-group penalties of several protected groups combine

register_loss(FairnessLoss(
    "none", "ranking", None, (), "no fairness term (plain ListNet / DPR)",
))
register_loss(FairnessLoss(
    "exposure_hinge", "ranking", torch_loss("fairltr.losses.exposure", "exposure_hinge"), (GAMMA,),
    "DELTR: squared hinge on Exp(G0) - Exp(Gp); 0 when the protected group has at least equal exposure",
    {"reduce": "max"}, fused="hinge", option_choices=REDUCE,
))
register_loss(FairnessLoss(
    "exposure_symmetric", "ranking", torch_loss("fairltr.losses.exposure", "exposure_symmetric"), (GAMMA,),
    "squared exposure difference in both directions (the DELTR authors' Octave code)",
    {"reduce": "max"}, fused="symmetric", option_choices=REDUCE,
))
register_loss(FairnessLoss(
    "disparate_treatment_hinge", "ranking", torch_loss("fairltr.losses.merit", "disparate_treatment_hinge"), (GAMMA,),
    "merit-proportional exposure (Singh & Joachims 2018): squared hinge on Exp(G0)/U(G0) - Exp(Gp)/U(Gp), "
    "U = mean judgment",
    {"reduce": "max"}, needs_judgments=True, option_choices=REDUCE,
))
register_loss(FairnessLoss(
    "plrank", "policy", torch_loss("fairltr.losses.plackett_luce", "policy_disparity"), (LAMBDA,),
    "Plackett-Luce policy (Fair-PG-Rank / PL-Rank): E[DCG] - lambda * disparity of expected group exposure "
    "(squared or hinge, optionally per unit of merit)",
    {"disparity": "squared", "merit": False, "reduce": "max"}, needs_judgments=True,
    option_choices={"disparity": ("squared", "hinge"), **REDUCE},
))
register_loss(FairnessLoss(
    "lakda_kl", "retrieval", torch_loss("fairltr.losses.retrieval", "lakda_kl"), (ALPHA,),
    "LaKDA: KL between the document distributions of a query and its parallel translation",
    {"temperature": 1.0, "symmetric": False},
))
register_loss(FairnessLoss(
    "mse_align", "retrieval", torch_loss("fairltr.losses.retrieval", "mse_align"), (ALPHA,),
    "MSE between the embeddings of parallel queries", inputs="embeddings",
))
