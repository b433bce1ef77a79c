"""AWRF, nDCG x AWRF and IAA as every ranker evaluation computes them (the per-query builtins
of fairltr.metrics.per_query_builtins): against the pure functions of fairltr.metrics.awrf (checked
against the TREC Fair 2022 code) and fairltr.metrics.iaa, the tie expectation against enumerating
the orders, their query-bootstrap intervals against scipy.stats.bootstrap, their availability,
gates and sweep-objective directions."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import scipy.spatial.distance
import scipy.stats

from fairltr.errors import ConfigError
from fairltr.gates import check_gates, parse_gate
from fairltr.metrics import AuditConfig, evaluate_ranking, per_query_table
from fairltr.metrics.availability import check_computed, uncomputed_reason
from fairltr.metrics.awrf import awrf, trec_fair_task1
from fairltr.metrics.iaa import iaa
from fairltr.metrics.plugins import QUERY_INTERVAL_METRICS, direction, optimisation_direction

KEYS = ("awrf", "ndcg_awrf", "iaa")


def table(n_queries: int, seed: int, n_groups: int = 2) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    sizes = rng.integers(3, 12, n_queries)
    q = np.repeat(np.arange(n_queries), sizes)
    df = pd.DataFrame({"query_id": q, "protected": rng.integers(0, n_groups, q.size),
                       "judgment": rng.integers(0, 3, q.size), "score": rng.random(q.size)})
    df.loc[df["query_id"] == 0, "judgment"] = 0  # a query without a relevant candidate: all three undefined
    return df


def padded(df: pd.DataFrame):
    """(Q, N) ranks by score (1-based), groups, judgments and mask, queries in first-appearance order."""
    groups = [g for _, g in df.groupby("query_id", sort=False)]
    n = max(len(g) for g in groups)
    ranks = np.ones((len(groups), n), dtype=np.int64)
    grp = np.zeros((len(groups), n), dtype=np.int64)
    judg = np.zeros((len(groups), n))
    mask = np.zeros((len(groups), n), dtype=bool)
    for i, g in enumerate(groups):
        m = len(g)
        ranks[i, :m] = scipy.stats.rankdata(-g["score"].to_numpy(), method="ordinal")
        grp[i, :m], judg[i, :m], mask[i, :m] = g["protected"], g["judgment"], True
    return ranks, grp, judg, mask


@pytest.mark.parametrize("n_groups", [2, 3])
def test_per_query_values_equal_the_pure_functions(n_groups):
    df = table(25, seed=n_groups, n_groups=n_groups)
    got = per_query_table(df, "score")
    ranks, grp, judg, mask = padded(df)
    alignment = np.eye(n_groups)[grp] * mask[..., None]  # one category per group code
    relevant = (judg > 0) & mask
    target = (alignment * relevant[..., None]).sum(axis=1)
    defined = target.sum(axis=1) > 0
    want_awrf = np.full(len(mask), np.nan)
    want_awrf[defined] = awrf(ranks[defined], alignment[defined], target[defined], mask[defined])
    task1 = trec_fair_task1(ranks[defined], relevant[defined], alignment[defined], target[defined], mask[defined])
    want_score = np.full(len(mask), np.nan)
    want_score[defined] = task1["score"]
    np.testing.assert_allclose(got["awrf"], want_awrf, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got["ndcg_awrf"], want_score, rtol=1e-12, equal_nan=True)
    np.testing.assert_allclose(got["iaa"], iaa(ranks, np.maximum(judg, 0), mask), rtol=1e-12, equal_nan=True)
    assert np.isnan(got.loc[0, list(KEYS)].to_numpy(dtype=float)).all()
    m = evaluate_ranking(df, "score")
    for key in KEYS:
        assert m[key] == pytest.approx(np.nanmean(got[key])) and m[f"{key}_n_queries"] == 24


def test_tied_scores_use_each_candidates_expected_attention():
    """Tied scores are unordered: a candidate's attention is its mean over the tie orders (enumerated)."""
    df = pd.DataFrame({"query_id": 0, "protected": [1, 0, 0, 1, 0], "judgment": [2, 0, 1, 1, 0],
                       "score": [0.9, 0.5, 0.5, 0.5, 0.1]})
    tied = [1, 2, 3]
    att = {"iaa": lambda r: 1.0 / np.log2(1.0 + r), "awrf": lambda r: 1.0 / np.log2(np.maximum(r, 2.0))}
    expected = {}
    for key, f in att.items():
        mean = np.zeros(5)
        orders = list(itertools.permutations([2, 3, 4]))
        for perm in orders:
            ranks = np.array([1, 0, 0, 0, 5], dtype=float)
            ranks[tied] = perm
            mean += f(ranks) / len(orders)
        expected[key] = mean
    rel = df["judgment"].to_numpy(float)
    want_iaa = np.abs(expected["iaa"] / expected["iaa"].sum() - rel / rel.sum()).sum()
    g = df["protected"].to_numpy()
    dist = np.array([expected["awrf"][g == c].sum() for c in (0, 1)]) / expected["awrf"].sum()
    target = np.array([((g == c) & (rel > 0)).sum() for c in (0, 1)], dtype=float)
    want_awrf = 1.0 - scipy.spatial.distance.jensenshannon(dist, target / target.sum()) ** 2
    got = per_query_table(df, "score")
    assert got.loc[0, "iaa"] == pytest.approx(want_iaa, rel=1e-12)
    assert got.loc[0, "awrf"] == pytest.approx(want_awrf, rel=1e-12)


def test_query_bootstrap_intervals_invariant_to_row_order_and_match_scipy():
    """The intervals come from evaluate_ranking's query bootstrap (the headline metrics' code path):
    the same for shuffled rows, and within 15% of the interval's width of an independent
    scipy.stats.bootstrap (other seed) of the mean of the defined per-query values."""
    df = table(40, seed=5)
    cfg = AuditConfig(ci=0.9, n_boot=2000, unit="queries", seed=3)
    m = evaluate_ranking(df, "score", audit=cfg)
    shuffled = evaluate_ranking(df.sample(frac=1.0, random_state=1).reset_index(drop=True), "score", audit=cfg)
    per_q = per_query_table(df, "score")
    assert set(QUERY_INTERVAL_METRICS) == set(KEYS)
    for key in KEYS:
        low, high = m[f"{key}_ci_low"], m[f"{key}_ci_high"]
        assert low < m[key] < high
        assert (shuffled[f"{key}_ci_low"], shuffled[f"{key}_ci_high"]) == pytest.approx((low, high), rel=1e-12)
        v = per_q[key].dropna().to_numpy()
        ref = scipy.stats.bootstrap((v,), np.mean, n_resamples=2000, confidence_level=0.9, method="percentile",
                                    random_state=7).confidence_interval
        tol = 0.15 * (ref.high - ref.low)
        assert abs(low - ref.low) < tol and abs(high - ref.high) < tol, (key, (low, high), ref)


def test_directions_and_sweep_objectives():
    assert direction("awrf") == "higher" and direction("ndcg_awrf") == "higher" and direction("iaa") == "lower"
    assert optimisation_direction("awrf") == "maximize" and optimisation_direction("iaa") == "minimize"
    from tuning.objectives import parse_objectives

    objectives = parse_objectives("ndcg_awrf,iaa")
    assert [(o.name, o.direction) for o in objectives] == [("ndcg_awrf", "maximize"), ("iaa", "minimize")]


def test_availability():
    for key in KEYS:
        assert uncomputed_reason(key, evaluator="ranker", groups=("protected",)) is None
        assert uncomputed_reason(key, evaluator="policy", groups=("protected",)) is None
        assert "not an audit figure" in uncomputed_reason(key, evaluator="monitor", groups=("protected",))
        assert "not a retriever's metric" in uncomputed_reason(key, evaluator="retriever")
        assert "relevance labels" in uncomputed_reason(key, evaluator="ranker", groups=("g",), judgments=False)
    assert "group column" in uncomputed_reason("awrf", evaluator="ranker", groups=())
    assert uncomputed_reason("iaa", evaluator="ranker", groups=()) is None


def test_gates_fail_closed():
    """A gate on AWRF / IAA passes or fails on the value; a NaN (undefined for the data: no query
    with a relevant candidate) or a missing value fails; a job that never computes it refuses it."""
    gates = [parse_gate("awrf>=0.9"), parse_gate("iaa<=0.8"), parse_gate("ndcg_awrf>=0.5")]
    ok = check_gates(gates, {"awrf": 0.95, "iaa": 0.5, "ndcg_awrf": 0.6}, None)
    assert all(r.passed for r in ok)
    df = table(4, seed=1)
    df["judgment"] = 0  # no relevant candidate anywhere: every query undefined
    m = evaluate_ranking(df, "score")
    assert all(math.isnan(m[key]) and m[f"{key}_n_queries"] == 0 for key in KEYS)
    assert not any(r.passed for r in check_gates(gates, m, None))
    assert not any(r.passed for r in check_gates(gates, {}, None))
    with pytest.raises(ConfigError, match="'awrf>=0.9' cannot be checked here.*not an audit figure"):
        check_computed([("awrf>=0.9", "awrf")], evaluator="monitor", groups=("protected",))


def test_paired_difference_of_awrf_and_iaa():
    """A champion-relative gate's paired interval (promote --confidence): the point difference is
    the two evaluations' difference and the interval holds it."""
    from fairltr.metrics import paired_difference

    df = table(35, seed=9)
    other = np.random.default_rng(1).random(len(df))
    cfg = AuditConfig(ci=0.9, n_boot=300, unit="queries", seed=0)
    a, b = evaluate_ranking(df, "score"), evaluate_ranking(df, other)
    for key in KEYS:
        d = paired_difference(df, df["score"].to_numpy(), other, metric=key, config=cfg)
        assert d["difference"] == pytest.approx(a[key] - b[key], rel=1e-9)
        assert d["ci_low"] <= d["difference"] <= d["ci_high"]
