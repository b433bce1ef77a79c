"""tuning.storage.set_user_attrs stores the same user attributes as set_user_attr one by one,
in one transaction on an RDB storage and one by one on a journal file."""

from __future__ import annotations

import optuna
import pytest

from tuning.storage import make_storage, set_user_attrs

ATTRS = {"ndcg_at_10": 0.71, "exposure_ratio": 0.93, "train_seconds": 0.04, "worker": "host:1", "n": 3}


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_batched_user_attrs_equal_one_by_one(tmp_path, kind):
    url = f"sqlite:///{tmp_path / 'o.db'}" if kind == "sqlite" else f"journal:{tmp_path / 'o.log'}"
    storage = make_storage(url)
    study = optuna.create_study(study_name="s", storage=storage)
    commits = []
    if kind == "sqlite":
        from sqlalchemy import event

        event.listen(storage.engine, "commit", lambda conn: commits.append(1))

    def batched(trial):
        before = len(commits)
        set_user_attrs(trial, ATTRS)
        if kind == "sqlite":
            assert len(commits) - before < len(ATTRS)  # one transaction (the heartbeat thread may commit too)
        assert trial.user_attrs == ATTRS  # the trial's own view is updated too
        return 1.0

    def single(trial):
        for k, v in ATTRS.items():
            trial.set_user_attr(k, v)
        return 1.0

    study.optimize(batched, n_trials=1)
    study.optimize(single, n_trials=1)
    a, b = optuna.load_study(study_name="s", storage=make_storage(url)).get_trials()  # read back from the file
    assert a.user_attrs == b.user_attrs == ATTRS


def test_batched_user_attrs_overwrite_like_set_user_attr(tmp_path):
    study = optuna.create_study(study_name="s", storage=make_storage(f"sqlite:///{tmp_path / 'o.db'}"))

    def objective(trial):
        trial.set_user_attr("worker", "old")
        set_user_attrs(trial, {"worker": "new", "x": 1.5})
        return 0.0

    study.optimize(objective, n_trials=1)
    assert study.trials[0].user_attrs == {"worker": "new", "x": 1.5}
