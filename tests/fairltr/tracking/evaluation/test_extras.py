"""MLflow's ``extra_metrics`` and ``custom_artifacts`` through ``mlflow.models.evaluate`` with the
fair_ranking and fair_retrieval evaluators (real MLflow server): the values against independent
loops, in the result and in the run; one-line errors for what cannot be honoured."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError

CONFIG = {"query": "query_id", "group": "protected", "judgment": "judgment"}


def _top1_relevant(predictions, targets, query_id):
    """Share of queries whose top-scored item is relevant (a data column by parameter name)."""
    frame = pd.DataFrame({"s": predictions.to_numpy(), "t": targets.to_numpy(), "q": query_id.to_numpy()})
    top = frame.sort_values("s", ascending=False, kind="stable").groupby("q", sort=False).head(1)
    return float((top["t"] > 0).mean())


def _loop_top1_relevant(test: pd.DataFrame, scores: np.ndarray) -> float:
    hits = []
    for q in pd.unique(test["query_id"]):
        rows = np.flatnonzero(test["query_id"].to_numpy() == q)
        best = rows[int(np.argmax(scores[rows]))]
        hits.append(float(test["judgment"].to_numpy()[best] > 0))
    return sum(hits) / len(hits)


def _evaluate(data, **kw):
    import mlflow

    return mlflow.models.evaluate(data=data, predictions="score", targets="judgment", model_type="fair_ranking",
                                  evaluators=["fair_ranking"], **kw)


def test_ranking_extra_metrics_and_custom_artifacts_in_result_and_run(mlflow_tracking, tiny_rankings, tmp_path):
    import mlflow
    from mlflow.metrics import MetricValue
    from mlflow.models.evaluation.artifacts import CsvEvaluationArtifact, JsonEvaluationArtifact

    _, test = tiny_rankings
    scores = np.random.default_rng(3).normal(size=len(test))
    precision = mlflow.models.make_metric(eval_fn=_top1_relevant, greater_is_better=True, name="top1_relevant")
    twice = mlflow.models.make_metric(  # the legacy (eval_df, builtin_metrics) signature
        eval_fn=lambda eval_df, builtin_metrics: 2 * builtin_metrics["ndcg_at_10"], greater_is_better=True,
        name="twice_ndcg")
    spread = mlflow.models.make_metric(  # a MetricValue with two aggregates, one named like the metric
        eval_fn=lambda predictions, metrics: MetricValue(aggregate_results={
            "score_spread": float(predictions.max() - predictions.min()),
            "ratio_seen": metrics["exposure_ratio"].aggregate_results["exposure_ratio"]}),
        greater_is_better=False, name="score_spread")

    def top_rows(eval_df, builtin_metrics, artifacts_dir):
        best = eval_df.sort_values("prediction", ascending=False, kind="stable").groupby("query_id").head(1)
        note = Path(artifacts_dir) / "note.txt"
        note.write_text(f"top1_relevant={builtin_metrics['top1_relevant']:.6f}")
        return {"top_rows": best.sort_values("query_id").reset_index(drop=True),
                "summary": {"n_queries": int(eval_df["query_id"].nunique())}, "note": str(note)}

    mlflow.set_experiment("test-evaluator-extras")
    with mlflow.start_run() as run:
        result = _evaluate(test.assign(score=scores), extra_metrics=[precision, twice, spread],
                           custom_artifacts=[top_rows],
                           evaluator_config={"fair_ranking": {**CONFIG, "log_artifacts": False}})
    expected_p1 = _loop_top1_relevant(test, scores)
    assert result.metrics["top1_relevant"] == pytest.approx(expected_p1, abs=1e-12)
    assert result.metrics["twice_ndcg"] == pytest.approx(2 * result.metrics["ndcg_at_10"], abs=1e-12)
    assert result.metrics["score_spread"] == pytest.approx(float(scores.max() - scores.min()), abs=1e-12)
    assert result.metrics["score_spread/ratio_seen"] == pytest.approx(result.metrics["exposure_ratio"], abs=1e-12)
    logged = mlflow.MlflowClient().get_run(run.info.run_id).data.metrics
    for key in ("top1_relevant", "twice_ndcg", "score_spread", "score_spread/ratio_seen"):
        assert logged[key] == pytest.approx(result.metrics[key], abs=1e-12), key

    assert isinstance(result.artifacts["top_rows"], CsvEvaluationArtifact)
    top = result.artifacts["top_rows"].content
    assert len(top) == test["query_id"].nunique()
    for _, row in top.iterrows():  # each row holds its query's highest score
        assert row["prediction"] == pytest.approx(scores[test["query_id"].to_numpy() == row["query_id"]].max())
    assert isinstance(result.artifacts["summary"], JsonEvaluationArtifact)
    assert result.artifacts["summary"].content == {"n_queries": int(test["query_id"].nunique())}
    assert result.artifacts["note"].content == f"top1_relevant={expected_p1:.6f}"
    names = {f.path for f in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    assert {"top_rows.csv", "summary.json", "note.txt"} <= names
    local = mlflow.artifacts.download_artifacts(run_id=run.info.run_id, artifact_path="summary.json",
                                                dst_path=str(tmp_path))
    assert json.loads(Path(local).read_text()) == {"n_queries": int(test["query_id"].nunique())}


def test_ranking_extras_respect_the_metric_prefix(mlflow_tracking, tiny_rankings):
    import mlflow

    _, test = tiny_rankings
    precision = mlflow.models.make_metric(eval_fn=_top1_relevant, greater_is_better=True, name="top1_relevant")
    with mlflow.start_run():
        result = _evaluate(test.assign(score=np.arange(len(test), dtype=float)), extra_metrics=[precision],
                           evaluator_config={"fair_ranking": {**CONFIG, "metric_prefix": "test_",
                                                              "log_artifacts": False}})
    assert "test_top1_relevant" in result.metrics and "top1_relevant" not in result.metrics


@pytest.mark.parametrize("metric_fn, name, message", [
    (lambda predictions, nowhere: 1.0, "odd", "needs parameter 'nowhere'"),
    (lambda predictions: 0.5, "ndcg_at_10", "would replace the evaluator's metric 'ndcg_at_10'"),
    (lambda predictions: "high", "wordy", "returned str; expected a number"),
])
def test_ranking_extra_metric_errors_are_one_line(mlflow_tracking, tiny_rankings, metric_fn, name, message):
    import mlflow

    _, test = tiny_rankings
    metric = mlflow.models.make_metric(eval_fn=metric_fn, greater_is_better=True, name=name)
    with mlflow.start_run(), pytest.raises(ConfigError, match=message) as err:
        _evaluate(test.assign(score=0.0), extra_metrics=[metric],
                  evaluator_config={"fair_ranking": {**CONFIG, "log_artifacts": False}})
    assert "\n" not in str(err.value)


def test_custom_artifact_that_cannot_be_written_is_one_line(mlflow_tracking, tiny_rankings):
    import mlflow

    _, test = tiny_rankings
    with mlflow.start_run(), pytest.raises(ConfigError, match="'blob' is a object") as err:
        _evaluate(test.assign(score=0.0), custom_artifacts=[lambda eval_df, metrics, tmp: {"blob": object()}],
                  evaluator_config={"fair_ranking": {**CONFIG, "log_artifacts": False}})
    assert "\n" not in str(err.value)
    with mlflow.start_run(), pytest.raises(ConfigError, match="'fairness_report' has the name of another artifact"):
        _evaluate(test.assign(score=0.0), custom_artifacts=[lambda eval_df, metrics, tmp: {"fairness_report": "{}"}],
                  evaluator_config={"fair_ranking": CONFIG})


def test_retrieval_extra_metric_and_custom_artifact(mlflow_tracking, retriever_package, retrieval_dir):
    """The retrieval eval_df holds one row per query: the retrieved ids by rank and the relevant ids."""
    import mlflow

    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.models.retriever import log_retriever_model

    def hit_at_1(predictions, targets):
        return float(np.mean([bool(p) and p[0] in set(t) for p, t in zip(predictions, targets)]))

    def per_query(eval_df, builtin_metrics, artifacts_dir):
        return {"first_hits": eval_df.assign(first=[p[0] if p else "" for p in eval_df["prediction"]])
                [["query_id", "lang", "first"]]}

    data = read_parallel_data(retrieval_dir).split("test")
    mlflow.set_experiment("test-retrieval-extras")
    with mlflow.start_run():
        uri = log_retriever_model(retriever_package).model_uri
    model = mlflow.pyfunc.load_model(uri)
    queries = data.queries.rename(columns={"_id": "query_id"})
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(
            model, queries, model_type="fair_retrieval", evaluators=["fair_retrieval"],
            extra_metrics=[mlflow.models.make_metric(eval_fn=hit_at_1, greater_is_better=True, name="hit_at_1")],
            custom_artifacts=[per_query],
            evaluator_config={"fair_retrieval": {"qrels": data.qrels, "k": 5, "mrc_k": 3, "log_artifacts": False}})
    top = model.predict(queries[["query_id", "text", "lang"]], params={"k": 1})
    first = dict(zip(top["query_id"].astype(str), top["doc_id"].astype(str)))
    relevant = data.qrels.groupby("parallel_id")["corpus_id"].agg(set)
    expected = np.mean([first.get(str(q)) in relevant[p] for q, p in zip(queries["query_id"], queries["parallel_id"])])
    assert result.metrics["hit_at_1"] == pytest.approx(float(expected), abs=1e-12)
    assert mlflow.MlflowClient().get_run(run.info.run_id).data.metrics["hit_at_1"] == pytest.approx(float(expected))
    table = result.artifacts["first_hits"].content
    assert dict(zip(table["query_id"].astype(str), table["first"].astype(str))) == first
    assert {f.path for f in mlflow.MlflowClient().list_artifacts(run.info.run_id)} == {"first_hits.csv"}
