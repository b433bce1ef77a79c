"""The memory-lean paths of the linear objective (issue 34, item 4): in-place standardisation
equals the out-of-place computation bit for bit, the block-wise moments equal numpy's in float64
within rounding, and nothing the caller holds is overwritten."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import fairltr.losses.linear as linear
from fairltr import DELTR
from fairltr.buckets import to_buckets
from fairltr.data import numeric_matrix
from fairltr.losses import LinearDELTRObjective, masked_moments


def _batch(q=7, n=11, f=5, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    x = 3.0 + 2.0 * torch.randn(q, n, f, generator=g, dtype=dtype)
    y = torch.randint(0, 5, (q, n), generator=g).to(dtype)
    groups = torch.randint(0, 2, (q, n), generator=g)
    sizes = torch.randint(1, n + 1, (q,), generator=g)
    mask = torch.arange(n) < sizes[:, None]
    return x, y, groups, mask


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_standardize_in_place_equals_out_of_place_bit_for_bit(dtype):
    x, y, groups, mask = _batch(dtype=dtype)
    mean = x[mask].mean(0)
    std = x[mask].std(0, unbiased=False)
    before = (((x - mean) / std).masked_fill(~mask.unsqueeze(-1), 0.0))  # the previous DELTR code
    ref = LinearDELTRObjective(before, y, groups, mask, 10.0)
    kept = x.clone()
    copied = LinearDELTRObjective(x, y, groups, mask, 10.0, standardize=(mean, std))
    assert torch.equal(x, kept)  # consume=False: the caller's tensor is untouched
    consumed = LinearDELTRObjective(x, y, groups, mask, 10.0, standardize=(mean, std), consume=True)
    assert consumed.x.data_ptr() == x.data_ptr()  # no copy
    w = torch.randn(x.shape[-1], generator=torch.Generator().manual_seed(1), dtype=dtype)
    for obj in (copied, consumed):
        assert torch.equal(obj.x, ref.x) and torch.equal(obj.c, ref.c)
        (t, g), (t0, g0) = obj.value_and_grad(w), ref.value_and_grad(w)
        assert torch.equal(t.total, t0.total) and torch.equal(g, g0)


def test_blockwise_moments_equal_numpy_in_float64(monkeypatch):
    x, _, _, mask = _batch(q=40, n=13, f=3)
    x2, _, _, mask2 = _batch(q=9, n=4, f=3, seed=2)
    real = np.concatenate([x[mask].numpy(), x2[mask2].numpy()])
    direct = masked_moments([x, x2], [mask, mask2])  # small: the one-copy path
    monkeypatch.setattr(linear, "MOMENT_BLOCK", 50)  # every block a few queries
    blocked = masked_moments([x, x2], [mask, mask2])
    for mean, std in (direct, blocked):
        np.testing.assert_allclose(mean.numpy(), real.mean(0), rtol=1e-13)
        np.testing.assert_allclose(std.numpy(), real.std(0), rtol=1e-13)


def _table(n_q=30, n=8, f=4, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n_q * n, f)).astype(np.float32)
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(f)])
    df.insert(0, "protected", (rng.random(n_q * n) < 0.4).astype(np.int64))
    df.insert(0, "query_id", np.repeat(np.arange(n_q), n))
    df["judgment"] = x[:, 0] - df["protected"].to_numpy() + 0.1 * rng.normal(size=n_q * n)
    return df


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fit_in_place_equals_fit_batch_and_leaves_the_callers_batch(dtype, monkeypatch):
    df = _table()
    kw = dict(gamma=100.0, max_iter=15, tol=0.0, device="cpu", dtype=dtype)
    buckets = to_buckets(df, dtype=dtype)
    before = buckets.batches[0].features.clone()
    a = DELTR(**kw).fit(df)  # its own buckets: standardised in place
    b = DELTR(**kw).fit_batch(buckets)  # the caller's: copied
    assert torch.equal(buckets.batches[0].features, before)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    monkeypatch.setattr(linear, "MOMENT_BLOCK", 64)  # block-wise moments: summation order only
    c = DELTR(**kw).fit(df)
    np.testing.assert_allclose(c.mean_, a.mean_, rtol=1e-6 if dtype == torch.float32 else 1e-12, atol=1e-7)
    if dtype == torch.float64:
        np.testing.assert_allclose(c.weights_, a.weights_, rtol=1e-6, atol=1e-8)  # 15 L-BFGS steps amplify 1e-16
    else:  # float32: rounding of the mean moves the L-BFGS path a little; the objective agrees
        np.testing.assert_allclose(c.weights_, a.weights_, atol=1e-3)
        assert abs(c.history_[-1]["total"] - a.history_[-1]["total"]) <= 1e-5 * abs(a.history_[-1]["total"])


def test_numeric_matrix_float32_is_the_rounded_float64_and_never_a_view():
    df = _table()
    cols = [c for c in df.columns if c.startswith("x")]
    x64 = numeric_matrix(df, cols)
    x32 = numeric_matrix(df, cols, dtype=np.float32)
    assert x32.dtype == np.float32 and np.array_equal(x32, x64.astype(np.float32))
    assert not np.shares_memory(x32, df[cols[0]].to_numpy())
    mixed = numeric_matrix(df, ["protected", *cols], dtype=np.float32)  # the column-by-column path
    assert np.array_equal(mixed, numeric_matrix(df, ["protected", *cols]).astype(np.float32))
    x32[:] = 0.0  # writable, ours
    assert df[cols[0]].abs().sum() > 0


@pytest.mark.parametrize("shuffle", [False, True])
def test_float32_buckets_equal_the_float64_ones_rounded(shuffle):
    """A float32 batch (built without a float64 copy; a full, contiguous table padded by a
    reshape) holds the float64 batch's features rounded once."""
    df = _table(n_q=12, n=6)
    if shuffle:  # rows of a query no longer contiguous: the general padding path
        df = df.sample(frac=1.0, random_state=0).reset_index(drop=True)
    b64 = to_buckets(df, dtype=torch.float64)
    b32 = to_buckets(df, dtype=torch.float32)
    for x64, x32 in zip(b64.batches, b32.batches):
        assert x32.features.dtype == torch.float32
        assert torch.equal(x32.features, x64.features.to(torch.float32))
        assert torch.equal(x32.mask, x64.mask) and torch.equal(x32.row_index, x64.row_index)
