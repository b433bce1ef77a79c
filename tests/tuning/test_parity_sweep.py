"""A sweep under the parity defaults: the stored objective names and directions, trial values
equal to the parity metrics, and a four-fifths constraint."""

from __future__ import annotations

import math

import optuna
import pytest

from fairltr.metrics import exposure_disparity
from fairltr.workflows import run_sweep_job
from tuning.objectives import DEFAULT_OBJECTIVES
from tuning.sweep import SweepConfig


def test_default_sweep_stores_parity_objectives(ranking_files, tmp_path):
    train, test = ranking_files
    cfg = SweepConfig(method="deltr", train=train, test=test, n_trials=3, study="parity", out=tmp_path,
                      constraints=["four_fifths@5"], mlflow=False, progress=False, plot=False, max_iter=20)
    result = run_sweep_job(cfg, echo=lambda _: None)
    assert result.finished and DEFAULT_OBJECTIVES == "kendall_tau:max,exposure_disparity:min"
    study = optuna.load_study(study_name="parity", storage=f"sqlite:///{tmp_path / 'optuna.db'}")
    assert study.user_attrs["objectives"] == ["kendall_tau", "exposure_disparity"]
    assert study.metric_names == ["kendall_tau", "exposure_disparity"]
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    assert study.user_attrs["constraints"] == ["impact_ratio_at_5>=0.8"]  # four-fifths reads the pooled impact ratio
    assert result.report.objectives == ["kendall_tau", "exposure_disparity"]
    assert result.report.directions == ["maximize", "minimize"]
    for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
        m = t.user_attrs  # one user attribute per metric
        assert t.values == [pytest.approx(m["kendall_tau"]), pytest.approx(m["exposure_disparity"])]
        # the objective is the distance of the reported ratio from parity
        assert m["exposure_disparity"] == pytest.approx(exposure_disparity(m["exposure_ratio"]))
        ir = m.get("impact_ratio_at_5", math.nan)
        want = 0.8 - ir if math.isfinite(ir) else 1e10
        assert t.constraints == {"impact_ratio_at_5>=0.8": pytest.approx(want)}
        assert {"selection_ratio_at_10", "exposure_shortfall"} <= set(m)
