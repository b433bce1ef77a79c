"""Parity metrics against independent loops: exposure_disparity / exposure_shortfall from the
reported exposure_ratio, and selection_ratio_at_k per query."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr.data import to_batch
from fairltr.metrics import (
    aggregate, derive_from_ratio, evaluate_ranking, exposure_disparity, exposure_shortfall, per_query_metrics, selection_ratio_at_k,
)


def _disparity_ref(r: float) -> float:
    if math.isnan(r):
        return math.nan
    return 1.0 if r == 0 else 1.0 - min(r, 1.0 / r)


def _shortfall_ref(r: float) -> float:
    return math.nan if math.isnan(r) else (1.0 - r if r < 1.0 else 0.0)


RATIOS = [0.0, 0.25, 0.8, 0.999, 1.0, 1.25, 4.0, 1e6, math.nan]


def test_disparity_and_shortfall_scalar_and_tensor():
    t = torch.tensor(RATIOS, dtype=torch.float64)
    got_d, got_s = exposure_disparity(t), exposure_shortfall(t)
    for i, r in enumerate(RATIOS):
        for got, ref in ((exposure_disparity(r), _disparity_ref(r)), (float(got_d[i]), _disparity_ref(r)),
                         (exposure_shortfall(r), _shortfall_ref(r)), (float(got_s[i]), _shortfall_ref(r))):
            assert (math.isnan(got) and math.isnan(ref)) or got == pytest.approx(ref, abs=1e-15), r
    # symmetric: R and 1/R are equally far from parity; shortfall only counts under-exposure
    for r in (0.5, 0.8, 0.95):
        assert exposure_disparity(r) == pytest.approx(exposure_disparity(1 / r))
        assert exposure_shortfall(1 / r) == 0.0 and exposure_shortfall(r) == pytest.approx(1 - r)


def _frame(seed: int, tilt: float) -> pd.DataFrame:
    """Random queries; ``tilt`` > 0 pushes the protected group up. q0 has no protected item,
    q1 no non-protected item, q2 a single item."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(9):
        n = {2: 1}.get(q, int(rng.integers(3, 14)))
        for i in range(n):
            g = 0 if q == 0 else 1 if q == 1 else int(i % 3 == 0) if i < 2 else int(rng.random() < 0.4)
            rows.append({"qid": f"q{q}", "grp": g, "rel": float(rng.integers(0, 4)),
                         "score": float(rng.normal() + tilt * g)})
    return pd.DataFrame(rows)


def _loop(df: pd.DataFrame, k: int) -> dict[str, list[float]]:
    """Per query, by plain Python: exposure ratio and selection ratio at k (defined queries only)."""
    out: dict[str, list[float]] = {"exposure_ratio": [], "selection_ratio": []}
    for _, d in df.groupby("qid", sort=False):
        s, g = d.score.to_numpy(), d.grp.to_numpy()
        order = sorted(range(len(s)), key=lambda i: (-s[i], i))  # ties by input order
        rank = {i: pos + 1 for pos, i in enumerate(order)}
        prot = [i for i in range(len(s)) if g[i] >= 1]
        nprot = [i for i in range(len(s)) if g[i] == 0]
        if prot and nprot:
            exp_p = sum(1 / math.log(1 + rank[i]) for i in prot) / len(prot)
            exp_n = sum(1 / math.log(1 + rank[i]) for i in nprot) / len(nprot)
            out["exposure_ratio"].append(exp_p / exp_n)
            rate_p = sum(rank[i] <= k for i in prot) / len(prot)
            rate_n = sum(rank[i] <= k for i in nprot) / len(nprot)
            if rate_n > 0:
                out["selection_ratio"].append(rate_p / rate_n)
    return out


@pytest.mark.parametrize("seed, tilt", [(0, 0.0), (1, -1.0), (2, 3.0)])
def test_reported_disparity_and_shortfall_follow_the_reported_ratio(seed, tilt):
    df = _frame(seed, tilt)
    res = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", k=(3,))
    ratios = _loop(df, 3)["exposure_ratio"]
    R = float(np.mean(ratios))
    assert res["exposure_ratio"] == pytest.approx(R, rel=1e-12)
    assert res["exposure_disparity"] == pytest.approx(1 - min(R, 1 / R), rel=1e-12)
    assert res["exposure_shortfall"] == pytest.approx(max(0.0, 1 - R), abs=1e-15)
    assert res["exposure_disparity_n_queries"] == res["exposure_shortfall_n_queries"] == len(ratios) == 6
    # not the mean of the per-query values (which would disagree with the reported ratio)
    per_query_mean = float(np.mean([1 - min(r, 1 / r) for r in ratios]))
    assert abs(res["exposure_disparity"] - per_query_mean) > 1e-3
    if tilt > 0:
        assert R > 1 and res["exposure_shortfall"] == 0.0 and res["exposure_disparity"] > 0.0


def test_per_query_values_are_each_querys_own():
    df = _frame(3, 0.5)
    batch = to_batch(df.assign(s=df.score), query="qid", group="grp", judgment="rel", features=["s"])
    pq = per_query_metrics(batch.features[..., 0], batch, k=(3,))
    ratio = pq["exposure_ratio"].numpy()
    for name, ref in (("exposure_disparity", _disparity_ref), ("exposure_shortfall", _shortfall_ref)):
        want = np.array([ref(float(r)) for r in ratio])
        np.testing.assert_allclose(pq[name].numpy(), want, rtol=1e-12, equal_nan=True)
    agg = aggregate(pq)
    assert agg["exposure_disparity"] == pytest.approx(_disparity_ref(agg["exposure_ratio"]))


@pytest.mark.parametrize("k", [1, 2, 3, 5, 20])
def test_selection_ratio_against_loop(k):
    df = _frame(4, 0.7)
    res = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", k=(k,))
    want = _loop(df, k)["selection_ratio"]
    key = f"selection_ratio_at_{k}"
    assert res[f"{key}_n_queries"] == len(want)
    assert res[key] == pytest.approx(float(np.mean(want)), rel=1e-12)


def test_selection_ratio_degenerate_queries():
    # q: top-1 protected, so the non-protected rate at k=1 is 0 -> left out; at k=2 both rates defined
    groups = torch.tensor([[1, 0, 0, 1], [0, 0, 0, 0], [1, 1, 0, 0]])
    mask = torch.tensor([[True] * 4, [True] * 4, [True, True, True, False]])
    ranks = torch.tensor([[1, 2, 3, 4], [1, 2, 3, 4], [3, 1, 2, 4]])
    k1 = selection_ratio_at_k(ranks, groups, mask, 1)
    assert math.isnan(float(k1[0])) and math.isnan(float(k1[1]))  # rate_n = 0; no protected item
    assert math.isnan(float(k1[2]))  # top-1 is protected (rank 1 at slot 1)
    k2 = selection_ratio_at_k(ranks, groups, mask, 2)
    assert float(k2[0]) == pytest.approx((1 / 2) / (1 / 2))
    assert float(k2[2]) == pytest.approx((1 / 2) / (1 / 1))  # padded slot 3 is not a non-protected item
    k9 = selection_ratio_at_k(ranks, groups, mask, 9)  # k beyond the list: everyone selected
    assert float(k9[0]) == 1.0 and float(k9[2]) == 1.0


def test_derive_from_ratio_after_further_averaging():
    # averaging two folds' dictionaries: the derived values must follow the averaged ratio again
    folds = [evaluate_ranking(_frame(s, t), "score", query="qid", group="grp", judgment="rel", k=(3,))
             for s, t in ((5, 2.0), (6, -2.0))]
    mean = {k: float(np.mean([f[k] for f in folds])) for k in folds[0]}
    derive_from_ratio(mean)
    R = mean["exposure_ratio"]
    assert mean["exposure_disparity"] == pytest.approx(1 - min(R, 1 / R))
    assert mean["exposure_shortfall"] == pytest.approx(max(0.0, 1 - R), abs=1e-15)
    naive = float(np.mean([f["exposure_disparity"] for f in folds]))
    assert abs(naive - mean["exposure_disparity"]) > 1e-2
    assert derive_from_ratio({"ndcg_at_10": 0.5}) == {"ndcg_at_10": 0.5}
