"""Fairness-gated promotion on a real server: pass moves the alias, fail does not (exit 1 and a
message), missing metrics fail closed, the compare-and-set re-check, and two racing CLI processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from fairltr import DELTR, evaluate_ranking
from fairltr.cli import cli
from fairltr.tracking.model_registry import decision_record


@pytest.fixture(scope="module")
def logged(mlflow_server, tiny_rankings, tmp_path_factory):
    """Two logged rankers (gamma 0 = standard ListNet, gamma 1e4 = DELTR) with their test
    metrics, logged once per module, and the test split as a CSV."""
    import mlflow

    from fairltr.tracking import log_deltr_run

    train, test = tiny_rankings
    uris, metrics = [], []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
        mlflow.set_tracking_uri(mlflow_server.uri)
        for gamma in (0.0, 1e4):
            model = DELTR(gamma=gamma, max_iter=40).fit(train)
            m = evaluate_ranking(test, model.predict(test))
            run_id = log_deltr_run(model, train_df=train, test_df=test, test_metrics=m, experiment="test-promotion")
            uris.append(mlflow.MlflowClient().get_run(run_id).data.tags["fairltr.model_uri"])
            metrics.append(m)
    data = tmp_path_factory.mktemp("promotion") / "test.csv"
    test.to_csv(data, index=False)
    assert metrics[1]["exposure_ratio"] > metrics[0]["exposure_ratio"] + 0.05  # the premise of the gates
    return uris, metrics, data


@pytest.fixture
def registered(mlflow_tracking, logged):
    """A fresh registered model: v1 = the standard ranker, v2 = the DELTR ranker."""
    import mlflow

    uris, metrics, data = logged
    name = f"gated-{uuid.uuid4().hex[:8]}"
    for uri in uris:
        mlflow.register_model(uri, name)
    return name, data, {"1": metrics[0], "2": metrics[1]}


def _alias(name, alias="champion"):
    from fairltr.tracking.model_registry import current_champion
    import mlflow

    return current_champion(mlflow.MlflowClient(), name, alias)


def _tags(name, version):
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, version).tags


def test_gates_pass_and_move_the_alias(registered):
    name, data, metrics = registered
    runner = CliRunner()
    first = runner.invoke(cli, ["promote", "--model", name, "--version", "1", "--data", str(data),
                                "--gate", "exposure_ratio>=0.1", "--gate", "ndcg_at_10>=champion-0.01"])
    assert first.exit_code == 0, first.output
    assert _alias(name) == "1"
    assert "no champion yet" in first.output
    second = runner.invoke(cli, ["promote", "--model", name, "--version", "2", "--data", str(data),
                                 "--gate", "exposure_ratio>=champion+0.05", "--gate", "kendall_tau>=champion-0.5"])
    assert second.exit_code == 0, second.output
    assert _alias(name) == "2"
    tags = _tags(name, "2")
    # a few promotion tags on the version (issue 20); the whole decision in one JSON tag
    assert sorted(k for k in tags if k.startswith("fairltr.promotion.")) == [
        "fairltr.promotion.decision", "fairltr.promotion.evaluation_run", "fairltr.promotion.time",
        "fairltr.promotion.verdict"]
    record = decision_record(tags)
    assert tags["fairltr.promotion.verdict"] == record["verdict"] == "promoted"
    assert record["champion_before"] == "1"
    values = record["values"]
    assert values["exposure_ratio"] == pytest.approx(metrics["2"]["exposure_ratio"])  # evaluated on --data
    assert record["gates"] == ["exposure_ratio>=champion+0.05", "kendall_tau>=champion-0.5"]
    assert tags["fairltr.promotion.time"].endswith("+00:00") and record["time"] == tags["fairltr.promotion.time"]

    # what a person reads: the version's one-line description, the promotion run's metrics
    import mlflow

    client = mlflow.MlflowClient()
    description = client.get_model_version(name, "2").description
    assert description.startswith("PROMOTED to @champion (") and "2 of 2 gates passed" in description
    assert "replaces v1" in description and "\n" not in description
    run = client.get_run(tags["fairltr.promotion.evaluation_run"])
    m = run.data.metrics
    assert m["candidate/exposure_ratio"] == pytest.approx(values["exposure_ratio"])
    champion_values = record["champion_values"]
    artifact = json.loads(Path(mlflow.artifacts.download_artifacts(
        run_id=run.info.run_id, artifact_path="promotion_decision.json")).read_text())
    assert artifact["decision_id"] == record["decision_id"] and artifact["results"][0]["gate"] == record["gates"][0]
    assert m["champion/exposure_ratio"] == pytest.approx(champion_values["exposure_ratio"])
    assert m["gate_lower/exposure_ratio"] == pytest.approx(champion_values["exposure_ratio"] + 0.05)
    assert m["gate_lower/kendall_tau"] == pytest.approx(champion_values["kendall_tau"] - 0.5)
    assert (m["gates_passed"], m["gates_failed"], m["promoted"]) == (2.0, 0.0, 1.0)
    assert run.data.params["data"] == str(data)
    assert "PROMOTED" in run.data.tags["mlflow.note.content"]
    # its nested evaluation runs say what was evaluated on what
    children = client.search_runs([run.info.experiment_id], f"tags.mlflow.parentRunId = '{run.info.run_id}'")
    assert {c.data.params["model_uri"] for c in children} == {f"models:/{name}/1", f"models:/{name}/2"}
    for child in children:
        assert child.data.params["data"] == str(data)
        assert [i.dataset.name for i in child.inputs.dataset_inputs] == [data.name]
        assert not any(k.endswith("_n_queries") for k in child.data.metrics)


def test_failing_gate_keeps_the_alias(registered):
    name, data, metrics = registered
    from fairltr.tracking.model_registry import promote

    assert promote(name, 2, ["exposure_ratio>=0.1"]).promoted  # from training metrics, no --data
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "1", "--data", str(data),
                                      "--gate", "exposure_ratio>=champion-0.01", "--gate", "kendall_tau>=-1"])
    assert result.exit_code == 1
    short = metrics["2"]["exposure_ratio"] - 0.01 - metrics["1"]["exposure_ratio"]
    assert "FAIL exposure_ratio>=champion-0.01" in result.output
    assert [line.strip().split(" ")[0] for line in result.output.splitlines()].count("FAIL") == 1  # once (issue 20)
    assert "rejected: 1 of 2 gates failed" in result.output
    assert f"short by {short:.6g}" in result.output
    assert "PASS kendall_tau>=-1" in result.output
    assert _alias(name) == "2"
    tags = _tags(name, "1")
    record = decision_record(tags)
    assert tags["fairltr.promotion.verdict"] == "rejected"
    assert record["champion_after"] == "2"
    # a rejected version does not read as if it held the alias
    assert "fairltr.promotion.alias" not in tags and record["requested_alias"] == "champion"
    import mlflow

    description = mlflow.MlflowClient().get_model_version(name, "1").description
    assert description.startswith("REJECTED for @champion (") and "1 of 2 gates passed" in description
    assert "exposure_ratio>=champion-0.01 failed (exposure_ratio " in description
    assert description.endswith("@champion stays v2.")


def test_awrf_and_iaa_gates_on_data(registered):
    """AWRF, the TREC Fair 2022 score and IAA gate a promotion on --data like any ranker metric
    (evaluated there, recorded in the decision); one unreachable bound rejects the version."""
    name, data, metrics = registered
    gates = ["--gate", "awrf>=0.5", "--gate", "ndcg_awrf>=0.1", "--gate", "iaa<=1.5", "--gate", "awrf>=1.01"]
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "2", "--data", str(data), *gates])
    assert result.exit_code == 1, result.output
    for gate in ("awrf>=0.5", "ndcg_awrf>=0.1", "iaa<=1.5"):
        assert f"PASS {gate}" in result.output
    assert "FAIL awrf>=1.01" in result.output and "rejected: 1 of 4 gates failed" in result.output
    assert _alias(name) is None
    values = decision_record(_tags(name, "2"))["values"]
    for key in ("awrf", "ndcg_awrf", "iaa"):
        assert values[key] == pytest.approx(metrics["2"][key])


def test_missing_metric_fails_closed(registered):
    """A gate on a metric the training run never logged (a retriever's, on a ranker) cannot pass:
    since issue 29 item 5 it is refused before any work (exit 2, one line), not a FAIL with no value."""
    name, data, _ = registered
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "2",
                                      "--gate", "exposure_ratio>=0", "--gate", "mrr_at_10>=0.0"])
    assert result.exit_code == 2
    assert "'mrr_at_10>=0.0' cannot be checked here: the training run" in result.output
    assert "fairltr.promotion.verdict" not in _tags(name, "2")
    assert _alias(name) is None


def test_bad_gate_is_a_usage_error(registered):
    name, _, _ = registered
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "2", "--gate", "exposure_ratio=>1"])
    assert result.exit_code != 0 and "cannot parse gate" in result.output
    assert _alias(name) is None


def test_unknown_version_is_a_one_line_error(registered):
    name, _, _ = registered
    result = CliRunner().invoke(cli, ["promote", "--model", name, "--version", "9", "--gate", "exposure_ratio>=0"])
    assert result.exit_code == 1
    assert "Error: MLflow: RESOURCE_DOES_NOT_EXIST" in result.output and "Traceback" not in result.output
    assert _alias(name) is None


def test_champion_moving_during_evaluation_is_rechecked(registered, monkeypatch):
    """Compare-and-set: another promotion moves @champion to v2 while v1 is evaluated; the
    gates are re-checked against v2 (which v1 does not beat) and the alias stays on v2."""
    import mlflow

    from fairltr.tracking.model_registry import promotion, sources

    name, _, _ = registered
    client = mlflow.MlflowClient()
    original = sources.version_metrics
    moved = []

    def racing(c, model, version):
        if not moved:
            moved.append(True)
            client.set_registered_model_alias(name, "champion", "2")  # the concurrent winner
        return original(c, model, version)

    monkeypatch.setattr(sources, "version_metrics", racing)
    decision = promotion.promote(name, 1, ["exposure_ratio>=champion"])
    assert not decision.promoted
    assert any("moved" in n for n in decision.notes)
    assert decision.results[0].threshold is not None  # checked against v2, not skipped
    assert _alias(name) == "2"


def test_losing_the_alias_insert_race_rechecks_and_records(registered, monkeypatch):
    """The store's unique constraint lets one of two simultaneous alias inserts win: the loser's
    set fails, it re-reads the alias (now v2), re-checks its gates against v2 and records a
    rejection instead of crashing without a decision."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking.model_registry import promotion

    name, _, _ = registered
    client_cls = mlflow.MlflowClient
    original = client_cls.set_registered_model_alias
    calls = []

    def losing_insert(self, model, alias, version):
        if not calls:
            calls.append(version)
            original(self, model, alias, "2")  # the other promotion's insert lands first
            raise MlflowException("(sqlite3.IntegrityError) UNIQUE constraint failed: registered_model_aliases")
        return original(self, model, alias, version)

    monkeypatch.setattr(client_cls, "set_registered_model_alias", losing_insert)
    decision = promotion.promote(name, 1, ["exposure_ratio>=champion"])
    assert calls == ["1"]
    assert not decision.promoted and _alias(name) == "2"
    assert any("failed" in n for n in decision.notes)
    assert _tags(name, "1")["fairltr.promotion.verdict"] == "rejected"


def test_champion_moving_before_the_lock_is_measured_outside_it(registered, monkeypatch):
    """Compare-and-set: @champion moves to v2 after v1's gates passed (no champion) and before
    v1's lock is taken; under the lock the move is seen, the lock released, v2 measured and v1
    re-checked against it (v1 does not beat v2): rejected, the alias stays on v2."""
    import mlflow

    from fairltr.tracking.model_registry import compare_and_set, promotion

    name, _, _ = registered
    client = mlflow.MlflowClient()
    original = compare_and_set.acquire_lock
    calls = []

    def moved_first(c, model, **kw):
        if not calls:
            client.set_registered_model_alias(name, "champion", "2")  # the concurrent winner
        calls.append(model)
        return original(c, model, **kw)

    monkeypatch.setattr(compare_and_set, "acquire_lock", moved_first)
    decision = promotion.promote(name, 1, ["exposure_ratio>=champion"])
    assert calls == [name]  # the second attempt is rejected before it needs the lock
    assert not decision.promoted and decision.verdict == "rejected" and _alias(name) == "2"
    assert any("before the lock was taken" in n for n in decision.notes), decision.notes
    assert decision.results[0].threshold is not None
    # the record names the champion it was checked against (v2), and the one first read (none)
    assert decision.champion_before == decision.champion_after == "2" and decision.champion_first_read is None
    assert _tags(name, "1")["fairltr.promotion.verdict"] == "rejected"


def _race(name, extra):
    """Start two ``fairltr promote`` processes at once (v1 and v2) and wait for both."""
    exe = str(Path(sys.executable).with_name("fairltr"))
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    procs = [subprocess.Popen([exe, "promote", "--model", name, "--version", v, *extra,
                               "--gate", "exposure_ratio>=0", "--gate", "kendall_tau>=champion-1"],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
             for v in ("1", "2")]
    outs = [p.communicate(timeout=240)[0] for p in procs]
    _check_race(name, procs, outs)


def _check_race(name, procs, outs):
    assert all(p.returncode in (0, 1) for p in procs), outs
    winner = _alias(name)
    assert winner in ("1", "2")
    assert _tags(name, winner)["fairltr.promotion.verdict"] == "promoted"
    import mlflow

    client = mlflow.MlflowClient()
    for v in ("1", "2"):
        assert _tags(name, v)["fairltr.promotion.verdict"] in ("promoted", "rejected")
    decisions = [k for k in client.get_registered_model(name).tags if k.startswith("fairltr.decision.")]
    assert len(decisions) == 2
    assert any(p.returncode == 0 for p in procs), outs


def test_two_promotions_racing(registered):
    """Two processes gate on the training metrics at the same time."""
    name, _, _ = registered
    _race(name, [])


@pytest.mark.slow
def test_two_promotions_racing_with_evaluation(registered):
    """The same race, each process evaluating candidate and champion on --data (wider window)."""
    name, data, _ = registered
    _race(name, ["--data", str(data)])


def test_promotion_keeps_the_training_summary_of_the_version(mlflow_tracking, tiny_rankings, logged):
    """Issue 20: the verdict is added below the version's own training summary, never over it;
    a second decision replaces the first verdict line, the summary stays."""
    import mlflow

    from fairltr.tracking import log_deltr_run
    from fairltr.tracking.model_registry import VERDICT_MARK

    train, test = tiny_rankings
    name = f"described-{uuid.uuid4().hex[:8]}"
    model = DELTR(gamma=0.0, max_iter=20).fit(train)
    log_deltr_run(model, train_df=train, test_df=test, test_metrics=evaluate_ranking(test, model.predict(test)),
                  experiment="test-promotion", register=name, run_name="summary run")
    client = mlflow.MlflowClient()
    summary = client.get_model_version(name, "1").description
    assert summary.startswith("Registered from run 'summary run'") and "No promotion decision yet." in summary
    runner = CliRunner()
    assert runner.invoke(cli, ["promote", "--model", name, "--version", "1", "--gate", "kendall_tau>=5"]).exit_code == 1
    after = client.get_model_version(name, "1").description
    head, verdict = after.split(VERDICT_MARK)
    assert head == summary.replace(" No promotion decision yet.", "") and verdict.startswith("REJECTED for @champion")
    assert runner.invoke(cli, ["promote", "--model", name, "--version", "1", "--gate", "kendall_tau>=-1"]).exit_code == 0
    again = client.get_model_version(name, "1").description
    assert again.split(VERDICT_MARK) == [head, again.split(VERDICT_MARK)[1]] and again.count(VERDICT_MARK) == 1
    assert again.split(VERDICT_MARK)[1].startswith("PROMOTED to @champion")
