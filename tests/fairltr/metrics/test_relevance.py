"""Relevance metrics over padded queries against scipy and brute-force loops (docs/spec.md §3)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from scipy.stats import kendalltau

from fairltr.metrics import (
    kendall_tau,
    mrr_at_k,
    ndcg_at_k,
    order_by,
    precision_at_k,
    ranks_by,
    ranks_from_order,
    recall_at_k,
)
from fairltr.metrics.relevance import _kendall_tau_pairwise


def _batch(q=12, n=15, seed=0, levels=4):
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(q, n))
    judg = rng.integers(0, levels, size=(q, n)).astype(np.float64)  # many ties
    sizes = rng.integers(1, n + 1, size=q)
    sizes[0], sizes[1] = n, 1
    mask = np.arange(n)[None, :] < sizes[:, None]
    return scores, judg, mask


def _t(a):
    return torch.as_tensor(a)


def _stable_order(values: np.ndarray) -> np.ndarray:
    """Indices by decreasing value, ties by input order."""
    return np.argsort(-values, kind="stable")


def test_order_and_ranks_tie_break_by_input_order():
    v = torch.tensor([[1.0, 3.0, 3.0, 2.0, 0.0]])
    m = torch.tensor([[True, True, True, True, False]])
    assert order_by(v, m).tolist() == [[1, 2, 3, 0, 4]]
    r = ranks_by(v, m)
    assert r.tolist() == [[4, 1, 2, 3, 5]]
    torch.testing.assert_close(ranks_from_order(order_by(v, m)), r)


def test_kendall_tau_matches_scipy_tau_b():
    scores, judg, mask = _batch(seed=1)
    got = kendall_tau(ranks_by(_t(scores), _t(mask)), _t(judg), _t(mask)).numpy()
    for qi in range(len(scores)):
        s, y = scores[qi][mask[qi]], judg[qi][mask[qi]]
        if len(s) < 2 or np.all(y == y[0]):
            assert np.isnan(got[qi])
            continue
        want = kendalltau(s, y, variant="b").statistic
        assert got[qi] == pytest.approx(want, rel=1e-12, abs=1e-12), qi


def test_kendall_tau_pairwise_reference_chunked_equals_unchunked():
    scores, judg, mask = _batch(q=9, n=31, seed=2)
    pred = ranks_by(_t(scores), _t(mask))
    full = _kendall_tau_pairwise(pred, _t(judg), _t(mask))
    for block in (1, 37, 9 * 31 * 5):
        torch.testing.assert_close(_kendall_tau_pairwise(pred, _t(judg), _t(mask), block=block), full, equal_nan=True)
    torch.testing.assert_close(kendall_tau(pred, _t(judg), _t(mask), block=37), full, equal_nan=True)  # still accepted


@pytest.mark.parametrize("seed", range(6))
def test_kendall_tau_n_log_n_matches_scipy_with_ties_and_ragged_masks(seed):
    """Ties in both predicted ranks and judgments, masks with holes, sizes up to 700 (10 radix bits)."""
    rng = np.random.default_rng(100 + seed)
    q, n = int(rng.integers(1, 6)), int(rng.integers(2, 700))
    pred = rng.integers(0, int(rng.integers(1, 50)), size=(q, n)).astype(np.float64)
    judg = rng.integers(0, int(rng.integers(1, 8)), size=(q, n)).astype(np.float64)
    mask = rng.random((q, n)) < rng.uniform(0.2, 1.0)
    mask[0] = rng.random(n) < 0.99
    got = kendall_tau(_t(pred), _t(judg), _t(mask)).numpy()
    reference = _kendall_tau_pairwise(_t(pred), _t(judg), _t(mask)).numpy()
    for qi in range(q):
        x, y = -pred[qi][mask[qi]], judg[qi][mask[qi]]
        if len(x) < 2 or np.all(y == y[0]) or np.all(x == x[0]):
            assert np.isnan(got[qi]) and np.isnan(reference[qi]), qi
            continue
        want = kendalltau(x, y, variant="b").statistic
        assert abs(got[qi] - want) <= 1e-12 and abs(reference[qi] - want) <= 1e-12, (qi, got[qi], want)


def test_kendall_tau_nan_policy_as_the_pairwise_version():
    """NaN for all-equal judgments, one real item or no slots, as before; a NaN judgment gives NaN."""
    pred = torch.tensor([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 3.0, 4.0], [1.0, 2.0, 0.0, 0.0],
                         [1.0, 2.0, 3.0, 0.0], [1.0, 0.0, 0.0, 0.0]])
    judg = torch.tensor([[2.0, 2.0, 2.0, 2.0], [3.0, float("nan"), 1.0, 0.0], [1.0, 0.0, 5.0, 5.0],
                         [0.0, 1.0, 2.0, 9.0], [1.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[True] * 4, [True] * 4, [True, True, False, False], [True, True, True, False],
                         [True, False, False, False]])
    got = kendall_tau(pred, judg, mask)
    keep = [0, 2, 3, 4]  # row 1: inputs are validated finite upstream; the pairwise version read NaN as a tie
    torch.testing.assert_close(got[keep], _kendall_tau_pairwise(pred, judg, mask)[keep], equal_nan=True)
    assert got[[0, 1, 4]].isnan().all() and got[2] == pytest.approx(1.0) and got[3] == pytest.approx(-1.0)
    assert kendall_tau(pred[:, :0], judg[:, :0], mask[:, :0]).isnan().all()  # no slots at all


def test_kendall_tau_perfect_and_reversed():
    y = torch.tensor([[3.0, 2.0, 1.0, 0.0]])
    m = torch.ones(1, 4, dtype=torch.bool)
    assert float(kendall_tau(ranks_by(y, m), y, m)) == pytest.approx(1.0)
    assert float(kendall_tau(ranks_by(-y, m), y, m)) == pytest.approx(-1.0)


@pytest.mark.parametrize("k", [1, 3, 5, 20])
def test_precision_at_k_against_loop(k):
    scores, judg, mask = _batch(seed=3)
    got = precision_at_k(ranks_by(_t(scores), _t(mask)), ranks_by(_t(judg), _t(mask)), _t(mask), k).numpy()
    for qi in range(len(scores)):
        s, y = scores[qi][mask[qi]], judg[qi][mask[qi]]
        top_pred = set(_stable_order(s)[:k])
        top_true = set(_stable_order(y)[:k])
        assert got[qi] == pytest.approx(len(top_pred & top_true) / k)


def _ndcg_loop(s: np.ndarray, y: np.ndarray, k: int) -> float:
    rel = y - min(y.min(), 0.0)
    gains = 2.0**rel - 1.0

    def dcg(order):
        return sum(gains[i] / math.log2(pos + 2) for pos, i in enumerate(order[:k]))

    ideal = dcg(_stable_order(gains))
    return dcg(_stable_order(s)) / ideal if ideal > 0 else float("nan")


@pytest.mark.parametrize("k", [1, 5, 10, 100])
def test_ndcg_at_k_against_loop(k):
    scores, judg, mask = _batch(seed=4)
    judg[2] = 0.0  # ideal DCG 0 -> undefined
    judg[3, :4] = [-2.0, 1.0, 0.0, 3.0]  # negative judgments are shifted to >= 0
    got = ndcg_at_k(ranks_by(_t(scores), _t(mask)), _t(judg), _t(mask), k).numpy()
    for qi in range(len(scores)):
        want = _ndcg_loop(scores[qi][mask[qi]], judg[qi][mask[qi]], k)
        if math.isnan(want):
            assert np.isnan(got[qi])
        else:
            assert got[qi] == pytest.approx(want, rel=1e-12), qi
    assert np.isnan(got[2])


def test_ndcg_uses_exponential_gain():
    """2^rel - 1 gains: with rel (2, 1) swapped, nDCG@2 = (1 + 3/log2(3)) / (3 + 1/log2(3))."""
    s = torch.tensor([[1.0, 2.0]])
    y = torch.tensor([[2.0, 1.0]])
    m = torch.ones(1, 2, dtype=torch.bool)
    want = (1 + 3 / math.log2(3)) / (3 + 1 / math.log2(3))
    assert float(ndcg_at_k(ranks_by(s, m), y, m, 2)) == pytest.approx(want)


@pytest.mark.parametrize("k", [1, 3, 10])
def test_mrr_and_recall_against_loop(k):
    scores, judg, mask = _batch(seed=5, levels=2)
    judg[4] = 0.0
    pred = ranks_by(_t(scores), _t(mask))
    mrr = mrr_at_k(pred, _t(judg), _t(mask), k).numpy()
    rec = recall_at_k(pred, _t(judg), _t(mask), k).numpy()
    for qi in range(len(scores)):
        s, y = scores[qi][mask[qi]], judg[qi][mask[qi]]
        order = _stable_order(s)
        relevant = y > 0
        if not relevant.any():
            assert np.isnan(mrr[qi]) and np.isnan(rec[qi])
            continue
        hits = [pos + 1 for pos, i in enumerate(order[:k]) if relevant[i]]
        assert mrr[qi] == pytest.approx(1.0 / hits[0] if hits else 0.0)
        assert rec[qi] == pytest.approx(len(hits) / relevant.sum())
