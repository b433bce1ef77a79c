"""A stochastic policy's figures from sampled rankings (fairltr.metrics.policy) against exact
enumeration of every ranking of small lists (n <= 6), with tolerances derived from the sample
count; one sampled ranking = the deterministic figures of that ranking."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.data import RankingBatch
from fairltr.errors import ConfigError
from fairltr.metrics import evaluate_ranking, ndcg_at_k, per_query_metrics
from fairltr.metrics.expected_exposure import target_exposure
from fairltr.metrics.policy import aggregate_policy, evaluate_policy, policy_metrics_per_query

ROWS = [  # (score, judgment, group): queries of 5, 3 and 6 candidates
    [(0.8, 2, 0), (-0.3, 1, 1), (0.1, 0, 0), (1.2, 3, 1), (-1.0, 1, 1)],
    [(0.2, 1, 1), (0.5, 0, 0), (-0.4, 2, 0)],
    [(0.3, 0, 0), (-0.6, 2, 1), (1.0, 1, 0), (0.0, 3, 1), (0.4, 1, 0), (-0.2, 0, 1)],
]
PATIENCE = 0.5
K = 3


def _batch(rows):
    n = max(len(r) for r in rows)
    s = torch.zeros(len(rows), n, dtype=torch.float64)
    y, g = torch.zeros_like(s), torch.zeros(len(rows), n, dtype=torch.long)
    m = torch.zeros(len(rows), n, dtype=torch.bool)
    for q, r in enumerate(rows):
        for i, (si, yi, gi) in enumerate(r):
            s[q, i], y[q, i], g[q, i], m[q, i] = si, yi, gi, True
    batch = RankingBatch(features=s.unsqueeze(-1), judgments=y, groups=g, mask=m,
                         row_index=torch.arange(len(rows) * n).view(len(rows), n), query_ids=[], feature_names=["s"])
    return s, batch


def _enumerate(row):
    """Per ranking of one query: probability, and the per-ranking statistics whose expectations
    the policy figures are: [nDCG@K, v-exposure of each item (n), RBP exposure of each item (n)]."""
    scores = np.array([r[0] for r in row])
    y = torch.tensor([[float(r[1]) for r in row]], dtype=torch.float64)
    n = len(row)
    m = torch.ones(1, n, dtype=torch.bool)
    w = np.exp(scores - scores.max())
    probs, stats = [], []
    for perm in itertools.permutations(range(n)):
        left, p = list(range(n)), 1.0
        for item in perm:
            p *= w[item] / w[left].sum()
            left.remove(item)
        ranks = torch.empty(1, n, dtype=torch.long)
        ranks[0, list(perm)] = torch.arange(1, n + 1)
        ndcg = float(ndcg_at_k(ranks, y, m, K)[0])
        v = (1.0 / torch.log1p(ranks[0].to(torch.float64))).numpy()
        rbp = (PATIENCE ** (ranks[0].to(torch.float64) - 1)).numpy()
        probs.append(p)
        stats.append(np.concatenate([[ndcg], v, rbp]))
    return np.array(probs), np.array(stats)


def _delta_tolerance(f, mean, cov, n_samples, z=5.0):
    """z standard errors of f(sample mean) by the delta method (numerical gradient of f at the exact
    mean, exact covariance of one ranking's statistics), plus the second-order term trace(cov)/S."""
    eps = 1e-7
    grad = np.array([(f(mean + eps * e) - f(mean - eps * e)) / (2 * eps) for e in np.eye(len(mean))])
    return z * math.sqrt(max(grad @ cov @ grad, 0.0) / n_samples) + np.trace(cov) / n_samples * 10


def test_sampled_policy_figures_match_exact_enumeration():
    """20,000 sampled rankings per query against the expectations over all n! rankings (n = 5, 3, 6,
    padded into one batch): every figure within 5 of its own standard errors (delta method from
    the exact covariance of one ranking's statistics, divided by the sample count)."""
    n_samples = 20_000
    s, batch = _batch(ROWS)
    got = policy_metrics_per_query(s, batch, n_samples=n_samples, generator=torch.Generator().manual_seed(0),
                                   k=(K,), patience=PATIENCE)
    for q, row in enumerate(ROWS):
        n = len(row)
        probs, stats = _enumerate(row)
        mean = probs @ stats
        cov = (stats - mean).T @ ((stats - mean) * probs[:, None])
        groups = np.array([r[2] for r in row])
        judg = torch.tensor([[float(r[1]) for r in row]], dtype=torch.float64)
        target = target_exposure(judg, torch.ones(1, n, dtype=torch.bool), PATIENCE)[0].numpy()
        prot, nprot = groups >= 1, groups == 0
        figures = {
            f"expected_ndcg_at_{K}": lambda x: x[0],
            "expected_exposure_protected": lambda x: x[1:1 + n][prot].mean(),
            "expected_exposure_nonprotected": lambda x: x[1:1 + n][nprot].mean(),
            "expected_exposure_ratio": lambda x: x[1:1 + n][prot].mean() / x[1:1 + n][nprot].mean(),
            "ee_d": lambda x: float((x[1 + n:] ** 2).sum()),
            "ee_r": lambda x: float(x[1 + n:] @ target),
            "ee_l": lambda x: float(((x[1 + n:] - target) ** 2).sum()),
        }
        for name, f in figures.items():
            tol = _delta_tolerance(f, mean, cov, n_samples)
            assert abs(float(got[name][q]) - f(mean)) <= tol, (q, name, float(got[name][q]), f(mean), tol)


def test_one_ranking_gives_the_deterministic_figures():
    """The mean-score ranking passed as the only 'sample': expected nDCG@k, the group exposures and
    the exposure ratio / disparity equal the deterministic metrics of that ranking (1e-12)."""
    s, batch = _batch(ROWS)
    order = torch.sort(s.masked_fill(~batch.mask, float("-inf")), dim=-1, descending=True, stable=True).indices
    policy = aggregate_policy(policy_metrics_per_query(s, batch, rankings=order.unsqueeze(0), k=(1, 3, 10)))
    det = per_query_metrics(s, batch, k=(1, 3, 10))
    for kk in (1, 3, 10):
        want = float(det[f"ndcg_at_{kk}"][~det[f"ndcg_at_{kk}"].isnan()].mean())
        assert abs(policy[f"expected_ndcg_at_{kk}"] - want) < 1e-12
    ratio = float(det["exposure_ratio"][~det["exposure_ratio"].isnan()].mean())
    assert abs(policy["expected_exposure_ratio"] - ratio) < 1e-12
    assert abs(policy["expected_exposure_disparity"] - (1 - min(ratio, 1 / ratio))) < 1e-12
    assert policy["expected_exposure_disparity_n_queries"] == 3


def _table(seed=0, n_queries=12):
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 40, size=n_queries)
    sizes[0] = 300  # one long query: the table is cut into several length buckets
    qid = np.repeat(np.arange(n_queries), sizes)
    return pd.DataFrame({"query_id": qid, "protected": rng.integers(0, 2, size=len(qid)),
                         "judgment": rng.integers(0, 4, size=len(qid)).astype(float),
                         "score": rng.normal(size=len(qid))})


def test_evaluate_policy_is_seeded_and_reports_every_figure():
    df = _table()
    a = evaluate_policy(df, "score", n_samples=50, seed=3, k=(5, 10))
    assert a == evaluate_policy(df, "score", n_samples=50, seed=3, k=(5, 10))
    assert a != evaluate_policy(df, "score", n_samples=50, seed=4, k=(5, 10))
    for key in ("expected_ndcg_at_5", "expected_ndcg_at_10", "expected_exposure_ratio", "expected_exposure_disparity",
                "ee_l", "ee_d", "ee_r"):
        assert math.isfinite(a[key]) and f"{key}_n_queries" in a
    assert a["ee_l_n_queries"] == 12
    # a near-deterministic policy (neighbours 15 nats apart: a swap has probability ~3e-7) has the
    # deterministic ranking's figures (the short queries: 15 x 40 nats stays within float64's exp)
    short = df[df["query_id"] > 0]
    sharp = short.assign(score=-15.0 * short.groupby("query_id")["score"].rank(ascending=False, method="first"))
    det = evaluate_ranking(sharp, "score", k=(10,))
    pol = evaluate_policy(sharp, "score", n_samples=5, seed=0, k=(10,))
    assert abs(pol["expected_ndcg_at_10"] - det["ndcg_at_10"]) < 1e-9
    assert abs(pol["expected_exposure_disparity"] - det["exposure_disparity"]) < 1e-9


def test_bad_sample_counts_are_config_errors():
    with pytest.raises(ConfigError, match="eval samples"):
        evaluate_policy(_table(), "score", n_samples=0)
