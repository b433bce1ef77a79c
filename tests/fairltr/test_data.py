"""Ranking tables -> padded tensors: padding values, mask, row_index, grouping, validation, inverse."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.columns import RankingColumns
from fairltr.data import (NAMES_ONLY, RankingBatch, check_table, positions_in_query, query_codes, rank_within_query,
                          scatter_back, score_order, select_features, to_batch)
from fairltr.errors import DataError


def _frame():
    # query "b" appears first, and query "a"'s rows are not adjacent
    return pd.DataFrame({
        "query_id": ["b", "a", "b", "a", "c", "a"],
        "protected": [0, 1, 1, 0, 0, 1],
        "x1": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
        "x2": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
        "judgment": [3.0, 2.0, 1.0, 0.0, 5.0, 4.0],
    })


def test_to_batch_padding_mask_and_row_index():
    df = _frame()
    b = to_batch(df, features=["x1", "x2"])
    assert b.query_ids == ["b", "a", "c"]  # first appearance
    assert b.features.shape == (3, 3, 2) and b.features.dtype == torch.float64
    assert b.mask.tolist() == [[True, True, False], [True, True, True], [True, False, False]]
    assert b.row_index.tolist() == [[0, 2, -1], [1, 3, 5], [4, -1, -1]]  # row order kept in a query
    assert b.features[1, :, 0].tolist() == [2.0, 4.0, 6.0]
    assert b.judgments.tolist() == [[3.0, 1.0, 0.0], [2.0, 0.0, 4.0], [5.0, 0.0, 0.0]]
    assert b.groups.tolist() == [[0, 1, 0], [1, 0, 1], [0, 0, 0]]
    assert torch.all(b.features[~b.mask] == 0)  # padded slots hold 0
    assert b.n_queries == 3 and b.n_items.tolist() == [2, 3, 1]
    assert b.feature_names == ["x1", "x2"]


def test_default_features_keep_group_and_drop_query_judgment_item():
    df = _frame().assign(doc=range(6))
    b = to_batch(df, item="doc")
    assert b.feature_names == ["protected", "x1", "x2"]


def test_no_group_and_no_judgment_columns():
    df = _frame().drop(columns=["protected", "judgment"])
    b = to_batch(df, group=None, judgment=None, features=["x1"])
    assert torch.all(b.groups == 0) and torch.all(b.judgments == 0)


def test_scatter_back_is_the_inverse_of_padding():
    df = _frame()
    b = to_batch(df, features=["x1", "x2"])
    np.testing.assert_array_equal(scatter_back(b.features[..., 0], b, len(df)), df.x1.to_numpy())
    np.testing.assert_array_equal(scatter_back(b.judgments, b, len(df)), df.judgment.to_numpy())


def test_select_and_to():
    b = to_batch(_frame(), features=["x1"])
    sub = b.select([2, 0])
    assert isinstance(sub, RankingBatch) and sub.query_ids == ["c", "b"]
    torch.testing.assert_close(sub.features, b.features[[2, 0]])
    moved = b.to("cpu")
    assert moved.query_ids == b.query_ids and torch.equal(moved.mask, b.mask)


def test_dtype_option():
    assert to_batch(_frame(), dtype=torch.float32).features.dtype == torch.float32


def test_query_codes_first_appearance():
    codes, ids = query_codes(_frame(), "query_id")
    assert ids == ["b", "a", "c"] and codes.tolist() == [0, 1, 0, 1, 2, 1]


def test_one_item_queries_are_legal():
    df = pd.DataFrame({"query_id": [1, 2], "protected": [1, 0], "x": [0.5, 0.1], "judgment": [1.0, 0.0]})
    b = to_batch(df)
    assert b.mask.shape == (2, 1) and bool(b.mask.all())


@pytest.mark.parametrize("mutate,pattern", [
    (lambda d: d.iloc[0:0], "empty ranking table"),
    (lambda d: d.drop(columns=["x2"]), r"missing column\(s\) \['x2'\]"),
    (lambda d: d.assign(x1=[1.0, np.nan, 3, 4, 5, 6]), r"^train.csv, row 1 \(0-based\): missing value \(NaN or empty cell\) in column 'x1' \(query 'a'\)"),
    (lambda d: d.assign(judgment=[1.0, 2, 3, np.inf, 5, 6]),
     r"^train.csv, row 3 \(0-based\): infinite value inf in column 'judgment' \(query 'a'\)"),
    (lambda d: d.assign(protected=[0, 0.5, 1, 0, 0, 1]), r"^train.csv, row 1 \(0-based\): group column 'protected' must hold integers.*got 0.5"),
    (lambda d: d.assign(protected=[0, 1, -1, 0, 0, 1]), r"^train.csv, row 2 \(0-based\): group column 'protected' must be >= 0 .*got -1"),
    (lambda d: d.assign(x2=["0.1", "0.2", "abc", "0.4", "0.5", "0.6"]),
     r"^train.csv, row 2 \(0-based\): non-numeric value 'abc' in column 'x2' \(query 'b'\)$"),
    (lambda d: d.assign(query_id=["b", None, "b", "a", "c", "a"]), r"^train.csv, row 1 \(0-based\): missing query id in column 'query_id'"),
])
def test_validation_errors_name_row_column_query(mutate, pattern):
    with pytest.raises(DataError, match=pattern):
        to_batch(mutate(_frame()), features=["x1", "x2"], source="train.csv")


def test_validation_error_names_the_source():
    with pytest.raises(DataError, match="^train.csv: missing column"):
        to_batch(_frame().drop(columns=["x1"]), features=["x1"], source="train.csv")


def test_duplicate_query_item_pairs():
    df = _frame().assign(doc=[1, 1, 2, 2, 1, 1])
    with pytest.raises(DataError, match=r"^row 5 \(0-based\): duplicate \(query, item\) pair: query 'a', item 1; first seen at row 1 \(0-based\)"):
        check_table(df, NAMES_ONLY.replace(item="doc"), numeric=["x1"])
    check_table(df.assign(doc=range(6)), NAMES_ONLY.replace(item="doc"), numeric=["x1"])


def test_numeric_strings_are_accepted():
    df = _frame().assign(x2=["0.1", "0.2", "0.3", "0.4", "0.5", "0.6"])
    check_table(df, NAMES_ONLY, numeric=["x2"])


def test_origin_maps_rows_to_lines_with_jumps():
    from fairltr.data import ORIGIN_KEY, locate_row, row_place, set_origin

    df = set_origin(_frame(), "t.csv", [2, 3, 5, 9, 10, 11])
    assert df.attrs[ORIGIN_KEY]["rows"] == [0, 2, 3] and df.attrs[ORIGIN_KEY]["lines"] == [2, 5, 9]  # compact
    assert [locate_row(df, i) for i in range(6)] == [f"t.csv:{n}" for n in (2, 3, 5, 9, 10, 11)]
    assert row_place(df.iloc[[5, 0]], 0) == ("t.csv", "line 11")  # by index label, not position
    assert locate_row(df.reset_index(drop=True).set_index("query_id"), 1) == "t.csv, row 1 (0-based)"
    consecutive = set_origin(_frame(), "d.txt", 1)
    assert [locate_row(consecutive, i) for i in (0, 5)] == ["d.txt:1", "d.txt:6"]
    parquet = set_origin(_frame(), "t.parquet", None)
    assert locate_row(parquet, 0) == "t.parquet, row 1 (1-based)"
    assert locate_row(_frame(), 3) == "row 3 (0-based)" and locate_row(_frame(), 3, "x") == "x, row 3 (0-based)"
    with pytest.raises(ValueError):
        set_origin(_frame(), "t.csv", [1, 2])


def test_check_column_roles():
    from fairltr.data import check_column_roles
    from fairltr.errors import ConfigError

    check_column_roles(query="q", group="g", judgment="j", item="i")
    check_column_roles(query="q", group=None, judgment=None)
    with pytest.raises(ConfigError, match="^the group and item columns must differ, both are 'g'$"):
        check_column_roles(query="q", group="g", judgment="j", item="g")


def test_numeric_matrix_is_exact_and_finds_the_first_bad_cell():
    from fairltr.data import numeric_matrix

    df = _frame().assign(x3=[1, 2, 3, 4, 5, 6], x4=["1", "2", "3", "4", "5", "6"])
    np.testing.assert_array_equal(numeric_matrix(df, ["x1", "x3", "x4"]),
                                  np.column_stack([df.x1, df.x3.astype(float), df.x4.astype(float)]))
    assert numeric_matrix(df, []).shape == (6, 0)
    with pytest.raises(DataError, match=r"^row 2 \(0-based\): infinite value -inf in column 'x2' \(query 'b'\)"):
        numeric_matrix(df.assign(x2=[0.1, 0.2, -np.inf, np.inf, 0.5, 0.6]), ["x1", "x2"], query="query_id")


def test_ranking_rows_and_pad_queries():
    from fairltr.data import pad_queries, ranking_rows

    df = _frame()
    rows = ranking_rows(df, features=["x1", "x2"])
    assert rows.n_rows == 6 and rows.n_queries == 3 and rows.query_ids == ["b", "a", "c"]
    assert rows.sizes.tolist() == [2, 3, 1] and rows.codes.tolist() == [0, 1, 0, 1, 2, 1]
    assert rows.slots.tolist() == [0, 0, 1, 1, 0, 2]
    np.testing.assert_array_equal(rows.features, df[["x1", "x2"]].to_numpy())
    full = to_batch(df, features=["x1", "x2"])
    whole = pad_queries(rows)
    for name in ("features", "judgments", "groups", "mask", "row_index"):
        assert torch.equal(getattr(whole, name), getattr(full, name))
    # a subset, in the given order, padded to its own longest query ("b": 2 rows, "c": 1 row)
    sub = pad_queries(rows, [2, 0], dtype=torch.float32)
    assert sub.query_ids == ["c", "b"] and sub.mask.shape == (2, 2) and sub.features.dtype == torch.float32
    assert sub.row_index.tolist() == [[4, -1], [0, 2]]
    assert sub.judgments.tolist() == [[5.0, 0.0], [3.0, 1.0]]
    assert sub.groups.tolist() == [[0, 0], [0, 1]]
    empty = pad_queries(rows, [])
    assert empty.mask.shape == (0, 0) and empty.query_ids == []


def _brute_positions(codes):
    """Loop reference: position of each row among the earlier rows of its query."""
    seen: dict[int, int] = {}
    out = []
    for c in codes:
        out.append(seen.get(c, 0))
        seen[c] = seen.get(c, 0) + 1
    return out


@pytest.mark.parametrize("grouped", [True, False])
def test_positions_in_query_matches_a_loop(grouped):
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 7, size=200)
    if grouped:
        codes = np.sort(codes)
    slots, sizes = positions_in_query(codes)
    assert slots.tolist() == _brute_positions(codes.tolist())
    assert sizes.tolist() == [int((codes == q).sum()) for q in range(7)]
    empty_slots, empty_sizes = positions_in_query(np.zeros(0, dtype=np.int64), 2)
    assert empty_slots.tolist() == [] and empty_sizes.tolist() == [0, 0]


def test_rank_within_query_matches_sorting_each_query():
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 5, size=120)
    scores = rng.integers(0, 6, size=120).astype(float)  # many ties: earlier row first
    ranks = rank_within_query(codes, scores)
    for q in range(5):
        rows = [r for r in range(len(codes)) if codes[r] == q]
        expected = sorted(rows, key=lambda r: (-scores[r], r))
        assert [int(ranks[r]) for r in expected] == list(range(1, len(rows) + 1))
    order = score_order(codes, scores)
    assert np.all(np.diff(codes[order]) >= 0)  # queries grouped, in code order
    assert ranks[order].tolist() == (positions_in_query(codes[order])[0] + 1).tolist()


def test_columns_contract_equals_the_loose_keywords():
    df = _frame().rename(columns={"query_id": "q", "protected": "g", "judgment": "y"}).assign(doc=range(6))
    contract = RankingColumns(query="q", group="g", judgment="y", item="doc")
    by_contract = to_batch(df, columns=contract)
    by_keywords = to_batch(df, query="q", group="g", judgment="y", item="doc")
    reference = to_batch(_frame(), features=["x1", "x2"])
    for b in (by_contract, by_keywords):
        assert b.feature_names == ["g", "x1", "x2"]  # the item and judgment are never features
        for name in ("judgments", "groups", "mask", "row_index"):
            assert torch.equal(getattr(b, name), getattr(reference, name)), name
    # a keyword overrides the contract's name
    renamed = df.rename(columns={"y": "label"})
    assert torch.equal(to_batch(renamed, columns=contract, judgment="label").judgments, reference.judgments)
    assert select_features(df, columns=contract) == ["g", "x1", "x2"]
    assert select_features(df, columns=NAMES_ONLY.replace(query="q")) == ["g", "x1", "x2", "y", "doc"]  # only the named columns are special


def test_string_and_integer_categories():
    from fairltr.data import category_codes, select_features
    from fairltr.errors import ConfigError

    df = pd.DataFrame({"query_id": [1, 1, 2, 2, 2], "race": ["b", "a", "c", "a", "a"], "sex": [0, 1, 1, 0, 2],
                       "x": [0.1, 0.2, 0.3, 0.4, 0.5], "judgment": [1.0, 0.0, 1.0, 0.0, 2.0]})
    codes, cats = category_codes(df["race"])
    assert cats == ["a", "b", "c"] and codes.tolist() == [1, 0, 2, 0, 0]  # the most frequent is the reference
    codes, cats = category_codes(df["race"], reference="c")
    assert cats == ["c", "a", "b"] and codes.tolist() == [2, 1, 0, 1, 1]
    codes, cats = category_codes(df["sex"])
    assert cats == [0, 1, 2] and codes.tolist() == [0, 1, 1, 0, 2]  # integers keep their values
    codes, cats = category_codes(df["sex"], reference=2)
    assert cats == [2, 0, 1] and codes.tolist() == [1, 2, 2, 1, 0]
    for bad in ("z", 7):
        with pytest.raises(ConfigError, match="does not occur"):
            category_codes(df["race"] if bad == "z" else df["sex"], reference=bad)
    c = RankingColumns(group=("race", "sex"))
    assert select_features(df, columns=c) == ["sex", "x"]  # a string attribute is not a feature
    batch = to_batch(df, columns=c)
    assert batch.groups[batch.mask].tolist() == [1, 0, 2, 0, 0]  # training codes of the first attribute
    with pytest.raises(DataError, match=r"row 2 \(0-based\): missing group category in column 'sex' \(query 2\)"):
        to_batch(df.assign(sex=[0, 1, None, 0, 1]), columns=c)
    with pytest.raises(DataError, match="group column 'sex' must hold integers"):
        to_batch(df.assign(sex=[0, 1, 0.5, 0, 1]), columns=c)
