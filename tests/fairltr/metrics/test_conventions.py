"""trec_eval's conventions (issue 34 item 8): queries without a relevant item counted as 0 and
linear-gain nDCG, checked against ir-measures (pytrec_eval, i.e. trec_eval's own C code) on the
same run; the default convention unchanged."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.errors import ConfigError
from fairltr.metrics import evaluate_ranking
from fairltr.metrics.conventions import TREC_CONVENTIONS, RelevanceConventions
from fairltr.metrics.relevance import ndcg_at_k

ir_measures = pytest.importorskip("ir_measures", reason="ir-measures is in the [test] extra")

TOL = 1e-9  # trec_eval computes in double precision; fairltr in float64


def _run(seed: int = 3, n_queries: int = 40) -> pd.DataFrame:
    """Queries of 3-30 candidates, graded judgments 0..3, distinct scores (trec_eval breaks ties
    by document id, fairltr by expectation: no ties here); every fifth query has no relevant item."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        n = int(rng.integers(3, 31))
        rel = rng.integers(0, 4, n) * (rng.random(n) < 0.5)
        if q % 5 == 0:
            rel[:] = 0
        score = rng.permutation(n) + rng.random(n) * 0.1
        for i in range(n):
            rows.append({"qid": f"q{q}", "doc": f"d{q}_{i}", "rel": int(rel[i]), "score": float(score[i]),
                         "grp": int(rng.integers(0, 2))})
    return pd.DataFrame(rows)


def _reference(df: pd.DataFrame, texts) -> dict:
    """Per-query values {measure text: {query: value}} of ir-measures' measures ``texts`` (one
    call per measure: two nDCG variants print alike)."""
    qrels = pd.DataFrame({"query_id": df.qid, "doc_id": df.doc, "relevance": df.rel})
    run = pd.DataFrame({"query_id": df.qid, "doc_id": df.doc, "score": df.score})
    return {text: {m.query_id: m.value for m in ir_measures.iter_calc([ir_measures.parse_measure(text)], qrels, run)}
            for text in texts}


@pytest.mark.parametrize("k", [5, 10, 20])
def test_zero_convention_equals_trec_eval(k):
    df = _run()
    names = {f"nDCG@{k}": f"ndcg_linear_at_{k}", f"RR@{k}": f"mrr_at_{k}", f"R@{k}": f"recall_at_{k}",
             f"nDCG(gains={{0:0,1:1,2:3,3:7}})@{k}": f"ndcg_at_{k}"}
    ref = _reference(df, list(names))
    ours = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", k=(k,), retrieval=True,
                            conventions=TREC_CONVENTIONS)
    n_queries = df.qid.nunique()
    for measure, key in names.items():
        per = ref[measure]
        assert len(per) == n_queries, measure  # trec_eval scores every query, empty ones included
        assert ours[key] == pytest.approx(float(np.mean(list(per.values()))), abs=TOL), (measure, key)
        assert ours[f"{key}_n_queries"] == n_queries


@pytest.mark.parametrize("k", [5, 10])
def test_skip_convention_is_the_mean_over_queries_with_a_relevant_item(k):
    df = _run(seed=8)
    ref = _reference(df, [f"nDCG(gains={{0:0,1:1,2:3,3:7}})@{k}", f"RR@{k}"])
    has_relevant = set(df.loc[df.rel > 0, "qid"])
    ours = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", k=(k,), retrieval=True)
    for measure, key in [(f"nDCG(gains={{0:0,1:1,2:3,3:7}})@{k}", f"ndcg_at_{k}"), (f"RR@{k}", f"mrr_at_{k}")]:
        kept = [v for q, v in ref[measure].items() if q in has_relevant]
        assert ours[key] == pytest.approx(float(np.mean(kept)), abs=TOL)
        assert ours[f"{key}_n_queries"] == len(has_relevant) < df.qid.nunique()
    # and the documented gap: trec_eval's mean is lower by the share of empty queries
    zero = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", k=(k,),
                            conventions=RelevanceConventions(empty_queries="zero"))
    assert zero[f"ndcg_at_{k}"] == pytest.approx(ours[f"ndcg_at_{k}"] * len(has_relevant) / df.qid.nunique(), abs=TOL)
    assert f"ndcg_linear_at_{k}" not in ours and f"ndcg_linear_at_{k}" not in zero  # only on request


def test_linear_gains_ignore_non_positive_judgments():
    """Linear gains max(rel, 0): a brute-force DCG over one query with negative judgments."""
    rel = torch.tensor([[2.0, -1.0, 0.0, 3.0, -2.0, 1.0]])
    ranks = torch.tensor([[1, 2, 3, 4, 5, 6]])
    mask = torch.ones_like(rel, dtype=torch.bool)
    gains = [max(r, 0.0) for r in rel[0].tolist()]
    dcg = sum(g / math.log2(1 + i) for i, g in enumerate(gains, start=1) if i <= 4)
    ideal = sorted(gains, reverse=True)
    idcg = sum(g / math.log2(1 + i) for i, g in enumerate(ideal, start=1) if i <= 4)
    assert float(ndcg_at_k(ranks, rel, mask, 4, gain="linear")[0]) == pytest.approx(dcg / idcg, abs=1e-12)
    with pytest.raises(ValueError, match="gain must be one of"):
        ndcg_at_k(ranks, rel, mask, 4, gain="log")


def test_bad_convention_is_refused_naming_the_choices():
    with pytest.raises(ConfigError, match=r"empty_queries must be one of \['skip', 'zero'\]"):
        RelevanceConventions(empty_queries="drop")
    assert "trec_eval" in RelevanceConventions(empty_queries="zero").describe()
