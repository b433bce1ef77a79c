"""``fairltr monitor``'s inputs checked (issue 31 item 6) and its three-way verdicts, through the
CLI on small synthetic tables: ambiguous dates need --time-format, epoch numbers --time-unit,
served ranks must be 1..n per query, a vanished category and a too-small window say
"insufficient evidence" in the printed line, labels unlike the training profile's are named."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.monitoring import make_served_traffic


@pytest.fixture(scope="module")
def weeks(tmp_path_factory):
    root = tmp_path_factory.mktemp("monitor-inputs")
    df = make_served_traffic(4, 60, 20, biased_window=None, seed=5)
    df.to_csv(root / "iso.csv", index=False)
    return root, df


def _monitor(path, tmp_path, *extra):
    args = ["monitor", "--data", str(path), "--time-column", "served_at", "--window", "7d", "--group", "race",
            "--no-track", "--out", str(tmp_path / "o"), *extra]
    return CliRunner().invoke(cli, args)


def _one_error(result, needle):
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code in (1, 2), result.output
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0], result.output


def test_day_month_dates_need_a_format(weeks, tmp_path):
    root, df = weeks
    t = pd.to_datetime(df["served_at"])
    df.assign(served_at=t.dt.strftime("%d/%m/%Y")).to_csv(tmp_path / "dmy.csv", index=False)
    _one_error(_monitor(tmp_path / "dmy.csv", tmp_path), "--time-format")
    ok = _monitor(tmp_path / "dmy.csv", tmp_path, "--time-format", "%d/%m/%Y")
    iso = _monitor(root / "iso.csv", tmp_path / "iso")
    assert ok.exit_code == 0 and iso.exit_code == 0, ok.output + iso.output
    # read day-first as told: the same windows as the ISO dates
    assert ok.output.splitlines()[-1].split(":")[0] == iso.output.splitlines()[-1].split(":")[0]


def test_epoch_numbers_need_their_unit(weeks, tmp_path):
    _, df = weeks
    seconds = (pd.to_datetime(df["served_at"]) - pd.Timestamp("1970-01-01")) // pd.Timedelta(seconds=1)
    df.assign(served_at=seconds).to_csv(tmp_path / "epoch.csv", index=False)
    _one_error(_monitor(tmp_path / "epoch.csv", tmp_path), "--time-unit")
    _one_error(_monitor(tmp_path / "epoch.csv", tmp_path, "--time-unit", "ns"), "before 1980")
    ok = _monitor(tmp_path / "epoch.csv", tmp_path, "--time-unit", "s")
    assert ok.exit_code == 0 and "4 windows through" in ok.output, ok.output


@pytest.mark.parametrize("change, needle", [
    (lambda r: r.where(r != 1, 0), "outside 1..20"),
    (lambda r: r.where(r != 2, 1), "given to two candidates"),
    (lambda r: r.astype(float).where(r != 3, 2.5), "not a whole number"),
])
def test_served_ranks_must_be_a_permutation(weeks, tmp_path, change, needle):
    _, df = weeks
    df.assign(rank=change(df["rank"])).to_csv(tmp_path / "ranks.csv", index=False)
    result = _monitor(tmp_path / "ranks.csv", tmp_path)
    _one_error(result, needle)
    assert "in query" in result.output


def test_a_vanished_category_is_insufficient_evidence_in_the_printed_line(weeks, tmp_path):
    _, df = weeks
    t = pd.to_datetime(df["served_at"])
    week = t >= t.min() + pd.Timedelta(days=14)
    kept = df[~(week & (df["race"] == "Hispanic"))]  # gone from week 3 on; the ranks no longer 1..n: score it
    kept.drop(columns="rank").to_csv(tmp_path / "gone.csv", index=False)
    result = _monitor(tmp_path / "gone.csv", tmp_path, "--gate", "four_fifths@10", "--score-column", "score")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if "INSUFFICIENT EVIDENCE" in line]
    assert lines and all("Hispanic absent from this window" in line for line in lines), result.output
    record = json.loads((tmp_path / "o" / "monitor.json").read_text())
    assert list(record["window_verdicts"].values())[:2] == ["pass", "pass"]
    assert set(list(record["window_verdicts"].values())[2:]) == {"insufficient evidence"}
    assert "insufficient evidence in 2" in record["verdict"]
    windows = pd.read_csv(tmp_path / "o" / "windows.csv")
    assert windows["verdict"].tolist() == ["pass", "pass", "insufficient evidence", "insufficient evidence"]


def test_a_window_too_small_is_never_a_fail(tmp_path):
    """One ranking of 12 a week, top 3: a category below four-fifths by its point estimate is
    'insufficient evidence' (too few expected selections), with and without --confidence."""
    df = make_served_traffic(3, 1, 12, biased_window=1, seed=2)
    df.to_csv(tmp_path / "small.csv", index=False)
    for extra in ([], ["--confidence", "0.95"]):
        result = _monitor(tmp_path / "small.csv", tmp_path, "--gate", "four_fifths@3", *extra)
        assert result.exit_code == 0, result.output
        assert " FAIL " not in result.output and "INSUFFICIENT EVIDENCE" in result.output, result.output


def test_labels_unlike_the_profile_are_named(weeks, tmp_path):
    root, df = weeks
    df.assign(race=df["race"].replace({"Black": "African-American"})).to_csv(tmp_path / "train.csv", index=False)
    result = _monitor(root / "iso.csv", tmp_path, "--reference", str(tmp_path / "train.csv"))
    assert result.exit_code == 0, result.output
    assert "Warning:" in result.output and "race: Black never occur in training" in result.output, result.output
    record = json.loads((tmp_path / "o" / "monitor.json").read_text())
    assert record["label_mismatch"] == {"race": ["Black"]}


def test_clean_weekly_pools_do_not_read_as_shifted(tmp_path):
    """Sampling noise is not a shift: 26 clean weeks of one ranking of 40 against their own
    population's profile shift in at most one week (TVD alone flagged most of them)."""
    df = make_served_traffic(26, 1, 40, biased_window=None, seed=9)
    train = make_served_traffic(10, 50, 40, biased_window=None, seed=10)
    df.to_csv(tmp_path / "weekly.csv", index=False)
    train.to_csv(tmp_path / "ref.csv", index=False)
    result = _monitor(tmp_path / "weekly.csv", tmp_path, "--reference", str(tmp_path / "ref.csv"))
    assert result.exit_code == 0, result.output
    record = json.loads((tmp_path / "o" / "monitor.json").read_text())
    shifted = [s for s in record["shift"].values() if s["shifted"]]
    assert len(shifted) <= 1, shifted
    assert max(s["max_tvd"] for s in record["shift"].values()) > 0.1  # the old TVD rule would have said shifted
