"""Figures and the HTML report: the data behind each figure against brute force."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.tracking.plots import (
    exposure_by_position, mrc_heatmap, position_shares, relevance_fairness_scatter, training_curve,
)
from fairltr.tracking.report import fairness_report_html, figure_to_png


def _brute_shares(df, scores, bucket):
    rows = []
    for q in pd.unique(df["query_id"]):
        part = df[df["query_id"] == q].assign(s=scores[df["query_id"].to_numpy() == q])
        part = part.reset_index(drop=True)
        order = sorted(range(len(part)), key=lambda i: (-part["s"][i], i))
        for r, i in enumerate(order, start=1):
            rows.append(((r - 1) // bucket, int(part["protected"][i] >= 1)))
    out = {}
    for b, p in rows:
        n, k = out.get(b, (0, 0))
        out[b] = (n + 1, k + p)
    return {b: k / n for b, (n, k) in sorted(out.items())}


def test_position_shares_against_brute_force():
    rng = np.random.default_rng(1)
    sizes = [7, 12, 3, 12]
    df = pd.DataFrame({"query_id": np.repeat(np.arange(4), sizes),
                       "protected": rng.integers(0, 3, sum(sizes))})
    scores = rng.normal(size=len(df))
    shares = position_shares(df, scores, bucket=4)
    expected = _brute_shares(df, scores, 4)
    np.testing.assert_allclose(shares["share_protected"].to_numpy(), list(expected.values()))
    assert (shares["n_protected"] + shares["n_nonprotected"]).sum() == len(df)
    np.testing.assert_allclose(shares["share_protected"] + shares["share_nonprotected"], 1.0)
    assert shares["bucket"].tolist()[:2] == ["1-4", "5-8"]


def test_position_shares_default_bucket_and_errors():
    df = pd.DataFrame({"query_id": [0] * 20, "protected": [0] * 12 + [1] * 8})
    shares = position_shares(df, -np.arange(20.0), n_buckets=4)  # protected all at the bottom
    assert shares["share_protected"].tolist() == [0.0, 0.0, 0.6, 1.0]  # buckets of 5
    with pytest.raises(DataError, match="3 scores for 20 rows"):
        position_shares(df, [1.0, 2.0, 3.0])
    with pytest.raises(DataError, match="'grp'"):
        position_shares(df, np.zeros(20), group="grp")


def test_figures_render():
    df = pd.DataFrame({"query_id": [0] * 6, "protected": [0, 1, 0, 1, 0, 1]})
    for fig in (
        exposure_by_position(df, np.arange(6.0)),
        relevance_fairness_scatter([{"kendall_tau": 0.2, "exposure_ratio": 0.8, "label": "g=0"},
                                    {"kendall_tau": 0.15, "exposure_ratio": 0.99, "label": "g=1e5"}]),
        mrc_heatmap(pd.DataFrame([[100.0, 20.0], [20.0, 100.0]], index=["en", "de"], columns=["en", "de"])),
        training_curve([{"iteration": 0, "total": 2.0, "listnet": 2.0, "exposure": 0.0},
                        {"iteration": 1, "total": 1.0, "listnet": 1.0, "exposure": 0.0}]),
    ):
        assert figure_to_png(fig)[:8] == b"\x89PNG\r\n\x1a\n"


def test_scatter_reads_search_runs_columns():
    runs = pd.DataFrame({"metrics.kendall_tau": [0.1, 0.2], "metrics.exposure_ratio": [0.7, np.nan],
                         "tags.mlflow.runName": ["a", "b"], "params.gamma": ["0", "1"]})
    fig = relevance_fairness_scatter(runs, series="gamma")
    assert figure_to_png(fig)
    with pytest.raises(DataError, match="ndcg_at_10"):
        relevance_fairness_scatter(runs, relevance="ndcg_at_10")
    with pytest.raises(DataError, match="square"):
        mrc_heatmap(pd.DataFrame([[1.0, 2.0]]))


def test_report_is_one_self_contained_page():
    png = figure_to_png(exposure_by_position(pd.DataFrame({"query_id": [0, 0], "protected": [0, 1]}), [1.0, 0.0]))
    html = fairness_report_html("run <x>", metrics={"exposure_ratio": 0.8123, "exposure_ratio_n_queries": 3,
                                                     "ndcg_at_10": 0.9, "exposure_gap": float("nan")},
                                params={"gamma": 1000.0}, figures={"fig 2": png})
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "run &lt;x&gt;" in html  # escaped
    assert "0.812" in html and "higher is better" in html and "lower is better" in html
    embedded = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(embedded) == 1 and base64.b64decode(embedded[0]) == png
    assert "src='http" not in html and 'src="http' not in html  # nothing fetched from outside
