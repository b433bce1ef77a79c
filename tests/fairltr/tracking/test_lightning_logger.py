"""lightning_logger: the Lightning MLFlowLogger on fairltr's tracking-URI policy."""

from __future__ import annotations

import pytest


@pytest.mark.slow  # importing lightning.pytorch alone takes ~13 s here
def test_lightning_logger_logs_to_the_server_and_joins_an_active_run(mlflow_tracking):
    import mlflow

    from fairltr.tracking import lightning_logger

    logger = lightning_logger("test-lightning", run_name="dpr smoke")
    logger.log_metrics({"loss": 1.5}, step=0)
    logger.log_hyperparams({"alpha": 0.5})
    logger.finalize("success")
    run = mlflow.MlflowClient().get_run(logger.run_id)
    assert run.data.metrics["loss"] == 1.5 and run.data.params["alpha"] == "0.5"
    assert logger._tracking_uri == mlflow_tracking

    mlflow.set_experiment("test-lightning")
    with mlflow.start_run() as active:
        inner = lightning_logger("test-lightning")
        assert inner.run_id == active.info.run_id
