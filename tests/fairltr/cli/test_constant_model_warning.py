"""Issue 29 item 7: a model whose test scores are all equal gets a warning from ``evaluate`` (and
``evaluate-model`` and every ``train`` command, through the same helper; a tracked run has it in
its description); a model with distinct scores gets none."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.deltr import DELTR
from fairltr.gates import constant_model_warning


def _files(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    df = pd.DataFrame({"query_id": np.repeat(np.arange(6), 20), "candidate_id": np.arange(n),
                       "protected": rng.integers(0, 2, n), "x1": rng.normal(size=n), "judgment": rng.integers(0, 3, n)})
    df = df.sort_values(["query_id", "judgment"], ascending=[True, False])  # sorted by judgment, as many files are
    df.to_csv(tmp_path / "d.csv", index=False)
    model = DELTR(gamma=0.0, max_iter=3).fit(df, features=["x1"], item="candidate_id")
    model.save(tmp_path / "fitted.json")
    model.weights_ = np.zeros_like(model.weights_)
    model.save(tmp_path / "constant.json")
    return tmp_path / "d.csv"


def _evaluate(model, data):
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(model), "--data", str(data), "--item", "candidate_id"])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    return res.output


def test_a_constant_model_is_warned_about_and_a_fitted_one_is_not(tmp_path):
    data = _files(tmp_path)
    warned = [ln for ln in _evaluate(tmp_path / "constant.json", data).splitlines() if ln.startswith("Warning:")]
    assert len(warned) == 1 and "constant model" in warned[0], warned
    assert "Warning:" not in _evaluate(tmp_path / "fitted.json", data)


def test_the_warning_needs_every_query_tied():
    assert constant_model_warning({"tied_score_share": 1.0}) is not None
    assert constant_model_warning({"tied_score_share": 0.5}) is None
    assert constant_model_warning({"tied_score_share": float("nan")}) is None
    assert constant_model_warning({}) is None


def _train_files(tmp_path):
    """``zero.csv``: every label 0 (LambdaMART learns nothing: constant scores); ``flat.csv``: the only
    feature constant (every linear or PL model scores all alike)."""
    rng = np.random.default_rng(1)
    n = 120
    df = pd.DataFrame({"query_id": np.repeat(np.arange(6), 20), "candidate_id": np.arange(n),
                       "protected": rng.integers(0, 2, n), "x1": rng.normal(size=n), "judgment": 0})
    df.to_csv(tmp_path / "zero.csv", index=False)
    df.assign(x1=1.0, judgment=rng.integers(0, 3, n)).to_csv(tmp_path / "flat.csv", index=False)
    return tmp_path


TRAIN = {  # ranker -> (training file, its options)
    "lambdamart": ("zero.csv", ["--n-estimators", "5", "--min-data-in-leaf", "3"]),
    "deltr": ("flat.csv", ["--gamma", "0", "--max-iter", "5"]),
    "plrank": ("flat.csv", ["--max-iter", "3"]),
}


def _train(ranker, files, out, *extra):
    data, options = TRAIN[ranker]
    res = CliRunner().invoke(cli, ["train", ranker, "--train", str(files / data), "--test", str(files / data),
                                   "--item", "candidate_id", "--out", str(out), *options, *extra])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    return res.output


@pytest.mark.parametrize("ranker", sorted(TRAIN))
def test_training_a_constant_model_prints_the_warning(ranker, tmp_path):
    if ranker == "lambdamart":
        pytest.importorskip("lightgbm")
    output = _train(ranker, _train_files(tmp_path), tmp_path / "out", "--no-track")
    warned = [ln for ln in output.splitlines() if ln.startswith("Warning:")]
    assert warned == [constant_model_warning({"tied_score_share": 1.0})], output


def test_a_tracked_constant_model_has_the_warning_in_its_run_description(tmp_path, mlflow_tracking):
    import mlflow

    pytest.importorskip("lightgbm")
    output = _train("lambdamart", _train_files(tmp_path), tmp_path / "out", "--experiment", "test-constant-model")
    assert sum(ln.startswith("Warning:") for ln in output.splitlines()) == 1, output
    run_id = next(ln.split()[2] for ln in output.splitlines() if ln.startswith("MLflow run "))
    description = mlflow.MlflowClient().get_run(run_id).data.tags["mlflow.note.content"]
    assert "**Warning:** the model's scores are all tied within every query (a constant model" in description
