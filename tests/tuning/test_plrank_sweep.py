"""The ``plrank`` sweep method: its space is the policy loss's declared ``lambda`` and a trial
equals training and evaluating the policy directly (the train plrank workflow's recipe)."""

from __future__ import annotations

import pytest

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import DataError
from fairltr.workflows.sweep_registry import SweepInputs, get_sweep_method
from fairltr.workflows.train_plrank import PLRankSpec, plrank_outcome
from tuning.sweep import SweepConfig


def _trial(folds, **options):
    cfg = SweepConfig(method="plrank", train="a", test="b", n_trials=1, study="s", seed=3, method_options=options)
    return get_sweep_method("plrank").trial(SweepInputs(cfg, folds, DEFAULT_COLUMNS))


def test_plrank_trial_equals_direct_training(small_rankings):
    train, test = small_rankings
    runner = _trial([(train, test)], max_iter=15)
    assert runner.space.names == ["lambda"] and runner.space.params[0].zero_band > 0  # 0 = plain E[DCG]
    got = runner({"lambda": 50.0})
    want = plrank_outcome(train, test, PLRankSpec(lam=50.0, seed=3, max_iter=15, device="cpu")).metrics
    for key in ("kendall_tau", "ndcg_at_10", "exposure_ratio", "exposure_disparity"):
        assert got[key] == pytest.approx(want[key], abs=1e-12)


def test_plrank_trial_validates_the_data_first(small_rankings):
    train, test = small_rankings
    bad = test.copy()
    bad.loc[3, "x1"] = float("nan")
    with pytest.raises(DataError, match="x1"):
        _trial([(train, bad)], max_iter=5)
