"""``evaluate-model`` and ``promote`` of a registered retriever never encode the corpus: the model
carries its document index (``index.safetensors``, built once by ``train dpr`` through the
corpus-embedding cache), so its encoder sees the evaluated queries only, and a second evaluation
of the same model and corpus encodes exactly what the first did (no corpus, nothing to cache)."""

from __future__ import annotations

import uuid

import pytest
from click.testing import CliRunner

from fairltr.cli import cli


@pytest.fixture
def registered(mlflow_tracking, retriever_package):
    import mlflow

    from fairltr.tracking.models.retriever import log_retriever_model

    name = f"retriever-enc-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-retriever-corpus-encoding")
    with mlflow.start_run():
        log_retriever_model(retriever_package, register=name)
    return name


def test_evaluate_model_and_promote_encode_the_queries_only(registered, retrieval_dir, monkeypatch):
    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.models.retriever_encoder import RetrieverEncoder
    import fairltr.workflows.retriever as workflow

    encoded: list[str] = []
    real_encode = RetrieverEncoder.encode

    def counting_encode(self, texts):
        encoded.extend(texts)
        return real_encode(self, texts)

    def no_corpus_encoding(*args, **kwargs):
        raise AssertionError("the corpus was encoded")

    monkeypatch.setattr(RetrieverEncoder, "encode", counting_encode)
    monkeypatch.setattr(workflow, "encode_corpus", no_corpus_encoding)
    data = read_parallel_data(retrieval_dir)
    test_queries = sorted(data.split("test").queries["text"])
    corpus_texts = set(data.corpus["text"]) - set(data.queries["text"])
    assert corpus_texts  # the check below could not tell the corpus from the queries otherwise

    runner = CliRunner()
    per_call = []
    for _ in range(2):
        before = len(encoded)
        res = runner.invoke(cli, ["evaluate-model", "--model-uri", f"models:/{registered}/1",
                                  "--data", str(retrieval_dir)])
        assert res.exit_code == 0, res.output
        assert "encoding" not in res.output
        per_call.append(sorted(encoded[before:]))
    before = len(encoded)
    res = runner.invoke(cli, ["promote", "--model", registered, "--version", "1", "--data", str(retrieval_dir),
                              "--gate", "mrc_at_5>=-100"])
    assert res.exit_code == 0, res.output
    per_call.append(sorted(encoded[before:]))
    assert per_call == [test_queries] * 3  # each call: the test split's queries, once each
    assert not corpus_texts & set(encoded)
