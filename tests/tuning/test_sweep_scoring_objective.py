"""A sweep whose objective is LL144's scoring-rate impact ratio (issue 30, item 1): ``fairltr
sweep --objectives ndcg_at_10:max,scoring_impact_ratio:max`` over race and sex. The value the
sweep records for its best trade-off equals an independent pandas computation on that trial's
evaluation (the trial's model retrained with the recorded hyper-parameters, its test scores):
per category, the share scoring above the median of the whole sample, over the top category's
share; the objective is the worst of race, sex and race:sex."""

from __future__ import annotations

import json

import numpy as np
import optuna
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.columns import RankingColumns
from fairltr.workflows.sweep import ranking_trial



def _table(n_queries: int, seed: int) -> pd.DataFrame:
    """Queries of 12 candidates, race in {a, b, c} (c judged lower) and sex in {F, M}."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        race = rng.choice(["a", "b", "c"], size=12, p=[0.5, 0.3, 0.2])
        sex = rng.choice(["F", "M"], size=12)
        x1 = rng.normal(size=12)
        judgment = np.clip(np.round(1.5 + x1 - 0.8 * (race == "c") + rng.normal(scale=0.3, size=12)), 0, 3)
        rows += [{"query_id": q, "race": race[i], "sex": sex[i], "x1": x1[i], "judgment": int(judgment[i])}
                 for i in range(12)]
    return pd.DataFrame(rows)


def _scoring_impact_ratio(ranked: pd.DataFrame, score: str) -> float:
    """min over race, sex, race:sex of (share above the pooled median) / (the largest share)."""
    above = ranked[score] > ranked[score].median()
    worst = []
    for key in (["race"], ["sex"], ["race", "sex"]):
        rate = above.groupby([ranked[c] for c in key]).mean()
        worst.append((rate / rate.max()).min())
    return float(min(worst))


def test_sweep_optimises_the_scoring_impact_ratio(tmp_path, mlflow_sqlite):
    train_df, test_df = _table(10, 1), _table(8, 2)
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    train_df.to_csv(train, index=False)
    test_df.to_csv(test, index=False)
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, [
        "sweep", "--method", "deltr", "--train", str(train), "--test", str(test), "--trials", "2", "--study", "sc",
        "--out", str(out), "--no-progress", "--max-iter", "10", "--group", "race", "--group", "sex",
        "--objectives", "ndcg_at_10:max,scoring_impact_ratio:max", "--tracking-uri", mlflow_sqlite,
        "--experiment", "tuning-scoring"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="sc", storage=f"sqlite:///{out / 'optuna.db'}")
    complete = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(complete) == 2
    summary = json.loads((out / "sc_sweep_summary.json").read_text())
    best = summary["best"]
    trial = next(t for t in complete if t.number == best["trial"])
    recorded = trial.values[1]
    assert best["scoring_impact_ratio"] == pytest.approx(recorded, rel=1e-12)
    assert 0.0 < recorded <= 1.0

    ranked = []
    runner = ranking_trial("deltr", [(pd.read_csv(train), pd.read_csv(test))], seed=0, max_iter=10,
                           columns=RankingColumns(group=("race", "sex")))
    runner.on_ranked = lambda values, tables: ranked.extend(tables)
    runner(trial.params)
    (table,) = ranked
    assert len(table) == len(test_df)
    assert recorded == pytest.approx(_scoring_impact_ratio(table, "score"), rel=1e-12)
