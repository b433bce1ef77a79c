"""Inequity of amortized attention (fairltr.metrics.iaa) against a brute-force loop over rankings and
candidates, and the query-bootstrap intervals of per-query metrics (fairltr.metrics.query_intervals)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from fairltr.errors import ConfigError
from fairltr.metrics.iaa import attention, iaa, iaa_by_subject
from fairltr.metrics.query_intervals import mean_with_intervals
from fairltr.metrics.resampling import CELLS_PER_BATCH


def loop_iaa(ranks, relevance, mask, model, patience, k, normalize):
    """Biega et al.'s Eq. 1, one query, one ranking, one candidate at a time."""
    s_n, q_n, n = ranks.shape
    out = []
    for q in range(q_n):
        acc_a = [0.0] * n
        acc_r = [0.0] * n
        bad = False
        for s in range(s_n):
            att, rel = [0.0] * n, [0.0] * n
            for i in range(n):
                if not mask[q, i]:
                    continue
                r = int(ranks[s, q, i])
                if model == "log":
                    att[i] = 1.0 / math.log2(1 + r)
                elif model == "geometric":
                    att[i] = patience ** (r - 1)
                else:
                    att[i] = 1.0 if r == 1 else 0.0
                if k is not None and r > k:
                    att[i] = 0.0
                rel[i] = float(relevance[s, q, i])
            if normalize:
                ta, tr = sum(att), sum(rel)
                if tr == 0 or ta == 0:
                    bad = True
                    break
                att = [x / ta for x in att]
                rel = [x / tr for x in rel]
            for i in range(n):
                acc_a[i] += att[i]
                acc_r[i] += rel[i]
        out.append(math.nan if bad or not mask[q].any() else sum(abs(a - r) for a, r in zip(acc_a, acc_r)))
    return np.array(out)


def random_rankings(rng, s_n=7, q_n=9, n=12):
    mask = rng.random((q_n, n)) < 0.85
    mask[:, 0] = True
    ranks = np.zeros((s_n, q_n, n), dtype=np.int64)
    for s in range(s_n):
        keys = np.where(mask, rng.random((q_n, n)), np.inf)
        ranks[s] = np.argsort(np.argsort(keys, axis=1), axis=1) + 1
    relevance = rng.integers(0, 4, (s_n, q_n, n)).astype(float)
    relevance[:, :, 0] = 1.0  # no ranking without relevance
    return ranks, relevance, mask


@pytest.mark.parametrize("model,patience,k", [("log", 0.5, None), ("geometric", 0.7, None), ("singular", 0.5, None),
                                              ("log", 0.5, 3), ("geometric", 0.3, 5)])
@pytest.mark.parametrize("normalize", [True, False])
def test_against_a_loop(model, patience, k, normalize):
    rng = np.random.default_rng(hash((model, k, normalize)) % 2**32)
    ranks, relevance, mask = random_rankings(rng)
    got = iaa(ranks, relevance, mask, model=model, patience=patience, k=k, normalize=normalize)
    want = loop_iaa(ranks, relevance, mask, model, patience, k, normalize)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_shapes_and_degenerate_queries():
    rng = np.random.default_rng(3)
    ranks, relevance, mask = random_rankings(rng, s_n=1)
    np.testing.assert_allclose(iaa(ranks[0], relevance[0], mask), iaa(ranks, relevance, mask))  # (Q, N) = one ranking
    fixed = iaa(ranks, relevance[0], mask)  # relevance the same in every ranking
    np.testing.assert_allclose(fixed, iaa(ranks, relevance[:1].repeat(1, axis=0), mask))
    relevance[0, 2] = 0.0
    out = iaa(ranks, relevance, mask)
    assert math.isnan(out[2]) and np.isfinite(np.delete(out, 2)).all()
    # attention proportional to relevance in every ranking: no unfairness
    a = attention(np.array([[1, 2, 3]]))
    assert iaa(np.array([[1, 2, 3]]), a, np.ones((1, 3), bool))[0] == pytest.approx(0.0, abs=1e-15)


def test_amortization_across_queries_by_subject():
    """Two queries that rank the same two people in opposite orders with equal relevance: each
    query alone is unfair, the individuals' accumulated attention is equal (IAA 0)."""
    ranks = np.array([[1, 2], [2, 1]])
    rel = np.ones((2, 2))
    mask = np.ones((2, 2), bool)
    subjects = np.array([[0, 1], [0, 1]])
    assert (iaa(ranks, rel, mask) > 0.1).all()
    assert iaa_by_subject(ranks, rel, mask, subjects) == pytest.approx(0.0, abs=1e-15)
    rng = np.random.default_rng(5)
    ranks, relevance, mask = random_rankings(rng)
    ids = rng.integers(0, 6, mask.shape)
    acc_a = np.zeros(6)
    acc_r = np.zeros(6)
    for s in range(ranks.shape[0]):
        for q in range(mask.shape[0]):
            att = np.where(mask[q], 1.0 / np.log2(1 + ranks[s, q]), 0.0)
            rel = np.where(mask[q], relevance[s, q], 0.0)
            np.add.at(acc_a, ids[q][mask[q]], (att / att.sum())[mask[q]])
            np.add.at(acc_r, ids[q][mask[q]], (rel / rel.sum())[mask[q]])
    assert iaa_by_subject(ranks, relevance, mask, ids) == pytest.approx(np.abs(acc_a - acc_r).sum(), rel=1e-12)


def test_input_errors():
    ok = (np.array([[1, 2]]), np.ones((1, 2)), np.ones((1, 2), bool))
    with pytest.raises(ConfigError, match="attention model"):
        iaa(*ok, model="cascade")
    with pytest.raises(ConfigError, match="patience"):
        iaa(*ok, model="geometric", patience=1.5)
    with pytest.raises(ConfigError, match=">= 0"):
        iaa(ok[0], -np.ones((1, 2)), ok[2])
    with pytest.raises(ConfigError, match="1-based"):
        iaa(np.array([[0, 1]]), *ok[1:])
    with pytest.raises(ConfigError, match="k must be"):
        iaa(*ok, k=0)
    with pytest.raises(ConfigError, match="subjects"):
        iaa_by_subject(*ok, subjects=np.array([[0.5, 1.0]]))


# ------------------------------------------------------------------ query-bootstrap intervals
@pytest.mark.parametrize("method", ["percentile", "BCa"])
def test_intervals_are_scipys_bootstrap_of_the_mean(method):
    """With every query defined, the interval is scipy.stats.bootstrap's of the plain mean over
    the same resampled queries (same seed and batches)."""
    rng = np.random.default_rng(0)
    values = {"awrf": rng.random(60), "iaa": rng.random(60) * 2}
    out = mean_with_intervals(values, level=0.9, n_boot=500, seed=11, method=method)
    batch = max(1, min(500, CELLS_PER_BATCH // 60))
    for name, v in values.items():
        ref = stats.bootstrap((v,), np.mean, n_resamples=500, confidence_level=0.9, method=method, vectorized=True,
                              batch=batch, random_state=np.random.default_rng(11))
        assert out[name] == pytest.approx(v.mean(), rel=1e-12)
        assert out[f"{name}_ci_low"] == pytest.approx(ref.confidence_interval.low, rel=1e-10)
        assert out[f"{name}_ci_high"] == pytest.approx(ref.confidence_interval.high, rel=1e-10)
        assert out[f"{name}_n_queries"] == 60


def test_undefined_queries_are_left_out():
    """NaN queries are out of the mean and of every resample's mean: a loop over resamples drawn
    with the same generator gives the same percentile interval."""
    rng = np.random.default_rng(4)
    v = rng.random(40)
    v[[3, 17]] = np.nan
    out = mean_with_intervals({"ndcg_awrf": v}, level=0.95, n_boot=300, seed=2)
    assert out["ndcg_awrf"] == pytest.approx(np.nanmean(v)) and out["ndcg_awrf_n_queries"] == 38
    draws = np.random.default_rng(2).integers(0, 40, (300, 40))  # scipy.stats.bootstrap's resampling
    means = np.array([np.nanmean(v[d]) for d in draws])
    lo, hi = np.percentile(means, [2.5, 97.5])
    assert out["ndcg_awrf_ci_low"] == pytest.approx(lo, rel=1e-9)
    assert out["ndcg_awrf_ci_high"] == pytest.approx(hi, rel=1e-9)
    assert set(mean_with_intervals({"iaa": v}, level=0)) == {"iaa", "iaa_n_queries"}


def test_interval_errors():
    with pytest.raises(ConfigError, match="at least one"):
        mean_with_intervals({})
    with pytest.raises(ConfigError, match="same queries"):
        mean_with_intervals({"a": np.ones(3), "b": np.ones(4)})
    with pytest.raises(ConfigError, match="level"):
        mean_with_intervals({"a": np.ones(3)}, level=1.5)


def test_registry_entries():
    from fairltr.metrics.plugins import direction, ideal, is_better, metric_info

    assert direction("awrf") == "higher" and direction("ndcg_awrf") == "higher" and direction("iaa") == "lower"
    assert ideal("iaa") == 0.0 and is_better("iaa", 0.1, 0.2) and is_better("awrf", 0.9, 0.8)
    assert metric_info("awrf_ci_low").name == "awrf" and metric_info("iaa_n_queries").name == "iaa"
