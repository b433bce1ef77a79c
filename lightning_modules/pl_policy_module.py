"""A Plackett-Luce ranking policy as a LightningModule (Fair-PG-Rank / PL-Rank; docs/plrank.md).

Per batch of whole queries (padded + masked :class:`~fairltr.data.RankingBatch`): scores
s = f(x) (linear, or an MLP with ``hidden`` layers), ``samples`` rankings per query drawn from
the policy (Gumbel trick), and the step ascends E[DCG] - lambda * D(pi) along the PL-Rank (or
REINFORCE) estimate of :func:`fairltr.losses.pl_policy_objective` — the function the
:class:`~fairltr.PLRank` estimator uses. ``lam=None`` takes the registry's declared default of
the ``plrank`` loss (``lambda``), checked by its :class:`~fairltr.losses.HyperParam`.
Logged: ``<stage>/loss`` (the negated surrogate), ``<stage>/objective``, ``<stage>/dcg``,
``<stage>/disparity`` (sums over the batch's queries).
"""

from __future__ import annotations

from typing import Sequence

import torch

from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from fairltr.losses import get_loss, pl_policy_objective
from fairltr.losses.plackett_luce import DISPARITIES, ESTIMATORS
from lightning_modules.query_module import QueryBatchModule

__all__ = ["PLPolicyModule", "PL_MODULE_OPTIMIZERS"]

PL_MODULE_OPTIMIZERS = ("adam", "sgd")


class PLPolicyModule(QueryBatchModule):
    """Plackett-Luce policy over a linear scorer (``hidden=()``) or an MLP (``hidden=(32, 16)``, ReLU)."""

    def __init__(
        self,
        n_features: int,
        *,
        lam: float | None = None,
        samples: int = 32,
        estimator: str = "plrank",
        disparity: str = "squared",
        merit: bool = False,
        reduce: str = "max",
        n_groups: int | None = None,
        hidden: Sequence[int] = (),
        lr: float = 0.05,
        optimizer: str = "adam",
        seed: int = 0,
        dtype: torch.dtype = torch.float64,
    ) -> None:
        super().__init__()
        if n_features < 1:
            raise ConfigError(f"n_features must be >= 1, got {n_features}")
        weight = get_loss("plrank").weight_param
        lam = weight.validate(weight.default if lam is None else lam)
        if isinstance(samples, bool) or not isinstance(samples, int) or samples < 1:
            raise ConfigError(f"samples must be an integer >= 1, got {samples!r}")
        for name, value, allowed in (("estimator", estimator, ESTIMATORS), ("disparity", disparity, DISPARITIES),
                                     ("optimizer", optimizer, PL_MODULE_OPTIMIZERS), ("reduce", reduce, ("max", "mean"))):
            if value not in allowed:
                raise ConfigError(f"{name} must be one of {list(allowed)}, got {value!r}")
        if not lr > 0:
            raise ConfigError(f"lr must be > 0, got {lr}")
        if any(int(h) < 1 for h in hidden):
            raise ConfigError(f"hidden layer sizes must be >= 1, got {list(hidden)}")
        self.save_hyperparameters(ignore=["dtype"])
        self.lam = float(lam)
        gen = torch.Generator().manual_seed(seed)
        sizes = [n_features, *[int(h) for h in hidden], 1]
        layers: list[torch.nn.Module] = []
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            lin = torch.nn.Linear(a, b, bias=i < len(sizes) - 2, dtype=dtype)
            with torch.no_grad():
                lin.weight.copy_(torch.randn(b, a, generator=gen, dtype=dtype) * (0.01 if b == 1 else (1.0 / a) ** 0.5))
                if lin.bias is not None:
                    lin.bias.zero_()
            layers.append(lin)
            if b != 1:
                layers.append(torch.nn.ReLU())
        self.scorer = torch.nn.Sequential(*layers)
        self._generator = torch.Generator().manual_seed(seed + 1)

    def forward(self, features: torch.Tensor, mask: torch.Tensor | None = None) -> torch.Tensor:
        """Scores (Q, N) of features (Q, N, F); 0 on padded slots when ``mask`` is given."""
        dtype = self.scorer[0].weight.dtype
        s = self.scorer(features.to(dtype)).squeeze(-1)
        return s if mask is None else s.masked_fill(~mask, 0.0)

    def objective(self, batch: RankingBatch):
        """:class:`~fairltr.losses.PLObjectiveTerms` of the batch (one fresh set of sampled rankings)."""
        h = self.hparams
        scores = self(batch.features, batch.mask)
        return pl_policy_objective(
            scores, batch.judgments.to(scores.dtype), batch.groups, batch.mask, lam=self.lam, n_samples=h.samples,
            estimator=h.estimator, disparity=h.disparity, merit=h.merit, reduce=h.reduce, n_groups=h.n_groups,
            generator=self._generator)

    def _step(self, batch: RankingBatch, stage: str) -> torch.Tensor:
        terms = self.objective(batch)
        loss = -terms.surrogate
        self._log_terms(stage, batch, loss, objective=terms.total, dcg=terms.dcg, disparity=terms.disparity)
        return loss
