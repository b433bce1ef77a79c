"""``fairltr sweep --register-best``: the best trade-off of a post-processing sweep becomes ONE
registered model whose serving policy re-ranks as the trial did."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

from fairltr.cli import cli


def test_fair_post_best_tradeoff_registers_with_its_policy(ranking_files, tmp_path, mlflow_sqlite, monkeypatch):
    import mlflow

    monkeypatch.chdir(tmp_path)
    train, test = ranking_files
    name = "best-fair-post"
    args = ["sweep", "--method", "fair-post", "--train", str(train), "--test", str(test), "--out", str(tmp_path / "o"),
            "--no-progress", "--max-iter", "30", "--trials", "5", "--study", "reg-best", "--tracking-uri", mlflow_sqlite,
            "--experiment", "tuning-register", "--register-best", name]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert res.exit_code == 0, res.output
    assert f"registered the best trade-off as {name!r} version 1, served with fair:p=" in res.output
    summary = json.loads(next((tmp_path / "o").glob("*_sweep_summary.json")).read_text())
    best = summary["best"]
    client = MlflowClient(mlflow_sqlite)
    mv = client.get_model_version(name, "1")
    assert f"fair:p={best['fair_p']:.6g}" in mv.description
    mlflow.set_tracking_uri(mlflow_sqlite)
    model = mlflow.pyfunc.load_model(f"models:/{name}/1")
    frame = pd.read_csv(test, header=None)
    frame.columns = ["query_id", "protected", *[f"x{i}" for i in range(1, frame.shape[1] - 2)], "judgment"]
    out = model.predict(frame)
    assert {"query_id", "score", "rank", "fair_feasible"} <= set(out.columns)
    # the served ranking is the trial's: the sweep's predictions file of the retrained model
    predicted = pd.read_csv(tmp_path / "o" / "best" / "predictions.csv")
    served = frame.assign(rank=out["rank"].to_numpy())
    merged = predicted.merge(served, on=["query_id", "x1", "x2"], suffixes=("_sweep", "_served"))
    assert len(merged) == len(frame)
    np.testing.assert_array_equal(merged["rank_sweep"].to_numpy(), merged["rank_served"].to_numpy())


def test_register_best_refuses_without_mlflow(ranking_files, tmp_path):
    train, test = ranking_files
    res = CliRunner().invoke(cli, ["sweep", "--method", "fair-post", "--train", str(train), "--test", str(test),
                                   "--out", str(tmp_path / "o"), "--trials", "2", "--study", "x", "--no-mlflow",
                                   "--register-best", "m"])
    assert res.exit_code != 0 and "drop --no-mlflow" in res.output
