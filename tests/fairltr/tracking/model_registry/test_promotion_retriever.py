"""``fairltr promote`` of a registered retriever on a parallel-query folder: the evaluator follows
the verified model's kind (fair_retrieval), the gates read mrc_at_5 / mrr_at_100, the champion
round-trips through ``models:/NAME@champion`` with the same top-k as the in-process model, and a
failing MRC gate leaves the alias untouched (exit 1)."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.tracking.model_registry import decision_record


@pytest.fixture
def retrievers(mlflow_tracking, retriever_package, tiny_bert, retrieval_dir, tmp_path):
    """Registered model with v1 = the mean-pooled package and v2 = a cls-pooled one."""
    import mlflow

    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.models.retriever import build_retriever_package, log_retriever_model

    corpus = read_parallel_data(retrieval_dir).corpus
    cls_package = build_retriever_package(tmp_path / "cls", query_encoder=tiny_bert, corpus=corpus, pooling="cls",
                                          normalize=True, max_query_length=16, max_doc_length=24)
    name = f"retriever-promo-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-promotion-retriever")
    for package in (retriever_package, cls_package):
        with mlflow.start_run():
            log_retriever_model(package, register=name)
    return name, {"1": retriever_package, "2": cls_package}


def _values(name: str, version: str) -> dict:
    import mlflow

    from fairltr.tracking.model_registry import decision_record

    return decision_record(mlflow.MlflowClient().get_model_version(name, version).tags)["values"]


def test_retriever_promotion_round_trip_and_failing_mrc_gate(retrievers, retrieval_dir):
    import mlflow

    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.model_registry import current_champion
    from fairltr.tracking.models.retriever import FairltrRetriever

    name, packages = retrievers
    client = mlflow.MlflowClient()
    runner = CliRunner()
    first = runner.invoke(cli, ["promote", "--model", name, "--version", "1", "--data", str(retrieval_dir),
                                "--gate", "mrc_at_5>=-100", "--gate", "mrr_at_100>=champion-1"])
    assert first.exit_code == 0, first.output
    assert current_champion(client, name) == "1"
    values = _values(name, "1")
    assert set(values) == {"mrc_at_5", "mrr_at_100"} and all(v is not None for v in values.values())
    tags = client.get_model_version(name, "1").tags
    assert tags["fairltr.promotion.verdict"] == "promoted" and decision_record(tags)["digest"].startswith("sha256:")
    run = client.get_run(tags["fairltr.promotion.evaluation_run"])
    assert run.info.status == "FINISHED" and run.data.params["gates"] == "mrc_at_5>=-100 ; mrr_at_100>=champion-1"

    # the champion served from the registry ranks exactly like the in-process model
    queries = read_parallel_data(retrieval_dir).split("test").queries.rename(columns={"_id": "query_id"})
    queries = queries[["query_id", "text", "lang"]].reset_index(drop=True)
    served = mlflow.pyfunc.load_model(f"models:/{name}@champion").predict(queries, params={"k": 5})
    local = FairltrRetriever(packages["1"]).predict(None, queries, params={"k": 5})
    pd.testing.assert_frame_equal(served[["query_id", "doc_id", "rank"]].reset_index(drop=True),
                                  local[["query_id", "doc_id", "rank"]].reset_index(drop=True))
    assert served["score"].to_numpy() == pytest.approx(local["score"].to_numpy(), abs=1e-6)

    # a failing MRC gate: exit 1, alias untouched, the decision recorded with the value
    bound = round(values["mrc_at_5"] + 150.0, 3)  # MRC@5 (a rank correlation x 100) is at most 100
    second = runner.invoke(cli, ["promote", "--model", name, "--version", "2", "--data", str(retrieval_dir),
                                 "--gate", f"mrc_at_5>={bound}", "--gate", "mrr_at_100>=champion-1"])
    assert second.exit_code == 1, second.output
    assert f"  FAIL mrc_at_5>={bound}" in second.output and second.output.count(f"FAIL mrc_at_5>={bound}") == 1
    assert current_champion(client, name) == "1"
    tags2 = client.get_model_version(name, "2").tags
    assert tags2["fairltr.promotion.verdict"] == "rejected" and decision_record(tags2)["champion_after"] == "1"
    assert decision_record(tags2)["champion_values"]["mrr_at_100"] == pytest.approx(values["mrr_at_100"])


def test_data_must_fit_the_kind(retrievers, tiny_rankings, tmp_path):
    name, _ = retrievers
    csv = tmp_path / "test.csv"
    tiny_rankings[1].to_csv(csv, index=False)
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "1", "--data", str(csv),
                                      "--gate", "mrr_at_100>=0"])
    assert result.exit_code == 1 and "is a retriever: --data must be a parallel-query folder" in result.output
    assert "Traceback" not in result.output
