"""`fairltr train deltr --engine lightning`: the same model format as the estimator, registered
through the same ranker pyfunc, and the estimator's results on the DELTR paper's Law race split."""

from __future__ import annotations

import json
import uuid

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import DELTR
from fairltr.cli import cli


def _train(*args):
    return CliRunner().invoke(cli, ["train", "deltr", *args], catch_exceptions=False)


def test_lightning_engine_registers_through_the_ranker_pyfunc(tiny_rankings, tmp_path, mlflow_tracking):
    import mlflow

    train, test = tiny_rankings
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    name = f"lightning-{uuid.uuid4().hex[:6]}"
    res = _train("--train", str(tmp_path / "train.csv"), "--test", str(tmp_path / "test.csv"), "--gamma", "100",
                 "--engine", "lightning", "--batch-queries", "4", "--epochs", "30", "--out", str(tmp_path / "l"),
                 "--register", name, "--experiment", "test-engine")
    assert res.exit_code == 0, res.output
    # fairltr's own line names the version; MLflow's registration prints stay quiet without --verbose
    assert f"registered as '{name}' version 1" in res.output and "Successfully registered" not in res.output
    model = DELTR.load(tmp_path / "l" / "model.json")
    assert model.n_iter_ == 30 and len(model.history) == 31
    run = mlflow.search_runs(experiment_names=["test-engine"], output_format="list")[0]
    assert run.data.params["engine"] == "lightning" and run.data.params["batch_queries"] == "4"
    # the run's train_total history ends at the objective of the returned weights
    hist = mlflow.MlflowClient().get_metric_history(run.info.run_id, "train_total")
    assert sorted(hist, key=lambda m: m.step)[-1].value == pytest.approx(model.history[-1]["total"])
    loaded = mlflow.pyfunc.load_model(f"models:/{name}/1")
    scores = loaded.predict(test)["score"].to_numpy()
    assert scores == pytest.approx(model.predict(test), abs=1e-9)
    metrics = json.loads((tmp_path / "l" / "metrics.json").read_text())
    assert set(metrics) == set(json.loads(json.dumps(metrics)))  # plain JSON like the estimator's


@pytest.mark.parametrize("gamma", [0, 500000])
def test_lightning_engine_matches_the_estimator_on_law_race(deltr_data, tmp_path, gamma):
    d = deltr_data / "LawStudents" / "race_black"
    common = ["--train", str(d / "LawStudents_Race_train.txt"), "--test", str(d / "LawStudents_Race_test.txt"),
              "--gamma", str(gamma), "--no-track", "--duplicate-rows", "keep"]  # the paper's files repeat records
    est = _train(*common, "--out", str(tmp_path / "est"))
    lit = _train(*common, "--engine", "lightning", "--out", str(tmp_path / "lit"))
    assert est.exit_code == 0 and lit.exit_code == 0, est.output + lit.output
    a = json.loads((tmp_path / "est" / "metrics.json").read_text())
    b = json.loads((tmp_path / "lit" / "metrics.json").read_text())
    for key in ("exposure_ratio", "kendall_tau"):
        assert abs(a[key] - b[key]) <= 0.01, (key, a[key], b[key])
    # same file format: either loads as the estimator's model and predicts the test rows
    test = pd.read_csv(d / "LawStudents_Race_test.txt", header=None)
    assert len(DELTR.load(tmp_path / "lit" / "model.json").feature_names_) == test.shape[1] - 2
