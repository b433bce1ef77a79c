"""DDP with 2 CPU processes (gloo, ddp_spawn) ends with the same weights as 1 process on the
same global batch: documents are gathered across processes with gradients, and the data module
deals each global batch round-robin to the processes."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch

from lightning_modules import BiEncoderModule, ParallelQueryDataModule

KW = dict(fairness_loss="lakda_kl", shared=False, temperature=0.05, optimizer="sgd", lr=0.5, weight_decay=0.0)


def train(tiny_bert, parallel_dir, devices: int, strategy: str) -> dict[str, torch.Tensor]:
    pl.seed_everything(0, verbose=False)
    # global batch of 4 items: 1 process x 4, or 2 processes x 2
    dm = ParallelQueryDataModule(parallel_dir, batch_size=4 // devices, seed=0, shuffle=False)
    m = BiEncoderModule(tiny_bert, **KW)
    trainer = pl.Trainer(
        max_steps=2, accelerator="cpu", devices=devices, strategy=strategy, logger=False,
        enable_checkpointing=False, enable_progress_bar=False, enable_model_summary=False,
    )
    trainer.fit(m, dm)
    return {k: v.detach().clone() for k, v in m.state_dict().items()}


@pytest.mark.slow
def test_two_process_ddp_matches_single_process(tiny_bert, parallel_dir):
    torch.set_num_threads(1)
    single = train(tiny_bert, parallel_dir, 1, "auto")
    ddp = train(tiny_bert, parallel_dir, 2, "ddp_spawn")
    init = BiEncoderModule(tiny_bert, **KW).state_dict()
    moved = max((single[k] - init[k]).abs().max().item() for k in single)
    assert moved > 1e-4, "training did not change the weights"
    for k in single:
        diff = (single[k] - ddp[k]).abs().max().item()
        assert diff <= 1e-2 * moved, (k, diff, moved)
