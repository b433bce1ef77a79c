"""The sweep's MLflow mirror (``fairltr.tracking.SweepTracker``, a real SQLite store): a Ctrl-C that lands inside ``attach`` — the
moment a resumed worker reopens the shared parent run — leaves no run RUNNING after ``abort``."""

from __future__ import annotations

import optuna
import pytest
from mlflow import MlflowClient

from fairltr.tracking import PARENT_ATTR, SweepTracker
from tuning.study import make_storage


@pytest.fixture
def mlflow_sqlite(tmp_path) -> str:
    """A fresh SQLite tracking store (its tables created now)."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    MlflowClient(tracking_uri=uri).search_experiments()
    return uri


def test_interrupt_while_reopening_the_parent_run_leaves_nothing_running(tmp_path, mlflow_sqlite, monkeypatch):
    study = optuna.create_study(study_name="s", storage=make_storage(f"sqlite:///{tmp_path / 'o.db'}"),
                                directions=["maximize", "minimize"])
    first = SweepTracker(mlflow_sqlite, "tuning-attach", "s")  # the creator, finished and gone
    parent = first.attach(study, created=True, params={"method": "deltr"})
    first.client.set_terminated(parent, "FINISHED")
    assert study.user_attrs[PARENT_ATTR] == parent

    resumed = SweepTracker(mlflow_sqlite, "tuning-attach", "s")  # another process (worker tag) resumes
    resumed.worker = "elsewhere:1"
    original = resumed.client.update_run

    def committed_then_interrupted(run_id, *a, **kw):
        original(run_id, *a, **kw)  # the status is RUNNING in the store ...
        raise KeyboardInterrupt  # ... when Ctrl-C arrives, before update_run returns

    monkeypatch.setattr(resumed.client, "update_run", committed_then_interrupted)
    with pytest.raises(KeyboardInterrupt):
        try:
            resumed.attach(study, created=False, params={"method": "deltr"})
        except BaseException as exc:
            resumed.abort(exc)  # what run_sweep does
            raise
    client = MlflowClient(mlflow_sqlite)
    assert client.get_run(parent).info.status == "KILLED"
    exp = client.get_run(parent).info.experiment_id
    assert not client.search_runs([exp], filter_string="attributes.status = 'RUNNING'")
