"""The ``plrank`` sweep method: its space is the policy loss's declared ``lambda`` and a trial
equals training and evaluating the policy directly (the train plrank workflow's recipe)."""

from __future__ import annotations

import pytest

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import DataError
from fairltr.workflows.sweep_plugins import SweepInputs, get_sweep_method
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


def test_plrank_trial_reports_the_policy_figures(small_rankings):
    """The trial's metrics hold the policy's sampled figures beside the mean-score ranking's."""
    train, test = small_rankings
    got = _trial([(train, test)], max_iter=10)({"lambda": 5.0})
    for key in ("expected_ndcg_at_10", "ee_l", "ee_d", "ee_r", "expected_exposure_ratio",
                "expected_exposure_disparity", "ndcg_at_10", "exposure_disparity"):
        assert key in got and got[key] == got[key], key


def test_a_plrank_sweep_optimises_the_policy_figures(ranking_files, tmp_path):
    """Objectives on the policy (expected nDCG@10 up, expected exposure disparity down): the study
    stores them with the registry's directions and every trial's values are its figures."""
    import optuna

    from fairltr.workflows import run_sweep_job

    train, test = ranking_files
    cfg = SweepConfig(method="plrank", train=train, test=test, n_trials=3, study="policy", out=tmp_path,
                      objectives="expected_ndcg_at_10,expected_exposure_disparity", mlflow=False, progress=False,
                      plot=False, method_options={"max_iter": 5})
    assert run_sweep_job(cfg, echo=lambda _: None).finished
    study = optuna.load_study(study_name="policy", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
        assert t.values == [pytest.approx(t.user_attrs["expected_ndcg_at_10"]),
                            pytest.approx(t.user_attrs["expected_exposure_disparity"])]
