"""FA*IR (binary) on a group of six categories is refused before any MLflow run, Optuna study or
output file exists (issue 29, item 3), with tracking on (the session's ``mlflow server``) and a
real Optuna storage (a SQLite file holding one other study). Every command that takes binary
FA*IR with a group: ``sweep --method fair-pre | fair-post | lambdamart+fair``, ``train deltr |
lambdamart --fair-preprocess``, ``train deltr | plrank --serve-rerank 'fair:p=...'`` (a model
that could never serve its own file) and ``rerank --method fair --p 0.3``. Multinomial FA*IR
(``sweep --method multinomial-fair``, ``rerank --p 'A=0.2,...'``) takes such a group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from cross_tables import one_line_refusal
from fairltr.cli import cli

RACES = ["White", "Black", "Hispanic", "Asian", "Native", "Other"]
TRAIN = ["--train", "t.csv", "--test", "t.csv", "--group", "race", "--item", "candidate_id"]
SWEEP = ["sweep", *TRAIN, "--trials", "1", "--study", "refused"]
COMMANDS = {
    "sweep-fair-post": [*SWEEP, "--method", "fair-post"],
    "sweep-fair-pre": [*SWEEP, "--method", "fair-pre"],
    "sweep-lambdamart+fair": [*SWEEP, "--method", "lambdamart+fair"],
    "train-deltr-fair-preprocess": ["train", "deltr", *TRAIN, "--gamma", "0", "--max-iter", "5",
                                    "--fair-preprocess", "0.3"],
    "train-lambdamart-fair-preprocess": ["train", "lambdamart", *TRAIN, "--n-estimators", "5",
                                         "--fair-preprocess", "0.3"],
    "train-deltr-serve-rerank": ["train", "deltr", *TRAIN, "--gamma", "0", "--max-iter", "5",
                                 "--serve-rerank", "fair:p=0.3,alpha=0.1"],
    "train-plrank-serve-rerank": ["train", "plrank", *TRAIN, "--lambda", "0", "--max-iter", "5", "--samples", "4",
                                  "--serve-rerank", "fair:p=0.3,alpha=0.1"],
    "rerank-fair": ["rerank", "--input", "t.csv", "--scores-col", "x1", "--group", "race", "--method", "fair",
                    "--p", "0.3"],
}


@pytest.fixture(scope="module")
def six_races(tmp_path_factory):
    d = tmp_path_factory.mktemp("six-races")
    rng = np.random.default_rng(3)
    n = 12 * 10
    df = pd.DataFrame({"query_id": np.repeat(np.arange(1, 13), 10), "candidate_id": np.arange(n),
                       "race": rng.choice(RACES, n), "x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    df["judgment"] = np.clip(np.round(df["x1"] + 1.5), 0, 3).astype(np.int64)
    df.to_csv(d / "t.csv", index=False)
    return d


def _runs(client) -> int:
    experiments = [e.experiment_id for e in client.search_experiments()]
    return len(client.search_runs(experiments, max_results=50000)) if experiments else 0


@pytest.mark.parametrize("command", list(COMMANDS))
def test_binary_fair_on_six_categories_is_refused_before_any_work(six_races, command, mlflow_tracking, tmp_path,
                                                                  monkeypatch):
    import mlflow
    import optuna

    monkeypatch.chdir(six_races)
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.create_study(storage=storage, study_name="other")
    client = mlflow.MlflowClient()
    runs, experiments = _runs(client), len(client.search_experiments())
    out = tmp_path / "out"
    args = [*COMMANDS[command], "--out", str(out if command != "rerank-fair" else tmp_path / "reranked.csv")]
    if command.startswith("sweep"):
        args += ["--storage", storage]
    res = CliRunner().invoke(cli, args)
    one_line_refusal(res, command, "FA*IR is binary")
    line = next(x for x in res.output.splitlines() if x.startswith("Error:"))
    assert "'race' has 6 categories" in line and "multinomial FA*IR" in line, line
    assert res.exit_code == 1, (res.exit_code, res.output)  # a configuration error, as every ConfigError
    assert _runs(client) == runs, f"{command}: a run was created"
    assert len(client.search_experiments()) == experiments, f"{command}: an experiment was created"
    assert optuna.get_all_study_names(storage) == ["other"], f"{command}: a study was created"
    assert not out.exists() and not (tmp_path / "reranked.csv").exists(), sorted(p.name for p in tmp_path.iterdir())
    assert sorted(p.name for p in six_races.iterdir()) == ["t.csv"], "a file appeared beside the data"


@pytest.mark.parametrize("policy, refused", [("fair:p=0.3,alpha=0.1", True),
                                             ("fair:alpha=0.1,p=Black=0.2,Asian=0.1", False),
                                             ("detconstsort:k=10", False), (None, False)])
def test_check_serving_policy_refuses_only_binary_fair_on_many_categories(six_races, policy, refused):
    from fairltr.columns import RankingColumns
    from fairltr.errors import ConfigError
    from fairltr.workflows.train_ranker import check_serving_policy

    df = pd.read_csv(six_races / "t.csv")
    columns = RankingColumns(query="query_id", group="race", judgment="judgment", item="candidate_id")
    if refused:
        with pytest.raises(ConfigError, match=r"--serve-rerank .*6 categories.*'fair:alpha=0.1,p=A=0.2,B=0.1'"):
            check_serving_policy(policy, df, columns)
    else:
        check_serving_policy(policy, df, columns)
    two = df.assign(race=np.where(df["race"] == "White", "White", "Other"))  # two categories: binary FA*IR fits
    check_serving_policy(policy, two, columns)
