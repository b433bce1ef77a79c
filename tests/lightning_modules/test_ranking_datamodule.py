"""RankingDataModule: whole queries per batch, trimmed padding, standardisation, colorblind."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from lightning_modules import RankingDataModule


@pytest.fixture
def frame():
    rng = np.random.default_rng(0)
    sizes = [3, 7, 1, 4, 2]
    rows = []
    for q, n in enumerate(sizes):
        for i in range(n):
            rows.append({"query_id": f"q{q}", "protected": int(rng.integers(2)), "x1": rng.normal(5, 2),
                         "x2": rng.normal(), "judgment": float(rng.integers(4))})
    return pd.DataFrame(rows)


def test_batches_hold_whole_queries_and_trim_padding(frame):
    dm = RankingDataModule(frame, batch_size=2, shuffle=True, seed=0)
    dm.setup()
    seen = []
    for b in dm.train_dataloader():
        assert b.n_queries <= 2
        assert b.mask.shape[1] == int(b.mask.sum(1).max())  # trimmed to the longest query
        for qi, qid in enumerate(b.query_ids):
            n = int(b.mask[qi].sum())
            assert n == (frame["query_id"] == qid).sum()
            assert not b.mask[qi, n:].any() and (b.features[qi, n:] == 0).all()
        seen += b.query_ids
    assert sorted(seen) == sorted(frame["query_id"].unique())
    again = RankingDataModule(frame, batch_size=2, shuffle=True, seed=0)
    again.setup()
    assert [b.query_ids for b in again.train_dataloader()] == [b.query_ids for b in dm.train_dataloader()]


def test_standardisation_uses_training_statistics(frame, tmp_path):
    test = frame.copy()
    test["x1"] += 10
    path = tmp_path / "test.csv"
    test.to_csv(path, index=False)
    dm = RankingDataModule(frame, test=path)
    dm.setup()
    assert dm.feature_names == ["protected", "x1", "x2"]
    mean = frame[dm.feature_names].mean().to_numpy()
    std = frame[dm.feature_names].std(ddof=0).to_numpy()
    b = dm.batches["train"]
    x = b.features[b.mask].numpy()
    assert np.allclose(x, (frame[dm.feature_names].to_numpy()[b.row_index[b.mask].numpy()] - mean) / std)
    t = dm.batches["test"]
    assert torch.allclose(t.features[t.mask][:, 1].mean(), torch.tensor(10 / std[1], dtype=torch.float64))
    assert len(list(dm.test_dataloader())) == 1


def test_colorblind_and_errors(frame):
    dm = RankingDataModule(frame, colorblind=True)
    dm.setup()
    assert dm.feature_names == ["x1", "x2"] and dm.n_features == 2
    assert dm.batches["train"].groups.sum() == frame["protected"].sum()  # groups still known
    with pytest.raises(ConfigError, match="batch_size"):
        RankingDataModule(frame, batch_size=0)
    with pytest.raises(DataError, match="group column 'grp'"):
        RankingDataModule(frame, columns=RankingColumns(group="grp")).setup()
