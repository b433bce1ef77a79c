"""The DPR sweep (``--method dpr``): a tiny random BERT on a tiny parallel-query folder, alpha of
the LaKDA loss searched from its registry declaration, retrieval metrics as objectives."""

from __future__ import annotations

import optuna
import pytest
from click.testing import CliRunner
from tiny_models import build_tiny_bert, write_parallel_layout

from fairltr.cli import cli

def test_dpr_sweep_searches_alpha_and_logs(tmp_path, mlflow_sqlite):
    pytest.importorskip("lightning")
    enc = build_tiny_bert(tmp_path / "enc")
    data = write_parallel_layout(tmp_path / "data", n_items=10, langs=("en", "de"))
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, [
        "sweep", "--method", "dpr", "--train", str(data), "--test", str(data), "--trials", "3", "--study", "dpr",
        "--out", str(out), "--encoder", str(enc), "--steps", "2", "--batch-size", "4", "--no-progress",
        "--tracking-uri", mlflow_sqlite, "--experiment", "tuning-dpr"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="dpr", storage=f"sqlite:///{out / 'optuna.db'}")
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(trials) == 3
    assert study.user_attrs["objectives"] == ["mrr_at_100", "mrc_at_5"]  # the retrieval default
    assert all(set(t.params) == {"alpha"} and "alpha" in t.user_attrs for t in trials)
    for t in trials:
        m = t.user_attrs  # one user attribute per metric
        assert 0 <= m["mrr_at_100"] <= 100 and -100 <= m["mrc_at_5"] <= 100
        assert t.values == [m["mrr_at_100"], m["mrc_at_5"]]
    assert (out / "dpr_pareto_front.csv").exists()


def test_dpr_sweep_evaluates_at_the_cutoffs_its_objectives_name(tmp_path):
    """No hard-coded cut-offs: objectives at MRR@10 / MRC@3 (and a constraint on recall_at_10) get an
    evaluation at k=10, mrc_k=3, so every trial has them (the trial once evaluated at 100 / 5 and
    such objectives failed)."""
    pytest.importorskip("lightning")
    enc = build_tiny_bert(tmp_path / "enc")
    data = write_parallel_layout(tmp_path / "data", n_items=10, langs=("en", "de"))
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, [
        "sweep", "--method", "dpr", "--train", str(data), "--test", str(data), "--trials", "2", "--study", "dpr10",
        "--out", str(out), "--encoder", str(enc), "--steps", "1", "--batch-size", "4", "--no-progress", "--no-mlflow",
        "--objectives", "mrr_at_10:max,mrc_at_3:max", "--constraint", "recall_at_10>=0"], catch_exceptions=False)
    assert res.exit_code == 0, res.output
    study = optuna.load_study(study_name="dpr10", storage=f"sqlite:///{out / 'optuna.db'}")
    trials = study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))
    assert len(trials) == 2
    for t in trials:
        m = t.user_attrs
        assert t.values == [m["mrr_at_10"], m["mrc_at_3"]]
        assert "recall_at_10" in m and "mrr_at_100" not in m and "mrc_at_5" not in m
