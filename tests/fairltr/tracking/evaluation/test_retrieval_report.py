"""The retriever's verdict, run/version description and HTML report (fairltr.tracking.evaluation.retrieval_report)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

from fairltr.tracking.evaluation.retrieval_report import (retrieval_description, retrieval_report_html, retrieval_verdict,
                                               worst_pair)

LANGS = ["de", "en", "fi"]


def _metrics(mrc: float = -23.4) -> dict:
    matrix = pd.DataFrame([[100.0, -10.0, -41.5], [-10.0, 100.0, -18.0], [-41.5, -18.0, 100.0]], index=LANGS,
                          columns=LANGS)
    per_language = pd.DataFrame({"mrr_at_100": [30.0, 41.0, 12.5], "recall_at_100": [80.0, 90.0, 60.0]}, index=LANGS)
    return {"mrr_at_100": 27.8, "recall_at_100": 76.7, "mrc_at_5": mrc, "mrc_at_5_intersection": 5.0,
            "overlap_at_5": 30.0, "rbo_at_5": 40.0, "per_language": per_language.to_dict(),
            "mrc_matrix": matrix.to_dict()}


def test_worst_pair_is_the_lowest_off_diagonal_cell():
    rng = np.random.default_rng(3)
    for _ in range(20):
        n = int(rng.integers(2, 7))
        values = rng.uniform(-100, 100, (n, n))
        names = [f"l{i}" for i in range(n)]
        a, b, v = worst_pair(pd.DataFrame(values, index=names, columns=names))
        brute = min(((names[i], names[j], values[i, j]) for i, j in itertools.product(range(n), range(n)) if i != j),
                    key=lambda t: t[2])
        assert (a, b) == brute[:2] and v == brute[2]
    assert worst_pair(None) is None


def test_the_verdict_names_mrc_the_worst_pair_mrr_and_concludes():
    lines = retrieval_verdict(_metrics())
    assert lines[0].startswith("MRC@5 = -23.4")
    assert lines[1] == "least consistent language pair: de-fi (MRC@5 -41.5)"
    assert lines[2] == "MRR@100 = 27.8 (x100, relevance); lowest language: fi (12.5)"
    assert lines[3].startswith("Conclusion: not consistent across languages")
    assert retrieval_verdict(_metrics(62.0))[-1].startswith("Conclusion: largely consistent")
    assert retrieval_verdict(_metrics(20.0))[-1].startswith("Conclusion: partly consistent")


def test_the_description_lists_every_training_parameter_once():
    params = {"fairness_loss": "lakda_kl", "alpha": 0.5, "steps": 20}
    text = retrieval_description("ddtp-retriever v1", _metrics(), params=params, split="test")
    assert text.startswith("**ddtp-retriever v1** on the test split")
    assert "- least consistent language pair: de-fi" in text and "Conclusion:" in text
    assert text.count("alpha=0.5") == 1 and "steps=20" in text


def test_the_html_report_has_the_tables_axis_titles_scale_and_conclusion():
    page = retrieval_report_html("DPR retriever", _metrics(), params={"alpha": 0.5})
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    for fragment in ("Per query language", "query language \\ parallel", "Colour scale", "least consistent",
                     "Conclusion: not consistent", "<td style='background:", "-41.5", "Training parameters"):
        assert fragment in page, fragment


def test_the_report_shows_query_counts_as_integers_and_no_all_row_metric_is_logged():
    from fairltr.tracking.job_logging.retrieval_logging import _flat_metrics

    metrics = _metrics()
    per_language = pd.DataFrame({"mrr_at_100": [30.0, 41.0, 12.5, 27.8], "n_queries": [50.0, 50.0, 50.0, 150.0]},
                                index=[*LANGS, "all"])
    metrics["per_language"] = per_language.to_dict()
    page = retrieval_report_html("DPR retriever", metrics)
    assert "<td>150</td>" in page and "<td>50</td>" in page and "<td>50.0</td>" not in page
    assert "<td>12.5</td>" in page  # the other columns keep their decimal
    flat = _flat_metrics(metrics)
    assert flat["mrr_at_100/fi"] == 12.5 and flat["n_queries/de"] == 50.0
    assert not [key for key in flat if key.endswith("/all")]  # mrr_at_100/all would repeat mrr_at_100
