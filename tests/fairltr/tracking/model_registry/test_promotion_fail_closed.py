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
from fairltr.tracking.model_registry import decision_record

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


def _run_count() -> int:
    """Every run of the tracking store, in every experiment."""
    import mlflow

    client = mlflow.MlflowClient()
    ids = [e.experiment_id for e in client.search_experiments()]
    return len(client.search_runs(ids, max_results=50000)) if ids else 0


UNCOMPUTED = [  # (--data given, gate, the reason's words): item 5, a gate whose metric is never computed
    (True, "impact_ratio_at_5.gender>=0.8", "names attribute 'gender', which is not audited here; audited: ['protected']"),
    (True, "impact_ratio_at_5.protected:gender>=0.8", "attribute 'protected:gender', which is not audited here"),
    (True, "expected_ndcg_at_10>=0.1", "expected_ndcg_at_10 is a stochastic policy's figure"),
    (True, "mrr_at_10>=0", "mrr_at_10 is a retrieval metric"),
    (False, "impact_ratio_at_5.gender>=0.8", "the training run of {name} v2 logged no finite 'impact_ratio_at_5.gender'"),
    (False, "ndcg_at_7>=0", "logged no finite 'ndcg_at_7'; it logged ndcg_at_1, ndcg_at_10"),
]


@pytest.mark.parametrize("with_data, gate, reason", UNCOMPUTED, ids=[f"{d}-{g}" for d, g, _ in UNCOMPUTED])
def test_a_gate_whose_metric_is_never_computed_is_refused_before_any_work(versions, monkeypatch, with_data, gate,
                                                                           reason):
    """One ``Error:`` line naming the gate and what is available, exit 2 (a usage error; 1 is REJECTED),
    before the model is opened or any run is made; the version's tags, aliases and description stay."""
    from fairltr.tracking.models import verify

    name, data = versions

    def never(*_a, **_k):
        raise AssertionError("the model was opened")

    monkeypatch.setattr(verify, "open_verified", never)
    runs, before = _run_count(), _version(name, "2")
    where = ["--data", str(data), "--group", "protected"] if with_data else []
    res = _promote("--model", name, "--version", "2", *where, "--gate", gate)
    lines = [line for line in res.output.splitlines() if line.strip()]
    assert res.exit_code == 2, res.output
    assert len(lines) == 1 and lines[0].startswith(f"Error: {gate!r} cannot be checked here: "), res.output
    assert reason.format(name=name) in lines[0], res.output
    assert _run_count() == runs
    after = _version(name, "2")
    assert (after.tags, after.aliases, after.description) == (before.tags, before.aliases, before.description)
