"""Length buckets: the padding bound, the partition, content equal to to_batch, scatter back,
splitting a padded batch, errors as to_batch's."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.buckets import BucketedBatch, length_buckets, split_batch, to_buckets
from fairltr.data import set_origin, to_batch
from fairltr.errors import ConfigError, DataError


def skewed_frame(seed: int = 0, n_queries: int = 40, long: int = 300, features: int = 3,
                 shuffle: bool = True) -> pd.DataFrame:
    """One ``long`` query, a few mid-length ones and many short ones (incl. a one-row query),
    rows of a query not adjacent when ``shuffle``; query ids are strings in a scrambled order."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 12, size=n_queries)
    sizes[0] = long
    sizes[1:4] = rng.integers(long // 4, long // 2, size=3)
    sizes[4] = 1
    qids = np.repeat([f"q{rng.integers(1000, 9999)}_{i}" for i in range(n_queries)], sizes)
    rows = len(qids)
    df = pd.DataFrame({"query_id": qids, "protected": (rng.random(rows) < 0.4).astype(np.int64)})
    for f in range(features):
        df[f"x{f + 1}"] = rng.normal(size=rows)
    df["judgment"] = df["x1"] + 0.5 * df[f"x{min(2, features)}"] - df["protected"] + 0.1 * rng.normal(size=rows)
    if shuffle:
        df = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    return df


# ---------------------------------------------------------------------------- length_buckets
@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("max_padding", [1.0, 1.5, 2.0, 4.0])
def test_buckets_partition_and_bound(seed, max_padding):
    rng = np.random.default_rng(seed)
    sizes = np.concatenate([rng.integers(1, 20, size=200), rng.integers(1, 5000, size=int(rng.integers(1, 6)))])
    rng.shuffle(sizes)
    buckets = length_buckets(sizes, max_padding)
    allq = np.concatenate(buckets)
    assert sorted(allq.tolist()) == list(range(len(sizes)))  # every query exactly once
    for b in buckets:
        assert np.all(np.diff(b) > 0)  # table order inside a bucket
        assert len(b) * sizes[b].max() <= max_padding * sizes[b].sum()  # the bound, per bucket
    total = sum(len(b) * int(sizes[b].max()) for b in buckets)
    assert total <= max_padding * sizes.sum()
    if max_padding > 1:
        assert len(buckets) <= math.floor(math.log(sizes.max(), max_padding)) + 1
    else:
        assert len(buckets) == len(np.unique(sizes))  # max_padding 1: one bucket per distinct length
    # greedy is maximal: the longest query of the next bucket would break the previous bucket's bound
    for b, nxt in zip(buckets, buckets[1:]):
        extra = nxt[np.argmax(sizes[nxt])]
        assert (len(b) + 1) * sizes[b].max() > max_padding * (sizes[b].sum() + sizes[extra])
        assert sizes[nxt].max() <= sizes[b].min()  # longest first


def test_uniform_and_mild_tables_are_one_bucket_in_table_order():
    for sizes in ([100] * 50, [7], [3, 5, 4, 6, 5], [10, 10, 6, 5]):
        buckets = length_buckets(sizes)
        assert len(buckets) == 1 and buckets[0].tolist() == list(range(len(sizes)))


def test_the_issue_table_needs_about_its_rows():
    sizes = np.array([10_000] + [100] * 9_999)
    buckets = length_buckets(sizes)
    cells = sum(len(b) * int(sizes[b].max()) for b in buckets)
    assert len(buckets) == 2 and cells == 2 * 10_000 + 9_998 * 100  # vs 10^8 for one padded batch
    assert cells <= 1.02 * sizes.sum()


def test_length_buckets_edge_cases():
    assert length_buckets([]) == []
    # empty queries (a padded batch may hold some) cost cells but no rows: 3 x 3 > 2 x 3 splits
    assert [b.tolist() for b in length_buckets([0, 0, 3])] == [[0, 2], [1]]
    assert [b.tolist() for b in length_buckets([0, 0])] == [[0, 1]]
    with pytest.raises(ConfigError, match="max_padding must be >= 1"):
        length_buckets([1, 2], 0.5)


# ---------------------------------------------------------------------------- to_buckets
def _assert_bucket_equals_padded_rows(bucket, full, queries):
    """A bucket equals the same queries of the one padded batch, trimmed to the bucket width."""
    width = bucket.mask.shape[1]
    assert width == int(full.n_items[queries].max())
    idx = torch.as_tensor(queries)
    assert torch.equal(full.mask[idx][:, width:], torch.zeros_like(full.mask[idx][:, width:]))
    for name in ("features", "judgments", "groups", "mask", "row_index"):
        assert torch.equal(getattr(bucket, name), getattr(full, name)[idx][:, :width]), name
    assert bucket.query_ids == [full.query_ids[i] for i in queries]
    assert bucket.feature_names == full.feature_names


@pytest.mark.parametrize("seed", range(4))
def test_to_buckets_content_equals_to_batch(seed):
    df = skewed_frame(seed)
    full = to_batch(df, features=["x1", "x2", "protected"])
    bb = to_buckets(df, features=["x1", "x2", "protected"])
    assert len(bb.batches) > 1  # the table is skewed enough to split
    assert bb.query_ids == full.query_ids and bb.n_queries == full.n_queries and bb.n_rows == len(df)
    assert bb.padded_cells <= 2 * len(df) < full.mask.numel()
    for batch, queries in zip(bb.batches, bb.queries):
        _assert_bucket_equals_padded_rows(batch, full, queries)


def test_per_query_and_scatter_back_restore_table_order():
    df = skewed_frame(3)
    assert to_buckets(df, features=["x1"], dtype=torch.float32).batches[1].features.dtype == torch.float32
    bb = to_buckets(df, features=["x1", "x2"])
    # a per-slot value -> rows
    np.testing.assert_array_equal(bb.scatter_back([b.judgments for b in bb.batches]), df.judgment.to_numpy())
    # a per-query value -> table query order: the number of candidates of each query
    n_items = bb.per_query([b.n_items for b in bb.batches])
    expected = df.groupby("query_id", sort=False).size().to_numpy()
    assert n_items.tolist() == expected.tolist()
    with pytest.raises(ValueError):
        bb.per_query([bb.batches[0].n_items])


def test_one_bucket_is_exactly_to_batch():
    df = skewed_frame(1, long=8)
    bb = to_buckets(df, features=["x1"])
    full = to_batch(df, features=["x1"])
    assert len(bb.batches) == 1 and bb.queries[0].tolist() == list(range(full.n_queries))
    for name in ("features", "judgments", "groups", "mask", "row_index"):
        assert torch.equal(getattr(bb.batches[0], name), getattr(full, name))
    assert torch.equal(bb.per_query([full.n_items]), full.n_items)


def test_to_buckets_errors_are_to_batchs():
    df = skewed_frame(2, shuffle=False)
    df.loc[df.index[-1], "x2"] = np.nan
    set_origin(df, "train.csv", 2)
    with pytest.raises(DataError) as a:
        to_batch(df, features=["x1", "x2"])
    with pytest.raises(DataError) as b:
        to_buckets(df, features=["x1", "x2"])
    assert str(a.value) == str(b.value)
    assert str(b.value).startswith(f"train.csv:{len(df) + 1}: missing value")


# ---------------------------------------------------------------------------- split_batch
def test_split_batch_equals_to_buckets_and_keeps_a_mild_batch():
    df = skewed_frame(5)
    full = to_batch(df)
    parts = split_batch(full)
    ref = to_buckets(df)
    assert [q.tolist() for q in parts.queries] == [q.tolist() for q in ref.queries]
    for a, b in zip(parts.batches, ref.batches):
        for name in ("features", "judgments", "groups", "mask", "row_index"):
            assert torch.equal(getattr(a, name), getattr(b, name)), name
        assert a.query_ids == b.query_ids
    mild = to_batch(skewed_frame(5, long=8))
    same = split_batch(mild)
    assert isinstance(same, BucketedBatch) and same.batches[0] is mild


def test_split_batch_uses_the_last_real_slot_and_unnamed_queries():
    # a batch whose mask has a hole (not left-aligned) and no query ids
    mask = torch.zeros(6, 40, dtype=torch.bool)
    mask[0, :40] = True
    mask[1:, :2] = True
    mask[2, 1] = False
    mask[2, 5] = True  # query 2 reaches slot 5
    feats = torch.randn(6, 40, 1).masked_fill(~mask.unsqueeze(-1), 0.0)
    row_index = torch.full((6, 40), -1, dtype=torch.long)
    row_index[mask] = torch.arange(int(mask.sum()))
    from fairltr.data import RankingBatch

    batch = RankingBatch(feats, torch.zeros(6, 40), torch.zeros(6, 40, dtype=torch.long), mask, row_index)
    parts = split_batch(batch)
    assert len(parts.batches) == 2 and parts.n_queries == 6
    widths = {tuple(q.tolist()): b.mask.shape[1] for q, b in zip(parts.queries, parts.batches)}
    assert widths == {(0, 2): 40, (1, 3, 4, 5): 2}  # extents 40, 2, 6, 2, 2, 2: 2 x 40 <= 2 x (40 + 6)
    assert all(b.query_ids == [] for b in parts.batches)
    assert int(sum(b.mask.sum() for b in parts.batches)) == int(mask.sum())


def test_per_query_of_a_single_permuted_bucket():
    df = skewed_frame(1, long=8)
    full = to_batch(df, features=["x1"])
    order = np.arange(full.n_queries)[::-1].copy()
    bb = BucketedBatch([full.select(order)], [order], full.query_ids, len(df), ["x1"])
    assert bb.per_query([bb.batches[0].n_items]).tolist() == full.n_items.tolist()
    np.testing.assert_array_equal(bb.scatter_back([bb.batches[0].features[..., 0]]), df.x1.to_numpy())
