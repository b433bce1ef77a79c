"""Helpers of the alias-integrity tests (not a test module): a logged ranker with chosen
training metrics, fresh registered models of it, promotion through the CLI, the stored files of a
version, and an ``mlflow server`` whose webhooks may call a loopback receiver."""

from __future__ import annotations

import time
import uuid
from pathlib import Path
from typing import Callable

import pytest
from click.testing import CliRunner

from fairltr.cli import cli

EXPERIMENT = "test-alias-integrity"
PASSING = ["--gate", "exposure_ratio>=0.5"]
FAILING = ["--gate", "exposure_ratio>=0.99"]


def log_ranker(tiny_rankings, exposure: float = 0.9, ndcg: float = 0.7) -> str:
    """Log a tiny DELTR ranker (with its digest) whose training run says ``exposure_ratio`` =
    ``exposure`` and ``ndcg_at_10`` = ``ndcg``; returns its ``models:/m-<id>`` URI."""
    import mlflow

    from fairltr import DELTR
    from fairltr.tracking import log_deltr_run

    train, test = tiny_rankings
    model = DELTR(gamma=0.0, max_iter=3).fit(train)
    run_id = log_deltr_run(model, train_df=train, test_df=test, experiment=EXPERIMENT,
                           test_metrics={"ndcg_at_10": ndcg, "exposure_ratio": exposure})
    return mlflow.MlflowClient().get_run(run_id).data.tags["fairltr.model_uri"]


def register(uri: str, n: int, prefix: str = "alias") -> str:
    """A fresh registered model with ``n`` versions of ``uri``; returns its name."""
    import mlflow

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    for _ in range(n):
        mlflow.register_model(uri, name)
    return name


def promote(name: str, version: str, gates=PASSING, *extra: str):
    """``fairltr promote`` in this process; returns click's result."""
    return CliRunner().invoke(cli, ["promote", "--model", name, "--version", str(version), *gates, *extra])


def verify(*args: str):
    return CliRunner().invoke(cli, ["verify-alias", *args])


def stored_folder(server, name: str, version: str) -> Path:
    """The folder of a version's model files inside the server's artifact store."""
    import mlflow

    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, version)
    location = client.get_logged_model(mv.source.split("/")[-1]).artifact_location
    assert location.startswith("mlflow-artifacts:/"), location
    folder = server.log_path.parent / "artifacts" / location[len("mlflow-artifacts:/"):]
    assert (folder / "MLmodel").is_file(), folder
    return folder


def wait_for(condition: Callable[[], object], timeout: float = 30.0, what: str = "condition") -> object:
    """Poll ``condition`` every 0.1 s until it is truthy (returned) or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"{what} not reached within {timeout:g} s")


WEBHOOK_SERVER_ENV = {
    "MLFLOW_WEBHOOK_ALLOWED_SCHEMES": "http,https",  # the receiver listens on plain http, loopback
    "MLFLOW_WEBHOOK_ALLOW_PRIVATE_IPS": "true",  # loopback is a private address to MLflow's SSRF check
    "MLFLOW_WEBHOOK_CACHE_TTL": "1",  # the server caches its webhook list per event for 60 s by default
}


def start_webhook_server(tmp_path_factory):
    """A real ``mlflow server`` (SQLite) that may deliver webhooks to loopback, with a fixed key
    for its stored webhook secrets."""
    from cryptography.fernet import Fernet
    from mlflow_fixtures import start_mlflow_server

    work = tmp_path_factory.mktemp("mlflow-webhook-server")
    env = {**WEBHOOK_SERVER_ENV, "MLFLOW_WEBHOOK_SECRET_ENCRYPTION_KEY": Fernet.generate_key().decode()}
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        return start_mlflow_server(f"sqlite:///{work / 'mlflow.db'}", work)


def point_at(uri: str):
    """A context that points MLflow (and subprocesses) at ``uri``."""
    import mlflow

    mp = pytest.MonkeyPatch()
    mp.setenv("MLFLOW_TRACKING_URI", uri)
    for key in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):
        mp.delenv(key, raising=False)
    mlflow.set_tracking_uri(uri)
    return mp


__all__ = ["EXPERIMENT", "PASSING", "FAILING", "log_ranker", "register", "promote", "verify", "stored_folder",
           "wait_for", "start_webhook_server", "point_at"]
