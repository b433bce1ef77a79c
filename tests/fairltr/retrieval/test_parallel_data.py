"""Reading the parallel-query layout, its error messages, BM25 and the whole-run evaluation."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.retrieval import bm25_search, evaluate_run, read_parallel_data


def write_layout(root, corpus, queries, qrels):
    root.mkdir(parents=True, exist_ok=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(r) + "\n" for r in corpus))
    (root / "queries.jsonl").write_text("".join(json.dumps(r) + "\n" for r in queries))
    pd.DataFrame(qrels, columns=["parallel_id", "corpus_id", "score", "split"]).to_csv(root / "qrels.tsv", sep="\t", index=False)


@pytest.fixture
def tiny(tmp_path):
    corpus = [{"_id": "d1", "lang": "en", "text": "red apple fruit"},
              {"_id": "d2", "lang": "de", "text": "blaues auto fahren"},
              {"_id": "d3", "lang": "en", "text": "green tree forest"}]
    queries = [{"_id": f"q{p}-{lang}", "parallel_id": p, "lang": lang, "split": s, "text": t}
               for p, s, texts in [("1", "train", {"en": "apple", "de": "apfel"}),
                                   ("2", "test", {"en": "car auto", "de": "auto"}),
                                   ("3", "test", {"en": "tree", "de": "baum"})]
               for lang, t in texts.items()]
    qrels = [("1", "d1", 1, "train"), ("2", "d2", 1, "test"), ("3", "d3", 1, "test")]
    write_layout(tmp_path / "ok", corpus, queries, qrels)
    return tmp_path / "ok", corpus, queries, qrels


def test_read_and_split(tiny):
    data = read_parallel_data(tiny[0])
    assert data.languages == ["de", "en"]
    test = data.split("test")
    assert set(test.queries["parallel_id"]) == {"2", "3"} and len(test.corpus) == 3
    assert test.relevant() == {"2": {"d2"}, "3": {"d3"}}
    assert len(data.split("test", max_items=1).queries) == 2
    with pytest.raises(DataError, match="unknown split 'dev'"):
        data.split("dev")


def test_errors_name_file_and_line(tiny, tmp_path):
    root, corpus, queries, qrels = tiny
    write_layout(tmp_path / "a", corpus, queries, qrels + [("3", "d9", 1, "test")])
    with pytest.raises(DataError, match="'d9'.*not in corpus"):
        read_parallel_data(tmp_path / "a")
    write_layout(tmp_path / "b", corpus, queries, qrels[:2])
    with pytest.raises(DataError, match="no relevant document"):
        read_parallel_data(tmp_path / "b")
    write_layout(tmp_path / "c", corpus, queries, qrels)
    (tmp_path / "c" / "corpus.jsonl").write_text('{"_id": "d1", "lang": "en"}\n')
    with pytest.raises(DataError, match=r"corpus.jsonl, line 1: missing field\(s\) \['text'\]"):
        read_parallel_data(tmp_path / "c")
    with pytest.raises(DataError, match="not a directory"):
        read_parallel_data(tmp_path / "nothing")


def test_bm25_and_evaluate_run(tiny):
    data = read_parallel_data(tiny[0])
    test = data.split("test")
    run = bm25_search(data.corpus["_id"], data.corpus["text"], test.queries["_id"], test.queries["text"], k=3)
    assert run["q2-de"][0] == "d2" and run["q3-en"][0] == "d3"
    assert run["q3-de"] == []  # "baum" is in no document
    res = evaluate_run(run, test, k=3, mrc_k=2)
    assert res["mrr_at_3"] == pytest.approx(100 * 3 / 4)
    assert set(res["per_language"].index) == {"de", "en", "all"}
    assert {"mrc_at_2", "mrc_at_2_intersection", "overlap_at_2", "rbo_at_2"} <= set(res)
