"""The ``lambdamart`` and ``lambdamart+fair`` sweep methods: a trial equals direct training and
evaluation, FA*IR re-ranks one LambdaMART base model per fold, and a CLI sweep with the MLflow
mirror works with a method name that holds ``+``."""

from __future__ import annotations

import optuna
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

pytest.importorskip("lightgbm", reason="the lambdamart sweep methods need the [gbdt] extra (lightgbm)")

from fairltr.cli import cli  # noqa: E402
from fairltr.fair import fair_postprocess  # noqa: E402
from fairltr.gbdt import GBDTParams, LambdaMART  # noqa: E402
from fairltr.metrics import evaluate_ranking  # noqa: E402
from fairltr.workflows import ranking_trial  # noqa: E402
from tuning.study import make_storage  # noqa: E402
from fairltr.tracking import PARENT_ATTR  # noqa: E402


def test_lambdamart_trial_equals_direct_training(small_rankings):
    train, test = small_rankings
    runner = ranking_trial("lambdamart", [(train, test)], seed=2)
    assert runner.space.names == ["learning_rate", "num_leaves", "min_data_in_leaf"]
    got = runner({"learning_rate": 0.05, "num_leaves": 6.6, "min_data_in_leaf": 4.2})
    model = LambdaMART(GBDTParams(learning_rate=0.05, num_leaves=7, min_data_in_leaf=4), seed=2).fit(train)
    want = evaluate_ranking(test, model.predict(test))
    for key in ("kendall_tau", "ndcg_at_10", "exposure_ratio", "exposure_disparity"):
        assert got[key] == pytest.approx(want[key], abs=1e-12)


def test_integer_parameters_are_used_rounded(small_rankings):
    train, test = small_rankings
    space = ranking_trial("lambdamart", [(train, test)]).space
    study = optuna.create_study(directions=["maximize", "minimize"])
    study.enqueue_trial({"learning_rate": 0.05, "num_leaves": 6.6, "min_data_in_leaf": 4.4})
    trial = study.ask()
    assert space.suggest(trial) == {"learning_rate": 0.05, "num_leaves": 7.0, "min_data_in_leaf": 4.0}
    assert trial.user_attrs["num_leaves"] == 7.0 and trial.params["num_leaves"] == 6.6


def test_lambdamart_fair_reranks_one_base_model_per_fold(small_rankings):
    train, test = small_rankings
    runner = ranking_trial("lambdamart+fair", [(train, test), (train, test)], seed=1)
    assert runner.space.names == ["fair_p", "fair_alpha"]
    lo, hi = runner.space.params[0].bounds
    weak = runner({"fair_p": lo, "fair_alpha": 0.1})
    base = dict(runner._base_models)
    strong = runner({"fair_p": hi, "fair_alpha": 0.1})
    assert len(base) == 2 and runner._base_models == base  # fitted once per fold, reused by every trial
    assert all(isinstance(m, LambdaMART) for m in base.values())
    assert strong["exposure_gap"] < weak["exposure_gap"]
    # the same as FA*IR post-processing of the base model's ranking, evaluated directly
    ranked = fair_postprocess(base[0].rank(test), hi, 0.1)
    want = evaluate_ranking(ranked, "score")
    assert strong["kendall_tau"] == pytest.approx(want["kendall_tau"], abs=1e-12)
    assert strong["exposure_ratio"] == pytest.approx(want["exposure_ratio"], abs=1e-12)


@pytest.mark.parametrize("method", ["lambdamart", "lambdamart+fair"])
def test_cli_sweep(method, ranking_files, tmp_path, mlflow_sqlite):
    train, test = ranking_files
    res = CliRunner().invoke(cli, ["sweep", "--method", method, "--train", str(train), "--test", str(test),
                                   "--trials", "4", "--study", method, "--out", str(tmp_path), "--no-progress",
                                   "--tracking-uri", mlflow_sqlite, "--experiment", "lambdamart-sweeps"],
                             catch_exceptions=False)
    assert res.exit_code == 0, res.output
    stem = method.replace("+", "_")
    assert (tmp_path / f"{stem}_pareto_front.csv").is_file() and (tmp_path / f"{stem}_pareto.png").is_file()
    study = optuna.load_study(study_name=method, storage=make_storage(f"sqlite:///{tmp_path / 'optuna.db'}"))
    assert study.user_attrs["method"] == method
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 4
    client = MlflowClient(mlflow_sqlite)
    parent = client.get_run(study.user_attrs[PARENT_ATTR])
    assert parent.info.status == "FINISHED" and parent.data.params["method"] == method
    kids = client.search_runs([parent.info.experiment_id],
                              filter_string=f"tags.mlflow.parentRunId = '{parent.info.run_id}'")
    assert len(kids) == 4 and all("kendall_tau" in r.data.metrics for r in kids)
