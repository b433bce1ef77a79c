"""Training progress callbacks off a TTY, on a real (tiny) Lightning fit."""

from __future__ import annotations

import re

import pytest

pl = pytest.importorskip("lightning.pytorch")
import torch  # noqa: E402

from lightning_modules.progress import MetricLines, ProgressLines  # noqa: E402


class _Tiny(pl.LightningModule):
    def __init__(self) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.ones(1))

    def training_step(self, batch, batch_idx):
        loss = ((self.w * batch[0]) ** 2).mean()
        self.log("train/loss", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)

    def train_dataloader(self):
        return torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.ones(64, 1)), batch_size=4)


def _fit(callback, steps: int) -> None:
    trainer = pl.Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, callbacks=[callback], accelerator="cpu", devices=1)
    trainer.fit(_Tiny())


def test_metric_lines_every_k_steps_and_at_the_last():
    lines: list[str] = []
    _fit(MetricLines({"loss": "train/loss", "other": "train/missing"}, every=4, echo=lines.append), steps=10)
    steps = [int(re.search(r"step (\d+):", l).group(1)) for l in lines]
    assert steps == [4, 8, 10]
    assert all(re.search(r"loss \d+\.\d{4}, other nan \(\d+ s\)$", l) for l in lines), lines


def test_metric_lines_rejects_a_zero_interval():
    with pytest.raises(ValueError, match="every must be >= 1"):
        MetricLines({"loss": "train/loss"}, every=0)


def test_progress_lines_report_done_over_total():
    lines: list[str] = []
    _fit(ProgressLines(lines.append), steps=6)
    assert lines and "training 6 steps" in lines[-1] and "6/6" in lines[-1], lines
