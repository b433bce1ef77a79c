"""Streaming Parquet reader: one-pass statistics against numpy, query layout against pandas,
query-aligned batches against to_batch, and errors that name file, column, row and query."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch

from fairltr.columns import RankingColumns
from fairltr.data import to_batch
from fairltr.errors import DataError
from fairltr.parquet_stream import RunningMoments, iter_query_batches, scan_parquet, split_units


def _table(n_queries: int = 23, seed: int = 0, string_ids: bool = False) -> pd.DataFrame:
    """Queries of 1..40 candidates (sizes vary, some single-candidate), grouped by query."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 41, size=n_queries)
    qid = np.repeat(np.arange(100, 100 + n_queries) * 7 % 101, sizes)  # grouped, not sorted
    n = len(qid)
    df = pd.DataFrame({
        "query_id": [f"q{q}" for q in qid] if string_ids else qid,
        "protected": (rng.random(n) < 0.3).astype(np.int8),
        "x1": (1e6 + rng.standard_normal(n)).astype(np.float64),  # large offset, small spread
        "x2": rng.standard_normal(n).astype(np.float32),
        "x3": rng.integers(0, 5, n).astype(np.int32),
        "label": rng.standard_normal(n),
        "judgment": rng.standard_normal(n),
    })
    df["note"] = "text"  # non-numeric: never a default feature
    return df


def _write(df: pd.DataFrame, path, row_group_size: int) -> str:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=row_group_size)
    return str(path)


def test_running_moments_match_numpy_on_uneven_chunks():
    rng = np.random.default_rng(1)
    x = np.concatenate([1e8 + 1e-3 * rng.standard_normal((997, 3)), rng.standard_normal((3, 3))])
    x[:, 2] = 5.0  # constant column: std 0, scale 1
    rm = RunningMoments(3)
    for part in np.split(x, [1, 2, 50, 51, 600]):
        rm.update(part)
    np.testing.assert_allclose(rm.mean, x.mean(0), rtol=1e-14)
    np.testing.assert_allclose(rm.variance, x.var(0), rtol=1e-10, atol=0)
    assert rm.n == 1000 and rm.scale[2] == 1.0 and rm.std[2] == 0.0
    # merging two halves equals one pass
    a, b = RunningMoments(3).update(x[:400]), RunningMoments(3).update(x[400:])
    np.testing.assert_allclose(a.merge(b).variance, x.var(0), rtol=1e-10)


@pytest.mark.parametrize("chunk_rows", [3, 1 << 16])
def test_scan_layout_and_statistics(tmp_path, chunk_rows):
    df = _table()
    path = _write(df, tmp_path / "t.parquet", row_group_size=37)
    lay = scan_parquet(path, chunk_rows=chunk_rows)
    assert lay.feature_names == ["protected", "x1", "x2", "x3", "label"]  # numeric, not query/judgment
    assert lay.n_rows == len(df) and lay.n_units == pq.ParquetFile(path).num_row_groups
    sizes = df.groupby("query_id", sort=False).size()
    assert lay.query_ids == list(sizes.index)
    np.testing.assert_array_equal(lay.query_size, sizes.to_numpy())
    np.testing.assert_array_equal(lay.query_start, np.concatenate([[0], np.cumsum(sizes.to_numpy())[:-1]]))
    spanning = (lay.query_start // 37) != ((lay.query_start + lay.query_size - 1) // 37)
    assert spanning.sum() >= 3  # queries run over row-group boundaries
    x = df[lay.feature_names].to_numpy(np.float64)
    np.testing.assert_allclose(lay.mean, x.mean(0), rtol=1e-13)
    np.testing.assert_allclose(lay.scale, x.std(0), rtol=1e-10)
    assert lay.n_groups == 2
    # every query starts in exactly one unit
    owned = np.concatenate([lay.queries_of([u]) for u in range(lay.n_units)])
    np.testing.assert_array_equal(owned, np.arange(lay.n_queries))


@pytest.mark.parametrize("string_ids", [False, True])
def test_batches_equal_to_batch_standardised(tmp_path, string_ids):
    df = _table(seed=2, string_ids=string_ids).drop(columns="note")
    path = _write(df, tmp_path / "t.parquet", row_group_size=29)
    lay = scan_parquet(path, chunk_rows=5)
    full = to_batch(df, features=lay.feature_names)
    mean, scale = torch.tensor(lay.mean), torch.tensor(lay.scale)
    want = ((full.features - mean) / scale).masked_fill(~full.mask.unsqueeze(-1), 0.0)
    seen = 0
    for b in iter_query_batches(lay, batch_queries=4, chunk_rows=5):
        n, width = b.n_queries, b.mask.shape[1]
        assert width == int(full.mask[seen:seen + n].sum(1).max())  # padded to the batch's longest query
        torch.testing.assert_close(b.features, want[seen:seen + n, :width], rtol=0, atol=1e-12)
        assert torch.equal(b.mask, full.mask[seen:seen + n, :width])
        assert torch.equal(b.groups, full.groups[seen:seen + n, :width])
        assert torch.equal(b.judgments, full.judgments[seen:seen + n, :width])
        assert torch.equal(b.row_index, full.row_index[seen:seen + n, :width])
        assert b.query_ids == full.query_ids[seen:seen + n]
        seen += n
    assert seen == full.n_queries


def test_units_in_any_order_give_every_query_once(tmp_path):
    df = _table(seed=3)
    path = _write(df, tmp_path / "t.parquet", row_group_size=31)
    lay = scan_parquet(path)
    order = np.random.default_rng(0).permutation(lay.n_units)
    rows = np.concatenate([b.row_index[b.mask].numpy()
                           for b in iter_query_batches(lay, order, batch_queries=3, chunk_rows=7)])
    np.testing.assert_array_equal(np.sort(rows), np.arange(len(df)))
    # the same queries in the same order as reading the units one by one
    want = np.concatenate([lay.queries_of([u]) for u in order])
    got = [q for b in iter_query_batches(lay, order, batch_queries=3, chunk_rows=7) for q in b.query_ids]
    assert got == [lay.query_ids[k] for k in want]


def test_folder_of_files_is_one_table(tmp_path):
    df = _table(seed=4).drop(columns="note")
    cut = int(np.flatnonzero(df["query_id"].to_numpy()[1:] != df["query_id"].to_numpy()[:-1])[5]) + 1
    (tmp_path / "d").mkdir()
    _write(df.iloc[:cut], tmp_path / "d" / "part-0.parquet", 20)
    _write(df.iloc[cut:], tmp_path / "d" / "part-1.parquet", 20)
    lay = scan_parquet(tmp_path / "d")
    one = scan_parquet(_write(df, tmp_path / "all.parquet", 20))
    assert lay.query_ids == one.query_ids and len(lay.files) == 2
    np.testing.assert_allclose(lay.mean, one.mean, rtol=1e-13)
    np.testing.assert_allclose(lay.scale, one.scale, rtol=1e-10)  # x1 = 1e6 + N(0, 1): float64 limit
    rows = np.concatenate([b.row_index[b.mask].numpy() for b in iter_query_batches(lay, batch_queries=5)])
    np.testing.assert_array_equal(rows, np.arange(len(df)))
    assert lay.where(cut + 3) == (str(tmp_path / "d" / "part-1.parquet"), 3)


def test_split_units_balances_queries_and_covers_all(tmp_path):
    lay = scan_parquet(_write(_table(n_queries=60, seed=5), tmp_path / "t.parquet", 25))
    for parts in (1, 2, 3, 7):
        shares = split_units(lay, parts)
        np.testing.assert_array_equal(np.concatenate(shares), np.arange(lay.n_units))
        counts = [len(lay.queries_of(s)) for s in shares]
        assert sum(counts) == lay.n_queries
        assert max(counts) - min(counts) <= 2 * int(np.diff(lay.unit_queries).max()), counts


# ---------------------------------------------------------------- errors
def test_ungrouped_query_is_refused_naming_file_query_and_row(tmp_path):
    df = _table(seed=6).drop(columns="note")
    first = df["query_id"].iloc[0]
    bad = pd.concat([df, df.iloc[:2]], ignore_index=True)  # query `first` re-appears at the end
    path = _write(bad, tmp_path / "bad.parquet", 50)
    with pytest.raises(DataError, match=rf"bad\.parquet is not grouped by query: query {first} re-appears at row {len(df) + 1} \(1-based\)"):
        scan_parquet(path)
    # also inside one record batch, and across files of a folder
    inter = df.copy()
    assert (df["query_id"].iloc[:3] == first).all()
    inter.loc[1, "query_id"] = -1  # first, -1, first: the first query re-appears at row 3 (1-based)
    with pytest.raises(DataError, match=rf"query {first} re-appears at row 3 \(1-based\)"):
        scan_parquet(_write(inter, tmp_path / "inter.parquet", 1000))
    (tmp_path / "d").mkdir()
    _write(df, tmp_path / "d" / "a.parquet", 50)
    _write(df.iloc[:3], tmp_path / "d" / "b.parquet", 50)
    with pytest.raises(DataError, match=rf"b\.parquet is not grouped by query: query {first} re-appears at row 1 \(1-based\)"):
        scan_parquet(tmp_path / "d")


def test_files_of_a_folder_must_have_the_same_automatic_features(tmp_path):
    df = _table(seed=3).drop(columns="note")
    (tmp_path / "d").mkdir()
    _write(df.iloc[:40], tmp_path / "d" / "a.parquet", 50)
    _write(df.iloc[40:].assign(x4=1.0), tmp_path / "d" / "b.parquet", 50)
    with pytest.raises(DataError, match=r"b\.parquet has feature columns \['protected', 'x1', 'x2', 'x3', 'label', 'x4'\], "
                                        r"but .*a\.parquet has \['protected', 'x1', 'x2', 'x3', 'label'\]$"):
        scan_parquet(tmp_path / "d")
    # listed features: the extra column is not read
    assert scan_parquet(tmp_path / "d", features=["x1", "x2"]).n_rows == len(df)


def test_bad_columns_name_file_column_row_and_query(tmp_path):
    df = _table(seed=7)
    with pytest.raises(DataError, match=r"feature column 'note' in .*t\.parquet is not numeric \(type (large_)?string\)"):
        scan_parquet(_write(df, tmp_path / "t.parquet", 50), features=["x1", "note"])
    with pytest.raises(DataError, match=r"feature column\(s\) \['nope'\] not found in .*t\.parquet"):
        scan_parquet(tmp_path / "t.parquet", features=["x1", "nope"])
    with pytest.raises(DataError, match="judgment column 'grade' not found"):
        scan_parquet(tmp_path / "t.parquet", columns=RankingColumns(judgment="grade"))
    nan = df.drop(columns="note")
    nan.loc[61, "x2"] = np.nan
    with pytest.raises(DataError, match=rf"NaN or missing value in .*nan\.parquet, column 'x2', row 62 \(1-based\), "
                                        rf"query {nan['query_id'].iloc[61]}"):
        scan_parquet(_write(nan, tmp_path / "nan.parquet", 50), chunk_rows=16)
    inf = df.drop(columns="note")
    inf.loc[3, "judgment"] = np.inf
    with pytest.raises(DataError, match=r"infinite value in .*inf\.parquet, column 'judgment', row 4 \(1-based\)"):
        scan_parquet(_write(inf, tmp_path / "inf.parquet", 50))
    neg = df.drop(columns="note")
    neg["protected"] = neg["protected"].astype(np.int64)
    neg.loc[9, "protected"] = -1
    with pytest.raises(DataError, match=r"group column 'protected' in .*neg\.parquet must hold integers >= 0.*row 10 \(1-based"):
        scan_parquet(_write(neg, tmp_path / "neg.parquet", 50))
    nullq = pa.table({"query_id": pa.array([1, 1, None], pa.int64()), "protected": [0, 1, 0],
                      "x1": [0.1, 0.2, 0.3], "judgment": [1.0, 0.0, 1.0]})
    pq.write_table(nullq, tmp_path / "nullq.parquet")
    with pytest.raises(DataError, match=r"missing query id in .*nullq\.parquet, column 'query_id', row 3 \(1-based\)"):
        scan_parquet(tmp_path / "nullq.parquet")
    empty = pa.table({"query_id": pa.array([], pa.int64()), "protected": pa.array([], pa.int64()),
                      "x1": pa.array([], pa.float64()), "judgment": pa.array([], pa.float64())})
    pq.write_table(empty, tmp_path / "empty.parquet")
    with pytest.raises(DataError, match="has no rows"):
        scan_parquet(tmp_path / "empty.parquet")
    (tmp_path / "junk.parquet").write_text("not parquet")
    with pytest.raises(DataError, match="cannot read .*junk.parquet as Parquet"):
        scan_parquet(tmp_path / "junk.parquet")
    with pytest.raises(DataError, match="Parquet path not found"):
        scan_parquet(tmp_path / "missing.parquet")


@pytest.mark.parametrize("chunk_rows", [7, 1000])
def test_text_categories_stream_with_the_in_memory_coding(tmp_path, chunk_rows):
    """Issue 29: text categories streamed from Parquet are coded as ``category_codes`` codes them
    (the most frequent category, ties to the first sorted, is 0; the others in sorted order), the
    text column is never a feature, and a missing category names its row."""
    from fairltr.data import category_codes

    rng = np.random.default_rng(3)
    n = 120
    df = pd.DataFrame({"query_id": np.repeat(np.arange(12), 10),
                       "race": rng.choice(["White", "Black", "Asian American"], n, p=[0.3, 0.5, 0.2]),
                       "x1": rng.normal(size=n), "judgment": rng.integers(0, 3, n).astype(float)})
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path, row_group_size=25)
    c = RankingColumns(query="query_id", group="race", judgment="judgment")
    layout = scan_parquet(path, columns=c, chunk_rows=chunk_rows)
    codes, order = category_codes(df["race"])
    assert layout.categories == order and layout.n_groups == 3 and layout.feature_names == ["x1"]
    got = np.concatenate([b.groups[b.mask].numpy() for b in iter_query_batches(layout, batch_queries=5)])
    np.testing.assert_array_equal(got, codes)
    declared = scan_parquet(path, columns=c, reference="White")
    assert declared.categories[0] == "White"
    df.loc[37, "race"] = None
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), path)
    with pytest.raises(DataError, match=r"row 38 .*missing group category"):
        scan_parquet(path, columns=c)
