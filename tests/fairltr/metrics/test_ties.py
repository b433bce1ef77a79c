"""Tied scores are unordered (docs/spec.md section 3, "Ties"): every metric equals the mean of the
same metric over every order of the ties (enumerated here), so input order favours nobody and a
constant model scores as the average random ranking."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, audit_ranking, evaluate_ranking
from fairltr.metrics.exposure import exposure_per_query
from fairltr.metrics.ordering import tied_ranks, tied_ranks_of_rows
from fairltr.metrics.parity import selection_ratio_at_k
from fairltr.metrics.relevance import kendall_tau, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k


def _orders(scores: np.ndarray) -> list[np.ndarray]:
    """Every order of the items by decreasing score, ties in every possible order (as rank vectors)."""
    levels = sorted(set(scores.tolist()), reverse=True)
    groups = [np.flatnonzero(scores == v) for v in levels]
    out = []
    for perms in itertools.product(*(itertools.permutations(g) for g in groups)):
        order = np.concatenate([np.asarray(p, dtype=np.int64) for p in perms])
        ranks = np.empty(len(scores), dtype=np.int64)
        ranks[order] = np.arange(1, len(scores) + 1)
        out.append(ranks)
    return out


def _plain(ranks: np.ndarray) -> torch.Tensor:
    return torch.as_tensor(ranks[None, :], dtype=torch.long)


@pytest.mark.parametrize("seed", range(12))
def test_every_metric_is_the_mean_over_the_orders_of_the_ties(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 7))
    scores = rng.integers(0, 3, n).astype(np.float64)  # many ties
    judg = rng.integers(0, 3, n).astype(np.float64)
    groups = rng.integers(0, 2, n)
    mask = torch.ones(1, n, dtype=torch.bool)
    s, y, g = torch.as_tensor(scores[None]), torch.as_tensor(judg[None]), torch.as_tensor(groups[None])
    pred, true = tied_ranks(s, mask), tied_ranks(y, mask)
    true_orders = _orders(judg)
    for k in (1, 2, 3):
        got = {
            "ndcg": float(ndcg_at_k(pred, y, mask, k)), "mrr": float(mrr_at_k(pred, y, mask, k)),
            "recall": float(recall_at_k(pred, y, mask, k)), "precision": float(precision_at_k(pred, true, mask, k)),
            "selection": float(selection_ratio_at_k(pred, g, mask, k)),
            "exposure": float(exposure_per_query(pred, g, mask, k)["exposure_protected"]),
        }
        runs: dict[str, list[float]] = {key: [] for key in got}
        for ranks in _orders(scores):
            r = _plain(ranks)
            runs["ndcg"].append(float(ndcg_at_k(r, y, mask, k)))
            runs["mrr"].append(float(mrr_at_k(r, y, mask, k)))
            runs["recall"].append(float(recall_at_k(r, y, mask, k)))
            top = (ranks <= k)
            runs["selection"].append((top[groups >= 1].mean() if (groups >= 1).any() else math.nan,
                                      top[groups == 0].mean() if (groups == 0).any() else math.nan))
            runs["exposure"].append(float(exposure_per_query(r, g, mask, k)["exposure_protected"]))
            # precision: the truth's ties are unordered too, independently of the prediction's
            runs["precision"].append(float(np.mean([float(precision_at_k(r, _plain(t), mask, k))
                                                    for t in true_orders])))
        # a ratio is the ratio of the expected quantities (expected selection rates), not the mean of ratios
        rates = np.asarray(runs.pop("selection"), dtype=np.float64).mean(axis=0)
        want_ratio = rates[0] / rates[1] if rates[1] > 0 else math.nan
        if math.isnan(want_ratio):
            assert math.isnan(got.pop("selection"))
        else:
            assert got.pop("selection") == pytest.approx(want_ratio, rel=1e-12)
        for key, value in got.items():
            want = float(np.mean(runs[key]))
            if math.isnan(want):
                assert math.isnan(value), key
                continue
            assert value == pytest.approx(want, rel=1e-12, abs=1e-12), (key, k, scores, judg)
    if len(set(judg.tolist())) > 1:
        taus = [float(kendall_tau(_plain(r), y, mask)) for r in _orders(scores)]
        assert float(kendall_tau(pred, y, mask)) == pytest.approx(float(np.mean(taus)), rel=1e-12, abs=1e-12)


def test_a_constant_model_scores_as_the_average_random_ranking():
    rng = np.random.default_rng(3)
    n = 6
    judg = torch.as_tensor(rng.integers(0, 4, n).astype(np.float64)[None])
    mask = torch.ones(1, n, dtype=torch.bool)
    constant = tied_ranks(torch.zeros(1, n, dtype=torch.float64), mask)
    every = [_plain(np.asarray(p) + 1) for p in itertools.permutations(range(n))]  # all 720 rankings
    assert float(kendall_tau(constant, judg, mask)) == pytest.approx(0.0, abs=1e-15)
    for k in (1, 3, 6):
        mean_ndcg = np.mean([float(ndcg_at_k(r, judg, mask, k)) for r in every])
        assert float(ndcg_at_k(constant, judg, mask, k)) == pytest.approx(mean_ndcg, rel=1e-12)


def test_input_order_no_longer_flatters_a_constant_model():
    """Issue 29: a constant model on a file sorted by judgment was logged with nDCG@10 1.0."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"query_id": np.repeat(np.arange(30), 20), "protected": rng.integers(0, 2, 600),
                       "judgment": rng.integers(0, 3, 600).astype(float)})
    sorted_df = df.sort_values(["query_id", "judgment"], ascending=[True, False]).reset_index(drop=True)
    shuffled = df.sample(frac=1.0, random_state=1).reset_index(drop=True)
    a = evaluate_ranking(sorted_df, np.zeros(600), k=(10,))
    b = evaluate_ranking(shuffled, np.zeros(600), k=(10,))
    for key in ("ndcg_at_10", "precision_at_10", "kendall_tau", "exposure_ratio", "selection_ratio_at_10"):
        assert a[key] == pytest.approx(b[key], rel=1e-12), key
    assert a["kendall_tau"] == pytest.approx(0.0, abs=1e-12)
    assert a["ndcg_at_10"] < 0.9 and a["tied_score_share"] == 1.0
    assert evaluate_ranking(df, rng.normal(size=600), k=(10,))["tied_score_share"] == 0.0


def test_the_audit_is_the_mean_over_the_orders_of_the_ties():
    rng = np.random.default_rng(5)
    rows = []
    for q in range(3):
        n = int(rng.integers(3, 6))
        for _ in range(n):
            rows.append({"qid": q, "race": str(rng.choice(["A", "B", "C"])), "rel": float(rng.integers(0, 3)),
                         "score": float(rng.integers(0, 2))})
    df = pd.DataFrame(rows)
    c = RankingColumns(query="qid", group="race", judgment="rel")
    cfg = AuditConfig(k=2, min_category_share=0.0, ci=0)
    got = audit_ranking(df, "score", columns=c, config=cfg).table.set_index("category")
    # enumerate: break the ties of every query in every way, with a score perturbation per order
    per_query = [_orders(d["score"].to_numpy()) for _, d in df.groupby("qid", sort=True)]
    sums = None
    count = 0
    for combo in itertools.product(*per_query):
        ranks = np.concatenate(combo)
        s = -ranks.astype(np.float64)  # strictly decreasing in rank: no ties left
        t = audit_ranking(df, s, columns=c, config=cfg).table.set_index("category")
        part = t[["selected_at_k", "exposure"]].astype(float)
        sums = part if sums is None else sums + part
        count += 1
    mean = sums / count
    np.testing.assert_allclose(got["selected_at_k"].astype(float), mean["selected_at_k"], rtol=1e-12)
    np.testing.assert_allclose(got["exposure"], mean["exposure"], rtol=1e-12)


def test_tie_groups_of_rows_match_the_tensor_version():
    rng = np.random.default_rng(2)
    codes = np.repeat(np.arange(4), 7)
    scores = rng.integers(0, 3, len(codes)).astype(float)
    perm = rng.permutation(len(codes))
    first, size = tied_ranks_of_rows(codes[perm], scores[perm])
    t = tied_ranks(torch.as_tensor(scores.reshape(4, 7)), torch.ones(4, 7, dtype=torch.bool))
    inv = np.empty_like(perm)
    inv[perm] = np.arange(len(perm))
    np.testing.assert_array_equal(first[inv], t.first.numpy().reshape(-1))
    np.testing.assert_array_equal(size[inv], t.size.numpy().reshape(-1))
