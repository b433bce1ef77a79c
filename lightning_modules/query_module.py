"""The step, logging and optimiser block shared by the modules that score padded query batches
(:class:`~lightning_modules.DELTRModule`, :class:`~lightning_modules.PLPolicyModule`).

A subclass implements ``_step(batch, stage) -> loss`` (``stage`` is ``"train"``, ``"val"`` or
``"test"``) and ``forward(features, mask)``; it saves ``optimizer`` and ``lr`` as hyper-parameters.
"""

from __future__ import annotations

from typing import Any

import lightning.pytorch as pl
import torch

from fairltr.data import RankingBatch

__all__ = ["QueryBatchModule", "make_optimizer"]


def make_optimizer(name: str, parameters: Any, lr: float) -> torch.optim.Optimizer:
    """``adam``, ``sgd`` or ``lbfgs`` (one step of at most one iteration, strong-Wolfe line search,
    history 20) over ``parameters`` with learning rate ``lr``."""
    if name == "adam":
        return torch.optim.Adam(parameters, lr=lr)
    if name == "sgd":
        return torch.optim.SGD(parameters, lr=lr)
    if name == "lbfgs":
        return torch.optim.LBFGS(parameters, lr=lr, max_iter=1, history_size=20, line_search_fn="strong_wolfe")
    raise ValueError(f"unknown optimizer {name!r}")  # the modules check the name at construction


class QueryBatchModule(pl.LightningModule):
    """train/val/test/predict steps over :class:`~fairltr.data.RankingBatch` and the optimiser
    named by ``hparams.optimizer``."""

    def _step(self, batch: RankingBatch, stage: str) -> torch.Tensor:  # pragma: no cover - abstract
        raise NotImplementedError

    def _log_terms(self, stage: str, batch: RankingBatch, loss: torch.Tensor, **terms: torch.Tensor) -> None:
        """Log ``<stage>/loss`` (on the progress bar while training) and ``<stage>/<name>`` of each
        term, weighted by the batch's query count and synchronised across processes outside training."""
        n, sync = batch.n_queries, stage != "train"
        self.log(f"{stage}/loss", loss, batch_size=n, prog_bar=stage == "train", sync_dist=sync)
        for name, value in terms.items():
            self.log(f"{stage}/{name}", value, batch_size=n, sync_dist=sync)

    def training_step(self, batch: RankingBatch, batch_idx: int) -> torch.Tensor:
        return self._step(batch, "train")

    def validation_step(self, batch: RankingBatch, batch_idx: int) -> None:
        self._step(batch, "val")

    def test_step(self, batch: RankingBatch, batch_idx: int) -> None:
        self._step(batch, "test")

    def predict_step(self, batch: RankingBatch, batch_idx: int, dataloader_idx: int = 0) -> dict[str, Any]:
        """Scores of the batch (``forward``) with the slot -> source-row map (``fairltr.data.scatter_back``)."""
        return {"scores": self(batch.features, batch.mask).detach(), "batch": batch}

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return make_optimizer(self.hparams.optimizer, self.parameters(), self.hparams.lr)
