"""Figure 1 from tracked runs: the comparison run and its table."""

from __future__ import annotations

import uuid

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.errors import DataError


def test_compare_runs_logs_figure_table_and_report(mlflow_tracking, tmp_path):
    import mlflow

    from fairltr.tracking import log_runs_comparison

    experiment = f"test-compare-{uuid.uuid4().hex[:6]}"
    mlflow.set_experiment(experiment)
    settings = {"gamma=0": (0.68, 0.74), "gamma=1e3": (0.53, 1.0), "colorblind": (0.79, 0.95)}
    for name, (tau, ratio) in settings.items():
        with mlflow.start_run(run_name=name):
            mlflow.log_metrics({"kendall_tau": tau, "exposure_ratio": ratio})
            mlflow.log_param("gamma", name)
    with mlflow.start_run(run_name="no metrics"):
        pass
    run_id, table = log_runs_comparison(experiment, out=tmp_path / "fig1.png")
    assert sorted(table["label"]) == sorted(settings)
    assert table["kendall_tau"].is_monotonic_increasing
    assert dict(zip(table["label"], table["exposure_ratio"])) == {k: v[1] for k, v in settings.items()}
    assert (tmp_path / "fig1.png").read_bytes()[:4] == b"\x89PNG"
    client = mlflow.MlflowClient()
    assert {f.path for f in client.list_artifacts(run_id)} == {"relevance_vs_exposure.png", "runs.csv",
                                                               "fairness_report.html"}
    csv = pd.read_csv(mlflow.artifacts.download_artifacts(f"runs:/{run_id}/runs.csv", dst_path=str(tmp_path)))
    assert len(csv) == 3 and "gamma" in csv.columns
    # the comparison run has no metrics of its own, so a second comparison sees the same 3 runs
    result = CliRunner().invoke(cli, ["compare-runs", "--experiment", experiment])
    assert result.exit_code == 0, result.output
    assert "colorblind" in result.output and "0.7900" in result.output


def test_compare_runs_errors(mlflow_tracking):
    import mlflow

    from fairltr.tracking import log_runs_comparison

    with pytest.raises(DataError, match="no MLflow experiment named"):
        log_runs_comparison(f"absent-{uuid.uuid4().hex[:6]}")
    experiment = f"test-compare-empty-{uuid.uuid4().hex[:6]}"
    mlflow.set_experiment(experiment)
    with mlflow.start_run():
        mlflow.log_metric("kendall_tau", 0.5)
    with pytest.raises(DataError, match="exposure_ratio"):
        log_runs_comparison(experiment)
