"""``fairltr monitor --gate scoring_four_fifths`` (issue 30, item 1): each window's scoring rates
(share above the median score of the window's rows, equal is not above) and scoring impact ratios
equal an independent pandas computation, and a window fails the gate exactly when a category's
scoring impact ratio is under 0.8."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli


def test_scoring_four_fifths_per_window_equals_pandas(tmp_path):
    from fairltr.monitoring import make_served_traffic

    df = make_served_traffic(4, 50, 20, biased_window=None, seed=0)
    df.to_csv(tmp_path / "served.csv", index=False)
    res = CliRunner().invoke(cli, ["monitor", "--data", str(tmp_path / "served.csv"), "--time-column", "served_at",
                                   "--window", "7d", "--query", "query_id", "--group", "sex", "--group", "race",
                                   "--score-column", "score", "--gate", "scoring_four_fifths", "--ci", "0",
                                   "--no-track", "--out", str(tmp_path / "out")], catch_exceptions=False)
    assert res.exit_code in (0, 1), res.output
    got = pd.read_csv(tmp_path / "out" / "audit_by_window.csv")
    windows = pd.read_csv(tmp_path / "out" / "windows.csv")
    df["start"] = pd.to_datetime(df["served_at"])
    for w in windows.itertuples():
        part = df[(df["start"] >= pd.Timestamp(w.window_start)) & (df["start"] < pd.Timestamp(w.window_end))]
        assert len(part) == w.n_rows
        hit = (part["score"] > part["score"].median()).astype(float)
        worst = []
        for attribute in ("sex", "race"):
            rate = hit.groupby(part[attribute]).mean()
            mine = got[(got["window"] == w.window) & (got["attribute"] == attribute)].set_index("category")
            for cat, value in rate.items():
                assert mine.loc[cat, "scoring_rate"] == pytest.approx(value, rel=1e-12), (w.window, attribute, cat)
                assert mine.loc[cat, "scoring_impact_ratio"] == pytest.approx(value / rate.max(), rel=1e-12)
            worst.append((rate / rate.max()).min())
        inter = got[(got["window"] == w.window) & (got["attribute"] == "sex:race")]
        worst.append(inter["scoring_impact_ratio"].min())
        assert (w.verdict == "fail") == (min(worst) < 0.8), (w.window, worst)
    assert set(windows["verdict"]) == {"pass", "fail"}  # both outcomes are checked
