"""Readers: DELTR CSV, LETOR/SVMlight, CSV/Parquet with names; every error names file/line/column/row."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.io import read_deltr_csv, read_letor, read_ranking, read_table, write_table

DELTR_TEXT = """1,0,2.05,1.85,2.58
1,1,-0.56,0.64,2.56
2,0,0.56,1.60,2.48
1,0,0.10,0.20,1.00
"""

LETOR_TEXT = """# a header comment
2 qid:10 1:0.5 2:1.0 3:1 # doc A
0 qid:10 1:0.1 3:0
1 qid:7 2:0.3 3:1

1 qid:10 1:0.9 2:0.2 3:0   # non-adjacent row of query 10
"""


def _write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_deltr_csv(tmp_path):
    df = read_deltr_csv(_write(tmp_path, "train.txt", DELTR_TEXT))
    assert list(df.columns) == ["query_id", "protected", "x1", "x2", "judgment"]
    assert df.query_id.dtype == np.int64 and df.protected.dtype == np.int64
    assert df.x1.tolist() == [2.05, -0.56, 0.56, 0.10]
    assert df.judgment.tolist() == [2.58, 2.56, 2.48, 1.00]


def test_read_deltr_real_file(deltr_data):
    df = read_deltr_csv(deltr_data / "LawStudents" / "race_black" / "LawStudents_Race_train.txt")
    assert len(df) == 1565 and list(df.columns) == ["query_id", "protected", "x1", "x2", "judgment"]
    assert set(df.protected.unique()) == {0, 1}


@pytest.mark.parametrize("text,pattern", [
    ("1,0,2.0,nan,1.0\n", r"bad.txt:1: missing value \(NaN or empty cell\) in column 'x2' \(query 1\)"),
    ("1,0,2.0,1.0,1.0\n2,0,inf,1.0,1.0\n", r"bad.txt:2: infinite value inf in column 'x1' \(query 2\)"),
    ("1,0.5,2.0,1.0,1.0\n", r"bad.txt:1: group column 'protected' must hold integers"),
    ("1,-1,2.0,1.0,1.0\n", r"bad.txt:1: group column 'protected' must be >= 0 .*got -1"),
    ("1,0,2.0,abc,1.0\n", r"bad.txt:1: non-numeric value 'abc' in column 'x2'"),
    ("1,0\n", r"bad.txt: expected at least 3 columns"),
    ("1,0,2.0,1.0\n1,0,2.0\n", r"bad.txt:2: missing value \(NaN or empty cell\) in column 'judgment'"),  # short row
    ("1,0,2.0\n1,0,2.0,1.0,5.0\n", r"bad.txt:2: cannot parse as CSV: 5 fields where the first line has 3"),  # long row
])
def test_read_deltr_csv_errors(tmp_path, text, pattern):
    with pytest.raises(DataError, match=pattern):
        read_deltr_csv(_write(tmp_path, "bad.txt", text))


def test_missing_empty_and_directory(tmp_path):
    with pytest.raises(DataError, match="file not found: .*nope.csv"):
        read_deltr_csv(tmp_path / "nope.csv")
    with pytest.raises(DataError, match="expected a file, got a directory"):
        read_table(tmp_path)
    with pytest.raises(DataError, match="empty file: .*empty.txt"):
        read_letor(_write(tmp_path, "empty.txt", ""))
    with pytest.raises(DataError, match="empty file: .*blank.txt"):
        read_deltr_csv(_write(tmp_path, "blank.txt", "\n\n"))
    with pytest.raises(DataError, match=r"empty file: .*comments.txt \(no data lines\)"):
        read_letor(_write(tmp_path, "comments.txt", "# only a comment\n\n"))


def test_read_letor(tmp_path):
    df = read_letor(_write(tmp_path, "train.svm", LETOR_TEXT))
    assert list(df.columns) == ["query_id", "f1", "f2", "f3", "judgment"]
    assert df.query_id.tolist() == ["10", "10", "7", "10"]
    assert df.judgment.tolist() == [2.0, 0.0, 1.0, 1.0]
    assert df.f1.tolist() == [0.5, 0.1, 0.0, 0.9]  # a missing feature id is 0
    assert df.f2.tolist() == [1.0, 0.0, 0.3, 0.2]


def test_read_letor_group_feature(tmp_path):
    df = read_letor(_write(tmp_path, "train.svm", LETOR_TEXT), group_feature=3)
    assert "protected" in df.columns and "f3" not in df.columns
    assert df.protected.dtype == np.int64 and df.protected.tolist() == [1, 0, 1, 0]
    with pytest.raises(DataError, match=r"group feature 9 does not occur; feature ids: \[1, 2, 3\]"):
        read_letor(_write(tmp_path, "t2.svm", LETOR_TEXT), group_feature=9)
    with pytest.raises(DataError, match=r"t3.svm:1: group column 'protected' must hold integers"):
        read_letor(_write(tmp_path, "t3.svm", "1 qid:1 1:0.5\n"), group_feature=1)


@pytest.mark.parametrize("line,pattern", [
    ("x qid:1 1:0.5", r"bad.svm:2: label 'x' is not a number"),
    ("nan qid:1", r"bad.svm:2: label 'nan' is not finite"),
    ("1 1:0.5", r"bad.svm:2: second field must be 'qid:<id>'"),
    ("1", r"bad.svm:2: second field must be 'qid:<id>', got \[\]"),
    ("1 qid: 1:0.5", r"bad.svm:2: empty query id in 'qid:'"),
    ("1 qid:1 1=0.5", r"bad.svm:2: feature '1=0.5' is not '<id>:<value>'"),
    ("1 qid:1 a:0.5", r"bad.svm:2: feature 'a:0.5' is not '<int>:<number>'"),
    ("1 qid:1 1:zz", r"bad.svm:2: feature '1:zz' is not '<int>:<number>'"),
    ("1 qid:1 1:inf", r"bad.svm:2: non-finite value in '1:inf'"),
    ("1 qid:1 1:0.5 1:0.7", r"bad.svm:2: feature id 1 given twice"),
])
def test_read_letor_errors_name_the_line(tmp_path, line, pattern):
    with pytest.raises(DataError, match=pattern):
        read_letor(_write(tmp_path, "bad.svm", "1 qid:1 1:0.1\n" + line + "\n"))


def _named_frame():
    return pd.DataFrame({
        "query": ["q1", "q2", "q1", "q2"], "doc": ["a", "a", "b", "c"], "protected": [0, 1, 1, 0],
        "lsat": [1.5, 2.0, -0.5, 0.0], "judgment": [1.0, 2.0, 0.0, 3.0],
    })


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_table_round_trip(tmp_path, suffix):
    df = _named_frame()
    p = write_table(df, tmp_path / "sub" / f"t{suffix}")
    back = read_table(p, query="query", features=["lsat"], item="doc")
    pd.testing.assert_frame_equal(back, df)


@pytest.mark.parametrize("mutate,pattern", [
    (lambda d: d.drop(columns=["lsat"]), r"t.csv: missing column\(s\) \['lsat'\]"),
    (lambda d: d.assign(doc=["a", "a", "a", "c"]), r"t.csv:4: duplicate \(query, item\) pair: query 'q1', item 'a'; first seen at line 2$"),
    (lambda d: d.assign(lsat=[1.0, np.nan, 0, 0]), r"t.csv:3: missing value \(NaN or empty cell\) in column 'lsat' \(query 'q2'\)"),
    (lambda d: d.assign(protected=[0, 1, 2.5, 0]), r"t.csv:4: group column 'protected' must hold integers.*got 2.5 \(query 'q1'\)"),
    (lambda d: d.assign(protected=[0, -2, 1, 0]), r"t.csv:3: group column 'protected' must be >= 0 .*got -2 \(query 'q2'\)"),
    (lambda d: d.assign(judgment=["1", "x", "0", "3"]), r"t.csv:3: non-numeric value 'x' in column 'judgment' \(query 'q2'\)"),
])
def test_read_table_errors(tmp_path, mutate, pattern):
    p = write_table(mutate(_named_frame()), tmp_path / "t.csv")
    with pytest.raises(DataError, match=pattern):
        read_table(p, query="query", features=["lsat"], item="doc")


def test_read_table_empty_csv_with_header(tmp_path):
    p = _write(tmp_path, "t.csv", "query,protected,judgment\n")
    with pytest.raises(DataError, match="t.csv: empty ranking table"):
        read_table(p, query="query")


def test_read_table_unreadable_parquet(tmp_path):
    p = _write(tmp_path, "t.parquet", "not parquet at all")
    with pytest.raises(DataError, match=r"t\.parquet: cannot read as Parquet"):  # fairltr's own wording,
        read_table(p)  # not pyarrow's (which names the file from pyarrow 17 on, not in 16)


def test_read_ranking_auto_detection(tmp_path):
    deltr = _write(tmp_path, "d.txt", DELTR_TEXT)
    letor = _write(tmp_path, "l.txt", LETOR_TEXT.split("\n", 1)[1])  # first line holds qid:
    named = write_table(_named_frame(), tmp_path / "n.csv")
    parquet = write_table(_named_frame(), tmp_path / "n.parquet")
    assert list(read_ranking(deltr).columns) == ["query_id", "protected", "x1", "x2", "judgment"]
    assert "f1" in read_ranking(letor).columns
    assert read_ranking(letor, group_feature=3).protected.tolist() == [1, 0, 1, 0]
    assert list(read_ranking(named, query="query").columns) == list(_named_frame().columns)
    pd.testing.assert_frame_equal(read_ranking(parquet, query="query"), _named_frame())
    # explicit formats
    assert len(read_ranking(deltr, fmt="deltr")) == 4
    assert len(read_ranking(letor, fmt="letor")) == 4
    with pytest.raises(DataError, match="unknown format 'xml'"):
        read_ranking(deltr, fmt="xml")
    with pytest.raises(DataError, match="file not found"):
        read_ranking(tmp_path / "missing.txt")


def test_non_adjacent_query_rows_are_grouped_in_order(tmp_path):
    from fairltr.data import to_batch

    df = read_deltr_csv(_write(tmp_path, "d.txt", DELTR_TEXT))
    b = to_batch(df)
    assert b.query_ids == [1, 2]
    assert b.row_index.tolist() == [[0, 1, 3], [2, -1, -1]]
