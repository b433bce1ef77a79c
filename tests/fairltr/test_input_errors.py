"""Bad input, table-driven: every data error names the file, the 1-based file line (CSV with a
header: data row r is line r+2; header-less DELTR CSV: r+1; LETOR: the real line; Parquet:
"row r+1 (1-based)"), the column, the query and the value, with the same text from every entry
point (reading, training, scoring, padding); model files are validated field by field."""

from __future__ import annotations

import json
import struct

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.data import NAMES_ONLY, ORIGIN_KEY, check_table, select_features, to_batch
from fairltr.deltr import rank_frame
from fairltr.errors import ConfigError, DataError, one_line
from fairltr.io import read_deltr_csv, read_letor, read_ranking, read_table

HEADER = "query_id,protected,x1,x2,x3,judgment"
ROWS = [  # data row r is line r+2 of the CSV with a header, line r+1 of the DELTR CSV
    "1,0,0.5,1.0,0.1,2",
    "1,1,0.2,0.3,0.2,1",
    "1,0,0.9,0.1,0.3,0",
    "2,1,0.4,0.6,0.4,2",
    "2,0,0.1,0.2,0.5,1",
    "2,1,0.7,0.8,0.6,0",
    "3,0,0.3,0.5,0.7,1",
    "3,1,0.6,0.4,0.8,0",
]
COLUMNS = HEADER.split(",")
BAD_ROW = 4  # query 2
AUTO_HINT = ("; every column except the query, judgment and item columns is a feature: fix the value, "
             "or list the features (--features) or name the item column (--item)")


def _rows(column: str | None = None, value: str = "") -> list[str]:
    rows = list(ROWS)
    if column is not None:
        cells = rows[BAD_ROW].split(",")
        cells[COLUMNS.index(column)] = value
        rows[BAD_ROW] = ",".join(cells)
    return rows


def _write_layout(tmp_path, layout: str, rows: list[str]):
    """The table in one file layout, and the location the messages must give for BAD_ROW."""
    if layout == "csv":
        p = tmp_path / "train.csv"
        p.write_text("\n".join([HEADER, *rows]) + "\n")
        return p, f"{p}:{BAD_ROW + 2}"
    if layout == "csv-blank-lines":  # a blank and a whitespace-only line before the bad row, blank lines at the end
        p = tmp_path / "train.csv"
        p.write_text("\n".join([HEADER, *rows[:2], "", "   ", *rows[2:]]) + "\n\n\n")
        return p, f"{p}:{BAD_ROW + 4}"
    if layout == "csv-crlf":
        p = tmp_path / "train.csv"
        p.write_bytes(("\r\n".join([HEADER, *rows]) + "\r\n").encode())
        return p, f"{p}:{BAD_ROW + 2}"
    if layout == "csv-cr":  # old Mac line ends
        p = tmp_path / "train.csv"
        p.write_bytes(("\r".join([HEADER, *rows]) + "\r").encode())
        return p, f"{p}:{BAD_ROW + 2}"
    if layout == "deltr":
        p = tmp_path / "train.txt"
        p.write_text("\n".join(rows) + "\n")
        return p, f"{p}:{BAD_ROW + 1}"
    if layout == "parquet":
        p = tmp_path / "train.parquet"
        tmp = tmp_path / "tmp.csv"
        tmp.write_text("\n".join([HEADER, *rows]) + "\n")
        pd.read_csv(tmp).to_parquet(p, index=False)
        tmp.unlink()
        return p, f"{p}, row {BAD_ROW + 1} (1-based)"
    raise AssertionError(layout)


LAYOUTS = ["csv", "csv-blank-lines", "csv-crlf", "csv-cr", "deltr", "parquet"]

# (column, cell text, problem after "<location>: ", whether the model's scoring reads that column)
CELLS = [
    ("x3", "abc", "non-numeric value 'abc' in column 'x3' (query 2)", True),
    ("x1", "", "missing value (NaN or empty cell) in column 'x1' (query 2); 1 bad value(s) in that column", True),
    ("x2", "nan", "missing value (NaN or empty cell) in column 'x2' (query 2); 1 bad value(s) in that column", True),
    ("x2", "inf", "infinite value inf in column 'x2' (query 2); 1 bad value(s) in that column", True),
    ("judgment", "-inf", "infinite value -inf in column 'judgment' (query 2); 1 bad value(s) in that column", False),
    ("judgment", "high", "non-numeric value 'high' in column 'judgment' (query 2)", False),
    ("protected", "0.5", "group column 'protected' must hold integers (0 = non-protected, >= 1 protected), "
                         "got 0.5 (query 2)", False),
    ("protected", "-1", "group column 'protected' must be >= 0 (0 = non-protected, >= 1 protected), "
                        "got -1 (query 2)", False),
    ("query_id", "", "missing query id in column 'query_id'", False),
]


@pytest.fixture(scope="module")
def clean_model(tmp_path_factory):
    p, _ = _write_layout(tmp_path_factory.mktemp("clean"), "csv", _rows())
    return DELTR(gamma=1.0, max_iter=3).fit(read_ranking(p))


def _message(call) -> str:
    with pytest.raises(DataError) as info:
        call()
    return str(info.value)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("column,cell,problem,scored", CELLS, ids=[f"{c[0]}={c[1]!r}" for c in CELLS])
def test_cell_errors_name_file_line_column_query_value_from_every_entry_point(
        tmp_path, clean_model, layout, column, cell, problem, scored):
    if layout == "parquet" and cell == "" and column == "query_id":
        pytest.skip("a Parquet query column read from this CSV is float with NaN: covered by the CSV layouts")
    path, where = _write_layout(tmp_path, layout, _rows(column, cell))
    expected = f"{where}: {problem}"
    # the header-less DELTR layout is all features by definition: its reader checks every column
    hint = AUTO_HINT if problem.startswith("non-numeric") and column.startswith("x") and layout != "deltr" else ""

    def read():
        return read_ranking(path)

    def train():
        DELTR(gamma=1.0, max_iter=2).fit(read())

    def pad():
        to_batch(read())

    assert _message(train) == expected + hint
    assert _message(pad) == expected + hint
    if scored:  # scoring a test file (evaluate, promote) reads the feature columns only
        assert _message(lambda: clean_model.predict(read())) == expected
        assert _message(lambda: clean_model.rank(read())) == expected
        shuffled = lambda: clean_model.predict(read().sample(frac=1.0, random_state=1))  # noqa: E731
        assert _message(shuffled) == expected  # rows are found by label, not position
    if not scored or layout == "deltr":
        assert _message(read) == expected  # the reader itself validates query, group and judgment


def test_header_csv_rows_with_quoted_line_breaks(tmp_path):
    """A quoted item id spanning two lines shifts every later row by one line."""
    p = tmp_path / "t.csv"
    p.write_text('query_id,doc,protected,x1,judgment\n1,"two\nlines",0,0.5,1\n1,b,1,0.2,0\n2,c,0,,1\n')
    df = read_table(p, item="doc")
    assert df.doc.tolist() == ["two\nlines", "b", "c"]
    msg = f"{p}:5: missing value (NaN or empty cell) in column 'x1' (query 2); 1 bad value(s) in that column"
    assert _message(lambda: to_batch(df, item="doc")) == msg
    assert _message(lambda: DELTR(gamma=1.0).fit(df, item="doc")) == msg


def test_letor_errors_name_the_real_line(tmp_path):
    p = tmp_path / "t.svm"
    p.write_text("# comment line\n\n1 qid:1 1:0.5 2:1\n0 qid:1 1:0.1 2:0\n# another\n2 qid:2 1:0.2 2:0.5\n")
    assert _message(lambda: read_letor(p, group_feature=2)) == (
        f"{p}:6: group column 'protected' must hold integers (0 = non-protected, >= 1 protected), got 0.5 (query '2')")
    df = read_letor(p)
    assert _message(lambda: to_batch(df.assign(f1=[0.0, np.nan, 0.0]), group=None)) == (
        f"{p}:4: missing value (NaN or empty cell) in column 'f1' (query '1'); 1 bad value(s) in that column")


def test_in_memory_frames_name_the_0_based_row():
    df = pd.read_csv(pd.io.common.StringIO("\n".join([HEADER, *_rows("x3", "abc")])))
    assert _message(lambda: to_batch(df)) == (
        "row 4 (0-based): non-numeric value 'abc' in column 'x3' (query 2)" + AUTO_HINT)
    assert _message(lambda: to_batch(df, features=["x3"], source="test set")) == (
        "test set, row 4 (0-based): non-numeric value 'abc' in column 'x3' (query 2)")


NON_UTF8 = [  # (layout, bytes, line of the bad byte)
    ("csv", (HEADER + "\n" + "\n".join(ROWS[:2]) + "\n2,1,0.4,0.6,caf\xe9,2\n").encode("latin-1"), 4),
    ("csv-header", ("query_id,protected,x\xe9,judgment\n1,0,0.5,1\n").encode("latin-1"), 1),
    ("csv-late", (HEADER + "\n" + "\n".join(ROWS * 20000) + "\n1,0,0.5,1.0,0.1,\xe9\n").encode("latin-1"),
     len(ROWS) * 20000 + 2),
    ("deltr", ("\n".join(ROWS[:3]) + "\n1,0,0.5,\xe9,0.1,2\n").encode("latin-1"), 4),
    ("letor", "1 qid:1 1:0.5\n0 qid:1 1:0.1\n2 qid:2 1:0.2 # caf\xe9\n".encode("latin-1"), 3),
]


@pytest.mark.parametrize("layout,data,line", NON_UTF8, ids=[c[0] for c in NON_UTF8])
def test_non_utf8_files_name_the_line_of_the_first_bad_byte(tmp_path, layout, data, line):
    p = tmp_path / ("t.svm" if layout == "letor" else "t.txt" if layout == "deltr" else "t.csv")
    p.write_bytes(data)
    expected = f"{p}:{line}: byte 0xe9 is not valid UTF-8; the file must be UTF-8 encoded (re-save it as UTF-8)"
    assert _message(lambda: read_ranking(p)) == expected
    reader = {"letor": read_letor, "deltr": read_deltr_csv}.get(layout, read_table)
    assert _message(lambda: reader(p)) == expected


def test_parse_failures_are_one_sentence_naming_the_file(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("\n".join([HEADER, *ROWS[:2], ROWS[2] + ",9", *ROWS[3:]]) + "\n")
    assert _message(lambda: read_ranking(p)) == f"{p}:4: cannot parse as CSV: 7 fields where the header has 6"
    d = tmp_path / "t.txt"
    d.write_text("1,0,2.0\n\n1,0,2.0,1.0,5.0\n")
    assert _message(lambda: read_deltr_csv(d)) == f"{d}:3: cannot parse as CSV: 5 fields where the first line has 3"
    for name, data in [("garbage.parquet", b"not parquet at all"), ("half.parquet", None)]:
        q = tmp_path / name
        if data is None:
            pd.DataFrame({"query_id": [1, 2], "judgment": [1.0, 2.0]}).to_parquet(q)
            data = q.read_bytes()[: len(q.read_bytes()) // 2]
        q.write_bytes(data)
        msg = _message(lambda: read_ranking(q))
        assert msg.startswith(f"{q}: cannot read as Parquet: ") and "\n" not in msg and len(msg) < 300 + len(str(q))


def test_one_line_keeps_the_first_line_of_a_multi_line_message():
    exc = ValueError("Schema mismatch:\n  a: int64\n  b: string\n-- schema metadata --\n pandas: '{...}'")
    assert one_line(exc) == "Schema mismatch:"
    assert one_line(ValueError("  lots   of\tspace  ")) == "lots of space"
    assert one_line(ValueError("")) == "ValueError"
    assert len(one_line(ValueError("x" * 1000))) == 200


def test_duplicate_header_names_are_an_error(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("query_id,protected,x1,x1,judgment\n1,0,0.5,0.6,1\n")
    assert _message(lambda: read_table(p)) == f"{p}:1: column name(s) ['x1'] occur more than once in the header"
    ok = tmp_path / "ok.csv"
    ok.write_text("query_id,protected,x1,x1.1,judgment\n1,0,0.5,0.6,1\n")  # a real name with a dot
    assert list(read_table(ok).columns) == ["query_id", "protected", "x1", "x1.1", "judgment"]


# ---------------------------------------------------------------------------- column roles
def _frame():
    return pd.read_csv(pd.io.common.StringIO("\n".join([HEADER, *ROWS])))


ROLE_CASES = [
    (lambda p: read_ranking(p, judgment="protected"),
     "the group and judgment columns must differ, both are 'protected'"),
    (lambda p: read_ranking(p, query="protected"), "the query and group columns must differ, both are 'protected'"),
    (lambda p: read_ranking(p, item="query_id"), "the query and item columns must differ, both are 'query_id'"),
    (lambda p: read_table(p, group="judgment"), "the group and judgment columns must differ, both are 'judgment'"),
    (lambda p: DELTR(gamma=0.0, protected="judgment").fit(_frame()),
     "the group and judgment columns must differ, both are 'judgment'"),
    (lambda p: DELTR(gamma=0.0).fit(_frame(), item="x1", judgment="x1"),
     "the judgment and item columns must differ, both are 'x1'"),
    (lambda p: to_batch(_frame(), group="judgment"), "the group and judgment columns must differ, both are 'judgment'"),
    (lambda p: check_table(_frame(), NAMES_ONLY.replace(query="x1", group="x1")),
     "the query and group columns must differ, both are 'x1'"),
    (lambda p: DELTR(gamma=0.0).fit(_frame(), features=["x1", "judgment"]),
     "feature column 'judgment' is the judgment column; a feature cannot be the query, judgment or item column"),
    (lambda p: to_batch(_frame(), features=["query_id", "x1"]),
     "feature column 'query_id' is the query column; a feature cannot be the query, judgment or item column"),
    (lambda p: to_batch(_frame(), features=["x1", "x2", "x1"]), "feature column(s) ['x1'] listed more than once"),
    (lambda p: to_batch(_frame(), features="x1"), "features must be a list of column names, got the string 'x1'"),
]


@pytest.mark.parametrize("call,message", ROLE_CASES, ids=[c[1][:40] for c in ROLE_CASES])
def test_column_roles_must_be_distinct(tmp_path, call, message):
    p, _ = _write_layout(tmp_path, "csv", _rows())
    with pytest.raises(ConfigError) as info:
        call(p)
    assert str(info.value) == message


def test_feature_selection_excludes_query_judgment_item_and_keeps_the_group(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("query_id,doc,protected,x1,judgment\n1,a,0,0.5,1\n1,b,1,0.2,0\n2,a,1,0.4,1\n2,b,0,0.9,0\n")
    df = read_ranking(p, item="doc")
    assert select_features(df, columns=NAMES_ONLY.replace(judgment="judgment", item="doc")) == ["protected", "x1"]
    assert to_batch(df, item="doc").feature_names == ["protected", "x1"]
    assert DELTR(gamma=1.0, max_iter=2).fit(df, item="doc").feature_names_ == ["protected", "x1"]
    assert DELTR(gamma=1.0, max_iter=2, colorblind=True).fit(df, item="doc").feature_names_ == ["x1"]
    # without the item column the text ids are a non-numeric feature: an error, never a dropped column
    assert _message(lambda: DELTR(gamma=1.0).fit(df)) == (
        f"{p}:2: non-numeric value 'a' in column 'doc' (query 1)" + AUTO_HINT)


def test_an_unnamed_column_is_not_silently_a_feature(tmp_path):
    p = tmp_path / "t.csv"
    pd.read_csv(pd.io.common.StringIO("\n".join([HEADER, *ROWS]))).to_csv(p)  # index saved by accident
    df = read_ranking(p)
    assert _message(lambda: DELTR(gamma=1.0).fit(df)) == (
        f"{p}: column 'Unnamed: 0' has no name in the header (an index saved with the data?); automatic feature "
        "selection would train on it: name or drop it, or list the features (--features)")
    assert DELTR(gamma=1.0, max_iter=2).fit(df, features=["x1", "x2"]).feature_names_ == ["x1", "x2"]


def test_non_number_dtypes_are_not_features():
    df = _frame().assign(when=pd.Timestamp("2024-01-01"))
    msg = _message(lambda: to_batch(df))
    assert msg.startswith("row 0 (0-based): non-numeric value Timestamp('2024-01-01 00:00:00') (dtype datetime64")
    assert msg.endswith("in column 'when' (query 1)" + AUTO_HINT)


def test_duplicate_items_name_both_lines(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("query_id,doc,protected,judgment\n1,a,0,1\n2,b,0,1\n2,c,1,0\n2,b,1,1\n")
    assert _message(lambda: read_ranking(p, item="doc")) == (
        f"{p}:5: duplicate (query, item) pair: query 2, item 'b'; first seen at line 3")
    q = tmp_path / "t.parquet"
    pd.read_csv(p).to_parquet(q, index=False)
    assert _message(lambda: read_ranking(q, item="doc")) == (
        f"{q}, row 4 (1-based): duplicate (query, item) pair: query 2, item 'b'; first seen at row 2 (1-based)")
    empty = tmp_path / "e.csv"
    empty.write_text("query_id,doc,protected,judgment\n1,a,0,1\n1,,0,1\n")
    assert _message(lambda: read_ranking(empty, item="doc")) == f"{empty}:3: missing item id in column 'doc' (query 1)"


@pytest.mark.parametrize("name,text", [("d.txt", "\n".join(ROWS) + "\n"), ("l.svm", "1 qid:1 1:0.5\n")])
def test_layouts_without_an_item_column_refuse_one(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ConfigError, match=rf"^{p}: the (DELTR|LETOR) layout has no item column \(got item='doc'\)"):
        read_ranking(p, item="doc")


def test_gamma_needs_protected_and_non_protected_candidates(tmp_path):
    advice = "use gamma 0 or a different group column (--group; now 'protected')"
    useless = f"so the fairness term would be 0 everywhere and gamma=1000 would do nothing; {advice}"
    for rows, problem in [
        ([r[:2] + "0" + r[3:] for r in ROWS],
         "no protected candidate (group column 'protected' >= 1) in the training data"),
        ([r[:2] + "1" + r[3:] for r in ROWS], "every candidate is protected (group column 'protected' >= 1) in the "
                                              "training data"),
        ([r[:2] + ("1" if r[0] == "2" else "0") + r[3:] for r in ROWS],
         "no query has both protected and non-protected candidates (group column 'protected')"),
    ]:
        p, _ = _write_layout(tmp_path, "csv", rows)
        assert _message(lambda: DELTR(gamma=1000.0).fit(read_ranking(p))) == f"{p}: {problem}, {useless}"
        DELTR(gamma=0.0, max_iter=2).fit(read_ranking(p))  # the paper's baseline: fine
        DELTR(gamma=1000.0, max_iter=2, fairness_loss="none").fit(read_ranking(p))  # no fairness term at all
    batch = to_batch(read_ranking(p))
    with pytest.raises(DataError, match="^no query has both protected and non-protected"):
        DELTR(gamma=1.0).fit_batch(batch)


def test_empty_feature_lists_are_errors(tmp_path):
    p, _ = _write_layout(tmp_path, "csv", _rows())
    df = read_ranking(p)
    assert _message(lambda: DELTR(gamma=0.0).fit(df, features=[])) == (
        f"{p}: no feature columns: the feature list is empty")
    assert _message(lambda: to_batch(df, features=[])) == f"{p}: no feature columns: the feature list is empty"
    assert _message(lambda: DELTR(gamma=0.0, colorblind=True).fit(df, features=["protected"])) == (
        f"{p}: no feature columns to train on (colorblind drops the group column 'protected')")
    only = df[["query_id", "judgment"]]
    assert _message(lambda: to_batch(only, group=None)) == (
        f"{p}: no feature columns: the table has only ['query_id', 'judgment'] (query 'query_id', judgment "
        "'judgment', item None)")


def test_origin_survives_the_usual_frame_operations_and_rank_frame_drops_it(tmp_path):
    p, where = _write_layout(tmp_path, "csv", _rows("x1", ""))
    df = read_ranking(p)
    assert df.attrs[ORIGIN_KEY]["path"] == str(p)
    expected = f"{where}: missing value (NaN or empty cell) in column 'x1' (query 2); 1 bad value(s) in that column"
    for derived in (df.rename(columns={"x2": "y"}), df[df.query_id >= 2], df.iloc[::-1], df.copy(),
                    df.assign(extra=1.0)):
        assert _message(lambda: to_batch(derived, features=["x1"])) == expected
    ranked = rank_frame(df, np.arange(len(df), dtype=float), "query_id")
    assert ORIGIN_KEY not in ranked.attrs  # re-ordered and re-indexed: line numbers would be wrong
    assert _message(lambda: to_batch(ranked, features=["x1"])).startswith("row ")


def test_missing_columns_name_the_file(tmp_path):
    p, _ = _write_layout(tmp_path, "csv", _rows())
    df = read_ranking(p)
    model = DELTR(gamma=1.0, max_iter=2).fit(df)
    assert _message(lambda: model.predict(df.drop(columns=["x2"]))) == (
        f"{p}: missing feature column(s) ['x2']; the model was trained on ['protected', 'x1', 'x2', 'x3']")
    assert _message(lambda: read_table(p, features=["x9"])).startswith(f"{p}: missing column(s) ['x9']")


# ---------------------------------------------------------------------------- model files
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    p, _ = _write_layout(folder, "csv", _rows())
    model = DELTR(gamma=10.0, max_iter=3).fit(read_ranking(p))
    return model, model.save(folder / "m.json").read_bytes(), model.save(folder / "m.safetensors").read_bytes()


def _load_error(tmp_path, name: str, data: bytes) -> str:
    p = tmp_path / name
    p.write_bytes(data)
    with pytest.raises(DataError) as info:  # any other exception type fails the test
        DELTR.load(p)
    msg = str(info.value)
    assert msg.startswith(f"{p}: not a fairltr DELTR model file: ") and "\n" not in msg
    return msg[len(f"{p}: not a fairltr DELTR model file: "):]


def _edit(data: bytes, fn) -> bytes:
    state = json.loads(data)
    fn(state)
    return json.dumps(state).encode()


def _setitem(key, value):
    def fn(state):
        target, k = state, key
        if "." in key:
            head, k = key.split(".")
            target = state[head]
        target[k] = value
    return fn


def _drop(key):
    return lambda state: state.pop(key)


JSON_CASES = [  # (edit of the state dict, the field named, a fragment of the problem)
    (_drop("weights"), "weights", "missing from the file"),
    (_drop("history"), "history", "missing from the file"),
    (_drop("format"), "format", "missing from the file"),
    (_setitem("pickle", "cos\nsystem"), "pickle", "unknown field"),
    (_setitem("format", "other"), "format", "'other', expected 'fairltr.DELTR'"),
    (_setitem("format_version", 2), "format_version", "unsupported version 2"),
    (_setitem("format_version", "1"), "format_version", "unsupported version '1'"),
    (_setitem("format_version", True), "format_version", "unsupported version True"),
    (_setitem("mean", [0.0]), "mean", "shape (1,), expected (4,)"),
    (_setitem("scale", [1.0] * 5), "scale", "shape (5,), expected (4,)"),
    (_setitem("weights", [[0.1, 0.2, 0.3, 0.4]]), "weights", "must be a flat list of numbers"),
    (_setitem("weights", ["0.1", 0.2, 0.3, 0.4]), "weights", "must be a flat list of numbers"),
    (_setitem("weights", [True, 0.2, 0.3, 0.4]), "weights", "must be a flat list of numbers"),
    (_setitem("weights", None), "weights", "must be a flat list of numbers"),
    (_setitem("weights", [10 ** 400, 0.2, 0.3, 0.4]), "weights", "must be a flat list of numbers"),
    (_setitem("mean", [float("nan"), 0.0, 0.0, 0.0]), "mean", "non-finite"),
    (_setitem("weights", [float("inf"), 0.0, 0.0, 0.0]), "weights", "non-finite"),
    (_setitem("scale", [1.0, 0.0, 1.0, 1.0]), "scale", "must be > 0, got 0.0"),
    (_setitem("scale", [1.0, -2.0, 1.0, 1.0]), "scale", "must be > 0, got -2.0"),
    (_setitem("params", []), "params", "must be an object"),
    (_setitem("params.dtype", "load"), "params.dtype", "'load' is not one of ['float32', 'float64']"),
    (_setitem("params.dtype", "int8"), "params.dtype", "'int8' is not one of"),
    (_setitem("params.dtype", "float16"), "params.dtype", "'float16' is not one of"),
    (_setitem("params.dtype", 3), "params.dtype", "must be a str, got 3"),
    (_setitem("params.evil", 1), "params", "unknown key(s) ['evil']"),
    (lambda s: s["params"].pop("gamma"), "params", "missing ['gamma']"),
    (_setitem("params.gamma", "big"), "params.gamma", "must be a finite number, got 'big'"),
    (_setitem("params.gamma", -1.0), "params", "gamma must be >= 0, got -1.0"),
    (_setitem("params.colorblind", "yes"), "params.colorblind", "must be a bool"),
    (_setitem("params.max_iter", 1.5), "params.max_iter", "must be a int"),
    (_setitem("params.optimizer", "sgd"), "params", "optimizer must be 'lbfgs' or 'adam'"),
    (_setitem("params.device", "toaster"), "params.device", "'toaster' is not a torch device"),
    (_setitem("params.fairness_loss", "nope"), "params", "unknown fairness loss 'nope'"),
    (_setitem("feature_names", "x1"), "feature_names", "non-empty list of distinct non-empty strings"),
    (_setitem("feature_names", []), "feature_names", "non-empty list"),
    (_setitem("feature_names", ["x1", "x1", "x2", "x3"]), "feature_names", "distinct"),
    (_setitem("feature_names", [1, 2, 3, 4]), "feature_names", "strings"),
    (_setitem("feature_names", ["", "x1", "x2", "x3"]), "feature_names", "non-empty strings"),
    (_setitem("feature_names", ["a", "b", "c"]), "weights", "shape (4,), expected (3,)"),
    (_setitem("query", 3), "query", "must be a non-empty string, got 3"),
    (_setitem("query", "x1"), "query", "'x1' is also a feature"),
    (_setitem("judgment", "query_id"), "judgment", "the query and judgment columns must differ"),
    (_setitem("params.colorblind", True), "feature_names", "a colorblind model cannot use the group column"),
    (_setitem("n_iter", -1), "n_iter", "must be an integer >= 0, got -1"),
    (_setitem("n_iter", "3"), "n_iter", "must be an integer >= 0, got '3'"),
    (_setitem("history", "x"), "history", "must be a list of records"),
    (_setitem("history", [1]), "history", "record 0 must have exactly the keys"),
    (_setitem("history", [{"iteration": 0}]), "history", "record 0 must have exactly the keys"),
    (_setitem("history", [{"iteration": 0, "total": float("nan"), "listnet": 0.0, "exposure": 0.0}]), "history",
     "record 0 must hold an integer iteration and finite numbers"),
]


@pytest.mark.parametrize("edit,field,problem", JSON_CASES, ids=[f"{c[1]}:{c[2][:30]}" for c in JSON_CASES])
def test_json_model_fields_are_validated(tmp_path, saved, edit, field, problem):
    detail = _load_error(tmp_path, "m.json", _edit(saved[1], edit))
    assert detail.startswith(f"field {field!r}: ") and problem in detail


@pytest.mark.parametrize("cut", ["empty", "half", "minus40", "random", "text", "list", "latin1", "deep"])
def test_damaged_json_model_files(tmp_path, saved, cut):
    good = saved[1]
    data = {"empty": b"", "half": good[: len(good) // 2], "minus40": good[:-40],
            "random": np.random.default_rng(0).bytes(200), "text": b"{not json", "list": b"[1, 2]",
            "latin1": b'{"format": "caf\xe9"}', "deep": b"[" * 100_000 + b"]" * 100_000}[cut]
    detail = _load_error(tmp_path, "m.json", data)
    assert any(w in detail for w in ("not valid JSON", "not UTF-8", "not an object", "nested too deeply"))


def _safetensors(tensors: dict, metadata: dict | None, raw_header: dict | None = None) -> bytes:
    """A safetensors file written byte by byte (also malformed ones the library refuses to write)."""
    header, blobs, offset = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr).tobytes()
        code = {"float64": "F64", "float32": "F32", "float16": "F16", "int8": "I8", "int64": "I64"}[arr.dtype.name]
        header[name] = {"dtype": code, "shape": list(arr.shape), "data_offsets": [offset, offset + len(b)]}
        blobs.append(b)
        offset += len(b)
    if metadata is not None:
        header["__metadata__"] = metadata
    if raw_header is not None:
        header.update(raw_header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def _tensor_cases(model: DELTR):
    state = json.dumps(model.model_state())
    meta = {"fairltr": state}
    w, m, s = model.weights_, model.mean_, model.scale_
    base = {"weights": w, "mean": m, "scale": s}
    return [  # (bytes, field named or None, fragment)
        (_safetensors({**base, "mean": m[:1]}, meta), "mean", "shape (1,), expected (4,)"),
        (_safetensors({**base, "weights": w.astype(np.int8)}, meta), "weights", "dtype 'I8'; only F32 and F64"),
        (_safetensors({**base, "weights": w.astype(np.float16)}, meta), "weights", "dtype 'F16'"),
        (_safetensors({**base, "scale": s.astype(np.int64)}, meta), "scale", "dtype 'I64'"),
        (_safetensors({**base, "weights": w.reshape(2, 2)}, meta), "weights", "shape [2, 2]; expected a vector"),
        (_safetensors({**base, "scale": np.where(np.arange(4) == 1, 0.0, s)}, meta), "scale", "must be > 0"),
        (_safetensors({**base, "mean": np.full(4, np.nan)}, meta), "mean", "non-finite"),
        (_safetensors({"weights": w, "mean": m}, meta), "scale", "missing from the tensors"),
        (_safetensors({**base, "bias": w}, meta), "bias", "unknown field in the tensors"),
        (_safetensors(base, None), "__metadata__", "must hold exactly one entry"),
        (_safetensors(base, {"fairltr": state, "x": "1"}), "__metadata__", "must hold exactly one entry"),
        (_safetensors(base, {"fairltr": json.dumps({**json.loads(state), "weights": [1]})}), "weights",
         "unknown field in the 'fairltr' metadata"),
        (_safetensors(base, {"fairltr": json.dumps({**json.loads(state), "format_version": 7})}), "format_version",
         "unsupported version 7"),
        (_safetensors(base, {"fairltr": json.dumps({**json.loads(state), "params": {
            **json.loads(state)["params"], "dtype": "load"}})}), "params.dtype", "'load' is not one of"),
        (_safetensors(base, {"fairltr": "{nope"}), None, "the 'fairltr' metadata is not valid JSON"),
        (_safetensors(base, meta, {"weights": {"dtype": "F64", "shape": [4], "data_offsets": [0, 10 ** 6]}}),
         "weights", "lie outside"),
        (_safetensors(base, meta, {"weights": {"dtype": "F64", "shape": [4], "data_offsets": [0, 16]}}),
         "weights", "do not hold 4 F64 value(s)"),
        (_safetensors(base, meta, {"mean": {"dtype": "F64", "shape": [4], "data_offsets": [0, 32]}}),
         None, "tensor data overlap or leave a gap"),
        (_safetensors(base, meta, {"weights": {"dtype": "F64", "shape": [4]}}), "weights",
         "must have exactly 'dtype', 'shape' and 'data_offsets'"),
        (_safetensors(base, meta) + b"\0" * 8, None, "8 unexpected byte(s) after the tensor data"),
    ]


def test_safetensors_model_fields_are_validated(tmp_path, saved):
    model = saved[0]
    assert DELTR.load(_write(tmp_path, "ok.safetensors", _safetensors(
        {"weights": model.weights_.astype(np.float32), "mean": model.mean_, "scale": model.scale_},
        {"fairltr": json.dumps(model.model_state())}))).weights_.dtype == np.float64  # float32 is accepted
    for i, (data, field, problem) in enumerate(_tensor_cases(model)):
        detail = _load_error(tmp_path, f"m{i}.safetensors", data)
        if field is not None:
            assert detail.startswith(f"field {field!r}: "), (i, detail)
        assert problem in detail, (i, detail)


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize("cut", ["empty", "four", "half", "minus40", "random", "huge-header", "header-list"])
def test_damaged_safetensors_files(tmp_path, saved, cut):
    good = saved[2]
    data = {"empty": b"", "four": good[:4], "half": good[: len(good) // 2], "minus40": good[:-40],
            "random": np.random.default_rng(1).bytes(300), "huge-header": struct.pack("<Q", 2 ** 62) + good[8:],
            "header-list": struct.pack("<Q", 2) + b"[]"}[cut]
    detail = _load_error(tmp_path, "m.safetensors", data)
    assert any(w in detail for w in ("truncated", "not valid JSON", "not UTF-8", "not an object", "lie outside",
                                     "unexpected byte")), detail


@pytest.mark.parametrize("kind", [1, 2])
def test_fuzzed_model_files_load_or_raise_data_error(tmp_path, saved, kind):
    """Random byte flips, cuts and insertions in valid files: a model whose fields pass every check, or
    a DataError naming the file; never another exception type."""
    model, good = saved[0], saved[kind]
    name = "m.json" if kind == 1 else "m.safetensors"
    rng = np.random.default_rng(kind)
    p = tmp_path / name
    loaded = 0
    for _ in range(300):
        data = bytearray(good)
        for _ in range(int(rng.integers(1, 4))):
            op, at = int(rng.integers(3)), int(rng.integers(len(data)))
            if op == 0:
                data[at] = int(rng.integers(256))
            elif op == 1:
                del data[at: at + int(rng.integers(1, 50))]
            else:
                data[at:at] = rng.bytes(int(rng.integers(1, 8)))
        p.write_bytes(bytes(data))
        try:
            m = DELTR.load(p)
        except DataError as exc:
            assert str(exc).startswith(f"{p}: ")
            continue
        loaded += 1
        assert len(m.weights_) == len(m.mean_) == len(m.scale_) == len(m.feature_names_)
        assert np.all(np.isfinite(m.weights_)) and np.all(m.scale_ > 0)
    assert loaded < 300  # the fuzzer did damage files


def test_model_file_that_is_not_a_file(tmp_path):
    (tmp_path / "m.json").mkdir()
    assert _message(lambda: DELTR.load(tmp_path / "m.json")) == (
        f"{tmp_path / 'm.json'}: not a fairltr DELTR model file: not a regular file")
