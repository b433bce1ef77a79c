"""``fairltr audit --model-uri`` on a real MLflow server: the verified model scores the table, the
summary names the version and its digest, the three files are logged to one run linked to the
version, and the version is tagged with the summary's sha256 and the run id."""

from __future__ import annotations

import hashlib
import json
import uuid

import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import DELTR
from fairltr.cli import cli
from fairltr.monitoring import make_served_traffic

pytestmark = pytest.mark.slow


def test_model_audit_is_logged_and_the_version_tagged(mlflow_tracking, tmp_path):
    import mlflow

    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run

    train = make_served_traffic(2, 60, 20, biased_window=None, seed=2)
    train = train.assign(protected=(train["race"] == "Black").astype(int), judgment=train["hired"])
    cols = ["query_id", "protected", "x1", "x2", "x3", "judgment"]
    model = DELTR(gamma=0.0, max_iter=20, colorblind=True).fit(train[cols])
    name = f"audited-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-bias-audit")
    with mlflow.start_run() as run:
        log_ranker_into_run(run.info.run_id, model, train_df=train[cols], register=name, title="audited ranker")
    held = make_served_traffic(2, 40, 20, biased_window=None, seed=5)
    held = held.assign(protected=(held["race"] == "Black").astype(int))
    held.to_csv(tmp_path / "held.csv", index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["audit", "--data", str(tmp_path / "held.csv"), "--model-uri", f"models:/{name}/1",
                                   "--query", "query_id", "--group", "race", "--method", "scoring", "--ci", "0",
                                   "--out", str(out)], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "bias_audit.json").read_text())
    assert summary["model"]["name"] == name and summary["model"]["version"] == "1"
    assert len(summary["model"]["digest"]) >= 32 and summary["first_used"] is None  # never promoted
    sha = hashlib.sha256((out / "bias_audit.json").read_bytes()).hexdigest()
    client = mlflow.MlflowClient()
    tags = client.get_model_version(name, "1").tags
    assert tags["fairltr.bias_audit.sha256"] == sha
    run_id = tags["fairltr.bias_audit.run_id"]
    logged = {a.path for a in client.list_artifacts(run_id)}
    assert {"bias_audit.json", "bias_audit.csv", "bias_audit.html"} <= logged
    assert client.get_run(run_id).data.tags["fairltr.model_version"] == "1"
    scores = pd.Series(model.predict(held[["query_id", "protected", "x1", "x2", "x3"]]))
    above = (scores > scores.median()).groupby(held["race"]).mean()
    rows = {r["category"]: r for r in summary["attributes"]["race"]["rows"]}
    for race, rate in above.items():
        assert rows[race]["rate"] == pytest.approx(rate, rel=1e-6)
