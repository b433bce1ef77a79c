"""log_deltr_run against a real server: params, batched history, metrics, artifacts, registry."""

from __future__ import annotations

import math
import uuid

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.tracking.logging import file_fingerprint, frame_fingerprint, log_history


def test_frame_fingerprint_sees_values_and_order_not_index(tmp_path):
    df = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [0, 1, 0]})
    fp = frame_fingerprint(df)
    assert fp == frame_fingerprint(df.set_axis([10, 11, 12]))
    assert fp != frame_fingerprint(df.iloc[::-1])
    changed = df.copy()
    changed.loc[1, "a"] = 2.0000001
    assert fp != frame_fingerprint(changed)
    assert fp != frame_fingerprint(df.rename(columns={"a": "c"}))
    p = tmp_path / "x.bin"
    p.write_bytes(b"abc")
    assert file_fingerprint(p) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"


def test_default_tracking_uri_is_sqlite_in_cwd(tmp_path, monkeypatch):
    import mlflow
    from mlflow.tracking._tracking_service import utils as tracking_utils

    from fairltr.tracking.config import default_tracking_uri, tracking_uri

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mlruns" / "0").mkdir(parents=True)  # a stray file store must not take over
    (tmp_path / "mlruns" / "0" / "meta.yaml").write_text("name: x\n")
    assert tracking_uri() == default_tracking_uri() == f"sqlite:///{tmp_path.resolve()}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:1")
    assert tracking_uri() == "http://127.0.0.1:1"
    assert not mlflow.is_tracking_uri_set() or mlflow.get_tracking_uri() == "http://127.0.0.1:1"


def test_log_deltr_run_logs_everything(mlflow_tracking, tiny_rankings, monkeypatch):
    import mlflow

    from fairltr.tracking import log_deltr_run

    train, test = tiny_rankings
    model = DELTR(gamma=50.0, max_iter=15, seed=7).fit(train)
    metrics = evaluate_ranking(test, model.predict(test))
    metrics["undefined_metric"] = float("nan")
    name = f"deltr-{uuid.uuid4().hex[:8]}"

    calls = []
    original = mlflow.MlflowClient.log_batch

    def counting(self, run_id, metrics=(), params=(), tags=(), **kw):
        calls.append(sum(1 for m in metrics if m.key.startswith("train_")))
        return original(self, run_id, metrics=metrics, params=params, tags=tags, **kw)

    monkeypatch.setattr(mlflow.MlflowClient, "log_batch", counting)
    run_id = log_deltr_run(model, train_df=train, test_df=test, test_metrics=metrics, register=name,
                           run_name="gamma 50", experiment="test-logging", tags={"purpose": "test"})
    monkeypatch.setattr(mlflow.MlflowClient, "log_batch", original)

    client = mlflow.MlflowClient()
    run = client.get_run(run_id)
    p = run.data.params
    assert p["gamma"] == "50.0" and p["seed"] == "7" and p["fairness_loss"] == "exposure_hinge"
    assert p["gamma_range"].startswith("[")  # declared by the loss registry
    assert p["train_sha256"] == frame_fingerprint(train)
    assert p["train_rows"] == str(len(train))
    assert run.data.tags["mlflow.runName"] == "gamma 50" and run.data.tags["purpose"] == "test"
    assert client.get_experiment(run.info.experiment_id).name == "test-logging"

    history = client.get_metric_history(run_id, "train_total")
    assert [m.step for m in history] == [h["iteration"] for h in model.history]
    assert [m.value for m in history] == pytest.approx([h["total"] for h in model.history])
    # one batch for the whole history (MLflow itself later re-sends the latest values with the model)
    assert [c for c in calls if c][0] == 3 * len(model.history)

    for key, value in metrics.items():
        if math.isfinite(value):
            assert run.data.metrics[key] == pytest.approx(value)
    assert "undefined_metric" not in run.data.metrics

    names = {f.path for f in client.list_artifacts(run_id)}
    assert {"exposure_by_position.png", "training_curve.png", "fairness_report.html"} <= names
    html = mlflow.artifacts.load_text(f"runs:/{run_id}/fairness_report.html")
    assert "exposure_ratio" in html and f"{metrics['exposure_ratio']:.4g}" in html

    version = run.data.tags["fairltr.registered_version"]
    mv = client.get_model_version(name, version)
    assert mv.run_id == run_id
    loaded = mlflow.pyfunc.load_model(f"models:/{name}/{version}")
    np.testing.assert_allclose(loaded.predict(test)["score"].to_numpy(), model.predict(test), atol=1e-12)


def test_attaches_to_active_run_and_nests_a_second_model(mlflow_tracking, tiny_rankings):
    import mlflow

    from fairltr.tracking import log_deltr_run

    train, _ = tiny_rankings
    a = DELTR(gamma=0.0, max_iter=5).fit(train)
    b = DELTR(gamma=0.0, colorblind=True, max_iter=5).fit(train)
    mlflow.set_experiment("test-logging")
    with mlflow.start_run() as outer:
        mlflow.log_param("gamma", "0")  # as `mlflow run` would: a differing spelling must not clash
        first = log_deltr_run(a, train_df=train, experiment="ignored-inside-a-run")
        second = log_deltr_run(b, train_df=train, run_name="colorblind")
    client = mlflow.MlflowClient()
    assert first == outer.info.run_id
    assert second != first
    assert client.get_run(second).data.tags["mlflow.parentRunId"] == first
    assert client.get_run(first).data.params["fairltr.gamma"] == "0.0"
    assert client.get_run(second).data.params["colorblind"] == "True"


def test_log_history_chunks_at_mlflow_limit(monkeypatch):
    import mlflow

    batches = []
    monkeypatch.setattr(mlflow.MlflowClient, "log_batch",
                        lambda self, run_id, metrics=(), **kw: batches.append(len(metrics)))
    history = [{"iteration": i, "total": 1.0, "listnet": 1.0, "exposure": float("nan")} for i in range(600)]
    assert log_history(history, "run") == 1200  # NaN skipped
    assert batches == [1000, 200]


def test_inside_mlflow_run_job_models_share_the_job_run(mlflow_tracking, tiny_rankings, monkeypatch):
    """As under ``mlflow run`` (MLFLOW_RUN_ID set): the first model logs into that run, later
    models of the same job become its nested runs (none escapes into a new top-level run)."""
    import mlflow

    from fairltr.tracking import log_deltr_run

    train, _ = tiny_rankings
    mlflow.set_experiment("test-logging-job")
    job = mlflow.MlflowClient().create_run(mlflow.get_experiment_by_name("test-logging-job").experiment_id)
    monkeypatch.setenv("MLFLOW_RUN_ID", job.info.run_id)
    ids = [log_deltr_run(DELTR(gamma=g, max_iter=3).fit(train), train_df=train, experiment="elsewhere")
           for g in (0.0, 5.0)]
    while mlflow.active_run() is not None:
        mlflow.end_run()
    client = mlflow.MlflowClient()
    assert ids[0] == job.info.run_id
    assert client.get_run(ids[1]).data.tags["mlflow.parentRunId"] == job.info.run_id
    assert mlflow.get_experiment_by_name("elsewhere") is None
