"""The "fairltr retriever" MLflow model: package build, predict contract, registry round trip on a
real server, loading in a Python that cannot import the installed fairltr, and the model kind."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval import read_parallel_data, topk_search
from fairltr.tracking.models.retriever import (
    FairltrRetriever, build_retriever_package, model_kind, read_retriever_index, read_retriever_settings,
)

SETTINGS = dict(pooling="mean", normalize=True, max_query_length=16, max_doc_length=24)


@pytest.fixture(scope="module")
def biencoder(tiny_bert):
    """The training-time encoder over the same tower (independent of the package's encoding code)."""
    from lightning_modules import BiEncoderModule

    return BiEncoderModule(tiny_bert, shared=True, **SETTINGS).eval()


@pytest.fixture(scope="module")
def data(retrieval_dir):
    return read_parallel_data(retrieval_dir)


def _queries(data, n: int | None = None) -> pd.DataFrame:
    q = data.queries.rename(columns={"_id": "query_id"})[["query_id", "text", "lang"]]
    return q.head(n) if n else q


def _expected(biencoder, data, queries: pd.DataFrame, k: int) -> pd.DataFrame:
    """Top-k by BiEncoderModule.encode_queries / encode_documents and a plain topk_search."""
    with torch.no_grad():
        d = biencoder.encode_documents(data.corpus["text"].tolist())
        q = biencoder.encode_queries(queries["text"].tolist())
    scores, idx = topk_search(q, d, k)
    rows = []
    for qi, qid in enumerate(queries["query_id"]):
        for r in range(idx.shape[1]):
            rows.append((qid, data.corpus["_id"].iloc[int(idx[qi, r])], r + 1, float(scores[qi, r])))
    return pd.DataFrame(rows, columns=["query_id", "doc_id", "rank", "score"])


def _same_run(got: pd.DataFrame, expected: pd.DataFrame) -> None:
    assert list(got.columns) == ["query_id", "doc_id", "rank", "score"]
    assert got["query_id"].tolist() == expected["query_id"].tolist()
    assert got["doc_id"].tolist() == expected["doc_id"].tolist()
    assert got["rank"].tolist() == expected["rank"].tolist()
    np.testing.assert_allclose(got["score"].to_numpy(np.float64), expected["score"].to_numpy(), rtol=0, atol=1e-5)


def test_lightning_pool_is_the_core_pool():
    import lightning_modules
    from fairltr.retrieval import pool

    assert lightning_modules.pool is pool


def test_package_files_settings_and_index_match_training_encoder(retriever_package, biencoder, data):
    files = sorted(p.relative_to(retriever_package).as_posix() for p in retriever_package.rglob("*") if p.is_file())
    assert {"retriever.json", "index.safetensors", "index.json", "query/model.safetensors", "query/config.json"} <= set(files)
    assert not [f for f in files if f.startswith("doc/")]  # shared towers: stored once
    assert not [f for f in files if f.endswith((".bin", ".pkl", ".pickle", ".pt"))], files
    settings = read_retriever_settings(retriever_package)
    assert {k: settings[k] for k in SETTINGS} == SETTINGS
    assert settings["shared"] is True and settings["doc_tower"] == "query" and settings["format_version"] == 1
    assert settings["n_docs"] == len(data.corpus) and settings["dim"] == 32
    emb, ids, langs = read_retriever_index(retriever_package)
    assert emb.dtype == torch.float32 and ids == data.corpus["_id"].tolist() and langs == data.corpus["lang"].tolist()
    with torch.no_grad():
        expected = biencoder.encode_documents(data.corpus["text"].tolist())
    torch.testing.assert_close(emb, expected, rtol=0, atol=1e-5)


def test_predict_equals_training_time_encoding_and_search(retriever_package, biencoder, data):
    model = FairltrRetriever(retriever_package)
    queries = _queries(data).sample(frac=1.0, random_state=0)  # any input order is kept
    got = model.predict(None, queries, params={"k": 5})
    _same_run(got, _expected(biencoder, data, queries, 5))
    default = model.predict(None, queries.head(2))  # k = 10 by default
    assert len(default) == 20 and default["rank"].tolist() == list(range(1, 11)) * 2
    cut = model.predict(None, queries.head(2), params={"k": 1000})  # k above the index size is cut
    assert len(cut) == 2 * len(data.corpus)
    assert set(cut["doc_id"][cut["query_id"] == queries["query_id"].iloc[0]]) == set(data.corpus["_id"])
    assert model.predict(None, queries.head(1), params={"k": np.int64(2)})["rank"].tolist() == [1, 2]


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "3", [2]])
def test_bad_k_is_a_config_error(retriever_package, data, k):
    model = FairltrRetriever(retriever_package)
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        model.predict(None, _queries(data, 2), params={"k": k})


@pytest.mark.parametrize("frame, match", [
    (pd.DataFrame({"query_id": ["a"], "query": ["red apple"]}), "lacks the text column"),
    (pd.DataFrame({"text": ["red apple"]}), "lacks the query_id column"),
    (pd.DataFrame({"query_id": ["a", "b"], "text": ["red apple", 3]}), r"text of query 'b' \(row 2\) is not a string"),
    (pd.DataFrame({"query_id": ["a", "b"], "text": ["red apple", None]}), "is not a string"),
    (pd.DataFrame({"query_id": pd.Series([], dtype=str), "text": pd.Series([], dtype=str)}), "no queries"),
    (pd.DataFrame({"query_id": ["a", "a"], "text": ["red", "apple"]}), "duplicate query_id 'a'"),
    ("red apple", "must be a DataFrame"),
])
def test_bad_input_is_a_data_error(retriever_package, frame, match):
    with pytest.raises(DataError, match=match):
        FairltrRetriever(retriever_package).predict(None, frame)


def test_build_validates_inputs(tiny_bert, data, tmp_path):
    corpus = data.corpus
    cases = [
        (dict(corpus=corpus.iloc[:0]), DataError, "corpus is empty"),
        (dict(corpus=pd.concat([corpus, corpus.head(1)])), DataError, "duplicate _id 'd0'"),
        (dict(corpus=corpus.drop(columns=["text"])), DataError, r"lacks column\(s\) \['text'\]"),
        (dict(corpus=corpus.assign(text=[1] * len(corpus))), DataError, "text of document 'd0'"),
        (dict(corpus=corpus, pooling="max"), ConfigError, "pooling must be one of"),
        (dict(corpus=corpus, max_doc_length=0), ConfigError, "max_doc_length must be an integer"),
        (dict(corpus=corpus, doc_embeddings=torch.zeros(3, 32)), ConfigError, "doc_embeddings must be a"),
        (dict(corpus=corpus, doc_embeddings=torch.zeros(len(corpus), 7)), ConfigError, "dim 7"),
    ]
    for i, (kw, exc, match) in enumerate(cases):
        with pytest.raises(exc, match=match):
            build_retriever_package(tmp_path / f"p{i}", query_encoder=tiny_bert, **kw)
        assert not (tmp_path / f"p{i}").exists()  # nothing half-written is left behind
    no_weights = tmp_path / "no-weights"
    no_weights.mkdir()
    (no_weights / "config.json").write_text("{}")
    (no_weights / "pytorch_model.bin").write_bytes(b"\x80")
    with pytest.raises(ConfigError, match="no safetensors weights.*pytorch_model.bin.*pickle"):
        build_retriever_package(tmp_path / "x", query_encoder=no_weights, corpus=corpus)
    with pytest.raises(ConfigError, match="document tower .* is not a directory"):
        build_retriever_package(tmp_path / "y", query_encoder=tiny_bert, doc_encoder=tmp_path / "nope", corpus=corpus)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not empty"):
        build_retriever_package(tmp_path / "full", query_encoder=tiny_bert, corpus=corpus)
    assert (tmp_path / "full" / "keep.txt").read_text() == "mine"


def _loop_mean_encode(folder: Path, texts: list[str], max_length: int) -> torch.Tensor:
    """Masked mean + L2 norm by Python loops over texts and tokens (independent of pool())."""
    from transformers import AutoModel, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
    model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()
    out = []
    with torch.no_grad():
        for text in texts:
            enc = tok([text], truncation=True, max_length=max_length, return_tensors="pt")
            hidden = model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state[0]
            v = sum(hidden[t] for t in range(hidden.shape[0])) / hidden.shape[0]
            out.append(v / v.norm())
    return torch.stack(out)


def test_separate_towers_and_given_doc_embeddings(tiny_bert, data, tmp_path):
    from transformers import AutoModel, AutoTokenizer

    doc_tower = tmp_path / "doc-tower"
    model = AutoModel.from_pretrained(tiny_bert, local_files_only=True)
    g = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.05 * torch.randn(p.shape, generator=g))
    model.save_pretrained(doc_tower)
    AutoTokenizer.from_pretrained(tiny_bert, local_files_only=True).save_pretrained(doc_tower)

    pkg = build_retriever_package(tmp_path / "sep", query_encoder=tiny_bert, doc_encoder=doc_tower,
                                  corpus=data.corpus.drop(columns=["lang"]), **SETTINGS)
    settings = read_retriever_settings(pkg)
    assert settings["shared"] is False and settings["doc_tower"] == "doc" and (pkg / "doc" / "model.safetensors").is_file()
    emb, _, langs = read_retriever_index(pkg)
    assert langs is None
    texts = data.corpus["text"].tolist()
    torch.testing.assert_close(emb, _loop_mean_encode(doc_tower, texts, 24), rtol=0, atol=1e-5)
    assert not torch.allclose(emb, _loop_mean_encode(Path(tiny_bert), texts, 24), atol=1e-3)  # the doc tower was used

    # predict: queries through the query tower, against the doc tower's index
    queries = _queries(data, 4)
    got = FairltrRetriever(pkg).predict(None, queries, params={"k": 3})
    q = _loop_mean_encode(Path(tiny_bert), queries["text"].tolist(), 16)
    scores, idx = topk_search(q, emb, 3)
    assert got["doc_id"].tolist() == [data.corpus["_id"].iloc[int(i)] for i in idx.reshape(-1)]
    np.testing.assert_allclose(got["score"].to_numpy(), scores.reshape(-1).double().numpy(), atol=1e-5)

    # a frozen tower's cached embeddings are stored as given (no re-encoding)
    cache = torch.randn(len(data.corpus), 32, generator=g)
    pkg2 = build_retriever_package(tmp_path / "cached", query_encoder=tiny_bert, doc_encoder=doc_tower,
                                   corpus=data.corpus, doc_embeddings=cache, **SETTINGS)
    assert torch.equal(read_retriever_index(pkg2)[0], cache)


@pytest.mark.slow  # about 25 s: a retriever package through the registry and a standalone load
def test_registry_round_trip_and_standalone_load(mlflow_tracking, retriever_package, biencoder, data, tmp_path,
                                                 tiny_rankings):
    import mlflow

    from fairltr import DELTR
    from fairltr.tracking import log_ranker_model, log_retriever_model

    name = f"retriever-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-retriever")
    with mlflow.start_run():
        info = log_retriever_model(retriever_package, register=name, input_example=_queries(data, 3))
    with mlflow.start_run():  # MLflow logs model_config as run params: one model kind per run
        ranker = log_ranker_model(DELTR(gamma=0.0, max_iter=3).fit(tiny_rankings[0]))
    client = mlflow.MlflowClient()
    client.set_registered_model_alias(name, "champion", info.registered_model_version)
    assert client.get_model_version(name, info.registered_model_version).tags["fairltr.kind"] == "retriever"
    assert mlflow.get_logged_model(info.model_id).tags["fairltr.kind"] == "retriever"
    assert model_kind(f"models:/{name}@champion") == "retriever" and model_kind(f"models:/{name}/1") == "retriever"
    assert model_kind(ranker.model_uri) == "ranker"

    loaded = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    queries = _queries(data)
    expected = _expected(biencoder, data, queries, 4)
    _same_run(loaded.predict(queries, params={"k": 4}), expected)
    assert len(loaded.predict(queries.head(2))) == 20  # params default k = 10 from the signature
    assert len(loaded.predict(queries[["query_id", "text"]].head(1), params={"k": 2})) == 2  # lang is optional
    with pytest.raises(Exception, match="k must be an integer >= 1"):
        loaded.predict(queries.head(1), params={"k": 0})
    assert loaded.metadata.get_input_schema().input_names() == ["query_id", "text", "lang"]
    assert [p.name for p in loaded.metadata.get_params_schema().params] == ["k"]

    local = Path(mlflow.artifacts.download_artifacts(f"models:/{name}@champion", dst_path=str(tmp_path / "model")))
    files = [p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()]
    assert any(f.startswith("artifacts/") and f.endswith("/index.safetensors") for f in files), files
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".cloudpickle", ".bin"))], files
    reqs = (local / "requirements.txt").read_text().split()
    assert {r.split("==")[0] for r in reqs} >= {"torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "mlflow"}
    assert all("==" in r for r in reqs if not r.startswith("./code/")), reqs  # pins, and the staged wheel
    mlmodel = (local / "MLmodel").read_text()
    assert "loader_module: fairltr.tracking.models.verified_loader" in mlmodel and "kind: retriever" in mlmodel

    # self-contained: a Python that cannot import the development fairltr, offline (no model hub),
    # loads it with the model's own wheel installed (what a virtualenv / uv env manager does)
    (wheel,) = (local / "code").glob("fairltr-*.whl")
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(tmp_path / "site"), str(wheel)], check=True, timeout=300)
    queries.to_csv(tmp_path / "queries.csv", index=False)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    script = (
        "import sys; sys.path.append(%r)\n"
        "try:\n    import fairltr; raise SystemExit('fairltr importable without the model')\n"
        "except ImportError: pass\n"
        "sys.path.insert(0, %r)\n"
        "import torch; torch.set_num_threads(1)\n"
        "import mlflow.pyfunc, pandas as pd\n"
        "m = mlflow.pyfunc.load_model(%r)\n"
        "import fairltr; assert fairltr.__file__.startswith(%r), fairltr.__file__\n"
        "q = pd.read_csv(%r, dtype=str)\n"
        "m.predict(q, params={'k': 4}).to_csv(%r, index=False)\n"
    ) % (site, str(tmp_path / "site"), str(local), str(tmp_path / "site"), str(tmp_path / "queries.csv"),
         str(tmp_path / "out.csv"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the tracking store verifies the digest
    env.update(HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1")
    proc = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _same_run(pd.read_csv(tmp_path / "out.csv", dtype={"query_id": str, "doc_id": str}), expected)


def test_model_kind_refuses_unknown_kinds(tmp_path):
    """A model saved locally with another kind is refused; without one it is a ranker."""
    import mlflow

    class Echo(mlflow.pyfunc.PythonModel):
        def predict(self, context, model_input: list[str], params=None) -> list[str]:  # hints: no MLflow warning
            return model_input

    for kind, expected in (("embedder", None), (None, "ranker")):
        path = tmp_path / f"m-{kind}"
        mlflow.pyfunc.save_model(str(path), python_model=Echo(), model_config={"kind": kind} if kind else None,
                                 pip_requirements=["mlflow"])
        if expected is None:
            with pytest.raises(ConfigError, match="kind 'embedder'"):
                model_kind(str(path))
        else:
            assert model_kind(str(path)) == expected
