"""The fair_ranking evaluator: registered through the entry point, the metrics, artifacts, and
no interference with evaluations that do not ask for it."""

from __future__ import annotations

import importlib.metadata as md
import math

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.tracking.evaluation.evaluator import FairRankingEvaluator, metrics_with_counts

CONFIG = {"query": "query_id", "group": "protected", "judgment": "judgment"}


def _same_finite(got: dict, expected: dict) -> None:
    finite = {k: v for k, v in expected.items() if math.isfinite(v)}
    assert set(finite) <= set(got)
    for k, v in finite.items():
        assert got[k] == pytest.approx(v, abs=1e-12), k
    assert not [k for k in expected if not math.isfinite(expected[k]) and k in got]


def test_entry_point_registers_the_plugin():
    eps = [ep for ep in md.entry_points(group="mlflow.model_evaluator") if ep.name == "fair_ranking"]
    assert [ep.value for ep in eps] == ["fairltr.tracking.evaluation.evaluator:FairRankingEvaluator"]
    from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

    assert "fair_ranking" in _model_evaluation_registry._registry  # loaded by MLflow itself
    assert isinstance(_model_evaluation_registry.get_evaluator("fair_ranking"), FairRankingEvaluator)


@pytest.mark.parametrize("model_type, config, expected", [
    ("fair_ranking", {}, True),
    (None, CONFIG, True),
    ("regressor", {"query": "qid"}, True),  # asked for by its config keys
    ("regressor", {}, False),
    ("classifier", {"log_model_explainability": False}, False),
    (None, None, False),
])
def test_can_evaluate_only_when_asked(model_type, config, expected):
    assert FairRankingEvaluator.can_evaluate(model_type=model_type, evaluator_config=config) is expected


def test_evaluate_logged_ranker(mlflow_tracking, tiny_rankings):
    import mlflow

    from fairltr.tracking import log_ranker_model

    train, test = tiny_rankings
    model = DELTR(gamma=0.0, max_iter=25).fit(train)
    mlflow.set_experiment("test-evaluator")
    with mlflow.start_run():
        uri = log_ranker_model(model, input_example=train).model_uri
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(uri, test, model_type="fair_ranking", evaluators=["fair_ranking"],
                                        evaluator_config={"fair_ranking": CONFIG})
    expected = evaluate_ranking(test, model.predict(test))
    _same_finite(metrics_with_counts(result), expected)
    logged = mlflow.MlflowClient().get_run(run.info.run_id)
    assert logged.data.metrics["exposure_ratio"] == pytest.approx(expected["exposure_ratio"])
    # counts are a table, not metrics: neither the run nor the result (which MLflow also logs
    # on the evaluated logged model) lists them
    assert not any(k.endswith("_n_queries") for k in [*logged.data.metrics, *result.metrics])
    assert list(logged.data.metrics)[:2] == ["exposure_ratio", "exposure_disparity"]
    names = {f.path for f in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert {"exposure_by_position.png", "fairness_report.html", "per_query_metrics.csv", "metric_counts.json"} <= names
    assert {"exposure_by_position", "fairness_report"} <= set(result.artifacts)
    per_query = result.artifacts["per_query_metrics"].content
    assert len(per_query) == test["query_id"].nunique()
    assert per_query["kendall_tau"].mean() == pytest.approx(expected["kendall_tau"])


def test_static_predictions_and_targets(mlflow_tracking, tiny_rankings):
    """Scores given as a predictions column, the judgment given as ``targets``."""
    import mlflow

    _, test = tiny_rankings
    scores = np.random.default_rng(0).normal(size=len(test))
    data = test.assign(score=scores)
    mlflow.set_experiment("test-evaluator")
    with mlflow.start_run():
        result = mlflow.models.evaluate(data=data, predictions="score", targets="judgment", model_type="fair_ranking",
                                        evaluators=["fair_ranking"],
                                        evaluator_config={"fair_ranking": {**CONFIG, "k": [3], "log_artifacts": False}})
    expected = evaluate_ranking(test, scores, k=(3,))
    _same_finite(metrics_with_counts(result), expected)
    assert "ndcg_at_10" not in result.metrics and "ndcg_at_3" in result.metrics


def test_missing_column_names_the_config(mlflow_tracking, tiny_rankings):
    import mlflow

    from fairltr.errors import DataError

    _, test = tiny_rankings
    with mlflow.start_run(), pytest.raises(DataError, match="'grp'"):
        mlflow.models.evaluate(data=test.assign(score=0.0), predictions="score", model_type="fair_ranking",
                               evaluators=["fair_ranking"], evaluator_config={"fair_ranking": {**CONFIG, "group": "grp"}})


def test_default_regressor_evaluation_unaffected(mlflow_tracking):
    """With the plugin installed, an ordinary evaluation (all evaluators) runs as before."""
    import mlflow

    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50)})
    df["y"] = 2 * df["a"] + 0.1 * rng.normal(size=50)
    mlflow.set_experiment("test-evaluator")
    with mlflow.start_run():
        result = mlflow.models.evaluate(lambda x: 2 * x["a"], df, targets="y", model_type="regressor",
                                        evaluator_config={"log_model_explainability": False})
    assert result.metrics["mean_squared_error"] == pytest.approx(float(((df["y"] - 2 * df["a"]) ** 2).mean()))
    assert not any(k.startswith("exposure") for k in result.metrics)


def test_trec_conventions_are_computed_logged_and_reported(mlflow_tracking, tiny_rankings):
    """``empty_queries="zero"`` / ``linear_ndcg`` in the config: the values of
    ``fairltr.metrics.conventions.TREC_CONVENTIONS``, the convention a param of the run and a line of
    the report; the default run names its convention too."""
    import mlflow

    from fairltr.metrics.conventions import TREC_CONVENTIONS

    _, test = tiny_rankings
    data = test.assign(score=np.random.default_rng(1).normal(size=len(test)))
    empty = data.query_id.isin(data.query_id.unique()[:2])
    data.loc[empty, "judgment"] = 0  # two queries without a relevant item
    mlflow.set_experiment("test-evaluator")
    runs = {}
    for name, extra in [("zero", {"empty_queries": "zero", "linear_ndcg": True}), ("skip", {})]:
        with mlflow.start_run() as run:
            result = mlflow.models.evaluate(data=data, predictions="score", targets="judgment", model_type="fair_ranking",
                                            evaluators=["fair_ranking"],
                                            evaluator_config={"fair_ranking": {**CONFIG, "k": [5], **extra}})
        runs[name] = (run.info.run_id, result)
    expected = evaluate_ranking(data.drop(columns="score"), data.score.to_numpy(), k=(5,), conventions=TREC_CONVENTIONS)
    zero = metrics_with_counts(runs["zero"][1])
    _same_finite(zero, expected)
    assert zero["ndcg_at_5_n_queries"] == data.query_id.nunique() and "ndcg_linear_at_5" in zero
    skip = metrics_with_counts(runs["skip"][1])
    assert skip["ndcg_at_5_n_queries"] == data.query_id.nunique() - 2 and "ndcg_linear_at_5" not in skip
    assert skip["ndcg_at_5"] > zero["ndcg_at_5"]
    client = mlflow.MlflowClient()
    for name, (run_id, _) in runs.items():
        assert client.get_run(run_id).data.params["empty_queries"] == name
        report = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="fairness_report.html")
        text = open(report, encoding="utf-8").read()
        assert f"empty_queries={name}" in text
