"""The sweep-method registry: a method is one declaration. A toy ranking method and a toy trial
registered in fixtures run through ``fairltr sweep`` (choices, study, MLflow mirror, report)
without touching the CLI, the workflows or tuning; names with ``+`` never reach an MLflow key;
docs/sweeps.md's method table is the registry's."""

from __future__ import annotations

import math
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

from fairltr.cli import cli
from fairltr.errors import ConfigError
from fairltr.losses import HyperParam
from fairltr.metrics import key_part
from fairltr.workflows import run_sweep_job
from fairltr.workflows.sweep import RankingPlan, RankingTrial, ranking_trial
from fairltr.workflows.sweep_methods import ranking_method
from fairltr.workflows.sweep_plugins import (
    SweepMethod,
    get_sweep_method,
    methods_markdown,
    register_sweep_method,
    sweep_method_names,
    unregister_sweep_method,
)
from tuning.study import make_storage
from tuning.sweep import SweepConfig
from fairltr.tracking import PARENT_ATTR

REPO = Path(__file__).resolve().parents[2]
BUILTIN = ["deltr", "fair-pre", "fair-post", "dpr", "lambdamart", "lambdamart+fair", "detconstsort",
           "lambdamart+detconstsort", "multinomial-fair", "plrank"]


def _l2_space(ctx):
    from tuning.space import SearchSpace

    return SearchSpace((HyperParam("l2", default=0.0, low=1e-4, high=10.0, log=True, include_zero=True),))


@pytest.fixture
def toy_ranking_method():
    """A ranking method declared in one call: ListNet's L2 penalty swept (gamma 0)."""
    method = ranking_method("toy+l2", "ListNet with an L2 penalty (test)",
                            RankingPlan(_l2_space, lambda base, v, ctx: base.with_(gamma=0.0, l2=float(v["l2"]))),
                            searches="`l2`")
    yield method
    unregister_sweep_method(method.name)


class AnalyticTrial:
    """A trial without training: metrics as functions of one value x in [0, 1]."""

    def __init__(self) -> None:
        from tuning.space import SearchSpace

        self.space = SearchSpace((HyperParam("x", default=0.5, low=0.0, high=1.0),))
        self.calls = 0

    def __call__(self, values):
        self.calls += 1
        x = float(values["x"])
        return {"ndcg_at_10": 1.0 - x * x, "exposure_disparity": x, "kendall_tau": math.nan}


@pytest.fixture
def toy_trial_method():
    built = []

    def build(inputs):
        assert inputs.folds and len(inputs.folds[0]) == 2  # a ranking method gets the folds read for it
        built.append(AnalyticTrial())
        return built[-1]

    method = register_sweep_method(SweepMethod("toy-analytic", "analytic test trial", build, searches="`x`",
                                               objectives="ndcg_at_10:max,exposure_disparity:min"))
    yield method, built
    unregister_sweep_method(method.name)


def _sweep(files, out, *extra):
    train, test = files
    return CliRunner().invoke(cli, ["sweep", "--train", str(train), "--test", str(test), "--out", str(out),
                                    "--no-progress", "--max-iter", "20", *extra], catch_exceptions=False)


def test_builtin_methods_and_cli_choices():
    assert sweep_method_names() == BUILTIN
    assert sweep_method_names("parallel") == ["dpr"]
    assert get_sweep_method("dpr").default_objectives == "mrr_at_100:max,mrc_at_5:max"
    assert get_sweep_method("deltr").default_objectives == "kendall_tau:max,exposure_disparity:min"
    with pytest.raises(ConfigError, match=r"unknown sweep method 'nope'; choose one of \['deltr'"):
        get_sweep_method("nope")
    res = CliRunner().invoke(cli, ["sweep", "--help"])
    assert "[" + "|".join(BUILTIN) + "]" in " ".join(res.output.split())
    bad = CliRunner().invoke(cli, ["sweep", "--method", "nope", "--train", "a", "--test", "b", "--trials", "1",
                                   "--study", "s"])
    assert bad.exit_code == 2 and "'nope' is not one of 'deltr'" in bad.output


def test_registration_rules():
    with pytest.raises(ConfigError, match="already registered"):
        register_sweep_method(get_sweep_method("deltr"))
    with pytest.raises(ConfigError, match="lower-case letters"):
        SweepMethod("Bad Name", "x", lambda i: None)
    with pytest.raises(ConfigError, match="data must be one of"):
        SweepMethod("x", "x", lambda i: None, data="images")
    with pytest.raises(ConfigError, match="same key 'lambdamart_fair'"):
        register_sweep_method(SweepMethod("lambdamart_fair", "x", lambda i: None))
    missing = SweepMethod("needs-lib", "x", lambda i: None, requires={"no_such_module_xyz": "gbdt"})
    with pytest.raises(ConfigError, match=r"needs no_such_module_xyz.*fairltr\[gbdt\]"):
        missing.check_requirements()
    assert key_part("lambdamart+fair") == "lambdamart_fair" and key_part("law-race/x y") == "law-race_x_y"
    assert get_sweep_method("lambdamart+fair").key == "lambdamart_fair"
    assert get_sweep_method("dpr").method_options({"steps": 5, "encoder": None, "other": 1}) == {"steps": 5}


def test_toy_ranking_method_is_one_declaration(toy_ranking_method, ranking_files, small_rankings, tmp_path,
                                              mlflow_sqlite):
    # the trial of the declaration is the ranking workflow's
    train, test = small_rankings
    runner = ranking_trial("toy+l2", [(train, test)], max_iter=20)
    assert isinstance(runner, RankingTrial) and runner.space.names == ["l2"]
    assert runner.spec_for({"l2": 0.5}).l2 == 0.5 and runner.study_loss == ""
    # through the CLI, with the MLflow mirror; a second study compares with the first
    out = tmp_path / "out"
    for study, extra in (("toy+l2", []), ("toy+l2-b", ["--compare-with", "toy+l2"])):
        res = _sweep(ranking_files, out, "--method", "toy+l2", "--study", study, "--trials", "3",
                     "--tracking-uri", mlflow_sqlite, "--experiment", "registry-tests", *extra)
        assert res.exit_code == 0, res.output
    assert "compare toy+l2 (toy+l2)" in res.output
    storage = make_storage(f"sqlite:///{out / 'optuna.db'}")
    study = optuna.load_study(study_name="toy+l2", storage=storage)
    assert study.user_attrs["method"] == "toy+l2" and study.user_attrs["hyperparameters"] == ["l2"]
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 3 and all("kendall_tau" in t.user_attrs for t in complete)
    assert (out / "toy_l2_pareto_front.csv").is_file() and (out / "toy_l2-b_comparison.csv").is_file()
    client = MlflowClient(mlflow_sqlite)
    parent_b = optuna.load_study(study_name="toy+l2-b", storage=storage).user_attrs[PARENT_ATTR]
    metrics = client.get_run(parent_b).data.metrics
    assert "hypervolume_toy_l2" in metrics  # the study name's '+' never reaches an MLflow key
    assert not any("+" in k for k in metrics)
    # unregistered: no longer a choice
    unregister_sweep_method("toy+l2")
    res = _sweep(ranking_files, out, "--method", "toy+l2", "--study", "again", "--trials", "1", "--no-mlflow")
    assert res.exit_code == 2 and "is not one of" in res.output


def test_toy_trial_method_with_its_own_objectives(toy_trial_method, ranking_files, tmp_path):
    method, built = toy_trial_method
    res = _sweep(ranking_files, tmp_path, "--method", "toy-analytic", "--study", "analytic", "--trials", "4",
                 "--no-mlflow")
    assert res.exit_code == 0, res.output
    assert "objectives ['ndcg_at_10:max', 'exposure_disparity:min']" in res.output
    study = optuna.load_study(study_name="analytic", storage=make_storage(f"sqlite:///{tmp_path / 'optuna.db'}"))
    assert study.user_attrs["objectives"] == ["ndcg_at_10", "exposure_disparity"]
    assert len(built) == 1 and built[0].calls == 4
    for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)):
        x = t.user_attrs["x"]
        assert t.values == pytest.approx([1 - x * x, x])
    # the Python API reads the same declaration
    cfg = SweepConfig(method="toy-analytic", train=ranking_files[0], test=ranking_files[1], n_trials=5,
                      study="analytic", out=tmp_path, mlflow=False, progress=False, plot=False)
    assert run_sweep_job(cfg, echo=lambda _: None).report.n_complete == 5


def test_docs_method_table_is_the_registry():
    text = (REPO / "docs" / "sweeps.md").read_text()
    start, end = "<!-- sweep-methods:start -->", "<!-- sweep-methods:end -->"
    assert start in text and end in text
    block = text.split(start, 1)[1].split(end, 1)[0].strip()
    assert block == methods_markdown(), ("docs/sweeps.md's method table differs from the registry; paste "
                                         "python -c 'from fairltr.workflows.sweep_plugins import methods_markdown; "
                                         "print(methods_markdown())'")
