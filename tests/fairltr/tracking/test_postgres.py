"""A PostgreSQL-backed ``mlflow server`` (skipped unless FAIRLTR_TEST_POSTGRES_URI is set):
log a run, register the ranker, set the alias and load it back through the alias."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

from fairltr import DELTR, evaluate_ranking

pytestmark = pytest.mark.postgres


def test_postgres_backed_server_run_register_alias(mlflow_postgres_server, tiny_rankings, monkeypatch):
    import mlflow
    from mlflow.tracking._tracking_service import utils as tracking_utils

    from fairltr.tracking import log_deltr_run
    from fairltr.tracking.model_registry import current_champion, promote

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_postgres_server.uri)
    monkeypatch.setattr(tracking_utils, "_tracking_uri", None)
    assert mlflow_postgres_server.backend_uri.startswith("postgresql")
    train, test = tiny_rankings
    model = DELTR(gamma=100.0, max_iter=20).fit(train)
    metrics = evaluate_ranking(test, model.predict(test))
    name = f"pg-{uuid.uuid4().hex[:8]}"
    run_id = log_deltr_run(model, train_df=train, test_df=test, test_metrics=metrics, register=name,
                           experiment="test-postgres")
    client = mlflow.MlflowClient()
    assert mlflow.get_tracking_uri() == mlflow_postgres_server.uri
    assert client.get_run(run_id).data.metrics["exposure_ratio"] == pytest.approx(metrics["exposure_ratio"])
    decision = promote(name, 1, ["exposure_ratio>=0", "kendall_tau>=champion"])
    assert decision.promoted and current_champion(client, name) == "1"
    assert client.get_model_version(name, "1").tags["fairltr.promotion.verdict"] == "promoted"
    loaded = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    np.testing.assert_allclose(loaded.predict(test)["score"].to_numpy(), model.predict(test), atol=1e-12)
