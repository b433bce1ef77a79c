"""Issue 29 item 4: a tracked ``train deltr --ci`` logs the same ``audit_table.csv`` (intervals
included) as ``evaluate-model`` on the same model, test file and seed."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli


def _table(seed: int, n_queries: int, first: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * 12
    race = rng.choice(["White", "Black", "Hispanic"], n, p=[0.5, 0.3, 0.2])
    merit = rng.normal(size=n)
    return pd.DataFrame({"query_id": np.repeat(np.arange(first, first + n_queries), 12), "candidate_id": np.arange(n),
                         "race": race, "sex": rng.choice(["Female", "Male"], n),
                         "x1": merit - 0.7 * (race == "Black") + 0.4 * rng.normal(size=n),
                         "judgment": np.clip(np.round(merit + 1.5), 0, 3).astype(np.int64)})


@pytest.mark.slow  # a tracked training and an evaluate-model run, ~7 s
def test_tracked_training_audit_table_equals_evaluate_models(mlflow_tracking, tmp_path):
    import mlflow

    _table(0, 20, 1).to_csv(tmp_path / "train.csv", index=False)
    test = _table(1, 20, 1001)  # under 30 queries: the bootstrap resamples candidates
    test.sample(frac=1.0, random_state=3).to_csv(tmp_path / "test.csv", index=False)
    name = f"same-audit-{uuid.uuid4().hex[:6]}"
    ci = ["--ci", "0.9", "--n-boot", "50"]
    groups = ["--group", "race", "--group", "sex", "--item", "candidate_id"]
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(tmp_path / "train.csv"), "--test",
                                   str(tmp_path / "test.csv"), *groups, *ci, "--gamma", "0", "--max-iter", "20",
                                   "--features", "x1", "--out", str(tmp_path / "out"), "--register", name])
    assert res.exit_code == 0, res.output
    client = mlflow.MlflowClient()
    train_run = client.get_model_version(name, "1").run_id
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{name}/1", "--data",
                                   str(tmp_path / "test.csv"), *groups, *ci])
    assert res.exit_code == 0, res.output
    eval_run = next(line.split()[-1] for line in res.output.splitlines() if line.startswith("MLflow run "))
    tables = [pd.read_csv(Path(mlflow.artifacts.download_artifacts(run_id=r, artifact_path="audit_table.csv",
                                                                   dst_path=str(tmp_path / r))))
              for r in (train_run, eval_run)]
    assert "impact_ratio_at_k_ci_low" in tables[0].columns
    pd.testing.assert_frame_equal(tables[0], tables[1])
    a, b = client.get_run(train_run).data.metrics, client.get_run(eval_run).data.metrics
    for key in ("impact_ratio_at_10", "impact_ratio_at_10_ci_low", "impact_ratio_at_10_ci_high"):
        assert a[key] == b[key], key
