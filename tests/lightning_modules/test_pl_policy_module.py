"""PLPolicyModule: the estimator's objective function, registry default and checks, and training."""

from __future__ import annotations

import lightning.pytorch as pl
import numpy as np
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.losses import get_loss, pl_policy_objective
from fairltr.synthetic import make_biased_rankings
from lightning_modules import PLPolicyModule, RankingDataModule


@pytest.fixture(scope="module")
def frames():
    train, test = make_biased_rankings(n_queries=16, n_candidates=8, n_features=3, seed=1)
    grade = lambda df: df.assign(judgment=np.clip(np.round(df["judgment"] + 1.5), 0, 4))  # noqa: E731
    return grade(train), grade(test)


def test_lambda_default_and_validation_from_registry():
    assert PLPolicyModule(3).lam == get_loss("plrank").param("lambda").default
    with pytest.raises(ConfigError, match="lambda must be >= 0"):
        PLPolicyModule(3, lam=-1.0)
    for kwargs, pattern in [({"samples": 0}, "samples"), ({"estimator": "x"}, "estimator"),
                            ({"optimizer": "lbfgs"}, "optimizer"), ({"hidden": (0,)}, "hidden")]:
        with pytest.raises(ConfigError, match=pattern):
            PLPolicyModule(3, **kwargs)


def test_objective_is_the_estimators_function(frames):
    dm = RankingDataModule(frames[0], batch_size=5, shuffle=False)
    dm.setup()
    m = PLPolicyModule(dm.n_features, lam=3.0, samples=6, seed=2)
    batch = next(iter(dm.train_dataloader()))
    got = m.objective(batch)
    scores = m(batch.features, batch.mask)
    ref = pl_policy_objective(scores, batch.judgments, batch.groups, batch.mask, lam=3.0, n_samples=6,
                              generator=torch.Generator().manual_seed(3))  # the module's sampling seed: seed + 1
    assert got.total.item() == pytest.approx(ref.total.item(), rel=1e-12)
    assert got.surrogate.item() == pytest.approx(ref.surrogate.item(), rel=1e-12)


@pytest.mark.parametrize("hidden", [(), (8,)])
def test_training_raises_the_expected_dcg(frames, hidden):
    dm = RankingDataModule(frames[0], frames[1], batch_size=4, seed=0)
    dm.setup()
    m = PLPolicyModule(dm.n_features, lam=1.0, samples=16, hidden=hidden, lr=0.05)
    full = dm.batches["train"]

    def dcg() -> float:  # many samples so that the comparison is not noise
        with torch.no_grad():
            return pl_policy_objective(m(full.features, full.mask), full.judgments, full.groups, full.mask, lam=0.0,
                                       n_samples=2000, generator=torch.Generator().manual_seed(0)).dcg.item()

    before = dcg()
    trainer = pl.Trainer(max_epochs=20, accelerator="cpu", logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(m, dm)
    assert dcg() > 1.1 * before
    assert "val/dcg" in trainer.callback_metrics
    out = trainer.predict(m, dm)
    assert out[0]["scores"].shape == out[0]["batch"].mask.shape
