"""The ``detconstsort`` and ``lambdamart+detconstsort`` sweep methods: the target distribution
built from ``geyik_p`` and the pool mix, a trial equals DetConstSort applied directly to the
base model's ranking, and the exposure moves with the target."""

from __future__ import annotations

import numpy as np
import pytest

from fairltr.fair import rerank_geyik
from fairltr.metrics import evaluate_ranking
from fairltr.synthetic import make_biased_rankings
from fairltr.workflows import ranking_trial


def test_detconstsort_trial_equals_direct_reranking(small_rankings):
    train, test = small_rankings
    runner = ranking_trial("detconstsort", [(train, test)], max_iter=30)
    assert runner.space.names == ["geyik_p"]
    lo, hi = runner.space.params[0].bounds
    weak, strong = runner({"geyik_p": lo}), runner({"geyik_p": hi})
    assert strong["exposure_gap"] < weak["exposure_gap"]
    base = runner._base_models[0]
    target = {0: 1 - hi, 1: hi}
    assert dict(runner.spec_for({"geyik_p": hi}).geyik_post.target) == pytest.approx(target)
    direct = rerank_geyik(base.rank(test), "score", method="detconstsort", target=target)
    want = evaluate_ranking(direct.assign(score=-direct["rank"].astype(float)), "score")
    for key in ("kendall_tau", "exposure_ratio", "ndcg_at_10"):
        assert strong[key] == pytest.approx(want[key], abs=1e-12)


def test_target_splits_the_protected_share_by_the_pool_mix():
    train, test = make_biased_rankings(12, 20, 0.4, seed=3)
    rng = np.random.default_rng(0)
    for df in (train, test):  # three categories: 0, and the protected split into 1 and 2
        prot = df["protected"].to_numpy() >= 1
        df.loc[prot, "protected"] = np.where(rng.random(prot.sum()) < 0.25, 2, 1)
    runner = ranking_trial("detconstsort", [(train, test)], max_iter=20)
    target = dict(runner.spec_for({"geyik_p": 0.5}).geyik_post.target)
    counts = train["protected"].value_counts()
    assert sum(target.values()) == pytest.approx(1.0)
    assert target[0] == pytest.approx(0.5)
    assert target[1] / target[2] == pytest.approx(counts[1] / counts[2])
    assert np.isfinite(runner({"geyik_p": 0.5})["exposure_ratio"])


def test_lambdamart_detconstsort(small_rankings):
    pytest.importorskip("lightgbm", reason="needs the [gbdt] extra")
    from fairltr.gbdt import LambdaMART

    train, test = small_rankings
    runner = ranking_trial("lambdamart+detconstsort", [(train, test)])
    lo, hi = runner.space.params[0].bounds
    weak, strong = runner({"geyik_p": lo}), runner({"geyik_p": hi})
    assert isinstance(runner._base_models[0], LambdaMART)
    assert strong["exposure_gap"] < weak["exposure_gap"]
