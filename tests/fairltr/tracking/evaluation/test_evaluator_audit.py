"""The audit (docs/spec.md section 3b) through ``fairltr evaluate-model`` on a real MLflow server:
a multi-category table (race in 5 string categories, sex), the fair_ranking evaluator's metrics
and intervals in the run, the audit table artifact, the resolved version of an alias URI, the
report's per-category table, chart and conclusions (checked in headless Chromium), the paired
difference of two models, and a table within 120 columns."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli

RACES = ["White", "Black", "Hispanic", "Asian", "Other"]


def multi_category_table(n_queries: int = 40, n: int = 25, seed: int = 0) -> pd.DataFrame:
    """Hiring-like lists: race (5 categories, 'Other' about 1.5%: below the 2% share, excluded),
    sex; judgments 0..4 depend on x1 and are biased against two races and women through x2."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        race = rng.choice(RACES, size=n, p=[0.45, 0.3, 0.15, 0.085, 0.015])
        sex = rng.choice(["Male", "Female"], size=n, p=[0.6, 0.4])
        x1 = rng.normal(size=n)
        bias = -0.6 * np.isin(race, ["Black", "Hispanic"]) - 0.3 * (sex == "Female")
        x2 = rng.normal(size=n) + bias
        judgment = np.clip(np.round(1.5 + x1 + 0.5 * x2 + rng.normal(scale=0.5, size=n)), 0, 4).astype(int)
        for i in range(n):
            rows.append({"query_id": q, "race": race[i], "sex": sex[i], "protected": int(race[i] != "White"),
                         "x1": x1[i], "x2": x2[i], "judgment": judgment[i]})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def audited(mlflow_server, tmp_path_factory):
    """A registered model with two versions (x1+x2 ranker, x1-only ranker), v1 @champion, and the table."""
    import mlflow

    from fairltr import DELTR
    from fairltr.tracking import log_deltr_run

    df = multi_category_table()
    path = tmp_path_factory.mktemp("audit") / "hiring.csv"
    df.to_csv(path, index=False)
    name = f"audited-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
        mlflow.set_tracking_uri(mlflow_server.uri)
        client = mlflow.MlflowClient()
        for features in (["x1", "x2"], ["x1"]):
            model = DELTR(gamma=0.0, max_iter=40).fit(df, features=features)
            run_id = log_deltr_run(model, train_df=df, experiment="test-evaluator-audit")
            mlflow.register_model(client.get_run(run_id).data.tags["fairltr.model_uri"], name)
        client.set_registered_model_alias(name, "champion", "1")
    return name, path, df


def test_evaluate_model_audits_every_category_with_intervals(mlflow_tracking, audited, tmp_path):
    import mlflow

    name, data, df = audited
    uri = f"models:/{name}@champion"
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", uri, "--data", str(data), "--group", "race",
                                   "--group", "sex", "--ci", "0.9", "--n-boot", "300", "--experiment", "test-audit-eval"])
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(len(x) for x in lines) <= 120, res.output  # issue 20: tables within 120 columns
    assert f"{uri} -> version 1" in res.output and "--wide" in res.output
    assert lines[0].split()[:2] == ["model", "impact_ratio_at_10"]
    assert re.search(r"\d\.\d{4} \[\d\.\d{4}, \d\.\d{4}\]", lines[2])  # value [low, high]
    run_id = re.search(r"MLflow run (\w+)", res.output).group(1)
    run = mlflow.MlflowClient().get_run(run_id)
    # the resolved version beside the alias URI (issue 20)
    assert run.data.tags["fairltr.evaluated_version"] == "1" and run.data.params["model_version"] == "1"
    assert run.data.tags["fairltr.evaluated_model_resolved"] == f"models:/{name}/1"
    assert run.data.params["model_uri"] == uri and run.data.params["group"] == "race,sex"
    # the audit's figures and their intervals are run metrics; the interval metadata params
    m = run.data.metrics
    for key in ("impact_ratio_at_10", "impact_ratio_at_10.race", "impact_ratio_at_10.sex", "impact_ratio_at_10.race:sex",
                "exposure_ratio_worst", "disparate_treatment_ratio", "ndkl_at_10"):
        assert key in m, key
    for key in ("ndcg_at_10", "exposure_ratio"):
        assert m[f"{key}_ci_low"] <= m[key] <= m[f"{key}_ci_high"], key
    # a worst case (min over categories) is biased low in resamples: its percentile interval may sit below it
    for key in ("impact_ratio_at_10", "exposure_ratio_worst", "impact_ratio_at_10.race:sex"):
        assert m[f"{key}_ci_low"] < m[f"{key}_ci_high"], key
    p = run.data.params
    assert (p["ci_level"], p["ci_n_boot"], p["ci_seed"], p["ci_unit"]) == ("0.9", "300", "0", "queries")
    assert not any(k.startswith("ci_") for k in m)
    # independent: the pooled selection rates by sex in each query's top 10 (pandas groupby)
    model = mlflow.pyfunc.load_model(f"models:/{name}/1").unwrap_python_model().model
    scored = df.assign(score=model.predict(df))
    top = scored.groupby("query_id")["score"].rank(ascending=False, method="first") <= 10
    rates = top.groupby(scored["sex"]).mean()
    assert m["impact_ratio_at_10.sex"] == pytest.approx(rates.min() / rates.max(), abs=1e-9)
    # the audit table artifact, with exactly the contract's columns
    got = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="audit_table.csv",
                                                   dst_path=str(tmp_path / "a")))
    table = pd.read_csv(got)
    assert list(table.columns[:12]) == ["attribute", "category", "n_candidates", "n_queries", "selected_at_k",
                                        "selection_rate_at_k", "impact_ratio_at_k", "exposure", "exposure_ratio",
                                        "merit", "exposure_per_merit", "excluded"]
    assert {"impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"} <= set(table.columns)
    assert set(table["attribute"]) == {"race", "sex", "race:sex"}
    assert table.loc[(table["attribute"] == "race") & (table["category"] == "Other"), "excluded"].item()
    # the report: per-category table, chart, conclusions
    report = Path(mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path="fairness_report.html",
                                                      dst_path=str(tmp_path / "r"))).read_text()
    assert "id=audit-table" in report and "Female|Hispanic" in report.replace("Hispanic|Female", "Female|Hispanic")
    assert "meets four-fifths (&gt;= 0.8):" in report and "inside 0.8-1.25:" in report
    assert "Impact ratio at 10 per category" in report and "Intervals: 90% percentile cluster bootstrap" in report
    names = {a.path for a in mlflow.MlflowClient().list_artifacts(run_id)}
    assert {"impact_ratios.png", "audit_table.csv"} <= names


def test_paired_difference_of_two_models_on_one_table(mlflow_tracking, audited):
    name, data, _ = audited
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{name}/1", "--data", str(data),
                                   "--group", "race", "--compare-with", f"models:/{name}/2", "--n-boot", "200",
                                   "--experiment", "test-audit-eval"])
    assert res.exit_code == 0, res.output
    assert f"paired difference models:/{name}/1 - models:/{name}/2" in res.output
    row = re.search(r"^ndcg_at_10\s+(-?\d\.\d{4})\s+\[(-?\d\.\d{4}), (-?\d\.\d{4})\]\s+95%", res.output, re.M)
    assert row, res.output
    diff, low, high = map(float, row.groups())
    assert low <= diff <= high
    assert max(len(x) for x in res.output.splitlines()) <= 120


def test_wide_prints_every_column(mlflow_tracking, audited):
    name, data, _ = audited
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{name}/1", "--data", str(data),
                                   "--group", "race", "--wide", "--experiment", "test-audit-eval"])
    assert res.exit_code == 0, res.output
    head = res.output.splitlines()[0]
    assert len(head) > 120 and "precision_at_100" in head and "--wide" not in res.output
