"""The Lightning ``Trainer`` of the DPR / LaKDA bi-encoder (DELTR's is in :mod:`.deltr_training`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["fit_biencoder"]


def fit_biencoder(module, data, *, steps: int, seed: int, batch_size: int, train_split: str = "train",
                  max_train_items: int | None = None, accelerator: str = "auto", devices: Any = "auto",
                  precision: Any = None, logger: Any = False, callbacks: Sequence[Any] = (),
                  progress: bool = False):
    """Train ``module`` (a :class:`~lightning_modules.BiEncoderModule`) for ``steps`` optimizer steps
    on ``data`` (a folder or :class:`~fairltr.retrieval.ParallelRetrievalData`) through a
    :class:`~lightning_modules.ParallelQueryDataModule`; no checkpoints, no sanity steps. Returns
    the Lightning trainer."""
    import lightning.pytorch as pl

    from lightning_modules.interrupt import fit
    from lightning_modules.parallel_datamodule import ParallelQueryDataModule
    from lightning_modules.quiet import quiet_lightning

    pl.seed_everything(seed, verbose=False)
    dm = ParallelQueryDataModule(data, batch_size=batch_size, train_split=train_split, seed=seed,
                                 max_train_items=max_train_items)
    devices = int(devices) if str(devices).isdigit() else devices
    with quiet_lightning():
        trainer = pl.Trainer(
            max_steps=steps, accelerator=accelerator, devices=devices, precision=precision,
            logger=logger, enable_checkpointing=False, enable_model_summary=False, enable_progress_bar=progress,
            log_every_n_steps=1 if steps <= 50 else 10, num_sanity_val_steps=0, callbacks=list(callbacks),
        )
        fit(trainer, module, dm)  # Ctrl-C: KeyboardInterrupt (Lightning would exit 1)
    return trainer
