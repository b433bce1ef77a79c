"""A PLRank policy through MLflow like DELTR: ``train plrank --register`` logs and registers it,
the ranker pyfunc returns its deterministic mean-score ranking, promotion verifies its digest and
loads it with fairltr's loader, and damaged weights are rejected; the run holds the policy's sampled
figures (metrics and fairness report) beside the deterministic ranking's."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import mlflow
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import PLRank
from fairltr.cli import cli


@pytest.fixture
def registered(mlflow_tracking, tiny_rankings, tmp_path):
    train, test = tiny_rankings
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    name = f"plrank-{uuid.uuid4().hex[:8]}"
    res = CliRunner().invoke(cli, ["train", "plrank", "--train", str(tmp_path / "train.csv"),
                                   "--test", str(tmp_path / "test.csv"), "--lambda", "7", "--samples", "8",
                                   "--max-iter", "8", "--out", str(tmp_path / "out"), "--register", name,
                                   "--experiment", "test-plrank"])
    assert res.exit_code == 0, res.output
    assert f"registered as {name!r} version 1" in res.output  # stderr inside output: click 8.1 and 8.2 alike
    return name, tmp_path


def test_registered_plrank_pyfunc_is_deterministic_and_promotes(registered, tiny_rankings, mlflow_server):
    name, tmp = registered
    _, test = tiny_rankings
    model = PLRank.load(tmp / "out" / "model.json")
    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, "1")
    run = client.get_run(mv.run_id)
    assert run.data.tags["fairltr.model"] == "PLRank" and run.data.tags["fairltr.fairness_loss"] == "plrank"
    assert run.data.params["lam"] == "7.0" and run.data.params["lambda"] == "7.0"
    assert "train_dcg" in run.data.metrics and "ndcg_at_10" in run.data.metrics
    # the policy's own figures (100 sampled rankings per test query) beside the mean-score ranking's
    metrics = json.loads((tmp / "out" / "metrics.json").read_text())
    for key in ("expected_ndcg_at_10", "ee_l", "ee_d", "ee_r", "expected_exposure_disparity"):
        assert run.data.metrics[key] == pytest.approx(metrics[key], abs=1e-12), key
    report = Path(mlflow.artifacts.download_artifacts(run_id=mv.run_id, artifact_path="fairness_report.html",
                                                      dst_path=str(tmp / "dl"))).read_text()
    assert "expected_exposure_disparity" in report and "expected_ndcg_at_10" in report
    assert mv.tags["fairltr.digest"].startswith("sha256:")

    loaded = mlflow.pyfunc.load_model(f"models:/{name}/1")
    a, b = loaded.predict(test), loaded.predict(test)
    pd.testing.assert_frame_equal(a.drop(columns="request_id"), b.drop(columns="request_id"))  # no sampling at inference
    np.testing.assert_allclose(a["score"].to_numpy(), model.predict(test), rtol=0, atol=1e-12)

    ok = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "1", "--data", str(tmp / "test.csv"),
                                  "--gate", "exposure_ratio>=0"])
    assert ok.exit_code == 0, ok.output
    assert client.get_registered_model(name).aliases.get("champion") == "1"


def test_damaged_plrank_weights_are_rejected(registered, mlflow_server):
    name, tmp = registered
    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, "1")
    location = client.get_logged_model(mv.source.split("/")[-1]).artifact_location
    weights = mlflow_server.log_path.parent / "artifacts" / location[len("mlflow-artifacts:/"):] / "artifacts" \
        / "deltr.safetensors"
    weights.write_bytes(weights.read_bytes()[:-40])
    res = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "1", "--gate", "exposure_ratio>=0"])
    assert res.exit_code == 1 and "does not match its recorded digest" in res.output, res.output
    assert "Traceback" not in res.output
