"""DELTRModule uses the estimator's objective (deltr_objective), registry defaults, and trains."""

from __future__ import annotations

import lightning.pytorch as pl
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import deltr_objective, get_loss
from fairltr.synthetic import make_biased_rankings
from lightning_modules import DELTRModule, RankingDataModule


@pytest.fixture(scope="module")
def frames():
    return make_biased_rankings(n_queries=12, n_candidates=9, n_features=3, seed=1)


def test_gamma_default_and_validation_from_registry():
    m = DELTRModule(3)
    assert m.gamma == get_loss("exposure_hinge").param("gamma").default
    assert DELTRModule(3, gamma=0).gamma == 0.0
    with pytest.raises(ConfigError, match="gamma must be >= 0"):
        DELTRModule(3, gamma=-1.0)
    with pytest.raises(ConfigError, match="retrieval loss"):
        DELTRModule(3, fairness_loss="lakda_kl")
    with pytest.raises(ConfigError, match="optimizer"):
        DELTRModule(3, optimizer="rmsprop")


@pytest.mark.parametrize("loss,gamma", [("exposure_hinge", 5.0), ("exposure_symmetric", 3.0), ("none", 0.0)])
def test_loss_equals_deltr_objective(frames, loss, gamma):
    dm = RankingDataModule(frames[0], batch_size=5, shuffle=False)
    dm.setup()
    m = DELTRModule(dm.n_features, fairness_loss=loss, gamma=gamma, bias=True)
    with torch.no_grad():
        m.weight.copy_(torch.tensor([0.5, -1.0, 2.0, 0.3], dtype=torch.float64))
        m.bias.fill_(0.7)
    batch = next(iter(dm.train_dataloader()))
    scores = (batch.features @ m.weight + 0.7).masked_fill(~batch.mask, 0.0)
    ref = deltr_objective(scores, batch.judgments, batch.groups, batch.mask, gamma,
                          fairness_loss=loss if loss != "none" else "none")
    got = m.objective(batch)
    assert got.total.item() == pytest.approx(ref.total.item(), rel=1e-12)
    assert got.exposure.item() == pytest.approx(ref.exposure.item(), rel=1e-12, abs=1e-15)
    # the whole training table in one batch = the estimator's objective over all queries
    full = RankingDataModule(frames[0], shuffle=False)
    full.setup()
    fb = next(iter(full.train_dataloader()))
    assert fb.n_queries == 8
    assert m.objective(fb).total.item() == pytest.approx(
        sum(m.objective(b).total.item() for b in dm.train_dataloader()), rel=1e-10)


@pytest.mark.parametrize("optimizer,lr", [("adam", 0.05), ("lbfgs", 1.0)])
def test_training_lowers_the_objective(frames, optimizer, lr):
    dm = RankingDataModule(frames[0], frames[1], batch_size=4, seed=0)
    dm.setup()
    m = DELTRModule(dm.n_features, gamma=10.0, optimizer=optimizer, lr=lr)
    full = dm.batches["train"]
    before = m.objective(full).total.item()
    trainer = pl.Trainer(max_epochs=15, accelerator="auto", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(m, dm)
    assert m.objective(full).total.item() < before
    assert "val/loss" in trainer.callback_metrics
    out = trainer.predict(m, dm)
    assert out[0]["scores"].shape == out[0]["batch"].mask.shape


def test_loss_options_are_checked_and_forwarded(frames):
    from fairltr.losses import GAMMA, FairnessLoss, exposure_symmetric, temporary_loss

    def scaled_hinge(scores, groups, mask, *, reduce="max", n_groups=None, scale=1.0):
        return scale * exposure_symmetric(scores, groups, mask, reduce=reduce, n_groups=n_groups)

    dm = RankingDataModule(frames[0], batch_size=6, shuffle=False)
    dm.setup()
    batch = next(iter(dm.train_dataloader()))
    name = "test_deltr_module_scaled_hinge"
    with temporary_loss(FairnessLoss(name, "ranking", scaled_hinge, (GAMMA,), options={"scale": 1.0})):
        plain = DELTRModule(dm.n_features, fairness_loss=name, gamma=10.0).objective(batch)
        scaled = DELTRModule(dm.n_features, fairness_loss=name, gamma=10.0, loss_options={"scale": 4.0}).objective(batch)
        assert plain.exposure.item() > 0
        assert scaled.exposure.item() == pytest.approx(4.0 * plain.exposure.item(), rel=1e-12)
        with pytest.raises(ConfigError, match=f"fairness loss '{name}' has no option 'size'"):
            DELTRModule(dm.n_features, fairness_loss=name, loss_options={"size": 2.0})
    with pytest.raises(ConfigError, match="fairness loss 'exposure_hinge' has no option 'scale'; options: \\['reduce'\\]"):
        DELTRModule(3, loss_options={"scale": 2.0})
    with pytest.raises(ConfigError, match="reduce='max' and options reduce='mean' disagree"):
        DELTRModule(3, loss_options={"reduce": "mean"})
