"""``fairltr sweep`` end to end: files, MLflow parent + one nested run per COMPLETE trial, resume,
constraints, --compare-with, journal storage, optuna-dashboard."""

from __future__ import annotations

import json
import warnings

import numpy as np
import optuna
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

from fairltr.cli import cli
from tuning.pareto import as_losses, hypervolume_2d
from tuning.study import make_storage
from fairltr.tracking import PARENT_ATTR


def sweep(files, out, *extra, mlflow_uri=None):
    train, test = files
    args = ["sweep", "--train", str(train), "--test", str(test), "--out", str(out), "--no-progress",
            "--max-iter", "30", *extra]
    args += ["--tracking-uri", mlflow_uri] if mlflow_uri else ["--no-mlflow"]
    res = CliRunner().invoke(cli, args, catch_exceptions=False)
    return res


def nested(client, parent):
    exp = client.get_run(parent).info.experiment_id
    return client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")


def test_sweep_logs_parent_and_nested_runs_and_resumes(ranking_files, tmp_path, mlflow_sqlite):
    out = tmp_path / "out"
    common = ["--method", "deltr", "--study", "deltr-a", "--trials", "6", "--constraint", "kendall_tau>=0.0",
              "--experiment", "tuning-tests"]
    res = sweep(ranking_files, out, *common, mlflow_uri=mlflow_sqlite)
    assert res.exit_code == 0, res.output
    assert "created" in res.output and "hypervolume" in res.output
    storage = make_storage(f"sqlite:///{out / 'optuna.db'}")
    study = optuna.load_study(study_name="deltr-a", storage=storage)
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 6
    client = MlflowClient(mlflow_sqlite)
    parent = study.user_attrs[PARENT_ATTR]
    run = client.get_run(parent)
    assert run.info.status == "FINISHED"
    runs = nested(client, parent)
    assert sorted(int(r.data.tags["fairltr.sweep.trial"]) for r in runs) == sorted(t.number for t in complete)
    r0 = next(r for r in runs if r.data.tags["fairltr.sweep.trial"] == str(complete[0].number))
    assert float(r0.data.params["gamma"]) == pytest.approx(complete[0].user_attrs["gamma"])
    assert r0.data.metrics["kendall_tau"] == pytest.approx(complete[0].values[0])
    assert r0.data.metrics["exposure_disparity"] == pytest.approx(complete[0].values[1])  # the default objective
    assert "ndcg_at_10" in r0.data.metrics and "exposure_ratio" in r0.data.metrics
    arts = {a.path for a in client.list_artifacts(parent)}
    assert {"deltr-a_pareto_front.csv", "deltr-a_pareto.png", "deltr-a_sweep_summary.json"} <= arts
    # the reported front and hypervolume agree with a brute-force check over all trials
    front = pd.read_csv(out / "deltr-a_pareto_front.csv")
    summary = json.loads((out / "deltr-a_sweep_summary.json").read_text())
    vals = np.array([t.values for t in complete])
    loss = as_losses(vals, ["maximize", "minimize"])
    brute = {t.number for t, l in zip(complete, loss)
             if not any(np.all(m <= l) and np.any(m < l) for m in loss)}
    assert set(front["trial"]) == brute == set(summary["front_trials"])
    ref = [summary["reference"]["kendall_tau"], summary["reference"]["exposure_disparity"]]
    assert summary["hypervolume"] == pytest.approx(hypervolume_2d(vals, ["maximize", "minimize"], ref))
    assert run.data.metrics["hypervolume"] == pytest.approx(summary["hypervolume"])
    assert summary["best_trial"] in brute
    # the front and the best trade-off are tagged, the parent describes the sweep
    runs = nested(client, parent)
    tagged = {int(r.data.tags["fairltr.sweep.trial"]) for r in runs if r.data.tags.get("fairltr.sweep.front") == "true"}
    assert tagged == brute and all(r.data.tags.get("fairltr.sweep.front") in ("true", "false") for r in runs)
    best = [int(r.data.tags["fairltr.sweep.trial"]) for r in runs if r.data.tags.get("fairltr.sweep.best_tradeoff") == "true"]
    assert best == [summary["best_trial"]]
    run = client.get_run(parent)
    assert run.data.tags["fairltr.sweep.best_trial"] == str(summary["best_trial"])
    note = run.data.tags["mlflow.note.content"]
    assert note.startswith("**Sweep deltr-a**") and f"trial {summary['best_trial']}" in note and "Pareto front" in note

    # rerun the same command: resumes, nothing new to do
    res = sweep(ranking_files, out, *common, mlflow_uri=mlflow_sqlite)
    assert res.exit_code == 0 and "resumed" in res.output
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 6
    assert len(nested(client, parent)) == 6
    # a larger budget continues the same study under the same parent run
    res = sweep(ranking_files, out, *[c if c != "6" else "8" for c in common], mlflow_uri=mlflow_sqlite)
    assert res.exit_code == 0, res.output
    assert len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))) == 8
    assert len(nested(client, parent)) == 8

    # a changed configuration is refused with a clear message
    res = CliRunner().invoke(cli, ["sweep", "--method", "deltr", "--study", "deltr-a", "--trials", "6",
                                   "--train", str(ranking_files[0]), "--test", str(ranking_files[1]),
                                   "--out", str(out), "--no-mlflow", "--objectives", "ndcg_at_10,exposure_shortfall"])
    assert res.exit_code != 0 and "different configuration" in res.output and "Traceback" not in res.output


def test_constraints_exclude_infeasible_from_front_and_best(ranking_files, tmp_path):
    out = tmp_path / "out"
    # kendall_tau>=0.69 is met by some FA*IR settings and not by others on this data (seeded sweep)
    res = sweep(ranking_files, out, "--method", "fair-post", "--study", "c", "--trials", "10",
                "--constraint", "kendall_tau>=0.69", "--constraint", "exposure_gap<=0.2")
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="c", storage=f"sqlite:///{out / 'optuna.db'}")
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    feasible = {t.number for t in trials if all(v <= 0 for v in t.constraints.values())}
    assert 0 < len(feasible) < len(trials), "the constraint should split the trials for this test to mean anything"
    for t in trials:
        assert t.constraints["kendall_tau>=0.69"] == pytest.approx(0.69 - t.values[0])
    front = pd.read_csv(out / "c_pareto_front.csv")
    assert set(front["trial"]) <= feasible
    assert {t.number for t in study.best_trials} == set(front["trial"])  # Optuna's feasible front agrees
    summary = json.loads((out / "c_sweep_summary.json").read_text())
    assert summary["best_trial"] in feasible and summary["n_feasible"] == len(feasible)


def test_compare_with_and_journal_storage(ranking_files, tmp_path):
    out = tmp_path / "out"
    journal = f"journal:{tmp_path / 'studies.log'}"
    for method, name in (("fair-pre", "pre"), ("deltr", "deltr")):
        extra = ["--compare-with", "pre", "--reference", "kendall_tau=0,exposure_disparity=0.5"] if name == "deltr" else []
        res = sweep(ranking_files, out, "--method", method, "--study", name, "--trials", "4",
                    "--storage", journal, "--sampler", "tpe", *extra)
        assert res.exit_code == 0, res.output
    comp = pd.read_csv(out / "deltr_comparison.csv")
    assert list(comp["study"]) == ["deltr", "pre"] and (comp["reference_exposure_disparity"] == 0.5).all()
    assert (out / "deltr_pareto.png").stat().st_size > 5000
    res = sweep(ranking_files, out, "--method", "deltr", "--study", "x", "--trials", "1", "--storage", journal,
                "--compare-with", "nope")
    assert res.exit_code != 0 and "no study ['nope']" in res.output


def test_study_opens_in_optuna_dashboard(ranking_files, tmp_path):
    dashboard = pytest.importorskip("optuna_dashboard")
    from wsgiref.util import setup_testing_defaults

    out = tmp_path / "out"
    assert sweep(ranking_files, out, "--method", "deltr", "--study", "dash", "--trials", "2").exit_code == 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        app = dashboard.wsgi(f"sqlite:///{out / 'optuna.db'}")

    def get(path):
        env: dict = {}
        setup_testing_defaults(env)
        env.update(PATH_INFO=path, REQUEST_METHOD="GET")
        status = []
        body = b"".join(app(env, lambda s, h, *a: status.append(s)))
        return status[0], body

    status, body = get("/api/studies")
    assert status.startswith("200")
    studies = json.loads(body)["study_summaries"]
    (dash,) = [s for s in studies if s["study_name"] == "dash"]
    status, body = get(f"/api/studies/{dash['study_id']}")
    assert status.startswith("200")
    detail = json.loads(body)
    assert detail["name"] == "dash" and len(detail["trials"]) == 2 and detail["best_trials"]
    assert detail["objective_names"] == ["kendall_tau", "exposure_disparity"]
    # the parameter as users know it: gamma, on a log axis (not a gamma_log10 coordinate)
    (space,) = detail["union_search_space"]
    assert space["name"] == "gamma" and space["distribution"]["log"] is True
    assert space["distribution"]["low"] == pytest.approx(10.0) and space["distribution"]["high"] == pytest.approx(1e7)
    # one sortable user attribute per metric, readable on one line each (no JSON blob)
    attrs = {a["key"]: a["sortable"] for a in detail["union_user_attrs"]}
    assert "metrics" not in attrs
    assert {"kendall_tau", "exposure_disparity", "exposure_ratio", "ndcg_at_10", "gamma", "train_seconds"} <= set(attrs)
    assert attrs["kendall_tau"] and attrs["exposure_disparity"]
    study = optuna.load_study(study_name="dash", storage=f"sqlite:///{out / 'optuna.db'}")
    for t in detail["trials"]:
        shown = {a["key"]: a["value"] for a in t["user_attrs"]}
        stored = study.trials[t["number"]]
        assert float(shown["kendall_tau"]) == pytest.approx(stored.values[0])
        assert float(shown["exposure_disparity"]) == pytest.approx(stored.values[1])
        sampled = float(t["params"][0]["param_external_value"])
        assert float(shown["gamma"]) == (0.0 if sampled < 100.0 else pytest.approx(sampled))  # the value used


def test_resuming_a_study_with_the_old_gamma_log10_coordinate_is_refused(ranking_files, tmp_path):
    """A study created before the parameters were named as declared (``gamma_log10`` on a linear
    log10 axis) is another configuration: a clear one-line refusal, not an Optuna distribution
    error in the middle of the sweep."""
    from optuna.distributions import FloatDistribution

    out = tmp_path / "out"
    storage = make_storage(f"sqlite:///{out / 'optuna.db'}")
    old = optuna.create_study(study_name="old", storage=storage, directions=["maximize", "minimize"])
    for k, v in {"method": "deltr", "objectives": ["kendall_tau", "exposure_disparity"], "constraints": [],
                 "hyperparameters": ["gamma"], "search_space": "SearchSpace(gamma_log10∈[1, 7])",
                 "loss": "exposure_hinge"}.items():
        old.set_user_attr(k, v)
    old.add_trial(optuna.trial.create_trial(params={"gamma_log10": 4.0},
                                            distributions={"gamma_log10": FloatDistribution(1.0, 7.0)},
                                            values=[0.2, 0.1], user_attrs={"gamma": 1e4, "metrics": {"ndcg_at_10": 0.5}}))
    res = sweep(ranking_files, out, "--method", "deltr", "--study", "old", "--trials", "2")
    assert res.exit_code != 0 and "Traceback" not in res.output
    assert "different configuration" in res.output and "gamma_log10" in res.output, res.output
    assert len(old.trials) == 1  # nothing was run
    # such a study still reads for --compare-with (its metrics were one JSON attribute then)
    from tuning.report import trials_frame

    frame = trials_frame(old)
    assert frame.loc[0, "gamma"] == 1e4 and frame.loc[0, "ndcg_at_10"] == 0.5 and bool(frame.loc[0, "feasible"])


def test_cli_errors_are_one_line(ranking_files, tmp_path):
    for extra, msg in ((["--objectives", "tau,exposure_gap"], "unknown metric"),
                       (["--constraint", "kendall_tau=1"], "metric>=number"),
                       (["--trials", "0"], "--trials must be >= 1"),
                       (["--storage", "nonsense"], "sqlite:///FILE")):
        args = ["--method", "deltr", "--study", "e", "--trials", "2", *extra]
        res = sweep(ranking_files, tmp_path / "o", *args)
        assert res.exit_code != 0 and msg in res.output and "Traceback" not in res.output, res.output
    res = CliRunner().invoke(cli, ["sweep", "--method", "dpr", "--study", "d", "--trials", "2", "--train",
                                   str(ranking_files[0]), "--test", str(ranking_files[1]), "--no-mlflow",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code != 0 and "not a directory" in res.output and "corpus.jsonl" in res.output


def test_an_objective_or_constraint_never_computed_is_a_usage_error_before_any_study(ranking_files, tmp_path):
    """Issue 29 item 5: an attribute key naming no given group attribute, or a metric the method's
    evaluation never computes, is one ``Error:`` line and exit 2 (a usage error), before any study,
    run or file is made."""
    for extra, words in ((["--objectives", "impact_ratio_at_10.gender:max,ndcg_at_10:max"], "names attribute 'gender'"),
                         (["--constraint", "mrr_at_10>=0.1"], "mrr_at_10 is a retrieval metric")):
        out = tmp_path / "never"
        res = sweep(ranking_files, out, "--method", "deltr", "--study", "never", "--trials", "1", *extra)
        lines = [line for line in res.output.splitlines() if line.strip()]
        assert res.exit_code == 2, res.output
        assert len(lines) == 1 and lines[0].startswith("Error: ") and "cannot be checked here" in lines[0], res.output
        assert words in lines[0], res.output
        assert not out.exists()


def test_awrf_and_iaa_as_sweep_objectives(ranking_files, tmp_path):
    """The TREC Fair 2022 score (maximised) and IAA (minimised) as a sweep's two objectives."""
    out = tmp_path / "out"
    res = sweep(ranking_files, out, "--method", "fair-post", "--study", "aw", "--trials", "2",
                "--objectives", "ndcg_awrf,iaa")
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="aw", storage=f"sqlite:///{out / 'optuna.db'}")
    assert [d.name for d in study.directions] == ["MAXIMIZE", "MINIMIZE"]
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(trials) == 2 and all(np.isfinite(t.values).all() for t in trials)
    assert all(0 < t.values[0] <= 1 and 0 <= t.values[1] <= 2 for t in trials)
