"""The ``multinomial-fair`` sweep method: ``fair_p`` split over the protected categories by their
pool mix, a trial equals multinomial FA*IR applied directly to the base model's ranking, and the
protected categories' exposure moves with ``fair_p``."""

from __future__ import annotations

import numpy as np
import pytest

from fairltr.fair import rerank_multinomial
from fairltr.metrics import evaluate_ranking
from fairltr.synthetic import make_biased_rankings
from fairltr.fair import parse_policy
from fairltr.workflows import ranking_trial
from fairltr.workflows.sweep import serving_policy_of


def _three_categories(seed: int):
    train, test = make_biased_rankings(12, 20, 0.4, seed=seed)
    rng = np.random.default_rng(0)
    for df in (train, test):  # 0, and the protected split into 1 and 2
        prot = df["protected"].to_numpy() >= 1
        df.loc[prot, "protected"] = np.where(rng.random(prot.sum()) < 0.3, 2, 1)
    return train, test


def test_multinomial_fair_trial_equals_direct_reranking():
    train, test = _three_categories(3)
    runner = ranking_trial("multinomial-fair", [(train, test)], max_iter=20)
    assert runner.space.names == ["fair_p", "fair_alpha"]
    lo, hi = runner.space.params[0].bounds
    values = {"fair_p": hi, "fair_alpha": 0.1}
    shares = dict(runner.spec_for(values).multinomial_post.shares)
    counts = train["protected"].value_counts()
    assert set(shares) == {1, 2} and sum(shares.values()) == pytest.approx(hi)
    assert shares[1] / shares[2] == pytest.approx(counts[1] / counts[2])
    policy = parse_policy(serving_policy_of(runner.spec_for(values)))  # what --register-best records
    assert policy.multinomial and policy.alpha == pytest.approx(0.1)
    served = {int(c): float(v) for c, v in (part.split("=") for part in policy.multinomial_spec().split(","))}
    assert served == pytest.approx(shares, rel=1e-5)
    weak, strong = runner({"fair_p": lo, "fair_alpha": 0.1}), runner(values)
    assert strong["exposure_gap"] < weak["exposure_gap"]
    base = runner._base_models[0]
    direct = rerank_multinomial(base.rank(test), "score", p={str(c): v for c, v in shares.items()}, alpha=0.1,
                                group="protected")
    want = evaluate_ranking(direct.assign(score=-direct["rank"].astype(float)), "score")
    for key in ("kendall_tau", "exposure_ratio", "ndcg_at_10"):
        assert strong[key] == pytest.approx(want[key], abs=1e-12)
