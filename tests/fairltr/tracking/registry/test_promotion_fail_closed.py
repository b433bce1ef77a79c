"""Promotion gates fail closed (issue 29): a champion that cannot be evaluated on --data fails the
relative gates unless skipping is chosen (--if-champion-unavailable pass), and then every record
says "skipped", never "passed"; a candidate that cannot be evaluated is rejected with its reason;
an impossible gate against a loadable champion fails. Against a real ``mlflow server``."""

from __future__ import annotations

import uuid

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr import DELTR, evaluate_ranking
from fairltr.cli import cli
from fairltr.tracking.registry import decision_record

EXPERIMENT = "test-promotion-fail-closed"


def _table(n_queries: int, seed: int, extra: bool) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = n_queries * 10
    df = pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), 10), "protected": rng.integers(0, 2, n),
                       "x1": rng.normal(size=n), "x2": rng.normal(size=n)})
    if extra:
        df["x3"] = rng.normal(size=n)
    df["judgment"] = np.clip(np.round(df["x1"] + 1.5), 0, 3)
    return df


@pytest.fixture(scope="module")
def versions(mlflow_tracking_module, tmp_path_factory):
    """v1 (the champion) reads x1, x2, x3; v2 (the candidate) reads x1, x2. ``data`` lacks x3."""
    from fairltr.tracking import log_deltr_run

    name = f"fail-closed-{uuid.uuid4().hex[:8]}"
    wide, narrow = _table(12, 1, extra=True), _table(12, 2, extra=False)
    for train in (wide, narrow):
        model = DELTR(gamma=0.0, max_iter=20).fit(train)
        log_deltr_run(model, train_df=train, test_df=train, test_metrics=evaluate_ranking(train, model.predict(train)),
                      register=name, experiment=EXPERIMENT)
    data = tmp_path_factory.mktemp("fail-closed") / "data.csv"
    _table(12, 3, extra=False).to_csv(data, index=False)
    runner = CliRunner()
    first = runner.invoke(cli, ["promote", "--model", name, "--version", "1", "--gate", "exposure_ratio>=0"])
    assert first.exit_code == 0, first.output
    return name, data


def _promote(*args: str):
    return CliRunner().invoke(cli, ["promote", *args])


def _version(name: str, version: str):
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, version)


def test_a_champion_that_cannot_be_evaluated_fails_the_relative_gates(versions):
    name, data = versions
    gates = ["--gate", "exposure_ratio>=0", "--gate", "ndcg_at_10>=champion-0.5"]
    res = _promote("--model", name, "--version", "2", "--data", str(data), *gates)
    assert res.exit_code == 1, res.output
    assert "Traceback" not in res.output
    assert "FAIL ndcg_at_10>=champion-0.5" in res.output and "champion v1 unavailable" in res.output
    assert "cannot be evaluated on the data" in res.output and "x3" in res.output  # the reason, not cut off
    record = decision_record(_version(name, "2").tags)
    assert record["verdict"] == "rejected" and record["champion_after"] == "1"
    assert "1 of 2 gates passed" in _version(name, "2").description


def test_skipping_is_explicit_and_is_recorded_as_skipped(versions):
    name, data = versions
    gates = ["--gate", "exposure_ratio>=0", "--gate", "ndcg_at_10>=champion-0.5"]
    res = _promote("--model", name, "--version", "2", "--data", str(data), *gates, "--if-champion-unavailable", "pass")
    assert res.exit_code == 0, res.output
    assert "SKIP ndcg_at_10>=champion-0.5" in res.output and "skipped: champion v1 unavailable" in res.output
    assert "PASS ndcg_at_10" not in res.output
    mv = _version(name, "2")
    record = decision_record(mv.tags)
    skipped = [r for r in record["results"] if r["gate"] == "ndcg_at_10>=champion-0.5"]
    assert skipped and skipped[0]["skipped"] is True
    assert "1 of 2 gates passed, 1 skipped" in mv.description and "skipped (" in mv.description
    assert "2 of 2 gates passed" not in mv.description


def test_an_impossible_gate_fails_against_a_loadable_champion(versions, tmp_path):
    """The issue's gate: nDCG is at most 1, so 'ndcg_at_10>=champion+0.5' can never pass; on data both
    versions read, the champion is evaluated (never "unavailable") and the gate fails."""
    name, _ = versions
    data = tmp_path / "wide.csv"
    _table(12, 5, extra=True).to_csv(data, index=False)
    res = _promote("--model", name, "--version", "1", "--data", str(data), "--gate", "ndcg_at_10>=champion+0.5")
    assert res.exit_code == 1, res.output
    assert "FAIL ndcg_at_10>=champion+0.5" in res.output and "unavailable" not in res.output
    assert decision_record(_version(name, "1").tags)["champion_status"].startswith("loaded")


def test_a_candidate_that_cannot_be_evaluated_is_rejected_with_its_reason(versions, tmp_path):
    name, _ = versions
    data = tmp_path / "narrow.csv"
    _table(12, 6, extra=False).drop(columns="x2").to_csv(data, index=False)
    res = _promote("--model", name, "--version", "2", "--data", str(data), "--gate", "exposure_ratio>=0")
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    assert "x2" in res.output
