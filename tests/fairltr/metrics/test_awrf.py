"""AWRF and the TREC Fair 2022 task-1 score (fairltr.metrics.awrf) against the track's own evaluation
code on a shared example, and against a plain per-query loop."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.spatial.distance import jensenshannon

from fairltr.errors import ConfigError
from fairltr.metrics.awrf import awrf, intersect, rank_discount, trec_fair_ndcg, trec_fair_task1

# ---------------------------------------------------------------------------------------------------
# The shared example. Inputs made up for this test; the reference values were printed by the track's
# evaluation code, fair-trec/trec2022-fair-public at commit 6fd105f (wptrec.metrics.AWRFMetric, with
# wptrec.dimension.FairDim; xarray 2026.9.0, numpy 2.4.6, scipy 1.17.1) run by
# benchmarks/trec_fair_reference_driver.py in a throwaway venv. Pages 1..12 have alignments on two
# dimensions, each with an unknown level (the track's "@UNKNOWN", the last column); pages 98 and 99
# are missing from the alignment table (left out of AWRF, as the track does). Targets over the 4 x 3
# geo x gender categories (geo varies slowest) and over geo alone.
GEO = [[0.0, 0.0, 0.0, 1.0], [0.0, 1.0, 0.0, 0.0], [0.1, 0.16, 0.16, 0.58], [0.18, 0.06, 0.17, 0.59],
       [0.5, 0.0, 0.41, 0.09], [0.4, 0.02, 0.4, 0.18], [0.25, 0.28, 0.25, 0.22], [0.0, 0.19, 0.04, 0.77],
       [0.39, 0.14, 0.18, 0.29], [0.23, 0.3, 0.36, 0.11], [0.53, 0.25, 0.17, 0.05], [0.42, 0.36, 0.01, 0.21]]
GENDER = [[0.0, 0.96, 0.04], [0.33, 0.02, 0.65], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0], [0.29, 0.5, 0.21],
          [0.05, 0.89, 0.06], [0.16, 0.82, 0.02], [0.08, 0.2, 0.72], [0.14, 0.61, 0.25], [0.69, 0.3, 0.01],
          [0.33, 0.36, 0.31], [0.87, 0.05, 0.08]]
RUNS = [[3, 1, 7, 99, 12, 5], [8, 2, 6, 10, 98, 4, 11, 9], [5, 4]]  # topics 1, 2, 3 in rank order
QRELS = [[3, 7, 2], [6, 4, 11, 1, 12], [4, 9, 10]]
TARGET_GEO_GENDER = [
    [0.011, 0.129, 0.008, 0.002, 0.008, 0.05, 0.013, 0.258, 0.039, 0.047, 0.323, 0.112],
    [0.301, 0.134, 0.036, 0.057, 0.094, 0.072, 0.135, 0.032, 0.021, 0.085, 0.016, 0.017],
    [0.351, 0.03, 0.048, 0.144, 0.047, 0.003, 0.167, 0.062, 0.041, 0.05, 0.027, 0.03]]
TARGET_GEO = [[0.291, 0.03, 0.382, 0.297], [0.183, 0.124, 0.352, 0.341], [0.424, 0.282, 0.2, 0.094]]
REFERENCE = {  # per topic: nDCG, AWRF, Score as AWRFMetric printed them
    "geo_gender": [(0.6199062466621399, 0.9167060092004287, 0.5682717814560668),
                   (0.38577812910079956, 0.8730439116300263, 0.33680124685147533),
                   (0.3800937831401825, 0.8713970716247674, 0.3312126095711344)],
    "geo": [(0.6199062466621399, 0.9273023276218156, 0.5748405054371057),
            (0.38577812910079956, 0.9503202797334851, 0.36661277956213234),
            (0.3800937831401825, 0.8977630114428563, 0.3412341393826382)],
}
TOL = 2e-6  # the track computes its discount in float32


def padded_example():
    """The example as padded arrays: (Q, N) ranks, mask, relevance, per-dimension alignments."""
    n = max(len(r) for r in RUNS)
    q = len(RUNS)
    ranks = np.tile(np.arange(1, n + 1), (q, 1))
    mask = np.zeros((q, n), dtype=bool)
    relevant = np.zeros((q, n), dtype=bool)
    geo = np.zeros((q, n, 4))
    gender = np.zeros((q, n, 3))
    for i, run in enumerate(RUNS):
        for j, page in enumerate(run):
            mask[i, j] = True
            relevant[i, j] = page in QRELS[i]
            if page <= 12:  # pages missing from the alignment table keep zero rows
                geo[i, j], gender[i, j] = GEO[page - 1], GENDER[page - 1]
    n_relevant = np.array([len(r) for r in QRELS])
    return ranks, mask, relevant, geo, gender, n_relevant


@pytest.mark.parametrize("case", ["geo_gender", "geo"])
def test_agrees_with_the_trec_fair_2022_evaluation_code(case):
    ranks, mask, relevant, geo, gender, n_relevant = padded_example()
    alignment = intersect(geo, gender) if case == "geo_gender" else geo
    target = np.array(TARGET_GEO_GENDER if case == "geo_gender" else TARGET_GEO)
    out = trec_fair_task1(ranks, relevant, alignment, target, mask, n_relevant=n_relevant)
    want = np.array(REFERENCE[case])
    np.testing.assert_allclose(out["ndcg"], want[:, 0], rtol=TOL)
    np.testing.assert_allclose(out["awrf"], want[:, 1], rtol=TOL)
    np.testing.assert_allclose(out["score"], want[:, 2], rtol=TOL)


def test_the_same_queries_in_another_padding_and_order():
    """Ranks need not follow the slots: shuffle each query's slots and pad further."""
    ranks, mask, relevant, geo, gender, n_relevant = padded_example()
    rng = np.random.default_rng(1)
    perm = np.stack([rng.permutation(12) for _ in range(3)])
    pad = lambda x: np.concatenate([x, np.zeros((3, 4) + x.shape[2:], dtype=x.dtype)], axis=1)  # noqa: E731
    take = lambda x: np.take_along_axis(pad(x), perm.reshape(3, 12, *([1] * (x.ndim - 2))), axis=1)  # noqa: E731
    out = trec_fair_task1(take(ranks), take(relevant), intersect(take(geo), take(gender)),
                          np.array(TARGET_GEO_GENDER), take(mask), n_relevant=n_relevant)
    np.testing.assert_allclose(out["score"], np.array(REFERENCE["geo_gender"])[:, 2], rtol=TOL)


def loop_awrf(ranks, alignment, target, mask):
    """One query at a time, scipy's jensenshannon (the track's own distance)."""
    out = []
    for q in range(len(ranks)):
        keep = mask[q] & (alignment[q].sum(axis=1) > 0)
        if not keep.any():
            out.append(math.nan)
            continue
        w = 1.0 / np.log2(np.maximum(ranks[q][keep], 2))
        dist = (w[:, None] * alignment[q][keep]).sum(axis=0) / w.sum()
        out.append(1.0 - jensenshannon(dist, target[q]) ** 2)
    return np.array(out)


def test_random_queries_against_a_loop():
    rng = np.random.default_rng(7)
    q, n, g = 40, 25, 5
    mask = rng.random((q, n)) < 0.8
    ranks = np.argsort(np.argsort(-rng.random((q, n)), axis=1), axis=1) + 1
    alignment = rng.dirichlet(np.ones(g), (q, n)) * (rng.random((q, n, 1)) < 0.9)
    target = rng.dirichlet(np.ones(g), q)
    mask[0] = False  # an empty query
    alignment[1] = 0.0  # a query without any alignment
    got = awrf(ranks, alignment, target, mask, cutoff=None)
    want = loop_awrf(ranks, alignment, target, mask)
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)
    assert math.isnan(got[0]) and math.isnan(got[1])
    assert awrf(np.array([[1, 2]]), np.array([[[0.5, 0.5], [0.5, 0.5]]]), np.array([[1.0, 1.0]]),
                np.ones((1, 2), bool))[0] == pytest.approx(1.0)
    one = awrf(np.array([[1]]), np.array([[[1.0, 0.0]]]), np.array([[0.0, 1.0]]), np.ones((1, 1), bool))[0]
    assert one == pytest.approx(1.0 - math.log(2.0))  # disjoint supports: the lowest AWRF


def test_cutoff_and_discount():
    assert rank_discount(np.array([1, 2, 4])).tolist() == [1.0, 1.0, 0.5]
    ranks = np.array([[1, 2, 3]])
    rel = np.array([[False, False, True]])
    assert trec_fair_ndcg(ranks, rel, np.ones((1, 3), bool), cutoff=2)[0] == 0.0
    assert trec_fair_ndcg(ranks, rel, np.ones((1, 3), bool), cutoff=None)[0] == pytest.approx(1 / math.log2(3))
    assert math.isnan(trec_fair_ndcg(ranks, ~np.ones((1, 3), bool), np.ones((1, 3), bool))[0])


def test_input_errors():
    ok = dict(ranks=np.array([[1, 2]]), alignment=np.ones((1, 2, 2)), target=np.ones((1, 2)), mask=np.ones((1, 2), bool))
    with pytest.raises(ConfigError, match="finite numbers >= 0"):
        awrf(**{**ok, "alignment": -np.ones((1, 2, 2))})
    with pytest.raises(ConfigError, match="target must be"):
        awrf(**{**ok, "target": np.ones((1, 3))})
    with pytest.raises(ConfigError, match="sums to 0"):
        awrf(**{**ok, "target": np.zeros((1, 2))})
    with pytest.raises(ConfigError, match="1-based"):
        awrf(**{**ok, "ranks": np.array([[0, 1]])})
    with pytest.raises(ConfigError, match="share their"):
        intersect(np.ones((1, 2, 2)), np.ones((1, 3, 2)))
    with pytest.raises(ConfigError, match="n_relevant"):
        trec_fair_ndcg(np.array([[1, 2]]), np.ones((1, 2), bool), np.ones((1, 2), bool), n_relevant=np.array([1]))
