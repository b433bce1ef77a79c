"""Parity metrics through the fair_ranking evaluator plugin (real MLflow server): the new keys,
the per-query table, the report's direction labels, and gates checked on the evaluated metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from fairltr import evaluate_ranking
from fairltr.metrics import exposure_disparity, exposure_shortfall
from fairltr.gates import check_gates, parse_gate
from fairltr.tracking.evaluation.report import fairness_report_html

CONFIG = {"query": "query_id", "group": "protected", "judgment": "judgment"}


def test_evaluator_reports_parity_metrics(mlflow_tracking, tiny_rankings):
    import mlflow

    _, test = tiny_rankings
    scores = test["x1"].to_numpy() + 0.3 * test["protected"].to_numpy()
    mlflow.set_experiment("test-parity")
    with mlflow.start_run():
        result = mlflow.models.evaluate(data=test.assign(score=scores), predictions="score", model_type="fair_ranking",
                                        evaluators=["fair_ranking"],
                                        evaluator_config={"fair_ranking": {**CONFIG, "k": [5, 10]}})
    from fairltr.tracking.evaluation.evaluator import metrics_with_counts

    assert not any(k.endswith("_n_queries") for k in result.metrics)  # counts are a table, not metrics
    m = metrics_with_counts(result)
    expected = evaluate_ranking(test, scores, k=(5, 10))
    assert {k: v for k, v in m.items() if k.endswith("_n_queries")} == {
        k: v for k, v in expected.items() if k.endswith("_n_queries") and math.isfinite(v)}
    for key in ("exposure_disparity", "exposure_shortfall", "selection_ratio_at_5", "selection_ratio_at_10",
                "selection_ratio_at_10_n_queries"):
        assert m[key] == pytest.approx(expected[key], abs=1e-12), key
    assert m["exposure_disparity"] == pytest.approx(exposure_disparity(m["exposure_ratio"]))
    assert m["exposure_shortfall"] == pytest.approx(exposure_shortfall(m["exposure_ratio"]))

    per_query = result.artifacts["per_query_metrics"].content
    for col in ("selection_ratio_at_10", "exposure_disparity", "exposure_shortfall"):
        assert col in per_query.columns
    np.testing.assert_allclose(per_query["exposure_disparity"],
                               [exposure_disparity(float(r)) for r in per_query["exposure_ratio"]], equal_nan=True)
    assert per_query["selection_ratio_at_10"].mean() == pytest.approx(m["selection_ratio_at_10"])

    # the gate language on what the evaluator returned
    # (the four_fifths preset reads the audit's impact_ratio_at_10: tests/fairltr/tracking/evaluation/test_evaluator_audit.py)
    gates = [parse_gate("selection_ratio_at_10>=0.8"), parse_gate("0.8<=exposure_ratio<=1.25"),
             parse_gate("exposure_disparity<=0.2"), parse_gate("four_fifths")]
    results = check_gates(gates, m, None)
    assert [r.passed for r in results] == [m["selection_ratio_at_10"] >= 0.8,
                                           0.8 <= m["exposure_ratio"] <= 1.25, m["exposure_disparity"] <= 0.2, False]
    assert "impact_ratio_at_10" in results[3].note and "fail closed" in results[3].note  # no audit asked: no value


def test_report_labels_come_from_the_registry():
    html = fairness_report_html("r", metrics={"exposure_ratio": 1.3, "exposure_disparity": 1 - 1 / 1.3,
                                              "selection_ratio_at_10": 0.7, "ndcg_at_10": 0.5})
    rows = {line.split("</td>")[0].split("<td>")[-1]: line for line in html.split("<tr>") if "<td>" in line}
    assert "target 1.0 (parity)" in rows["exposure_ratio"] and "higher" not in rows["exposure_ratio"]
    assert "target 1.0 (parity)" in rows["selection_ratio_at_10"]
    assert "lower is better" in rows["exposure_disparity"] and "higher is better" in rows["ndcg_at_10"]
