"""Fixtures of the retriever-model and fair_retrieval tests: a parallel-query folder with a query
language that only the test split has, and a retriever package built from the tiny BERT
(``tiny_bert`` and ``parallel_dir`` come from tests/conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tiny_models import WORDS, write_parallel_layout


@pytest.fixture(scope="session")
def retrieval_dir(tmp_path_factory) -> Path:
    """The tiny parallel layout (en, de, fr) plus language ``xx`` on the test items only: mixed
    de/en words, distinct per item, so no query embedding ties another."""
    root = write_parallel_layout(tmp_path_factory.mktemp("retrieval") / "data")
    queries = [json.loads(line) for line in (root / "queries.jsonl").read_text().splitlines()]
    extra = []
    for q in queries:
        if q["lang"] == "en" and q["split"] == "test":
            i = int(q["parallel_id"][1:])
            a, b = i % 10, (i * 3 + 1) % 10
            extra.append({"_id": f"q{i}-xx", "parallel_id": q["parallel_id"], "lang": "xx", "split": "test",
                          "text": f"{WORDS['de'][a]} {WORDS['en'][b]} {WORDS['fr'][a]}"})
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries + extra))
    return root


@pytest.fixture(scope="session")
def retriever_package(tiny_bert, retrieval_dir, tmp_path_factory) -> Path:
    """A shared-tower package (mean pooling, normalised) over ``retrieval_dir``'s corpus."""
    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.models.retriever import build_retriever_package

    corpus = read_parallel_data(retrieval_dir).corpus
    return build_retriever_package(tmp_path_factory.mktemp("package") / "retriever", query_encoder=tiny_bert,
                                   corpus=corpus, pooling="mean", normalize=True, max_query_length=16,
                                   max_doc_length=24)
