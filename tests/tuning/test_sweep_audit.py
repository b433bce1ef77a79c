"""A sweep over a multi-category attribute, end to end: DELTR trains on race (3 string
categories), every trial is audited over race and sex, and the audit's worst cases are the
objectives (Optuna values, the front, the MLflow trial runs)."""

from __future__ import annotations

import numpy as np
import optuna
import pandas as pd
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient

from fairltr.cli import cli
from fairltr.tracking import PARENT_ATTR


def _table(n_queries: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        race = rng.choice(["a", "b", "c"], size=12, p=[0.5, 0.3, 0.2])
        sex = rng.choice(["F", "M"], size=12)
        x1 = rng.normal(size=12)
        judgment = np.clip(np.round(1.5 + x1 - 0.8 * (race == "c") + rng.normal(scale=0.3, size=12)), 0, 3)
        for i in range(12):
            rows.append({"query_id": q, "race": race[i], "sex": sex[i], "x1": x1[i], "judgment": int(judgment[i])})
    return pd.DataFrame(rows)


def test_sweep_over_a_multi_category_attribute(tmp_path, mlflow_sqlite):
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    _table(16, 1).to_csv(train, index=False)
    _table(12, 2).to_csv(test, index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, [
        "sweep", "--method", "deltr", "--train", str(train), "--test", str(test), "--trials", "4", "--study", "mc",
        "--out", str(out), "--no-progress", "--max-iter", "20", "--group", "race", "--group", "sex",
        "--objectives", "ndcg_at_10:max,impact_ratio_at_10:max", "--constraint", "exposure_ratio_worst>=0.1",
        "--tracking-uri", mlflow_sqlite, "--experiment", "tuning-audit"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="mc", storage=f"sqlite:///{out / 'optuna.db'}")
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 4
    client = MlflowClient(mlflow_sqlite)
    parent = study.user_attrs[PARENT_ATTR]
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    assert len(runs) == 4
    for r in runs:
        t = next(t for t in complete if str(t.number) == r.data.tags["fairltr.sweep.trial"])
        m = r.data.metrics
        assert m["impact_ratio_at_10"] == pytest.approx(t.values[1])
        assert 0.0 <= m["impact_ratio_at_10"] <= 1.0
        assert {"impact_ratio_at_10.race", "impact_ratio_at_10.sex", "impact_ratio_at_10.race:sex",
                "exposure_ratio_worst"} <= set(m)
        assert m["impact_ratio_at_10"] == pytest.approx(min(m["impact_ratio_at_10.race"], m["impact_ratio_at_10.sex"],
                                                            m["impact_ratio_at_10.race:sex"]))
    front = pd.read_csv(out / "mc_pareto_front.csv")
    assert "impact_ratio_at_10" in front.columns and len(front) >= 1
