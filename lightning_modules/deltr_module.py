"""DELTR's linear ranker as a LightningModule (docs/spec.md §2).

Per batch of whole queries (padded + masked :class:`~fairltr.data.RankingBatch`):
    s = X w (+ b),   loss = sum_q ListNet_q + gamma * U_q  (+ l2 * ||w||^2)
computed by :func:`fairltr.losses.deltr_objective`, the function the :class:`~fairltr.DELTR`
estimator uses. ``fairness_loss`` names a ranking loss of the registry; ``gamma=None`` takes the
loss's declared default, and the range check is the registry's :class:`HyperParam`.
``loss_options`` override the loss's declared options (checked by the registry entry at
construction, forwarded to the loss at every step).
"""

from __future__ import annotations

from typing import Any, Mapping

import torch

from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from fairltr.losses import available_losses, deltr_objective, get_loss, ranking_loss_options
from lightning_modules.query_module import QueryBatchModule

__all__ = ["DELTRModule", "OPTIMIZERS"]

OPTIMIZERS = ("adam", "sgd", "lbfgs")


class DELTRModule(QueryBatchModule):
    """Linear scoring function trained with ListNet + ``gamma`` x the registered fairness loss."""

    def __init__(
        self,
        n_features: int,
        *,
        fairness_loss: str = "exposure_hinge",
        gamma: float | None = None,
        reduce: str = "max",
        n_groups: int | None = None,
        lr: float = 0.01,
        optimizer: str = "adam",
        l2: float = 0.0,
        bias: bool = False,
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
        loss_options: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__()
        if n_features < 1:
            raise ConfigError(f"n_features must be >= 1, got {n_features}")
        loss = get_loss(fairness_loss)
        if loss.kind != "ranking":
            raise ConfigError(
                f"fairness_loss {fairness_loss!r} is a {loss.kind} loss; ranking losses: {available_losses('ranking')}"
            )
        weight = loss.weight_param
        gamma = 0.0 if weight is None else weight.validate(weight.default if gamma is None else gamma)
        if optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
        if not lr > 0:
            raise ConfigError(f"lr must be > 0, got {lr}")
        if l2 < 0:
            raise ConfigError(f"l2 must be >= 0, got {l2}")
        if reduce not in ("max", "mean"):
            raise ConfigError(f"reduce must be 'max' or 'mean', got {reduce!r}")
        self.loss_options = dict(loss_options or {})
        ranking_loss_options(fairness_loss, reduce=reduce, options=self.loss_options)  # checked once, here
        self.save_hyperparameters(ignore=["dtype"])
        self.gamma = float(gamma)
        gen = torch.Generator().manual_seed(seed)
        self.weight = torch.nn.Parameter(0.01 * torch.randn(n_features, generator=gen, dtype=dtype))
        self.bias = torch.nn.Parameter(torch.zeros((), dtype=dtype)) if bias else None

    def forward(self, features: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Scores (Q, N) = features (Q, N, F) @ w (+ b); 0 on padded slots when ``mask`` is given."""
        s = features.to(self.weight.dtype) @ self.weight
        if self.bias is not None:
            s = s + self.bias
        return s if mask is None else s.masked_fill(~mask, 0.0)

    def objective(self, batch: RankingBatch):
        """:class:`~fairltr.losses.ObjectiveTerms` of the batch (the estimator's objective)."""
        scores = self(batch.features, batch.mask)
        terms = deltr_objective(
            scores, batch.judgments.to(scores.dtype), batch.groups, batch.mask, self.gamma,
            fairness_loss=self.hparams.fairness_loss, reduce=self.hparams.reduce, n_groups=self.hparams.n_groups,
            options=self.loss_options,
        )
        return terms

    def _step(self, batch: RankingBatch, stage: str) -> torch.Tensor:
        terms = self.objective(batch)
        total = terms.total + self.hparams.l2 * (self.weight * self.weight).sum() if self.hparams.l2 else terms.total
        self._log_terms(stage, batch, total, listnet=terms.listnet, exposure=terms.exposure)
        return total
