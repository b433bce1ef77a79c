"""Streamed DELTR from Parquet: the same statistics and model as in memory, grouped input
required, per-process shares that keep DDP in step, and 2-process gloo runs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from fairltr import DELTR
from fairltr.errors import DataError
from fairltr.parquet_stream import scan_parquet, split_units
from fairltr.synthetic import make_biased_rankings
from lightning_modules import ParquetRankingDataModule, RankingDataModule, StreamedQueryBatches, train_deltr_lightning
from lightning_modules.parquet_datamodule import steps_per_epoch


def _frame(n_queries: int = 40, seed: int = 6) -> pd.DataFrame:
    """Queries of 3..30 candidates, grouped by query; float32 and int feature columns."""
    rng = np.random.default_rng(seed)
    train, _ = make_biased_rankings(n_queries=n_queries * 2, n_candidates=30, n_features=3, seed=seed)
    keep = rng.integers(3, 31, size=train["query_id"].nunique())
    rank_in_q = train.groupby("query_id").cumcount().to_numpy()
    sizes = dict(zip(train["query_id"].unique(), keep))
    df = train[rank_in_q < train["query_id"].map(sizes).to_numpy()].reset_index(drop=True)
    df["x2"] = df["x2"].astype(np.float32)
    df["x4"] = rng.integers(0, 4, len(df)).astype(np.int16)
    return df


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    df = _frame()
    path = tmp_path_factory.mktemp("stream") / "train.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=57)
    lay = scan_parquet(path)
    spans = (lay.query_start // 57) != ((lay.query_start + lay.query_size - 1) // 57)
    assert lay.n_units >= 8 and spans.sum() >= 5  # several row groups, queries across boundaries
    return df, str(path)


def test_same_statistics_as_in_memory(table):
    df, path = table
    dm = RankingDataModule(df)
    dm.setup()
    lay = scan_parquet(path, chunk_rows=10)
    assert lay.feature_names == dm.feature_names
    np.testing.assert_allclose(lay.mean, dm.feature_mean.numpy(), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lay.scale, dm.feature_scale.numpy(), rtol=1e-10)
    x = df[lay.feature_names].to_numpy(np.float64)  # numpy over the whole table
    np.testing.assert_allclose(lay.mean, x.mean(0), rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(lay.scale, x.std(0), rtol=1e-10)


@pytest.mark.parametrize("gamma", [0.0, 300.0])
def test_same_model_as_in_memory_for_the_same_batches(table, gamma):
    """Same batches (file order, 6 queries per step), same seed: the inputs differ only by the
    standardisation statistics' last bits (Chan merge vs torch mean/std), so the weights agree
    to ~1e-12; 1e-9 relative leaves room for Adam's division by sqrt(v)."""
    df, path = table
    kw = dict(gamma=gamma, batch_queries=6, epochs=4, shuffle=False, seed=2)
    mem = train_deltr_lightning(df, **kw)
    streamed = train_deltr_lightning(path, chunk_rows=13, **kw)
    assert streamed.optimizer == mem.optimizer == "adam"
    np.testing.assert_allclose(streamed.weights_, mem.weights_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(streamed.mean_, mem.mean_, rtol=1e-10, atol=1e-12)
    for a, b in zip(streamed.history, mem.history):
        assert a["total"] == pytest.approx(b["total"], rel=1e-10)
    assert streamed.feature_names_ == mem.feature_names_ and streamed.n_iter_ == 4
    assert streamed.training_["streamed"] and not mem.training_["streamed"]
    np.testing.assert_allclose(streamed.predict(df), mem.predict(df), rtol=1e-9, atol=1e-10)


def test_full_batch_stream_is_the_estimator(table, tmp_path):
    df, path = table
    est = DELTR(gamma=100.0).fit(df)
    streamed = train_deltr_lightning(path, gamma=100.0, batch_queries=10_000)
    assert streamed.optimizer == "lbfgs" and streamed.n_iter_ == est.n_iter_
    np.testing.assert_allclose(streamed.weights_, est.weights_, rtol=1e-7, atol=1e-9)
    back = DELTR.load(streamed.save(tmp_path / "s.safetensors"))
    np.testing.assert_allclose(back.predict(df), est.predict(df), rtol=1e-7, atol=1e-8)


def test_ungrouped_parquet_is_refused(table, tmp_path):
    df, _ = table
    q = df["query_id"].unique()
    bad = pd.concat([df[df["query_id"] == q[0]].iloc[:2], df[df["query_id"] == q[1]],
                     df[df["query_id"] == q[0]].iloc[2:]], ignore_index=True)
    path = tmp_path / "ungrouped.parquet"
    bad.to_parquet(path, index=False)
    with pytest.raises(DataError, match=rf"ungrouped\.parquet is not grouped by query: query {q[0]} re-appears at row "
                                        rf"{3 + (df['query_id'] == q[1]).sum()} \(1-based\) .*sort or group"):
        train_deltr_lightning(str(path), gamma=1.0)


def test_shares_keep_every_process_in_step_and_cover_each_query_once(table):
    _, path = table
    lay = scan_parquet(path)
    for world in (2, 3):
        shares = split_units(lay, world)
        steps = steps_per_epoch(lay, shares, 4)
        for epoch in (0, 1):
            seen = []
            for rank in range(world):
                ds = StreamedQueryBatches(lay, shares[rank], batch_queries=4, steps=steps, shuffle=True, seed=0)
                ds.set_epoch(epoch)
                batches = list(ds)
                assert len(batches) == steps == len(ds)
                seen += [q for b in batches for q in b.query_ids]
                assert all(b.features.shape[-1] == len(lay.feature_names) for b in batches)
            assert sorted(seen) == sorted(lay.query_ids)
    ds = StreamedQueryBatches(lay, np.arange(lay.n_units), batch_queries=4, steps=0, shuffle=True, seed=0)
    orders = {tuple(ds.order())}
    ds.set_epoch(1)
    orders.add(tuple(ds.order()))
    assert len(orders) == 2  # a new row-group order per epoch


def test_datamodule_loader_without_a_trainer(table):
    _, path = table
    dm = ParquetRankingDataModule(path, batch_queries=7, shuffle=False)
    dm.setup()
    batches = list(dm.train_dataloader())
    assert sum(b.n_queries for b in batches) == dm.layout.n_queries
    assert all(isinstance(b.features, torch.Tensor) and b.features.dtype == torch.float64 for b in batches)


@pytest.mark.slow
def test_two_process_gloo_streamed_run_ends_close_to_one_process(table):
    """2 CPU processes (ddp_spawn, gloo), each reading its own half of the row groups, with the
    same global batch size: the batches differ (each process takes its share's queries), so the
    runs agree closely but not exactly."""
    df, path = table
    kw = dict(gamma=300.0, batch_queries=6, epochs=8, seed=2, accelerator="cpu")
    one = train_deltr_lightning(path, devices=1, **kw)
    two = train_deltr_lightning(path, devices=2, **kw)
    assert two.training_["devices"] == 2 and two.n_iter_ == 8 and len(two.history) == 9
    init = 0.01 * torch.randn(len(one.weights_), generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    moved = np.abs(one.weights_ - init.numpy()).max()
    assert moved > 0.05
    assert np.abs(one.weights_ - two.weights_).max() <= 0.1 * moved  # measured 0.036 (a flat optimum)
    assert two.history[-1]["total"] == pytest.approx(one.history[-1]["total"], rel=5e-4)  # measured 3e-5
    # the epoch sums of the 2-process run are sums over all queries (not one process's half)
    assert two.history[0]["total"] == pytest.approx(one.history[0]["total"], rel=0.01)  # measured 8e-4


@pytest.mark.slow
def test_two_process_full_batch_in_memory_run_is_the_estimator(table):
    """In memory the global batches are the same for any number of processes: with one full
    batch (L-BFGS), 2 processes (each with half of it) give the estimator."""
    df, _ = table
    est = DELTR(gamma=100.0).fit(df)
    two = train_deltr_lightning(df, gamma=100.0, devices=2, accelerator="cpu")
    assert two.optimizer == "lbfgs" and two.n_iter_ == est.n_iter_
    np.testing.assert_allclose(two.weights_, est.weights_, rtol=1e-7, atol=1e-9)
    for a, b in zip(two.history, est.history):
        assert a["total"] == pytest.approx(b["total"], rel=1e-9)


@pytest.mark.slow
def test_streamed_model_registers_through_the_ranker_pyfunc(mlflow_tracking, table):
    import uuid

    import mlflow

    from fairltr.tracking import log_ranker_model

    df, path = table
    model = train_deltr_lightning(path, gamma=10.0, batch_queries=8, epochs=3)
    name = f"lightning-ranker-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-lightning-deltr")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=df.head(4), register=name)
    loaded = mlflow.pyfunc.load_model(f"models:/{name}/{info.registered_model_version}")
    out = loaded.predict(df)
    np.testing.assert_allclose(out["score"].to_numpy(), model.predict(df), rtol=0, atol=1e-12)


def test_float32_stream_is_close_to_float64(table, tmp_path):
    df, path = table
    kw = dict(gamma=100.0, batch_queries=8, epochs=3, shuffle=False)
    f64 = train_deltr_lightning(path, **kw)
    f32 = train_deltr_lightning(path, dtype=torch.float32, **kw)
    assert f32.get_params()["dtype"] is torch.float32 and f32.effective_params()["dtype"] == "float32"
    np.testing.assert_allclose(f32.predict(df), f64.predict(df), rtol=1e-4, atol=1e-4)
    assert DELTR.load(f32.save(tmp_path / "m.json")).dtype == torch.float32
