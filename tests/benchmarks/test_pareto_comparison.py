"""benchmarks/pareto_comparison.py's data handling: the seeded within-query permutation (score
ties), the match of a ranked table back to its test rows, and the kept rankings' round trip to
the objectives the trial reported."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairltr.metrics import evaluate_ranking
from fairltr.metrics.front_bootstrap import resampled_objectives

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "pareto_comparison.py"


@pytest.fixture(scope="module")
def pc():
    spec = importlib.util.spec_from_file_location("pareto_comparison", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def table(seed: int = 0) -> pd.DataFrame:
    """Three queries sorted by judgment (as the paper's files are), groups 0/1/2, a duplicated row."""
    rng = np.random.default_rng(seed)
    rows = []
    for q, n in ((7, 6), (3, 9), (5, 4)):
        y = np.sort(rng.integers(0, 4, n))[::-1].astype(float)
        rows.append(pd.DataFrame({"query_id": q, "protected": rng.integers(0, 3, n), "x1": rng.normal(size=n),
                                  "judgment": y}))
    df = pd.concat(rows, ignore_index=True)
    return pd.concat([df, df.iloc[[2]]], ignore_index=True).sort_values("query_id", kind="stable",
                                                                         key=lambda s: s.map({7: 0, 3: 1, 5: 2}))


def test_permutation_keeps_each_query_and_is_seeded(pc):
    df = table().reset_index(drop=True)
    a, b = pc.permute_within_queries(df, 1), pc.permute_within_queries(df, 1)
    pd.testing.assert_frame_equal(a, b)
    assert list(dict.fromkeys(a["query_id"])) == [7, 3, 5]  # queries stay in order and contiguous
    assert (a["query_id"].diff().fillna(0) != 0).sum() == 2
    key = ["query_id", "protected", "x1", "judgment"]
    pd.testing.assert_frame_equal(a.sort_values(key).reset_index(drop=True), df.sort_values(key).reset_index(drop=True))
    assert not a["judgment"].equals(df["judgment"])  # no longer in judgment order
    assert not pc.permute_within_queries(df, 2).equals(a)


def test_row_ids_and_kept_rankings_reproduce_the_metrics(pc, tmp_path):
    test = pc.permute_within_queries(table().reset_index(drop=True), 3)
    scores = np.round(np.random.default_rng(4).normal(size=len(test)), 1)  # ties, broken by row position
    ranked = test.assign(score=scores).iloc[np.lexsort((np.arange(len(test)), -scores,
                                                        pd.factorize(test["query_id"])[0]))].reset_index(drop=True)
    ids = pc.row_ids(test, ranked.assign(protected=(ranked["protected"] >= 1).astype(int)))  # FA*IR's binary view
    pd.testing.assert_frame_equal(test.iloc[ids].reset_index(drop=True), ranked.drop(columns="score"))
    folds = [(test, test)]
    keep = pc.rank_keeper(tmp_path, folds)
    values = {"gamma": 0.5}
    keep(values, [ranked])
    frame = pd.DataFrame({"gamma": [0.5]})
    (trial,) = pc.trial_rankings(folds, tmp_path, frame, ["gamma"])
    got = resampled_objectives(trial, np.ones((1, len(test))), "candidates")[0]
    want = evaluate_ranking(test, scores)
    assert got == pytest.approx((want["kendall_tau"], want["exposure_disparity"]), abs=1e-12)
    assert pc.trial_rankings(folds, tmp_path, pd.DataFrame({"gamma": [0.25]}), ["gamma"]) == [None]
