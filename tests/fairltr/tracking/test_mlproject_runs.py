"""Every MLproject entry point, end to end: ``mlflow run . -e <entry> --env-manager local`` on
small inputs against the session's MLflow server. Inside ``mlflow run`` each command logs into
the run ``mlflow run`` created (a sweep: that run is the study's parent, trials are nested);
nothing escapes into a second top-level run. Without ``--experiment-name`` the run lands in the
experiment of the entry point's ``fairltr`` command (``fairltr`` for the ranker trainings), so
``-e compare_runs -P experiment=fairltr`` finds them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

REPO = Path(__file__).resolve().parents[3]
ALL_ENTRY_POINTS = {"quickstart", "train_deltr", "train_lambdamart", "train_plrank", "reproduce_deltr", "train_dpr",
                    "evaluate", "evaluate_registered", "promote", "compare_runs", "verify_alias", "sweep",
                    "bias_audit"}


def _declared_entry_points(group: str) -> dict[str, str]:
    import tomllib

    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["entry-points"][group]


@pytest.fixture(scope="session")
def plugin_path(tmp_path_factory) -> str:
    """A folder for PYTHONPATH that makes pyproject.toml's ``mlflow.default_experiment_provider``
    entry point visible to ``mlflow run`` when the installed fairltr predates it (an editable
    install reads its entry points from the metadata written at install time); "" otherwise."""
    from importlib.metadata import entry_points

    group = "mlflow.default_experiment_provider"
    declared = _declared_entry_points(group)
    if {ep.name: ep.value for ep in entry_points(group=group)}.items() >= declared.items():
        return ""
    info = tmp_path_factory.mktemp("plugin") / "fairltr_declared_plugins-0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fairltr-declared-plugins\nVersion: 0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in declared.items()))
    return str(info.parent)


def mlflow_run(entry: str, params: dict[str, object], experiment: str | None, cwd: Path, uri: str,
               plugin_path: str = "", check: bool = True):
    env = dict(os.environ, MLFLOW_TRACKING_URI=uri)
    if plugin_path:
        env["PYTHONPATH"] = os.pathsep.join(x for x in (plugin_path, env.get("PYTHONPATH", "")) if x)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for leaked in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):  # from earlier tests' runs
        env.pop(leaked, None)
    env.pop("MLFLOW_RUN_ID", None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    cmd = [str(Path(sys.executable).with_name("mlflow")), "run", str(REPO), "-e", entry, "--env-manager", "local"]
    if experiment is not None:
        cmd += ["--experiment-name", experiment]
    for k, v in params.items():
        cmd += ["-P", f"{k}={v}"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600, cwd=cwd)
    assert proc.returncode == 0 or not check, f"mlflow run -e {entry} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-4000:]}"
    return proc


def runs_of(experiment: str):
    import mlflow

    runs = mlflow.search_runs(experiment_names=[experiment], output_format="list")
    top = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    nested = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    assert len(top) == 1, f"{len(top)} top-level runs: {[r.info.run_name for r in top]}"
    (run,) = top
    assert all(r.data.tags["mlflow.parentRunId"] == run.info.run_id for r in nested)
    assert run.info.status == "FINISHED"
    return run, nested


def exp_name(entry: str) -> str:
    return f"mlproject-{entry}-{uuid.uuid4().hex[:6]}"


@pytest.fixture(scope="module")
def files(tmp_path_factory, tiny_rankings):
    d = tmp_path_factory.mktemp("mlproject-runs")
    train, test = tiny_rankings
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    return d


@pytest.fixture(scope="module")
def registered(mlflow_server, files):
    """Two registered ranker versions made by `mlflow run -e train_deltr` (gamma 0 and 1e4), in
    one experiment: (model name, experiment name)."""
    import mlflow

    name, exp = f"mlproject-ranker-{uuid.uuid4().hex[:6]}", exp_name("train-deltr")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
        mlflow.set_tracking_uri(mlflow_server.uri)
        for gamma in (0, 10000):
            mlflow_run("train_deltr", {"train": files / "train.csv", "test": files / "test.csv", "gamma": gamma,
                                       "out": files / f"model-g{gamma}", "register": name, "max-iter": 30},
                       exp, files, mlflow_server.uri)
    return name, exp


@pytest.mark.slow  # about 25 s with its fixture: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_train_deltr(files, registered, mlflow_tracking):
    """The fixture's two ``mlflow run -e train_deltr`` runs: mlflow run's params and the extra
    ``-P max-iter`` passed through, fairltr's own params, the data as MLflow datasets, metrics,
    one registered version each, and a model that loads from the registry and predicts."""
    import mlflow

    name, exp = registered
    runs = mlflow.search_runs(experiment_names=[exp], output_format="list")
    assert len(runs) == 2 and not any("mlflow.parentRunId" in r.data.tags for r in runs)
    by_gamma = {r.data.params["gamma"]: r for r in runs}  # from mlflow run, as passed
    assert set(by_gamma) == {"0", "10000"}
    for gamma, version in (("0", "1"), ("10000", "2")):
        run = by_gamma[gamma]
        assert run.info.status == "FINISHED"
        assert run.data.tags["mlflow.project.entryPoint"] == "train_deltr"
        assert run.data.params["max_iter"] == "30"  # extra -P passed through as --max-iter
        assert "train_path" in run.data.params  # from fairltr's logging
        contexts = {i.dataset.name: {t.key: t.value for t in i.tags}["mlflow.data.context"]
                    for i in run.inputs.dataset_inputs}
        assert contexts == {"train.csv": "training", "test.csv": "testing"}
        assert "exposure_ratio" in run.data.metrics and "train_total" in run.data.metrics
        assert run.data.tags["fairltr.registered_version"] == version
        assert (files / f"model-g{gamma}" / "model.json").is_file()
    test = pd.read_csv(files / "test.csv")
    assert len(mlflow.pyfunc.load_model(f"models:/{name}/1").predict(test)) == len(test)


@pytest.mark.slow  # about 27 s: the quickstart's three trainings inside mlflow run
def test_quickstart(mlflow_tracking, tmp_path):
    exp = exp_name("quickstart")
    mlflow_run("quickstart", {"queries": 6, "candidates": 5, "out": tmp_path / "qs"}, exp, tmp_path, mlflow_tracking)
    run, nested = runs_of(exp)
    assert run.data.tags["mlflow.project.entryPoint"] == "quickstart"
    assert len(nested) == 3 and all("exposure_ratio" in r.data.metrics for r in nested)
    assert (tmp_path / "qs" / "comparison.json").is_file()


@pytest.mark.slow  # about 12 s: one paper setting inside mlflow run
def test_reproduce_deltr(mlflow_tracking, deltr_data, tmp_path):
    exp = exp_name("reproduce")
    mlflow_run("reproduce_deltr", {"data": deltr_data, "datasets": "law-race", "fair": "false",
                                   "out": tmp_path / "rep"}, exp, tmp_path, mlflow_tracking)
    run, nested = runs_of(exp)
    assert not nested
    m = run.data.metrics
    assert {"law-race/gamma_0/exposure_ratio", "law-race/deltr_large/exposure_ratio",
            "law-race/colorblind/kendall_tau"} <= set(m)
    assert m["required_results_held"] == m["required_results"] >= 1
    assert (tmp_path / "rep" / "reproduction.md").is_file()


def test_reproduce_metric_keys_are_distinct_and_valid(deltr_data):
    """p*, p+ and p- settings get distinct keys MLflow accepts (no '+', '*')."""
    import re

    from fairltr.workflows.deltr_paper import DATASETS, default_settings

    keys = [s.key for s in default_settings(DATASETS["law-race"], with_fair=True)]
    assert len(set(keys)) == len(keys)
    assert {"fair_post_p_star", "fair_post_p_plus", "fair_post_p_minus", "fair_pre_p_plus"} <= set(keys)
    assert all(re.fullmatch(r"[a-z0-9_]+", k) for k in keys)


@pytest.mark.slow  # about 22 s: a bi-encoder fit, its corpus index and a registered retriever inside mlflow run
def test_train_dpr_registers_a_retriever(mlflow_tracking, tiny_bert, parallel_dir, tmp_path):
    import mlflow
    import pandas as pd

    exp, name = exp_name("dpr"), f"mlproject-retriever-{uuid.uuid4().hex[:6]}"
    mlflow_run("train_dpr", {"data": parallel_dir, "model": tiny_bert, "steps": 2, "out": tmp_path / "dpr",
                             "register": name, "batch-size": 4, "pooling": "cls", "threads": 1},
               exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    assert run.data.tags["fairltr.registered_version"] == "1" and "mrc_at_5" in run.data.metrics
    model = mlflow.pyfunc.load_model(f"models:/{name}/1")
    out = model.predict(pd.DataFrame({"query_id": ["a"], "text": ["red apple"]}), params={"k": 3})
    assert list(out["rank"]) == [1, 2, 3]


@pytest.mark.slow  # about 14 s: a LightGBM training inside mlflow run
def test_train_lambdamart(files, tmp_path, mlflow_tracking):
    exp = exp_name("train-lambdamart")
    mlflow_run("train_lambdamart", {"train": files / "train.csv", "test": files / "test.csv", "n_estimators": 20,
                                    "out": tmp_path / "lm"}, exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    assert run.data.tags["fairltr.model"] == "LambdaMART" and "ndcg_at_10" in run.data.metrics
    assert (tmp_path / "lm" / "model.json").is_file() and (tmp_path / "lm" / "model.txt").is_file()


@pytest.mark.slow  # about 9 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_train_plrank(files, tmp_path, mlflow_tracking):
    exp = exp_name("train-plrank")
    mlflow_run("train_plrank", {"train": files / "train.csv", "test": files / "test.csv", "max_iter": 15, "samples": 8,
                                "out": tmp_path / "pl"}, exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    assert run.data.tags["fairltr.model"] == "PLRank" and "exposure_ratio" in run.data.metrics
    assert (tmp_path / "pl" / "model.json").is_file()


@pytest.mark.slow  # about 4 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_evaluate(files, tmp_path, registered, mlflow_tracking):
    exp = exp_name("evaluate")
    mlflow_run("evaluate", {"model": files / "model-g0" / "model.json", "data": files / "test.csv",
                            "out": tmp_path / "m.json"}, exp, tmp_path, mlflow_tracking)
    assert (tmp_path / "m.json").is_file()


@pytest.mark.slow  # about 8 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_evaluate_registered(files, tmp_path, registered, mlflow_tracking):
    exp = exp_name("evaluate-registered")
    mlflow_run("evaluate_registered", {"model_uri": f"models:/{registered[0]}/2", "data": files / "test.csv"},
               exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    assert "exposure_ratio" in run.data.metrics and "ndcg_at_10" in run.data.metrics


@pytest.mark.slow  # about 8 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_promote(files, tmp_path, registered, mlflow_tracking):
    """The gates string logged by mlflow run and by fairltr must not clash (it used to end FAILED)."""
    import mlflow

    exp = exp_name("promote")
    mlflow_run("promote", {"model": registered[0], "version": 2, "gates": "0.8<=exposure_ratio<=2;kendall_tau>=0",
                           "data": files / "test.csv"}, exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    # mlflow run logs the shell-quoted value itself; fairltr's params never clash with it
    assert run.data.params["gates"].strip("'") == "0.8<=exposure_ratio<=2;kendall_tau>=0"
    champion = mlflow.MlflowClient().get_model_version_by_alias(registered[0], "champion")
    assert champion.version == "2"


@pytest.mark.slow  # about 8 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_verify_alias(files, tmp_path, registered, mlflow_tracking):
    """`mlflow run -e verify_alias`: passes on a champion `fairltr promote` set, fails (the run fails,
    naming the problem) once the alias is moved around the gates with MlflowClient."""
    import mlflow

    client, name = mlflow.MlflowClient(), registered[0]
    if "champion" not in client.get_registered_model(name).aliases:
        mlflow_run("promote", {"model": name, "version": 2, "gates": "kendall_tau>=0", "data": files / "test.csv"},
                   exp_name("promote"), tmp_path, mlflow_tracking)
    champion = client.get_model_version_by_alias(name, "champion").version
    ok = mlflow_run("verify_alias", {"model": name}, exp_name("verify"), tmp_path, mlflow_tracking)
    assert f"OK {name}@champion" in ok.stdout + ok.stderr
    other = "1" if champion == "2" else "2"
    client.set_registered_model_alias(name, "champion", other)  # moved around the gates
    try:
        moved = mlflow_run("verify_alias", {"model": name}, exp_name("verify"), tmp_path, mlflow_tracking, check=False)
        assert moved.returncode != 0
        assert f"FAIL {name}@champion -> v{other}" in moved.stdout + moved.stderr
    finally:
        client.set_registered_model_alias(name, "champion", champion)


@pytest.mark.slow  # about 5 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_bias_audit(files, tmp_path, registered, mlflow_tracking):
    """`mlflow run -e bias_audit` on the champion: the summary in its run, first_used from the
    promotion, the version tagged with the summary's sha256."""
    import hashlib

    import mlflow

    client, name = mlflow.MlflowClient(), registered[0]
    if "champion" not in client.get_registered_model(name).aliases:
        mlflow_run("promote", {"model": name, "version": 2, "gates": "kendall_tau>=0", "data": files / "test.csv"},
                   exp_name("promote"), tmp_path, mlflow_tracking)
    version = client.get_model_version_by_alias(name, "champion").version
    exp = exp_name("bias-audit")
    mlflow_run("bias_audit", {"model_uri": f"models:/{name}/{version}", "data": files / "test.csv", "group": "protected",
                              "query": "query_id", "ci": 0, "out": tmp_path / "audit"}, exp, tmp_path, mlflow_tracking)
    summary = json.loads((tmp_path / "audit" / "bias_audit.json").read_text())
    assert summary["model"]["version"] == str(version) and summary["first_used"] is not None
    sha = hashlib.sha256((tmp_path / "audit" / "bias_audit.json").read_bytes()).hexdigest()
    assert client.get_model_version(name, version).tags["fairltr.bias_audit.sha256"] == sha
    run = client.get_run(client.get_model_version(name, version).tags["fairltr.bias_audit.run_id"])
    assert "bias_audit.json" in {a.path for a in client.list_artifacts(run.info.run_id)}


@pytest.mark.slow  # about 5 s: `mlflow run` subprocesses (the default suite keeps under CI's 15 min)
def test_compare_runs(tmp_path, registered, mlflow_tracking):
    import mlflow

    exp = exp_name("compare")
    mlflow_run("compare_runs", {"experiment": registered[1]}, exp, tmp_path, mlflow_tracking)
    run, _ = runs_of(exp)
    assert "relevance_vs_exposure.png" in {a.path for a in mlflow.MlflowClient().list_artifacts(run.info.run_id)}


@pytest.mark.slow  # about 16 s: a 3-trial sweep inside mlflow run
def test_sweep_uses_the_mlflow_run_as_parent(files, tmp_path, mlflow_tracking):
    exp = exp_name("sweep")
    mlflow_run("sweep", {"train": files / "train.csv", "test": files / "test.csv", "trials": 3,
                         "storage": f"sqlite:///{tmp_path / 'optuna.db'}", "study": "mlproject", "out": tmp_path / "sw",
                         "max-iter": 20}, exp, tmp_path, mlflow_tracking)
    run, nested = runs_of(exp)
    assert run.data.tags["fairltr.sweep.role"] == "study"
    assert len(nested) == 3 and all(r.data.tags["fairltr.sweep.role"] == "trial" for r in nested)
    assert "hypervolume" in run.data.metrics


@pytest.mark.slow  # about 50 s: two `mlflow run` subprocesses and compare-runs
def test_without_an_experiment_name_training_lands_in_fairltr_and_compare_runs_finds_it(files, tmp_path,
                                                                                       plugin_path, monkeypatch):
    """The commands of docs/mlflow.md, as written (no --experiment-name), on a fresh store: the
    train_deltr run is in ``fairltr``, and ``compare_runs -P experiment=fairltr`` compares it."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    mlflow.set_tracking_uri(uri)
    for gamma in (0, 10000):
        mlflow_run("train_deltr", {"train": files / "train.csv", "test": files / "test.csv", "gamma": gamma,
                                   "out": tmp_path / f"g{gamma}", "max-iter": 20}, None, tmp_path, uri, plugin_path)
    client = mlflow.MlflowClient()
    fairltr_exp = client.get_experiment_by_name("fairltr")
    assert fairltr_exp is not None
    trained = client.search_runs([fairltr_exp.experiment_id])
    assert len(trained) == 2 and {r.data.tags["mlflow.project.entryPoint"] for r in trained} == {"train_deltr"}
    assert all(r.info.status == "FINISHED" and "exposure_ratio" in r.data.metrics for r in trained)
    assert not client.search_runs(["0"])  # nothing in Default
    mlflow_run("compare_runs", {"experiment": "fairltr"}, None, tmp_path, uri, plugin_path)
    runs = client.search_runs([fairltr_exp.experiment_id], order_by=["attributes.start_time DESC"])
    assert len(runs) == 3 and runs[0].data.tags["mlflow.project.entryPoint"] == "compare_runs"
    assert "relevance_vs_exposure.png" in {a.path for a in client.list_artifacts(runs[0].info.run_id)}
    # a named experiment still wins
    mlflow_run("train_deltr", {"train": files / "train.csv", "test": files / "test.csv", "out": tmp_path / "named",
                               "max-iter": 20}, "named", tmp_path, uri, plugin_path)
    assert len(client.search_runs([client.get_experiment_by_name("named").experiment_id])) == 1
    assert len(client.search_runs([fairltr_exp.experiment_id])) == 3


def test_each_entry_point_defaults_to_its_commands_experiment():
    from fairltr.tracking.runs.project_experiment import entry_point_experiment, mlflow_run_arguments

    got = {e: entry_point_experiment(REPO, e) for e in sorted(ALL_ENTRY_POINTS)}
    assert got == {"quickstart": "fairltr-quickstart", "train_deltr": "fairltr", "train_lambdamart": "fairltr",
                   "train_plrank": "fairltr", "reproduce_deltr": "fairltr-reproduce", "train_dpr": "fairltr-dpr",
                   "evaluate": "fairltr", "evaluate_registered": "fairltr-evaluation",
                   "promote": "fairltr-promotion", "compare_runs": "fairltr", "verify_alias": "fairltr",
                   "sweep": "fairltr-sweep", "bias_audit": "fairltr-bias-audit"}
    # the table is each command's own --experiment default (read from the click commands here)
    import click

    from fairltr.cli import cli
    from fairltr.tracking.runs.project_experiment import COMMAND_EXPERIMENTS

    for words, experiment in COMMAND_EXPERIMENTS.items():
        command = cli
        for word in words.split():
            command = command.commands[word]
        assert isinstance(command, click.Command)
        assert next(p.default for p in command.params if p.name == "experiment") == experiment, words
    # ... and every command with an --experiment default is in the table (a new command cannot be missed)

    def commands(group, path=()):
        for name, sub in group.commands.items():
            if isinstance(sub, click.Group):
                yield from commands(sub, path + (name,))
            else:
                yield " ".join(path + (name,)), sub

    with_default = {words for words, command in commands(cli)
                    if any(p.name == "experiment" and isinstance(p.default, str) for p in command.params)}
    assert with_default - set(COMMAND_EXPERIMENTS) == set()
    assert entry_point_experiment(REPO, "no_such_entry") is None
    assert entry_point_experiment(REPO / "docs", "train_deltr") is None  # not a project folder
    args = mlflow_run_arguments(["/v/bin/mlflow", "run", "-e", "train_dpr", ".", "-P", "steps=2", "--env-manager",
                                 "local"])
    assert (args["uri"], args["entry_point"], args["experiment_name"]) == (".", "train_dpr", None)
    assert mlflow_run_arguments(["/v/bin/mlflow", "server"]) is None
    assert mlflow_run_arguments(["/v/bin/fairltr", "run", "."]) is None


def test_every_entry_point_has_an_end_to_end_test():
    from mlflow.projects._project_spec import load_project

    declared = set(load_project(str(REPO))._entry_points)
    assert declared == ALL_ENTRY_POINTS, declared ^ ALL_ENTRY_POINTS
    tested = {name[len("test_"):].split("_uses")[0].split("_registers")[0] for name in globals()
              if name.startswith("test_")}
    assert ALL_ENTRY_POINTS <= tested, ALL_ENTRY_POINTS - tested
