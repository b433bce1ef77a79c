"""The column contract: RankingColumns, resolve_columns, and one contract object giving the same
results as the default column names through io, metrics, FA*IR and the Parquet stream."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import DEFAULT_COLUMNS, UNSET, RankingColumns, check_column_roles, resolve_columns
from fairltr.errors import ConfigError
from fairltr.fair import fair_postprocess, fair_preprocess, protected_share, rerank
from fairltr.io import read_ranking, read_table
from fairltr.metrics import evaluate_ranking, per_query_table
from fairltr.parquet_stream import scan_parquet
from fairltr.synthetic import make_biased_rankings

NAMES = {"query_id": "qid", "protected": "sex", "judgment": "label"}
CONTRACT = RankingColumns(query="qid", group="sex", judgment="label")


def test_names_must_be_distinct_non_empty_strings():
    assert DEFAULT_COLUMNS == RankingColumns("query_id", "protected", "judgment", None)
    with pytest.raises(ConfigError, match="the group and judgment columns must differ, both are 'g'"):
        RankingColumns(group="g", judgment="g")
    with pytest.raises(ConfigError, match="the query column name must be a non-empty string"):
        RankingColumns(query=None)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="the item column name must be a non-empty string"):
        RankingColumns(item=" ")
    with pytest.raises(ConfigError, match="the group column name"):
        RankingColumns(group=3)  # type: ignore[arg-type]
    bare = RankingColumns(group=None, judgment=None)  # a table to score: no groups, no judgments
    assert bare.named == ("query_id",) and bare.special == ("query_id",)
    with pytest.raises(ConfigError, match="the metrics needs a group and a judgment column"):
        bare.require("group", "judgment", purpose="the metrics")
    assert CONTRACT.require("group") is CONTRACT
    check_column_roles(query="q", group=None, judgment=None)
    with pytest.raises(ConfigError, match="the query and item columns must differ"):
        check_column_roles(query="q", item="q")


def test_resolve_columns_overrides_only_what_is_given():
    assert resolve_columns() is DEFAULT_COLUMNS
    assert resolve_columns(CONTRACT) is CONTRACT
    assert resolve_columns(CONTRACT, query="qid") is CONTRACT  # nothing changes: the same object
    assert resolve_columns(CONTRACT, judgment=None) == RankingColumns("qid", "sex", None)
    assert resolve_columns(None, group="g", item="doc") == RankingColumns("query_id", "g", "judgment", "doc")
    assert resolve_columns(None, defaults=CONTRACT, query="q") == RankingColumns("q", "sex", "label")
    with pytest.raises(ConfigError, match="the query and group columns must differ"):
        resolve_columns(CONTRACT, query="sex")
    with pytest.raises(ConfigError, match="columns must be a fairltr.RankingColumns, got dict"):
        resolve_columns({"query": "q"})  # type: ignore[arg-type]
    assert CONTRACT.replace(item="doc").as_dict() == {"query": "qid", "group": "sex", "judgment": "label",
                                                      "item": "doc"}


def test_unset_is_one_object_through_copies_and_pickles():
    assert copy.copy(UNSET) is UNSET and copy.deepcopy(UNSET) is UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET and repr(UNSET) == "UNSET"
    assert pickle.loads(pickle.dumps(CONTRACT)) == CONTRACT


@pytest.fixture(scope="module")
def tables():
    train, test = make_biased_rankings(n_queries=12, n_candidates=9, seed=5)
    return train, test, test.rename(columns=NAMES)


def test_metrics_read_the_contract(tables):
    _, test, renamed = tables
    scores = test["x1"].to_numpy()
    default = evaluate_ranking(test, scores, k=(1, 5))
    assert evaluate_ranking(renamed, scores, columns=CONTRACT, k=(1, 5)) == default
    assert evaluate_ranking(renamed, scores, query="qid", group="sex", judgment="label", k=(1, 5)) == default
    table = per_query_table(renamed, scores, columns=CONTRACT, k=(1,))
    assert list(table.columns[:1]) == ["qid"]
    pd.testing.assert_frame_equal(table.rename(columns={"qid": "query_id"}), per_query_table(test, scores, k=(1,)))
    with pytest.raises(ConfigError, match="the ranking metrics needs a group"):
        evaluate_ranking(test, scores, group=None)


def test_fair_functions_read_the_contract(tables):
    train, test, renamed = tables
    scores = test["x1"].to_numpy()
    expected = rerank(test, scores, k=5, p=0.5, alpha=0.1).rename(columns=NAMES)
    pd.testing.assert_frame_equal(rerank(renamed, scores, k=5, p=0.5, alpha=0.1, columns=CONTRACT), expected)
    ranked = renamed.assign(score=scores)
    pd.testing.assert_frame_equal(
        fair_postprocess(ranked, 0.5, 0.1, columns=CONTRACT),
        fair_postprocess(test.assign(score=scores), 0.5, 0.1).rename(columns=NAMES))
    pre = fair_preprocess(train.rename(columns=NAMES), 0.4, 0.1, columns=CONTRACT)
    pd.testing.assert_frame_equal(pre, fair_preprocess(train, 0.4, 0.1).rename(columns=NAMES))
    assert protected_share(renamed, columns=CONTRACT) == protected_share(test)


def test_readers_and_the_parquet_stream_read_the_contract(tables, tmp_path):
    _, test, renamed = tables
    csv = tmp_path / "t.csv"
    renamed.assign(doc=np.arange(len(renamed))).to_csv(csv, index=False)
    contract = CONTRACT.replace(item="doc")
    a = read_table(csv, columns=contract)
    b = read_ranking(csv, columns=contract)
    c = read_ranking(csv, query="qid", group="sex", judgment="label", item="doc")
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    with pytest.raises(ConfigError, match="the group and item columns must differ"):
        read_ranking(csv, columns=contract, item="sex")
    pq = tmp_path / "t.parquet"
    renamed.to_parquet(pq, index=False)
    default_pq = tmp_path / "d.parquet"
    test.to_parquet(default_pq, index=False)
    layout = scan_parquet(pq, columns=CONTRACT)
    reference = scan_parquet(default_pq)
    assert layout.columns == CONTRACT and (layout.query, layout.group, layout.judgment) == ("qid", "sex", "label")
    assert layout.feature_names == ["sex", "x1", "x2", "x3", "x4"]
    np.testing.assert_array_equal(layout.mean, reference.mean)
    assert layout.query_ids == reference.query_ids


def test_several_group_attributes():
    c = RankingColumns(group=("race", "sex"))
    assert c.group == "race" and c.groups == ("race", "sex") and c.named == ("query_id", "race", "sex", "judgment")
    assert RankingColumns(group=("protected",)) == RankingColumns() and RankingColumns(group=["a", "b"]) == \
        RankingColumns(group=("a", "b"))
    assert RankingColumns().groups == ("protected",) and RankingColumns(group=None).groups == ()
    assert RankingColumns(**c.as_dict()) == c and c.as_dict()["group"] == ["race", "sex"]
    assert c.replace(judgment="y").groups == ("race", "sex")  # other changes keep every attribute
    assert c.replace(group="sex").groups == ("sex",)  # a new group replaces them all
    assert repr(c) == "RankingColumns(query='query_id', group=('race', 'sex'), judgment='judgment', item=None)"
    assert resolve_columns(c) is c and resolve_columns(c, group=("race", "sex")) is c
    assert resolve_columns(c, group=("sex",)).groups == ("sex",)
    for bad, match in (((("race", "judgment")), "group and judgment columns must differ"),
                       ((("race", "race")), "more than once"), ((("race", "")), "non-empty")):
        with pytest.raises(ConfigError, match=match):
            RankingColumns(group=bad)
