"""Figures and the HTML report: the data behind each figure against brute force."""

from __future__ import annotations

import base64
import re

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
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


# ---------------------------------------------------------------- text categories (issue 29)
RACES = ["African-American", "Caucasian", "Hispanic", "Other", "Asian"]


def _text_table(seed=4, n_q=6, n=15):
    rng = np.random.default_rng(seed)
    race = rng.choice(RACES, size=n_q * n, p=[0.45, 0.3, 0.12, 0.08, 0.05])
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_q), n), "race": race}), rng.normal(size=n_q * n)


def _brute_compared_shares(df, scores, bucket, reference):
    out = {}
    for q in pd.unique(df["query_id"]):
        mask = df["query_id"].to_numpy() == q
        part = df[mask].reset_index(drop=True)
        s = scores[mask]
        order = sorted(range(len(part)), key=lambda i: (-s[i], i))
        for r, i in enumerate(order, start=1):
            n, k = out.get((r - 1) // bucket, (0, 0))
            out[(r - 1) // bucket] = (n + 1, k + int(part["race"][i] != reference))
    return [k / n for _, (n, k) in sorted(out.items())]


def test_position_shares_on_text_categories_compare_every_other_category_with_the_reference():
    df, scores = _text_table()
    most = df["race"].value_counts().idxmax()
    shares = position_shares(df, scores, group="race", bucket=4)  # crashed: '>=' between str and int
    np.testing.assert_allclose(shares["share_protected"], _brute_compared_shares(df, scores, 4, most))
    declared = position_shares(df, scores, group="race", bucket=4, reference="Hispanic")
    np.testing.assert_allclose(declared["share_protected"], _brute_compared_shares(df, scores, 4, "Hispanic"))
    ints = pd.DataFrame({"query_id": df["query_id"], "g": (df["race"] != most).astype(int)})
    np.testing.assert_allclose(position_shares(ints, scores, group="g", bucket=4)["share_protected"],
                               shares["share_protected"])  # the same coding as integer 0 / 1
    with pytest.raises(ConfigError, match="does not occur"):
        position_shares(df, scores, group="race", reference="Martian")
    with pytest.raises(DataError, match="missing group category"):
        position_shares(df.assign(race=df["race"].where(df.index != 3)), scores, group="race")


def test_exposure_by_position_legend_names_the_categories():
    df, scores = _text_table()
    most = df["race"].value_counts().idxmax()
    fig = exposure_by_position(df, scores, group="race")
    ax = fig.get_axes()[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"reference: race = {most}" in labels and "compared: the other 4 categories" in labels
    assert not any(">= 1" in x for x in labels) and most in ax.get_title()
    (line,) = [ln for ln in ax.lines if ln.get_linestyle() == "--"]
    assert line.get_ydata()[0] == pytest.approx((df["race"] != most).mean())
    figure_to_png(fig)
    ints = exposure_by_position(pd.DataFrame({"query_id": [0] * 4, "sex": [0, 1, 1, 0]}), np.arange(4.0), group="sex")
    assert [t.get_text() for t in ints.get_axes()[0].get_legend().get_texts()] == [
        "overall protected share 0.50", "protected: sex = 1", "non-protected: sex = 0"]
    figure_to_png(ints)


# ---------------------------------------------------------------- the impact-ratio chart's layout
def _audit_rows():
    four_fifths = (4 / 9) / (5 / 9)
    rows = [("race", "African-American", 1.0, False, 0.9, 1.05), ("race", "Asian", 0.5, True, 0.1, 1.32),
            ("race", "Caucasian", four_fifths, False, 0.6, 1.32), ("race", "Hispanic", 0.62, False, 0.4, 0.9),
            ("race", "Native American", 0.441, False, 0.296, 0.511), ("sex", "Female", 0.9, False, 0.7, 1.1),
            ("sex", "Male", 1.0, False, 1.0, 1.0), ("race:sex", "African-American|Male", 1.0, False, 0.95, 1.0),
            ("race:sex", "Native American|Female", 0.3, False, 0.1, 0.6),
            ("race:sex", "Other|Female", float("nan"), False, float("nan"), float("nan"))]
    return pd.DataFrame(rows, columns=["attribute", "category", "impact_ratio_at_k", "excluded",
                                       "impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"])


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_impact_ratio_chart_labels_legend_and_intervals_never_collide():
    from matplotlib.transforms import Bbox

    from fairltr.tracking.evaluation.plots import impact_ratio_chart

    table = _audit_rows()
    fig = impact_ratio_chart(table, k=10)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    ax = fig.get_axes()[0]
    assert ax.get_xlim()[1] > 1.32  # the interval reaching 1.32 is not clipped
    texts = [t for t in ax.texts]
    assert len(texts) == len(table)
    boxes = [t.get_window_extent(renderer) for t in texts]
    axes_box = ax.get_window_extent(renderer)
    segments = []
    for coll in ax.collections:  # the error bars' horizontal lines
        for seg in coll.get_segments():
            (x0, y0), (x1, y1) = ax.transData.transform(seg)
            segments.append(Bbox.from_extents(min(x0, x1), y0 - 3, max(x0, x1), y1 + 3))  # +-3 px: the caps
    assert len(segments) == 9  # every finite interval is drawn
    bars = [p.get_window_extent(renderer) for p in ax.patches]
    for box in boxes:
        assert axes_box.x0 <= box.x0 and box.x1 <= axes_box.x1  # inside the axes
        assert not any(_overlap(box, s) for s in segments), "a value label covers an error bar"
        assert not any(_overlap(box, b) for b in bars if b.width > 0), "a value label covers a bar"
    (legend,) = fig.legends
    leg = legend.get_window_extent(renderer)
    assert leg.y1 <= axes_box.y0 and not _overlap(leg, ax.xaxis.label.get_window_extent(renderer))
    assert 0 <= leg.x0 and leg.x1 <= fig.bbox.x1
    for tick in ax.get_yticklabels():  # long intersection names inside the figure, not cut off
        assert tick.get_window_extent(renderer).x0 >= 0
    assert "race:sex = African-American|Male" in [t.get_text() for t in ax.get_yticklabels()]
    # an exact 4/5 is drawn as passing (blue), the excluded row grey, the NaN row says so
    colors = [tuple(np.round(p.get_facecolor()[:3], 3)) for p in ax.patches]
    blue, red = (0.122, 0.435, 0.922), (0.812, 0.133, 0.18)
    assert colors[2] == blue and colors[3] == red and colors[1] != blue
    assert texts[-1].get_text() == "undefined"
    figure_to_png(fig)


def test_impact_ratio_chart_at_a_confidence_colours_by_the_lower_end():
    from fairltr.tracking.evaluation.plots import impact_ratio_chart

    fig = impact_ratio_chart(_audit_rows(), confidence=True)
    colors = [tuple(np.round(p.get_facecolor()[:3], 3)) for p in fig.get_axes()[0].patches]
    assert colors[0] == (0.122, 0.435, 0.922) and colors[2] == (0.812, 0.133, 0.18)  # 0.9 passes, 0.6 fails
    figure_to_png(fig)
    no_ci = _audit_rows().drop(columns=["impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"])
    fig = impact_ratio_chart(no_ci)
    assert not fig.get_axes()[0].collections and fig.get_axes()[0].get_xlim()[1] >= 1.1
    figure_to_png(fig)


# ---------------------------------------------------------------- the report an auditor reads
def _report_metrics():
    return {"exposure_ratio": 1.053, "impact_ratio_at_10": 0.441, "impact_ratio_at_10_ci_low": 0.296,
            "impact_ratio_at_10_ci_high": 0.505, "impact_ratio_at_10.race": 0.441,
            "impact_ratio_at_10.sex": (4 / 9) / (5 / 9), "impact_ratio_at_10.race:sex": 0.3}


def test_report_headline_names_the_reference_and_the_compared_categories():
    from fairltr.metrics.verdicts import binary_view
    from fairltr.tracking.evaluation.report import exposure_headline

    race = pd.Series(["African-American"] * 5 + ["Caucasian"] * 3 + ["Hispanic", "Other", "Asian", "Native American"])
    text = exposure_headline({"exposure_ratio": 1.053}, binary=binary_view(race, attribute="race"))
    assert text.startswith("Exposure: the compared categories (race = Asian, Caucasian, Hispanic, Native American, "
                           "Other) receive 1.053 times the positional exposure of the reference category (race = "
                           "African-American, the most frequent)")
    assert "over-exposed: 5.3% above parity" in text and "protected" not in text
    html = fairness_report_html("t", metrics={"exposure_ratio": 1.053}, binary=binary_view(race, attribute="race"))
    assert "the compared categories (race = Asian" in html and "<b>1.053 times</b>" in html
    one = exposure_headline({"exposure_ratio": 0.9}, binary=binary_view(pd.Series(["M", "F", "F"]), attribute="sex"))
    assert one.startswith("Exposure: the compared category (sex = M) receives 0.900 times")
    default = exposure_headline({"exposure_ratio": 0.9})
    assert default.startswith("Exposure: the protected group receives 0.900 times the positional exposure of the "
                              "non-protected group (under-exposed")
    ints = exposure_headline({"exposure_ratio": 0.9}, binary=binary_view(pd.Series([0, 1, 1]), attribute="sex"))
    assert ints.startswith("Exposure: the protected group (sex = 1) receives 0.900 times the positional exposure "
                           "of the non-protected group (sex = 0)")


def test_report_conclusions_name_the_worst_category_and_use_the_tolerance():
    from fairltr.tracking.evaluation.report import conclusions

    audit = _audit_rows()
    lines = conclusions(_report_metrics(), audit=audit)
    head = next(x for x in lines if x.startswith("impact_ratio_at_10 ="))
    assert head == ("impact_ratio_at_10 = 0.441: meets four-fifths (>= 0.8): no; worst category: race:sex = Native "
                    "American|Female, 0.300 [0.100, 0.600]; worst-case interval [0.296, 0.505]: meets it at this "
                    "confidence: no (the interval reaches below the line)")
    race = next(x for x in lines if x.startswith("impact_ratio_at_10.race ="))
    assert "worst category: race = Native American, 0.441 [0.296, 0.511]" in race
    sex = next(x for x in lines if x.startswith("impact_ratio_at_10.sex ="))
    assert "meets four-fifths (>= 0.8): yes" in sex  # an exact 4/5 (0.7999999999999999) meets it
    # without the audit, or at another k than the audit's: no category is named
    assert not any("worst category" in x for x in conclusions(_report_metrics()))
    two_k = {**_report_metrics(), "impact_ratio_at_5": 0.5}
    assert not any("worst category" in x for x in conclusions(two_k, audit=audit))
    named = conclusions(two_k, audit=audit, audit_k=10)
    assert any(x.startswith("impact_ratio_at_10 =") and "worst category" in x for x in named)
    assert not any(x.startswith("impact_ratio_at_5 =") and "worst category" in x for x in named)
    band = conclusions({"exposure_ratio": 1.25 * (1 + 1e-12)})
    assert band == ["exposure_ratio = 1.250: inside 0.8-1.25: yes"]


def html_text(page: str) -> str:
    import html

    return html.unescape(page)


def _audit_section(html: str) -> str:
    end = html.find("<h2>Metrics")
    return html[html.index("<h2>Audit per category"):end if end > 0 else None]


def test_report_audit_tables_one_per_attribute_with_a_verdict_column():
    html = fairness_report_html("t", metrics=_report_metrics(), audit=_audit_rows(), audit_k=10)
    section = _audit_section(html)
    assert "id=audit-table" in section
    assert re.findall(r"<table class=audit data-attribute='([^']+)'>", section) == ["race", "sex", "race:sex"]
    verdicts = re.findall(r"<td class=verdict-(\w+)>(\w+)</td>", section)
    assert [v for v, _ in verdicts] == ["pass", "excluded", "pass", "fail", "fail", "pass", "pass", "pass", "fail",
                                        "undefined"]
    assert all(a == b for a, b in verdicts)
    assert "<td class=cat>African-American|Male</td>" in section
    assert "0.441 <span class=ci>[0.296, 0.511]</span>" in section  # the interval under the value
    assert "impact ratio &gt;= 0.8 on the point values" in section and "(k = 10)" in section
    assert html.index("id=conclusions") < html.index("id=audit-table") < html.index("<h2>Metrics")


def test_report_verdicts_at_a_confidence_and_another_threshold():
    conf = _audit_section(fairness_report_html("t", metrics=_report_metrics(), audit=_audit_rows(), confidence=True,
                                               interval={"ci_level": 0.95}))
    assert re.findall(r"<td class=verdict-(\w+)>", conf)[:5] == ["pass", "excluded", "fail", "fail", "fail"]
    assert "lower end of the category's impact-ratio interval at 95%" in html_text(conf)
    no_ci = _audit_rows().drop(columns=["impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"])
    plain = _audit_section(fairness_report_html("t", metrics={"impact_ratio_at_10": 0.3}, audit=no_ci,
                                                confidence=True))
    assert "confidence mode asked, but this audit has no intervals" in plain and "class=ci" not in plain
    assert re.findall(r"<td class=verdict-(\w+)>", plain)[:4] == ["pass", "excluded", "pass", "fail"]
    strict = _audit_section(fairness_report_html("t", metrics={}, audit=_audit_rows(), threshold=0.95))
    assert re.findall(r"<td class=verdict-(\w+)>", strict)[:4] == ["pass", "excluded", "fail", "fail"]
    assert "impact ratio &gt;= 0.95" in strict


def test_report_without_audit_or_intervals_still_renders():
    html = fairness_report_html("t", metrics={"exposure_ratio": 0.9, "impact_ratio_at_10": 0.85})
    assert "Audit per category" not in html and "impact_ratio_at_10 = 0.850: meets four-fifths (&gt;= 0.8): yes" in html
    assert "worst category" not in html
