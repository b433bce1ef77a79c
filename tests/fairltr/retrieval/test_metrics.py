"""MRR/Recall per language, document-language share and the regrouping for MRC, by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.retrieval import doc_language_share, rankings_by_item, retrieval_metrics

QUERIES = pd.DataFrame({
    "_id": ["q1-en", "q1-de", "q2-en", "q2-de"],
    "parallel_id": ["p1", "p1", "p2", "p2"],
    "lang": ["en", "de", "en", "de"],
})
QRELS = pd.DataFrame({"parallel_id": ["p1", "p2", "p2"], "corpus_id": ["a", "b", "c"], "score": [1, 1, 1]})
CORPUS = pd.DataFrame({"_id": list("abcde"), "lang": ["en", "de", "en", "de", "de"], "text": ["."] * 5})


def test_mrr_recall_per_language():
    run = {
        "q1-en": ["a", "b"],        # rr 1, recall 1
        "q1-de": ["d", "e", "a"],   # rr 1/3, recall 1
        "q2-en": ["a", "c"],        # rr 1/2, recall 1/2
        "q2-de": ["d"],             # rr 0, recall 0
    }
    t = retrieval_metrics(run, QUERIES, QRELS, k=100)
    assert t.loc["en", "mrr_at_100"] == pytest.approx(100 * (1 + 0.5) / 2)
    assert t.loc["de", "mrr_at_100"] == pytest.approx(100 * (1 / 3) / 2)
    assert t.loc["en", "recall_at_100"] == pytest.approx(100 * (1 + 0.5) / 2)
    assert t.loc["all", "recall_at_100"] == pytest.approx(100 * 2.5 / 4)
    assert t.loc["all", "n_queries"] == 4
    t2 = retrieval_metrics(run, QUERIES, QRELS, k=2)  # the cut drops q1-de's hit
    assert t2.loc["de", "mrr_at_2"] == 0.0


def test_doc_language_share():
    run = {"q1-en": ["a", "b"], "q1-de": ["d", "e", "a"], "q2-en": ["a", "c"], "q2-de": ["d"]}
    s = doc_language_share(run, QUERIES, CORPUS, k=100)
    assert s.loc["en", "en"] == pytest.approx(100 * 3 / 4)
    assert s.loc["de", "de"] == pytest.approx(100 * 3 / 4)
    assert np.allclose(s.sum(axis=1), 100)


def test_rankings_by_item_and_unknown_query():
    run = {"q1-en": ["a"], "q1-de": ["b"]}
    assert rankings_by_item(run, QUERIES) == {"p1": {"en": ["a"], "de": ["b"]}}
    with pytest.raises(DataError, match="nope"):
        retrieval_metrics({"nope": ["a"]}, QUERIES, QRELS)
