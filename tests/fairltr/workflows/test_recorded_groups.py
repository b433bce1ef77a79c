"""evaluate-model reads a ranker's own group attributes when --group is not given and the file
has no default ``protected`` column (the model's own training file, evaluated as it was trained)."""

from __future__ import annotations

from types import SimpleNamespace

import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.workflows.options import RankingSource
from fairltr.workflows.model_registry import recorded_groups, with_recorded_groups


def _meta(groups):
    return SimpleNamespace(flavors={"python_function": {"config": {"kind": "ranker", "group": groups[0],
                                                                   "groups": list(groups)}}})


@pytest.fixture
def table(tmp_path):
    df = pd.DataFrame({"query_id": [1, 1, 2, 2], "race": ["A", "B", "A", "B"], "sex": ["F", "M", "M", "F"],
                       "x1": [1, 2, 3, 4], "judgment": [1, 0, 0, 1]})
    csv = tmp_path / "t.csv"
    df.to_csv(csv, index=False)
    pq = tmp_path / "t.parquet"
    df.to_parquet(pq)
    return csv, pq


def test_the_recorded_groups_are_read_when_none_is_given(table, capsys):
    for path in table:
        source = with_recorded_groups(RankingSource(path), _meta(("race", "sex")))
        assert source.columns.groups == ("race", "sex")
        df = source.read()
        assert {"race", "sex"} <= set(df.columns)
    assert "using the model's own group attributes (race, sex)" in capsys.readouterr().err


def test_a_given_group_or_a_file_with_the_default_column_is_kept(table, tmp_path):
    csv, _ = table
    given = RankingSource(csv, columns=RankingColumns(group="sex"))
    assert with_recorded_groups(given, _meta(("race", "sex"))) is given
    with_protected = tmp_path / "p.csv"
    pd.read_csv(csv).assign(protected=[0, 1, 0, 1]).to_csv(with_protected, index=False)
    plain = RankingSource(with_protected)
    assert with_recorded_groups(plain, _meta(("race", "sex"))) is plain


def test_a_file_without_the_model_groups_keeps_the_one_line_error(table, tmp_path):
    csv, _ = table
    other = tmp_path / "o.csv"
    pd.read_csv(csv).drop(columns=["sex"]).to_csv(other, index=False)
    source = with_recorded_groups(RankingSource(other), _meta(("race", "sex")))
    assert source.columns.groups == ("protected",)
    with pytest.raises(Exception, match="protected"):
        source.read()


def test_models_without_recorded_groups():
    assert recorded_groups(SimpleNamespace(flavors={"python_function": {"config": {}}})) == ()
    assert recorded_groups(None) == ()
    assert recorded_groups(_meta(("race",))) == ("race",)


def test_the_metadata_is_fetched_only_when_no_group_is_given(table):
    """``promote`` and ``monitor`` pass a function that reads the MLmodel file: it is not called
    when ``--group`` is given."""
    csv, _ = table
    calls = []

    def meta():
        calls.append(1)
        return _meta(("race", "sex"))

    given = RankingSource(csv, columns=RankingColumns(group="sex"))
    assert with_recorded_groups(given, meta) is given and not calls
    assert with_recorded_groups(RankingSource(csv), meta).columns.groups == ("race", "sex") and calls == [1]
