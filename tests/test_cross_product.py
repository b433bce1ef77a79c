"""Every entry point x every kind of group column x both feature types (issue 29, item 9).

Entry points: ``train deltr`` tracked and untracked, ``evaluate``, ``evaluate-model``, ``promote``,
``monitor``, ``sweep`` (its workflow, the one the command calls) and a served model (MLflow's own
scoring app, in process). Group kinds: 0/1 integers, several integers, text, two text attributes.
Features: integers and floats. Each cell must report the figure an independent pandas computation
gives from the model's own scores (the four-fifths figure ``impact_ratio_at_10``, per attribute
too), or refuse in one line; never a traceback. One trained and registered model per
(group kind, feature type) is shared by every cell.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from cross_tables import (TOL, cross_table, groups_of, independent_impact_ratios, one_line_refusal, ran_ok,
                          same_figures)
from fairltr.cli import cli

GROUP_KINDS = ("binary", "multi_int", "text", "two")
FEATURE_TYPES = ("float", "int")
VARIANTS = [(g, f) for g in GROUP_KINDS for f in FEATURE_TYPES]


@pytest.fixture(scope="module")
def cases(tmp_path_factory, mlflow_tracking_module):
    """Per variant: its files, the untracked and the tracked + registered training, the model's
    scores of the test table and the independent figures."""
    import uuid

    from fairltr.deltr import DELTR

    root = tmp_path_factory.mktemp("cross")
    tag = uuid.uuid4().hex[:6]
    out = {}
    runner = CliRunner()
    for i, (kind, ftype) in enumerate(VARIANTS):
        d = root / f"{kind}-{ftype}"
        d.mkdir()
        train, test = cross_table(kind, ftype, 30, 10 + i, 1), cross_table(kind, ftype, 32, 50 + i, 1001)
        train.drop(columns="when").to_csv(d / "train.csv", index=False)
        test.to_csv(d / "test.csv", index=False)
        test.to_parquet(d / "test.parquet", index=False)
        groups = groups_of(kind)
        gopts = [x for g in groups for x in ("--group", g)] + ["--item", "candidate_id"]
        common = ["train", "deltr", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"), *gopts,
                  "--colorblind", "--gamma", "0", "--max-iter", "25", "--features", "x1,x2"]
        untracked = runner.invoke(cli, [*common, "--out", str(d / "untracked"), "--no-track"])
        ran_ok(untracked, f"train untracked {kind}/{ftype}")
        anonymous = train.drop(columns=["when", "candidate_id"])
        if anonymous.duplicated().any():  # integer features repeat rows: without ids fairltr cannot count them
            anonymous.to_csv(d / "anonymous.csv", index=False)
            args = [x for x in common if x not in ("--item", "candidate_id")]
            args[args.index("--train") + 1] = args[args.index("--test") + 1] = str(d / "anonymous.csv")
            refused = runner.invoke(cli, [*args, "--out", str(d / "anon"), "--no-track"])
            one_line_refusal(refused, f"train without --item {kind}/{ftype}", "--duplicate-rows")
        name = f"cross-{kind}-{ftype}-{tag}"
        tracked = runner.invoke(cli, [*common, "--out", str(d / "tracked"), "--register", name])
        ran_ok(tracked, f"train tracked {kind}/{ftype}")
        model = DELTR.load(d / "tracked" / "model.json")
        scores = model.predict(test)
        out[(kind, ftype)] = dict(dir=d, groups=groups, gopts=gopts, name=name, test=test, scores=scores,
                                  want=independent_impact_ratios(test, scores, groups), tracked=tracked.output)
    return out


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_train_untracked(cases, kind, ftype):
    c = cases[(kind, ftype)]
    metrics = json.loads((c["dir"] / "untracked" / "metrics.json").read_text())
    same_figures(metrics, c["want"], f"train untracked {kind}/{ftype}")


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_train_tracked(cases, kind, ftype):
    import mlflow

    c = cases[(kind, ftype)]
    client = mlflow.MlflowClient()
    mv = client.get_model_version(c["name"], "1")
    run = client.get_run(mv.run_id)
    same_figures(run.data.metrics, c["want"], f"train tracked {kind}/{ftype}")
    assert run.data.params["group_columns"] == ",".join(c["groups"])
    names = {a.path for a in client.list_artifacts(run.info.run_id)}
    assert {"audit_table.csv", "impact_ratios.png", "fairness_report.html"} <= names, names
    assert "Four-fifths rule (k = 10)" in run.data.tags["mlflow.note.content"]
    assert "fairltr.digest" in mv.tags


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_evaluate(cases, kind, ftype):
    c = cases[(kind, ftype)]
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(c["dir"] / "tracked" / "model.json"), "--data",
                                   str(c["dir"] / "test.csv"), *c["gopts"], "--out", str(c["dir"] / "eval.json"),
                                   "--audit", str(c["dir"] / "audit.csv")])
    ran_ok(res, f"evaluate {kind}/{ftype}")
    same_figures(json.loads((c["dir"] / "eval.json").read_text()), c["want"], f"evaluate {kind}/{ftype}")


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_evaluate_model(cases, kind, ftype):
    import mlflow

    c = cases[(kind, ftype)]
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{c['name']}/1", "--data",
                                   str(c["dir"] / "test.parquet"), *c["gopts"]])
    ran_ok(res, f"evaluate-model {kind}/{ftype}")
    run_id = next(line.split()[-1] for line in res.output.splitlines() if line.startswith("MLflow run "))
    same_figures(mlflow.MlflowClient().get_run(run_id).data.metrics, c["want"], f"evaluate-model {kind}/{ftype}")


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_promote(cases, kind, ftype):
    import mlflow

    from fairltr.tracking.model_registry.decision import decision_record

    c = cases[(kind, ftype)]
    res = CliRunner().invoke(cli, ["promote", "--model", c["name"], "--version", "1", "--data",
                                   str(c["dir"] / "test.csv"), *c["gopts"], "--gate", "four_fifths@10"])
    want = c["want"]["impact_ratio_at_10"]
    assert res.exit_code == (0 if want >= 0.8 - TOL else 1), res.output
    assert "Traceback" not in res.output
    record = decision_record(mlflow.MlflowClient().get_model_version(c["name"], "1").tags)
    assert record["values"]["impact_ratio_at_10"] == pytest.approx(want, rel=TOL)
    if want < 0.8:  # the FAIL line names the worst category
        assert "worst" in res.output, res.output


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_monitor(cases, kind, ftype):
    c = cases[(kind, ftype)]
    out = c["dir"] / "monitor"
    res = CliRunner().invoke(cli, ["monitor", "--data", str(c["dir"] / "test.csv"), "--model-uri",
                                   f"models:/{c['name']}/1", "--time-column", "when", "--window", "1y", *c["gopts"],
                                   "--judgment", "judgment", "--gate", "four_fifths@5", "--ci", "0", "--out", str(out),
                                   "--no-track"])
    assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
    windows = pd.read_csv(out / "windows.csv")
    assert len(windows) == 1
    want5 = independent_impact_ratios(c["test"], c["scores"], c["groups"], k=5)
    same_figures(windows.iloc[0].to_dict(), want5, f"monitor {kind}/{ftype}")  # the gate's k, not --k's
    assert res.exit_code == (0 if want5["impact_ratio_at_5"] >= 0.8 - TOL else 1), res.output


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_sweep(cases, kind, ftype, tmp_path):
    from fairltr.columns import RankingColumns
    from fairltr.workflows import SweepConfig, run_sweep_job

    c = cases[(kind, ftype)]
    seen = []
    cfg = SweepConfig(method="deltr", train=c["dir"] / "train.csv", test=c["dir"] / "test.csv", n_trials=2,
                      study=f"cross-{kind}-{ftype}", out=tmp_path, mlflow=False, max_iter=25, progress=False,
                      plot=False, objectives="impact_ratio_at_10:max,kendall_tau:max")
    columns = RankingColumns(query="query_id", group=tuple(c["groups"]), judgment="judgment", item="candidate_id")
    result = run_sweep_job(cfg, echo=lambda _: None, columns=columns,
                           on_ranked=lambda values, ranked: seen.append((dict(values), ranked[0])))
    front = result.report.front
    assert len(seen) == 2 and len(front) >= 1
    for _, row in front.iterrows():  # each front trial's objective = the independent figure of its ranking
        table = next(t for values, t in seen if values["gamma"] == pytest.approx(row["gamma"], rel=1e-12))
        want = independent_impact_ratios(table, table["score"].to_numpy(), c["groups"])["impact_ratio_at_10"]
        assert row["impact_ratio_at_10"] == pytest.approx(want, rel=TOL)
    refused = CliRunner().invoke(cli, ["sweep", "--method", "fair-post", "--train", str(c["dir"] / "train.csv"),
                                       "--test", str(c["dir"] / "test.csv"), *c["gopts"], "--trials", "1",
                                       "--study", "never", "--out", str(tmp_path / "fair"), "--no-mlflow"])
    if kind in ("binary",):
        assert "Traceback" not in refused.output
    else:  # FA*IR takes two categories of one attribute: refused while the options are read
        one_line_refusal(refused, f"sweep fair-post {kind}", "FA*IR")
        assert not (tmp_path / "fair").exists()


@pytest.mark.parametrize("kind, ftype", VARIANTS)
def test_served_model(cases, kind, ftype):
    """MLflow's scoring app (what ``mlflow models serve`` runs) on the registered version: the
    test table sent as JSON gets the model's own scores back; an integer-trained query id sent as
    7.2 is a 400, never merged into query 7."""
    import mlflow.pyfunc
    from mlflow.pyfunc import scoring_server
    from starlette.testclient import TestClient

    c = cases[(kind, ftype)]
    model = mlflow.pyfunc.load_model(f"models:/{c['name']}/1")
    client = TestClient(scoring_server.init(model))
    cols = ["query_id", "candidate_id", "x1", "x2"]
    payload = {"columns": cols, "data": c["test"][cols].astype(object).values.tolist()}  # floats in full
    resp = client.post("/invocations", json={"dataframe_split": payload})
    assert resp.status_code == 200, resp.text
    served = np.array([p["score"] for p in resp.json()["predictions"]])
    np.testing.assert_allclose(served, c["scores"], rtol=1e-9)
    same_figures(independent_impact_ratios(c["test"], served, c["groups"]), c["want"], f"served {kind}/{ftype}")
    bad = c["test"][cols].head(4).astype({"query_id": float})
    bad["query_id"] = [7.2, 7.2, 7.7, 7.7]
    resp = client.post("/invocations", json={"dataframe_split": json.loads(bad.to_json(orient="split", index=False))})
    assert resp.status_code == 400 and "not an integer" in resp.text, resp.text


RECORDED = [v for v in VARIANTS if v[0] in ("text", "two")]  # group columns other than the default 'protected'


@pytest.mark.parametrize("kind, ftype", RECORDED)
def test_promote_without_group_reads_the_model_groups(cases, kind, ftype):
    """``promote --data`` without ``--group`` audits the attributes the version was trained with
    (as ``evaluate-model`` does): the decision record's values equal those with the groups given."""
    import mlflow

    from fairltr.tracking.model_registry.decision import decision_record

    c = cases[(kind, ftype)]
    per_attribute = f"impact_ratio_at_10.{':'.join(c['groups'])}>=0"
    gates = ["--gate", "four_fifths@10", "--gate", per_attribute]
    values = []
    for gopts in (c["gopts"], ["--item", "candidate_id"]):
        res = CliRunner().invoke(cli, ["promote", "--model", c["name"], "--version", "1", "--data",
                                       str(c["dir"] / "test.csv"), *gopts, *gates])
        assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
        record = decision_record(mlflow.MlflowClient().get_model_version(c["name"], "1").tags)
        values.append(record["values"])
    assert "using the model's own group attributes" in res.output
    assert set(values[1]) == set(values[0]) and per_attribute.split(">=")[0] in values[1]
    for key, value in values[0].items():
        assert values[1][key] == pytest.approx(value, rel=TOL, abs=TOL), key
    assert values[1]["impact_ratio_at_10"] == pytest.approx(c["want"]["impact_ratio_at_10"], rel=TOL)


@pytest.mark.parametrize("kind, ftype", RECORDED)
def test_monitor_without_group_reads_the_model_groups(cases, kind, ftype):
    c = cases[(kind, ftype)]
    out = c["dir"] / "monitor-recorded"
    res = CliRunner().invoke(cli, ["monitor", "--data", str(c["dir"] / "test.csv"), "--model-uri",
                                   f"models:/{c['name']}/1", "--time-column", "when", "--window", "1y", "--item",
                                   "candidate_id", "--judgment", "judgment", "--gate", "four_fifths@5", "--ci", "0",
                                   "--out", str(out), "--no-track"])
    assert res.exit_code in (0, 1) and "Traceback" not in res.output, res.output
    assert "using the model's own group attributes" in res.output
    want5 = independent_impact_ratios(c["test"], c["scores"], c["groups"], k=5)
    same_figures(pd.read_csv(out / "windows.csv").iloc[0].to_dict(), want5, f"monitor without --group {kind}/{ftype}")


@pytest.mark.parametrize("kind, ftype", [("binary", "float"), ("two", "int")])
def test_promote_computes_the_cutoff_its_gate_names(cases, kind, ftype):
    """Item 5: a gate at ``@7`` (no default cut-off) makes ``promote --data`` compute k = 7: the
    decision records the independent figure at 7, never a missing value."""
    import mlflow

    from fairltr.tracking.model_registry.decision import decision_record

    c = cases[(kind, ftype)]
    res = CliRunner().invoke(cli, ["promote", "--model", c["name"], "--version", "1", "--data",
                                   str(c["dir"] / "test.csv"), *c["gopts"], "--gate", "four_fifths@7"])
    want7 = independent_impact_ratios(c["test"], c["scores"], c["groups"], k=7)["impact_ratio_at_7"]
    assert res.exit_code == (0 if want7 >= 0.8 - TOL else 1) and "Traceback" not in res.output, res.output
    record = decision_record(mlflow.MlflowClient().get_model_version(c["name"], "1").tags)
    assert record["values"]["impact_ratio_at_7"] == pytest.approx(want7, rel=TOL)


def test_a_schema_refusal_is_one_line_with_its_reason(cases, tmp_path):
    """Item 2: a file the model's input signature refuses (a feature column missing) is one
    ``Error:`` line that keeps MLflow's reason, not a cut-off schema dump."""
    c = cases[("two", "int")]
    data = tmp_path / "no-x2.csv"
    c["test"].drop(columns="x2").to_csv(data, index=False)
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{c['name']}/1", "--data", str(data),
                                   *c["gopts"]])
    one_line_refusal(res, "evaluate-model without x2", "the model's input signature refuses the data")
    assert "x2" in next(line for line in res.output.splitlines() if line.startswith("Error:")), res.output
