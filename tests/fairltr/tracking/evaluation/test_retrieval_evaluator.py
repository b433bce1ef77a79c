"""The fair_retrieval evaluator: registered through the entry point, metrics equal to evaluate_run
on an independently computed run, every query language (also one absent from training), the
languages filter, artifacts, and no interference with evaluations that do not ask for it."""

from __future__ import annotations

import importlib.metadata as md
import json
import math

import pandas as pd
import pytest
import torch

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval import evaluate_run, read_parallel_data, retrieve
from fairltr.tracking.evaluation.retrieval_evaluator import FairRetrievalEvaluator, retrieval_metric_dict

LANGS = ["de", "en", "fr", "xx"]


@pytest.fixture(scope="module")
def independent_run(tiny_bert, retrieval_dir):
    """Top-100 of every query by BiEncoderModule's own encoders and ``retrieve`` (no package code)."""
    from lightning_modules import BiEncoderModule

    data = read_parallel_data(retrieval_dir)
    m = BiEncoderModule(tiny_bert, pooling="mean", normalize=True, max_query_length=16, max_doc_length=24).eval()
    with torch.no_grad():
        d = m.encode_documents(data.corpus["text"].tolist())
        q = m.encode_queries(data.queries["text"].tolist())
    return retrieve(q, d, data.queries["_id"].tolist(), data.corpus["_id"].tolist(), 100)


def _expected(run, data, langs=None, k=100, mrc_k=5) -> dict:
    sub = data.split("test")
    if langs is not None:
        q = sub.queries[sub.queries["lang"].isin(langs)].reset_index(drop=True)
        sub = type(sub)(sub.corpus, q, sub.qrels)
    run = {qid: run[qid] for qid in sub.queries["_id"]}
    result = evaluate_run(run, sub, k=k, mrc_k=mrc_k)
    per = result["per_language"]
    out = {key: result[key] for key in (f"mrr_at_{k}", f"recall_at_{k}", f"mrc_at_{mrc_k}",
                                         f"mrc_at_{mrc_k}_intersection", f"overlap_at_{mrc_k}", f"rbo_at_{mrc_k}")}
    for lang in per.index.drop("all"):
        out[f"mrr_at_{k}/{lang}"] = per.loc[lang, f"mrr_at_{k}"]
        out[f"recall_at_{k}/{lang}"] = per.loc[lang, f"recall_at_{k}"]
        out[f"n_queries/{lang}"] = per.loc[lang, "n_queries"]
        others = [result["mrc_matrix"].loc[lang, b] for b in per.index.drop(["all", lang])]
        out[f"mrc_at_{mrc_k}/{lang}"] = sum(others) / len(others)  # the language's row mean, by hand
    return out


def _same(got: dict, expected: dict) -> None:
    assert set(got) == set(expected), sorted(set(got) ^ set(expected))
    for key, value in expected.items():
        assert got[key] == pytest.approx(float(value), abs=1e-9), key


def test_entry_point_registers_the_plugin():
    eps = [ep for ep in md.entry_points(group="mlflow.model_evaluator") if ep.name == "fair_retrieval"]
    assert [ep.value for ep in eps] == ["fairltr.tracking.evaluation.retrieval_evaluator:FairRetrievalEvaluator"]
    from mlflow.models.evaluation.evaluator_registry import _model_evaluation_registry

    assert "fair_retrieval" in _model_evaluation_registry._registry  # loaded by MLflow itself
    assert isinstance(_model_evaluation_registry.get_evaluator("fair_retrieval"), FairRetrievalEvaluator)


@pytest.mark.parametrize("model_type, config, expected", [
    ("fair_retrieval", {}, True),
    (None, {"data_dir": "x"}, True),
    ("regressor", {"qrels": pd.DataFrame()}, True),  # asked for by its config keys
    ("regressor", {}, False),
    ("fair_ranking", {"query": "query_id", "group": "g", "judgment": "j"}, False),
    ("classifier", {"log_model_explainability": False}, False),
    (None, None, False),
])
def test_can_evaluate_only_when_asked(model_type, config, expected):
    assert FairRetrievalEvaluator.can_evaluate(model_type=model_type, evaluator_config=config) is expected


def test_evaluate_logged_retriever(mlflow_tracking, retriever_package, retrieval_dir, independent_run):
    import mlflow

    from fairltr.tracking.models.retriever import log_retriever_model

    data = read_parallel_data(retrieval_dir)
    assert "xx" not in set(data.split("train").queries["lang"])  # a language training never saw
    mlflow.set_experiment("test-retrieval-evaluator")
    with mlflow.start_run():
        uri = log_retriever_model(retriever_package).model_uri
    model = mlflow.pyfunc.load_model(uri)
    queries = data.queries.rename(columns={"_id": "query_id"})  # every split; the config picks one
    with mlflow.start_run() as run:
        result = mlflow.models.evaluate(model, queries, model_type="fair_retrieval", evaluators=["fair_retrieval"],
                                        evaluator_config={"fair_retrieval": {"data_dir": str(retrieval_dir),
                                                                             "split": "test"}})
    expected = _expected(independent_run, data)
    _same(result.metrics, expected)
    assert {k.split("/")[1] for k in result.metrics if k.startswith("mrr_at_100/")} == set(LANGS)
    client = mlflow.MlflowClient()
    logged = client.get_run(run.info.run_id).data.metrics
    assert {k: logged[k] for k in expected} == pytest.approx({k: float(v) for k, v in expected.items()})
    names = {f.path for f in client.list_artifacts(run.info.run_id)}
    assert {"mrc_matrix.png", "mrc_matrix.csv", "per_language_metrics.csv", "doc_language_share.csv",
            "retrieval_report.json"} <= names
    per_lang = result.artifacts["per_language_metrics"].content
    assert per_lang.set_index("lang").loc["xx", "n_queries"] == 4
    share = result.artifacts["doc_language_share"].content.set_index("query_lang")
    assert share.sum(axis=1).round(9).eq(100.0).all() and set(share.index) == set(LANGS)
    report = result.artifacts["retrieval_report"].content
    assert report["k"] == 100 and report["languages"] == LANGS and report["metrics"]["mrr_at_100"] == result.metrics["mrr_at_100"]

    # qrels from the config instead of a folder; document languages from the model's own index;
    # a language filter; other cut-offs (k and mrc_k follow into the key names)
    test = data.split("test")
    with mlflow.start_run():
        filtered = mlflow.models.evaluate(
            model, test.queries.rename(columns={"_id": "query_id"}), model_type="fair_retrieval",
            evaluators=["fair_retrieval"],
            evaluator_config={"fair_retrieval": {"qrels": test.qrels, "languages": ["de", "xx"], "k": 6, "mrc_k": 3,
                                                 "log_artifacts": False}})
    _same(filtered.metrics, _expected(independent_run, data, langs=["de", "xx"], k=6, mrc_k=3))
    assert filtered.artifacts == {}


def test_single_language_leaves_cross_language_metrics_out(mlflow_tracking, retriever_package, retrieval_dir,
                                                           independent_run):
    """One query language: MRC, overlap and RBO are undefined, so neither logged nor returned;
    ``evaluate_retriever`` runs nested in an active run."""
    import mlflow

    from fairltr.retrieval import retrieval_metrics
    from fairltr.tracking.evaluation.retrieval_evaluator import evaluate_retriever
    from fairltr.tracking.models.retriever import log_retriever_model

    data = read_parallel_data(retrieval_dir)
    mlflow.set_experiment("test-retrieval-evaluator")
    with mlflow.start_run() as parent:
        uri = log_retriever_model(retriever_package).model_uri
        metrics, run_id = evaluate_retriever(uri, retrieval_dir, split="test", languages=["fr"], k=10, run_name="fr")
    test = data.split("test")
    q = test.queries[test.queries["lang"] == "fr"]
    per = retrieval_metrics({qid: independent_run[qid][:10] for qid in q["_id"]}, q, test.qrels, 10)
    assert metrics == pytest.approx({"mrr_at_10": per.loc["all", "mrr_at_10"], "recall_at_10": per.loc["all", "recall_at_10"],
                                     "mrr_at_10/fr": per.loc["fr", "mrr_at_10"], "recall_at_10/fr": per.loc["fr", "recall_at_10"],
                                     "n_queries/fr": 4.0})
    child = mlflow.MlflowClient().get_run(run_id)
    assert child.data.tags["mlflow.parentRunId"] == parent.info.run_id
    assert child.data.params["languages"] == "fr" and child.data.params["k"] == "10"
    assert not [k for k in child.data.metrics if k.startswith(("mrc", "overlap", "rbo"))]
    assert all(math.isfinite(v) for v in child.data.metrics.values())
    names = {f.path for f in mlflow.MlflowClient().list_artifacts(run_id)}
    assert "mrc_matrix.png" not in names and "retrieval_report.json" in names
    report = json.loads(mlflow.artifacts.load_text(f"runs:/{run_id}/retrieval_report.json"))
    assert report["mrc_matrix"] is None and report["languages"] == ["fr"]


def test_bad_configs_are_clear_errors(retriever_package, retrieval_dir):
    from fairltr.tracking.evaluation.retrieval_evaluator import retrieval_data
    from fairltr.tracking.models.retriever import FairltrRetriever

    data = read_parallel_data(retrieval_dir)
    queries = data.queries.rename(columns={"_id": "query_id"})
    with pytest.raises(ConfigError, match="give the relevance judgments"):
        retrieval_data(queries, {})
    with pytest.raises(DataError, match=r"language\(s\) \['it'\] not among"):
        retrieval_data(queries, {"data_dir": str(retrieval_dir), "languages": ["it"]})
    with pytest.raises(DataError, match="no query in split 'dev'"):
        retrieval_data(queries, {"data_dir": str(retrieval_dir), "split": "dev"})
    with pytest.raises(DataError, match="has no relevant document"):
        retrieval_data(queries, {"qrels": data.qrels.iloc[1:]})
    with pytest.raises(DataError, match=r"lack column\(s\) \['parallel_id'\]"):
        retrieval_data(queries.drop(columns=["parallel_id"]), {"qrels": data.qrels})
    # missing columns are filled from the folder's queries
    filled = retrieval_data(queries[["query_id", "text"]], {"data_dir": str(retrieval_dir), "split": "test"})
    assert len(filled.queries) == 16 and set(filled.queries["lang"]) == set(LANGS)
    # the model's index gives the document languages when only qrels are given
    model = FairltrRetriever(retriever_package)
    from_index = retrieval_data(queries, {"qrels": data.qrels}, model=None)
    assert set(from_index.corpus["lang"]) == {"unknown"}

    class Wrapped:  # what mlflow.pyfunc.load_model returns: unwrap_python_model() gives the retriever
        def unwrap_python_model(self):
            return model

    with_langs = retrieval_data(queries, {"qrels": data.qrels}, model=Wrapped())
    assert with_langs.corpus.set_index("_id")["lang"].to_dict() == data.corpus.set_index("_id")["lang"].to_dict()
    with pytest.raises(ConfigError, match="mrc_k .* must be <= k"):
        FairRetrievalEvaluator().evaluate(model_type="fair_retrieval", dataset=None,
                                          evaluator_config={"qrels": data.qrels, "k": 3, "mrc_k": 5})


def test_metric_dict_drops_undefined_values():
    per = pd.DataFrame({"mrr_at_100": [50.0, float("nan")], "recall_at_100": [1.0, 2.0], "n_queries": [3, 0]},
                       index=["de", "all"])
    got = retrieval_metric_dict({"mrr_at_100": float("nan"), "recall_at_100": 1.5, "per_language": per,
                                 "mrc_matrix": None}, k=100, mrc_k=5)
    assert got == {"recall_at_100": 1.5, "mrr_at_100/de": 50.0, "recall_at_100/de": 1.0, "n_queries/de": 3.0}
