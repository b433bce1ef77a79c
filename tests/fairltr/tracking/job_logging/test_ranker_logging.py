"""log_deltr_run against a real server: params, batched history, metrics, artifacts, registry."""

from __future__ import annotations

import json
import math
import uuid

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.tracking.job_logging.ranker_logging import file_fingerprint, frame_fingerprint, log_history


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

    from fairltr.tracking.runs.config import default_tracking_uri, tracking_uri

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
    assert p["train_rows"] == str(len(train))
    assert not any("sha256" in k for k in p)  # the data's identity is on its datasets, not in params
    inputs = {i.dataset.name: (i.dataset, {t.key: t.value for t in i.tags}) for i in run.inputs.dataset_inputs}
    assert set(inputs) == {"train", "test"}
    for role, frame, context in (("train", train, "training"), ("test", test, "testing")):
        dataset, tags = inputs[role]
        assert tags["mlflow.data.context"] == context
        assert tags["fairltr.sha256"] == frame_fingerprint(frame)
        assert dataset.digest == frame_fingerprint(frame)[:32]
        assert json.loads(dataset.profile)["num_rows"] == len(frame)
    assert run.data.tags["mlflow.runName"] == "gamma 50" and run.data.tags["purpose"] == "test"
    assert client.get_experiment(run.info.experiment_id).name == "test-logging"

    history = client.get_metric_history(run_id, "train_total")
    assert [m.step for m in history] == [h["iteration"] for h in model.history]
    assert [m.value for m in history] == pytest.approx([h["total"] for h in model.history])
    # one batch for the whole history, logged after the model
    assert [c for c in calls if c] == [3 * len(model.history)]

    # the logged model carries the FINAL objective (not iteration 0's) and the test metrics
    logged_model = client.get_logged_model(run.data.tags["fairltr.model_uri"].split("/")[-1])
    on_model = {m.key: (m.value, m.step) for m in logged_model.metrics}
    final = model.history[-1]
    assert final["total"] != model.history[0]["total"]
    for term in ("total", "listnet", "exposure"):
        assert on_model[f"train_{term}"] == (pytest.approx(final[term]), final["iteration"])
    assert on_model["exposure_ratio"][0] == pytest.approx(metrics["exposure_ratio"])

    counts = {k: v for k, v in metrics.items() if k.endswith("_n_queries")}
    assert counts  # evaluate_ranking returns them; they are a table, not metrics
    for key, value in metrics.items():
        if math.isfinite(value) and key not in counts:
            assert run.data.metrics[key] == pytest.approx(value)
    assert "undefined_metric" not in run.data.metrics
    assert not any(k.endswith("_n_queries") for k in run.data.metrics)
    table = json.loads(mlflow.artifacts.load_text(f"runs:/{run_id}/metric_counts.json"))["n_queries"]
    assert table == {k[: -len("_n_queries")]: int(v) for k, v in counts.items()}
    # fairness first: the run page lists metrics in logging order
    order = list(run.data.metrics)
    assert order[:6] == ["exposure_ratio", "exposure_disparity", "exposure_shortfall", "selection_ratio_at_10",
                         "ndcg_at_10", "kendall_tau"]
    rest = [k for k in order[6:] if not k.startswith("train_")]
    fairness = [k for k in rest if k.startswith(("exposure_", "selection_ratio")) or k in ("awrf", "ndcg_awrf", "iaa")]
    assert fairness and rest[:len(fairness)] == fairness
    assert [k for k in rest if k.startswith("ndcg_at_")] == ["ndcg_at_1", "ndcg_at_5", "ndcg_at_20", "ndcg_at_100"]
    note = run.data.tags["mlflow.note.content"]
    assert f"`exposure_ratio` {metrics['exposure_ratio']:.4g}" in note and "`selection_ratio_at_10`" in note

    names = {f.path for f in client.list_artifacts(run_id)}
    assert {"exposure_by_position.png", "training_curve.png", "fairness_report.html", "metric_counts.json"} <= names
    html = mlflow.artifacts.load_text(f"runs:/{run_id}/fairness_report.html")
    assert "exposure_ratio" in html and f"{metrics['exposure_ratio']:.4g}" in html
    assert html.count("gamma=50") <= 1  # the title does not repeat the setting

    version = run.data.tags["fairltr.registered_version"]
    mv = client.get_model_version(name, version)
    assert mv.run_id == run_id
    assert mv.description.startswith("Registered from run 'gamma 50'") and "exposure_ratio" in mv.description
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


def test_log_history_lands_every_entry_on_the_server(mlflow_tracking):
    """600 iterations x 3 terms = 1,800 values (MLflow takes at most 1,000 metrics per request:
    the client splits the batch) all land, with their steps; NaN terms are skipped."""
    import mlflow

    mlflow.set_experiment("test-logging")
    history = [{"iteration": i, "total": 2.0 + i, "listnet": 1.0 + i, "exposure": 1.0 / (i + 1)} for i in range(600)]
    history[7]["exposure"] = float("nan")
    client = mlflow.MlflowClient()
    run = client.create_run(mlflow.get_experiment_by_name("test-logging").experiment_id)
    assert log_history(history, run.info.run_id) == 1799
    for term in ("total", "listnet", "exposure"):
        got = {m.step: m.value for m in client.get_metric_history(run.info.run_id, f"train_{term}")}
        want = {h["iteration"]: h[term] for h in history if math.isfinite(h[term])}
        assert got == pytest.approx(want), term
    client.set_terminated(run.info.run_id)


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
