"""Figures and the HTML report: the data behind each figure against brute force."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.tracking.evaluation.plots import (
    exposure_by_position, mrc_heatmap, position_shares, relevance_fairness_scatter, training_curve,
)
from fairltr.tracking.evaluation.report import fairness_report_html, figure_to_png


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
                                                     "ndcg_at_10": 0.9, "exposure_gap": float("nan"),
                                                     "exposure_disparity": 0.19},
                                params={"gamma": 1000.0}, figures={"fig 2": png})
    assert html.startswith("<!doctype html>") and html.rstrip().endswith("</html>")
    assert "run &lt;x&gt;" in html  # escaped
    assert "0.812" in html and "higher is better" in html and "lower is better" in html
    embedded = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", html)
    assert len(embedded) == 1 and base64.b64decode(embedded[0]) == png
    assert "src='http" not in html and 'src="http' not in html  # nothing fetched from outside


def test_exposure_line_is_drawn_at_the_protected_share():
    """The dashed reference is labelled with the overall protected share and drawn at that
    height, on top of the protected bars (which start at 0)."""
    df = pd.DataFrame({"query_id": [0] * 12, "protected": [1, 0, 0] * 4})
    fig = exposure_by_position(df, -np.arange(12.0), bucket=3)
    ax = fig.get_axes()[0]
    (line,) = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert line.get_label() == "overall protected share 0.33"
    assert line.get_ydata()[0] == pytest.approx(1 / 3)
    protected = [p for p in ax.patches if p.get_facecolor()[:3] == pytest.approx((1.0, 0.4980, 0.0549), abs=1e-3)]
    assert [p.get_y() for p in protected] == [0.0] * 4
    assert [p.get_height() for p in protected] == pytest.approx([1 / 3] * 4)
    figure_to_png(fig)


def test_training_curve_shows_total_and_the_weighted_exposure_term():
    history = [{"iteration": i, "listnet": 10.0 - i, "exposure": 0.01 / (i + 1),
                "total": 10.0 - i + 100.0 * 0.01 / (i + 1)} for i in range(5)]
    fig = training_curve(history, gamma=100.0)
    top, bottom = fig.get_axes()
    lines = {ln.get_label(): ln for ax in (top, bottom) for ln in ax.lines}
    assert set(lines) == {"listnet", "total", "gamma x exposure (gamma=100)"}
    np.testing.assert_allclose(lines["gamma x exposure (gamma=100)"].get_ydata(), [1.0 / (i + 1) for i in range(5)])
    # the total is drawn over the ListNet line, dashed, so neither hides the other
    assert lines["total"].get_zorder() > lines["listnet"].get_zorder() and lines["total"].get_linestyle() == "--"
    # the summands add up to the plotted total
    np.testing.assert_allclose(lines["listnet"].get_ydata() + lines["gamma x exposure (gamma=100)"].get_ydata(),
                               lines["total"].get_ydata())
    unweighted = training_curve(history)
    assert [ln.get_label() for ln in unweighted.get_axes()[1].lines] == ["exposure term (unweighted)"]
    figure_to_png(fig), figure_to_png(unweighted)


def test_scatter_names_points_in_the_legend_not_beside_them():
    runs = [{"kendall_tau": 0.2, "exposure_ratio": 0.8, "label": "a"},
            {"kendall_tau": 0.2001, "exposure_ratio": 0.8001, "label": "b"}]
    fig = relevance_fairness_scatter(runs)
    ax = fig.get_axes()[0]
    assert not ax.texts
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["a", "b"]
    figure_to_png(fig)


def test_report_sorts_k_as_numbers_and_puts_fairness_first():
    from fairltr.tracking.evaluation.report import ordered_metric_keys

    metrics = {f"ndcg_at_{k}": 0.5 for k in (1, 10, 100, 20, 5)}
    metrics.update({"exposure_gap": 0.1, "exposure_ratio": 0.9, "kendall_tau": 0.3})
    html = fairness_report_html("t", metrics=metrics)
    table = html[html.index("<h2>Metrics"):]
    order = re.findall(r"<tr><td>([\w/]+)</td>", table)
    assert order == ["exposure_ratio", "ndcg_at_10", "kendall_tau", "exposure_gap",
                     "ndcg_at_1", "ndcg_at_5", "ndcg_at_20", "ndcg_at_100"]
    assert ordered_metric_keys(["precision_at_100", "precision_at_20", "precision_at_5"]) == [
        "precision_at_5", "precision_at_20", "precision_at_100"]


@pytest.mark.parametrize("ratio, words", [(0.7, "under-exposed: 30.0% below parity"),
                                          (1.5, "over-exposed: 50.0% above parity"),
                                          (1.0, "exactly at parity")])
def test_report_headline_uses_the_registry_parity_semantics(ratio, words):
    """1.5 is as far from parity as 1/1.5 = 0.667: it is never coloured 'good' by a threshold."""
    from fairltr.metrics import distance_from_ideal

    html = fairness_report_html("t", metrics={"exposure_ratio": ratio})
    headline = re.search(r"<p id=exposure-headline[^>]*>(.*?)</p>", html, re.S).group(1)
    assert words in headline
    assert f"exposure_disparity {distance_from_ideal('exposure_ratio', ratio):.3f}" in headline
    assert "target 1.0 (parity)" in headline
    assert "class=good" not in html and "class=bad" not in html and "SPEC" not in html


def test_report_subtitle_and_counts():
    html = fairness_report_html("DELTR (gamma=1000)", subtitle="DELTR, fairness loss exposure_hinge · run r1",
                                metrics={"exposure_ratio": 1.0}, counts={"exposure_ratio": 17})
    assert html.count("gamma=1000") == 2  # the <title> and the <h1>; not repeated in the subtitle
    assert re.search(r"<td>exposure_ratio</td>.*?<td class=num>17</td>", html)
