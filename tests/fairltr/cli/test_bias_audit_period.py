"""``fairltr audit --time-column`` (issue 30): the summary's data period is the column's earliest
and latest time (``period_start`` / ``period_end``, ISO 8601 in UTC), from a CSV read in memory and
a Parquet table streamed in batches, with the rows out of order, times of day with fractions of a
second and UTC offsets; without the option the period is null."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli

from audit_tables import table  # tests/audit_tables.py


@pytest.fixture(scope="module")
def held_out(tmp_path_factory):
    d = tmp_path_factory.mktemp("period")
    df = table(3, n_queries=8)
    rng = np.random.default_rng(4)
    base = pd.Timestamp("2026-03-01T09:00:00", tz="UTC")
    offsets = pd.to_timedelta(rng.integers(0, 200 * 86_400_000, len(df)), unit="ms")  # ~200 days, ms apart
    zones = rng.choice(["+00:00", "-05:00", "+02:00"], len(df))
    df["applied"] = [(base + o).tz_convert(f"Etc/GMT{'+' if z[0] == '-' else '-'}{int(z[1:3])}").isoformat()
                     for o, z in zip(offsets, zones)]
    df.to_csv(d / "held.csv", index=False)
    df.to_parquet(d / "held.parquet", index=False)
    times = [pd.Timestamp(s).tz_convert("UTC") for s in df["applied"]]  # one string at a time
    return d, min(times), max(times)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_period_is_the_time_columns_min_and_max(held_out, tmp_path, fmt):
    d, first, last = held_out
    res = CliRunner().invoke(cli, ["audit", "--data", str(d / f"held.{fmt}"), "--score-column", "score",
                                   "--group", "race", "--unknown-value", "Decline to state", "--method", "scoring",
                                   "--time-column", "applied", "--ci", "0", "--out", str(tmp_path)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "bias_audit.json").read_text())
    assert summary["period_start"] is not None and summary["period_end"] is not None
    assert pd.Timestamp(summary["period_start"]) == first
    assert pd.Timestamp(summary["period_end"]) == last
    assert first < last


def test_no_time_column_no_period(held_out, tmp_path):
    d, _, _ = held_out
    res = CliRunner().invoke(cli, ["audit", "--data", str(d / "held.csv"), "--score-column", "score", "--group",
                                   "race", "--method", "scoring", "--ci", "0", "--out", str(tmp_path)],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads((tmp_path / "bias_audit.json").read_text())
    assert summary["period_start"] is None and summary["period_end"] is None
