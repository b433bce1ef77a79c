"""Promotion opens what it promotes, on a real server with its artifact store on disk: truncated
weights and code appended to the stored model are rejected (with and without --data) and the
code never runs; a corrupt champion does not block replacing it; versions without a digest need
--allow-unverified; the promotion lock is taken over after its lease and a held lock ends in
exit 3 "lost to contention"; gate cut-offs reach the evaluator; decision tags stay valid JSON."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner

from fairltr import DELTR, evaluate_ranking
from fairltr.cli import cli
from fairltr.tracking.model_registry import decision_record

EXPERIMENT = "test-promotion-integrity"


@pytest.fixture(scope="module")
def test_csv(tiny_rankings, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("integrity") / "test.csv"
    tiny_rankings[1].to_csv(path, index=False)
    return path


def _register(name: str, tiny_rankings, gammas=(0.0, 1e4)) -> list[dict]:
    """Train, log (with digest) and register one version per gamma; returns their test metrics."""
    from fairltr.tracking import log_deltr_run

    train, test = tiny_rankings
    out = []
    for gamma in gammas:
        model = DELTR(gamma=gamma, max_iter=30).fit(train)
        metrics = evaluate_ranking(test, model.predict(test))
        log_deltr_run(model, train_df=train, test_df=test, test_metrics=metrics, register=name, experiment=EXPERIMENT)
        out.append(metrics)
    return out


def _stored(server, name: str, version: str) -> Path:
    """The folder of a version's model files inside the server's artifact store."""
    import mlflow

    mv = mlflow.MlflowClient().get_model_version(name, version)
    location = mlflow.MlflowClient().get_logged_model(mv.source.split("/")[-1]).artifact_location
    assert location.startswith("mlflow-artifacts:/"), location
    folder = server.log_path.parent / "artifacts" / location[len("mlflow-artifacts:/"):]
    assert (folder / "MLmodel").is_file(), folder
    return folder


def _alias(name: str) -> str | None:
    import mlflow

    from fairltr.tracking.model_registry import current_champion

    return current_champion(mlflow.MlflowClient(), name)


def _tags(name: str, version: str) -> dict:
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, version).tags


def _promote(*args: str):
    return CliRunner().invoke(cli, ["promote", *args])


def _strip_digests(name: str, version: str) -> None:
    import mlflow

    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, version)
    client.delete_model_version_tag(name, version, "fairltr.digest")
    client.delete_logged_model_tag(mv.source.split("/")[-1], "fairltr.digest")


@pytest.fixture
def model_name(mlflow_tracking) -> str:
    return f"integrity-{uuid.uuid4().hex[:8]}"


def test_digest_is_recorded_in_the_tracking_store(mlflow_server, model_name, tiny_rankings, tmp_path):
    """The digest tag on the version and the logged model equals an independent recomputation
    over the stored files (every file but MLflow's registered_model_meta)."""
    import hashlib

    import mlflow

    _register(model_name, tiny_rankings, gammas=(0.0,))
    folder = _stored(mlflow_server, model_name, "1")
    lines = sorted((p.relative_to(folder).as_posix(), hashlib.sha256(p.read_bytes()).hexdigest())
                   for p in folder.rglob("*") if p.is_file() and p.name != "registered_model_meta")
    expected = "sha256:" + hashlib.sha256(b"".join(f"{r}\0{h}\n".encode() for r, h in lines)).hexdigest()
    assert any(r == "artifacts/deltr.safetensors" for r, _ in lines) and any(r == "ranker_code.py" for r, _ in lines)
    assert _tags(model_name, "1")["fairltr.digest"] == expected
    mv = mlflow.MlflowClient().get_model_version(model_name, "1")
    assert mlflow.MlflowClient().get_logged_model(mv.source.split("/")[-1]).tags["fairltr.digest"] == expected


@pytest.mark.parametrize("cut", ["empty", pytest.param("half", marks=pytest.mark.slow),  # 11 s each: the other
                                 pytest.param("minus40", marks=pytest.mark.slow)])  # two cuts run in the slow set
def test_truncated_weights_are_rejected_without_data(mlflow_server, model_name, tiny_rankings, cut):
    """The audit's fail-open case: without --data the model used to be promoted unopened."""
    _register(model_name, tiny_rankings, gammas=(0.0,))
    weights = _stored(mlflow_server, model_name, "1") / "artifacts" / "deltr.safetensors"
    data = weights.read_bytes()
    weights.write_bytes({"empty": b"", "half": data[: len(data) // 2], "minus40": data[:-40]}[cut])
    result = _promote("--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0")
    assert result.exit_code == 1, result.output
    assert "REJECTED" in result.output and "does not match its recorded digest" in result.output
    assert "Traceback" not in result.output
    assert _alias(model_name) is None
    tags = _tags(model_name, "1")
    assert tags["fairltr.promotion.verdict"] == "rejected"
    assert "digest" in decision_record(tags)["reason"]
    # the loader's own check, independent of the digest: an unverified version that does not load
    _strip_digests(model_name, "1")
    loose = _promote("--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0", "--allow-unverified")
    assert loose.exit_code == 1 and "does not load" in loose.output and "Traceback" not in loose.output
    assert _alias(model_name) is None


@pytest.mark.slow  # about 19 s: three promotions and two evaluations of a tampered version
def test_code_appended_to_the_stored_model_never_runs(mlflow_server, model_name, tiny_rankings, test_csv, tmp_path):
    marker = tmp_path / "pwned"
    _register(model_name, tiny_rankings, gammas=(0.0,))
    folder = _stored(mlflow_server, model_name, "1")
    payload = f"\nopen({str(marker)!r}, 'w').write('ran')\n"
    for rel in ("ranker_code.py", "code/fairltr/tracking/models/pyfunc.py", "code/fairltr/__init__.py"):
        with open(folder / rel, "a") as fh:
            fh.write(payload)
    result = _promote("--model", model_name, "--version", "1", "--data", str(test_csv), "--gate", "exposure_ratio>=0")
    assert result.exit_code == 1 and "does not match its recorded digest" in result.output, result.output
    evaluated = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{model_name}/1",
                                         "--data", str(test_csv)])
    assert evaluated.exit_code == 1 and "does not match its recorded digest" in evaluated.output
    assert "Traceback" not in evaluated.output
    # even accepted as unverified, the model is built by fairltr's loaders: the stored code never runs
    _strip_digests(model_name, "1")
    unverified = _promote("--model", model_name, "--version", "1", "--data", str(test_csv),
                          "--gate", "exposure_ratio>=0", "--allow-unverified")
    assert unverified.exit_code == 0, unverified.output
    assert "loaded unverified" in unverified.output
    plain = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", f"models:/{model_name}@champion",
                                     "--data", str(test_csv)])
    assert plain.exit_code == 1 and "no recorded digest" in plain.output and "--allow-unverified" in plain.output
    assert not marker.exists()
    assert decision_record(_tags(model_name, "1"))["digest"] is None


@pytest.mark.slow  # about 30 s: two registered versions evaluated on a live server
def test_corrupt_champion_does_not_block_its_replacement(mlflow_server, model_name, tiny_rankings, test_csv):
    _register(model_name, tiny_rankings)
    assert _promote("--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0").exit_code == 0
    weights = _stored(mlflow_server, model_name, "1") / "artifacts" / "deltr.safetensors"
    weights.write_bytes(weights.read_bytes()[:-40])
    gates = ["--gate", "exposure_ratio>=0.1", "--gate", "kendall_tau>=champion-0.5"]
    strict = _promote("--model", model_name, "--version", "2", "--data", str(test_csv), *gates,
                      "--unloadable-champion", "fail")
    assert strict.exit_code == 1, strict.output
    assert "Traceback" not in strict.output
    assert "champion v1 unavailable (" in strict.output and "relative gate failed (fail closed)" in strict.output
    assert "PASS exposure_ratio>=0.1" in strict.output
    assert _alias(model_name) == "1"
    assert decision_record(_tags(model_name, "2"))["champion_status"].startswith("unloadable: ")
    default = _promote("--model", model_name, "--version", "2", "--data", str(test_csv), *gates)  # fail closed
    assert default.exit_code == 1 and "relative gate failed (fail closed)" in default.output, default.output
    replaced = _promote("--model", model_name, "--version", "2", "--data", str(test_csv), *gates,
                        "--if-champion-unavailable", "pass")  # skipping is an explicit choice
    assert replaced.exit_code == 0, replaced.output
    assert "SKIP kendall_tau>=champion-0.5" in replaced.output and "skipped: champion v1 unavailable (" in replaced.output
    assert _alias(model_name) == "2"


@pytest.mark.slow  # about 30 s: waits out a lock lease
def test_lock_is_taken_over_after_its_lease_and_a_held_lock_is_contention(mlflow_tracking, model_name, tiny_rankings):
    import mlflow

    from fairltr.tracking.model_registry.lock import HOLDER_TAG, LEASE_TAG, OWNER_TAG, lock_name

    _register(model_name, tiny_rankings)
    client = mlflow.MlflowClient()
    name = lock_name(model_name)
    # a crashed holder: its 1-second lease is over by the time the promotion looks
    client.create_registered_model(name, tags={HOLDER_TAG: "crashed", LEASE_TAG: "1", OWNER_TAG: "gone pid 1"})
    import time

    time.sleep(1.5)
    taken = _promote("--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0")
    assert taken.exit_code == 0, taken.output
    assert _alias(model_name) == "1"
    assert not client.search_registered_models(filter_string=f"name = '{name}'")  # released
    assert client.search_registered_models(filter_string=f"name = '{name}.takeover.crashed'")  # the marker

    # a live holder keeps it: the promotion waits --lock-timeout seconds, then exit 3
    client.create_registered_model(name, tags={HOLDER_TAG: "alive", LEASE_TAG: "600", OWNER_TAG: "busy pid 2"})
    started = time.monotonic()
    lost = _promote("--model", model_name, "--version", "2", "--gate", "exposure_ratio>=0", "--lock-timeout", "2")
    waited = time.monotonic() - started
    assert lost.exit_code == 3, lost.output
    assert "LOST TO CONTENTION" in lost.output and "busy pid 2" in lost.output
    assert "gate failed" not in lost.output
    assert 2 <= waited < 30
    assert _alias(model_name) == "1"
    assert _tags(model_name, "2")["fairltr.promotion.verdict"] == "contention"
    client.delete_registered_model(name)
    again = _promote("--model", model_name, "--version", "2", "--gate", "exposure_ratio>=0")
    assert again.exit_code == 0 and _alias(model_name) == "2"


def test_gate_cutoffs_reach_the_evaluator(mlflow_tracking, model_name, tiny_rankings, test_csv):
    """four_fifths@7 reads impact_ratio_at_7 (pooled selection rates in each query's top 7), a
    cut-off the default k (1, 5, 10, 20, 100) lacks; checked against a pandas groupby."""
    _register(model_name, tiny_rankings, gammas=(1e4,))
    result = _promote("--model", model_name, "--version", "1", "--data", str(test_csv), "--gate", "four_fifths@7")
    record = decision_record(_tags(model_name, "1"))
    value = record["values"]["impact_ratio_at_7"]
    assert value is not None
    import mlflow

    model = mlflow.pyfunc.load_model(f"models:/{model_name}/1").unwrap_python_model().model
    test = tiny_rankings[1].assign(score=model.predict(tiny_rankings[1]))
    test["rank"] = test.groupby("query_id")["score"].rank(ascending=False, method="first")
    rates = (test["rank"] <= 7).groupby(test["protected"]).mean()  # pooled over the table
    expected = rates.min() / rates.max()
    assert value == pytest.approx(expected, abs=1e-12)
    assert result.exit_code == (0 if expected >= 0.8 else 1), result.output
    # the decision lists each audited category's ratio
    (gate,) = record["results"]
    assert sorted(c["category"] for c in gate["categories"]) == ["0", "1"]
    assert min(c["impact_ratio"] for c in gate["categories"]) == pytest.approx(expected, abs=1e-12)


def test_decision_tags_are_valid_json_within_the_limit():
    from fairltr.gates import GateResult
    from fairltr.tracking.model_registry import TAG_LIMIT, PromotionDecision

    results = [GateResult(gate=f"ndcg_at_{k}>=champion-0.0{k % 10}", metric=f"ndcg_at_{k}", value=0.5, threshold=0.6,
                          passed=k % 3 != 0, margin=-0.1, note="x" * 50, rule=f"ndcg_at_{k}>=champion") for k in range(1, 400)]
    d = PromotionDecision(model="m", version="3", alias="champion", verdict="rejected", results=results,
                          champion_before="2", champion_after="2", time="2026-01-01T00:00:00.000000+00:00",
                          decision_id=uuid.uuid4().hex, candidate_metrics={r.metric: 0.5 for r in results},
                          champion_metrics={r.metric: 0.6 for r in results}, notes=["n" * 3000, "m" * 3000],
                          reason="r" * 6000)
    tags = d.version_tags()
    assert len(tags) == 4  # a few tags on the version; the whole decision is one JSON tag
    for key, value in tags.items():
        assert len(value) <= TAG_LIMIT, key
    summary = json.loads(tags["fairltr.promotion.decision"])  # never a cut JSON text: the leanest form here
    assert summary["n_gates"] == 399 and summary["n_failed"] == 133 and summary["verdict"] == "rejected"
    key, value = d.model_tag()
    assert len(value) <= TAG_LIMIT and value.startswith("v3 REJECTED for @champion")
    assert "\n" not in d.description() and len(d.description()) <= TAG_LIMIT
    assert "266 of 399 gates passed" in d.description() and "+129 more" in d.description()
    small = PromotionDecision(model="m", version="3", alias="champion", verdict="promoted", results=results[:2],
                              champion_before=None, champion_after="3", time="t", decision_id="abc")
    assert [r["gate"] for r in decision_record(small.version_tags())["results"]] == [r.gate for r in results[:2]]
    assert decision_record(small.version_tags())["results"][0]["note"] == "x" * 50  # the richest form that fits
    assert small.exit_code == 0 and d.exit_code == 1
