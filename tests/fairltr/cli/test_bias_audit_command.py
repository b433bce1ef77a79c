"""``fairltr audit`` (issue 30) on held-out rankings with unknown values (empty sex cells,
"Decline to state" races), a 1% category and two attributes: the summary's numbers equal an
independent pandas computation, for selection at k and for scoring rates, from CSV (in memory) and
Parquet (streamed); the JSON fields are present and typed; bad input is one line."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli

from audit_tables import independent, table  # tests/audit_tables.py

UNKNOWN = ["--unknown-value", "", "--unknown-value", "Decline to state"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit")
    df = table(7, n_queries=40)
    df["applied"] = pd.Timestamp("2026-01-05") + pd.to_timedelta(np.arange(len(df)) % 90, unit="D")
    df.to_csv(d / "held_out.csv", index=False)
    df.to_parquet(d / "held_out.parquet", index=False)
    return d, pd.read_csv(d / "held_out.csv", dtype={"sex": str, "race": str}, keep_default_na=False, na_values=[""])


def run(args):
    res = CliRunner().invoke(cli, ["audit", *args], catch_exceptions=False)
    return res


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize("method, median", [("selection", None), ("scoring", None), ("scoring", "per-query")])
def test_summary_equals_pandas(files, tmp_path, fmt, method, median):
    d, df = files
    args = ["--data", str(d / f"held_out.{fmt}"), "--score-column", "score", "--group", "sex", "--group", "race",
            *UNKNOWN, "--time-column", "applied", "--ci", "0", "--out", str(tmp_path), "--method", method]
    res = run(args + (["--k", "5"] if method == "selection" else []) + (["--median", median] if median else []))
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "bias_audit.json").read_text())
    want = independent(df, k=5 if method == "selection" else None, median=median or "whole")
    assert summary["method"] == ("selection@k" if method == "selection" else "scoring")
    assert summary["median"] == (None if method == "selection" else median or "whole")
    flat_median = pd.read_csv(tmp_path / "bias_audit.csv", keep_default_na=False)["median"]
    assert set(flat_median) == {"" if method == "selection" else median or "whole"}  # said in every output
    if method == "scoring":
        page = (tmp_path / "bias_audit.html").read_text()
        assert ("ranking (per query)" if median else "whole audited sample") in page
    assert summary["n_individuals"] == len(df) and summary["period_start"].startswith("2026-01-05")
    for name, w in want.items():
        block = summary["attributes"][name]
        assert block["unknown_count"] == w["unknown"]
        rows = {r["category"]: r for r in block["rows"]}
        assert set(rows) == set(w["rate"].index) | {"unknown"}
        for cat in w["rate"].index:
            assert rows[cat]["n"] == w["n"][cat]
            assert rows[cat]["rate"] == pytest.approx(w["rate"][cat], rel=1e-12)
            assert rows[cat]["impact_ratio"] == pytest.approx(w["ratio"][cat], rel=1e-12)  # 1% kept: no reason
    pacific = next(r for r in summary["attributes"]["race"]["rows"] if r["category"] == "Pacific")
    assert pacific["small"] and not pacific["excluded"]
    flat = pd.read_csv(tmp_path / "bias_audit.csv")
    assert len(flat) == sum(len(b["rows"]) for b in summary["attributes"].values())
    assert "Summary of bias audit results" in (tmp_path / "bias_audit.html").read_text()


def test_fields_are_typed_and_a_reason_excludes(files, tmp_path):
    d, df = files
    res = run(["--data", str(d / "held_out.csv"), "--score-column", "score", "--group", "sex", "--group", "race",
               *UNKNOWN, "--exclude-small-categories", "under 2% of applicants", "--ci", "0.9", "--n-boot", "100",
               "--out", str(tmp_path)])
    assert res.exit_code == 0, res.output
    s = json.loads((tmp_path / "bias_audit.json").read_text())
    types = {"audit_date": str, "data_source": dict, "n_individuals": int, "method": str, "attributes": dict}
    for key, t in types.items():
        assert isinstance(s[key], t), key
    assert s["model"] is None and s["first_used"] is None and s["period_start"] is None
    assert len(s["data_source"]["sha256"]) == 64 and s["data_source"]["path"].endswith("held_out.csv")
    pacific = next(r for r in s["attributes"]["race"]["rows"] if r["category"] == "Pacific")
    assert pacific["excluded"] and pacific["exclusion_reason"] == "under 2% of applicants" and pacific["rate"] is not None
    kept = [r for r in s["attributes"]["race"]["rows"] if not r["excluded"]]
    for r in kept:
        assert isinstance(r["n"], int) and r["ci_low"] <= r["impact_ratio"] <= r["ci_high"]
    want = independent(df, k=10)["race"]["rate"].drop("Pacific")
    assert s["attributes"]["race"]["worst_impact_ratio"] == pytest.approx((want / want.max()).min(), rel=1e-12)


@pytest.mark.parametrize("extra, message", [
    (["--score-column", "nope"], "held_out.csv: column 'nope' not found"),
    (["--score-column", "score", "--k", "0"], "--k must be an integer >= 1"),
    (["--score-column", "score", "--group", "religion"], "held_out.csv: column 'religion' not found"),
    (["--score-column", "score", "--method", "scoring", "--k", "3"], "--k is the selection cut-off"),
])
def test_bad_input_is_one_line(files, tmp_path, extra, message):
    d, _ = files
    res = CliRunner().invoke(cli, ["audit", "--data", str(d / "held_out.csv"), "--group", "sex", *UNKNOWN, "--ci", "0",
                                   "--out", str(tmp_path), *extra])
    assert res.exit_code != 0 and message in res.output, res.output
    assert "Traceback" not in res.output


def test_text_scores_empty_tables_and_undefined_ratios(files, tmp_path):
    """Text in the score column, a file with no bytes or no rows: one line naming the file (and the
    row); nothing written. Nobody above the median: the ratios are undefined, never a PASS."""
    d, df = files
    text = df.astype({"score": str})
    text.loc[5, "score"] = "high"
    text.to_csv(tmp_path / "text.csv", index=False)
    (tmp_path / "empty.csv").write_text("")
    df.head(0).to_csv(tmp_path / "header.csv", index=False)
    cases = [("text.csv", "text.csv: column 'score' row 5 holds 'high', not a finite score"),
             ("empty.csv", "empty.csv: cannot read as CSV"), ("header.csv", "header.csv: the table has no rows")]
    for name, message in cases:
        res = CliRunner().invoke(cli, ["audit", "--data", str(tmp_path / name), "--score-column", "score", "--group",
                                       "sex", *UNKNOWN, "--ci", "0", "--out", str(tmp_path / "out")])
        assert res.exit_code != 0 and message in res.output and "Traceback" not in res.output, res.output
        assert len(res.output.strip().splitlines()) == 1, res.output
        assert not (tmp_path / "out" / "bias_audit.json").exists()
    df.assign(score=1.0).to_csv(tmp_path / "flat.csv", index=False)
    res = run(["--data", str(tmp_path / "flat.csv"), "--score-column", "score", "--group", "sex", *UNKNOWN,
               "--method", "scoring", "--ci", "0", "--out", str(tmp_path / "out")])
    assert res.exit_code == 0 and "UNDEFINED for sex" in res.output and "PASS" not in res.output, res.output
    assert "impact ratio undefined for sex: no category has a scoring rate above 0" in res.output
