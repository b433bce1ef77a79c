"""mlflow_logger: the Lightning MLFlowLogger on fairltr's tracking-URI policy (logger_target)."""

from __future__ import annotations

import pytest


@pytest.mark.slow  # importing lightning.pytorch alone takes ~13 s here
def test_mlflow_logger_logs_to_the_server_and_joins_an_active_run(mlflow_tracking):
    import mlflow

    from fairltr.tracking import logger_target
    from lightning_modules import mlflow_logger

    uri, run_id = logger_target()
    assert run_id is None  # no active run: the logger makes its own
    logger = mlflow_logger("test-lightning", run_name="dpr smoke", tracking_uri=uri, run_id=run_id)
    logger.log_metrics({"loss": 1.5}, step=0)
    logger.log_hyperparams({"alpha": 0.5})
    logger.finalize("success")
    run = mlflow.MlflowClient().get_run(logger.run_id)
    assert run.data.metrics["loss"] == 1.5 and run.data.params["alpha"] == "0.5"
    assert logger._tracking_uri == mlflow_tracking

    mlflow.set_experiment("test-lightning")
    with mlflow.start_run() as active:
        uri, run_id = logger_target()
        inner = mlflow_logger("test-lightning", tracking_uri=uri, run_id=run_id)
        assert run_id == active.info.run_id and inner.run_id == active.info.run_id
