"""Alias integrity on a real server: ``verify-alias`` passes an alias set by ``fairltr promote``
and names every way an alias can point around the gates: moved with ``MlflowClient`` to a
version never promoted, to a REJECTED one, to one promoted for another alias, a decision record
copied from another version or missing from the model's log, files changed after promotion
(with and without the digest tags rewritten to match), an unset alias; usage and connection
errors exit 2 with one line; the check waits for a promotion in flight (its lock), and only for
so long."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alias_fixtures import FAILING, log_ranker, promote, register, stored_folder, verify  # noqa: E402


@pytest.fixture(scope="module")
def ranker_uri(mlflow_tracking_module, tiny_rankings) -> str:
    return log_ranker(tiny_rankings)


@pytest.fixture
def promoted(ranker_uri, mlflow_tracking_module):
    """A fresh model with three versions; v1 promoted to @champion by ``fairltr promote``."""
    import mlflow

    mlflow.set_tracking_uri(mlflow_tracking_module)  # a --tracking-uri test before may have moved it
    name = register(ranker_uri, 3)
    result = promote(name, "1")
    assert result.exit_code == 0, result.output
    return name


def _client():
    import mlflow

    return mlflow.MlflowClient()


def test_promoted_alias_passes_with_one_line(promoted):
    result = verify("--model", promoted)
    assert result.exit_code == 0, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"OK {promoted}@champion -> v1: PROMOTED ")
    assert "verified" in lines[0]


def test_alias_moved_to_an_unpromoted_version_fails(promoted):
    _client().set_registered_model_alias(promoted, "champion", "2")
    result = verify("--model", promoted)
    assert result.exit_code == 1, result.output
    assert result.output.strip().splitlines() == [
        f"FAIL {promoted}@champion -> v2: v2 has no promotion decision record (tag fairltr.promotion.decision): "
        "the alias was set outside 'fairltr promote'"]


def test_rejected_version_and_one_promoted_for_another_alias(promoted):
    client = _client()
    assert promote(promoted, "2", FAILING).exit_code == 1  # REJECTED; @champion stays v1
    assert promote(promoted, "3", ["--gate", "exposure_ratio>=0.5"], "--alias", "staging").exit_code == 0
    client.set_registered_model_alias(promoted, "champion", "2")
    result = verify("--model", promoted)
    assert result.exit_code == 1
    assert "v2's decision record is REJECTED for @champion" in result.output
    client.set_registered_model_alias(promoted, "champion", "3")
    result = verify("--model", promoted)
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        f"FAIL {promoted}@champion -> v3: v3's decision record is for @staging, not @champion"]
    every = verify("--model", promoted, "--all")
    lines = every.output.strip().splitlines()
    assert every.exit_code == 1 and len(lines) == 2
    assert lines[0].startswith(f"FAIL {promoted}@champion -> v3") and lines[1].startswith(f"OK {promoted}@staging -> v3")
    assert verify("--model", promoted, "--alias", "staging").exit_code == 0


def test_copied_record_and_missing_log_entry(promoted):
    client = _client()
    tags = client.get_model_version(promoted, "1").tags
    client.set_model_version_tag(promoted, "2", "fairltr.promotion.decision", tags["fairltr.promotion.decision"])
    client.set_registered_model_alias(promoted, "champion", "2")
    result = verify("--model", promoted)
    assert result.exit_code == 1
    assert "the decision record on v2 names version '1' (copied from another version?)" in result.output
    assert "v2's decision" in result.output and "is not in" in result.output  # no log tag ends in .v2.<id>
    # a record whose version matches but whose log entry was deleted
    client.set_registered_model_alias(promoted, "champion", "1")
    for key in client.get_registered_model(promoted).tags:
        if key.startswith("fairltr.decision.") and ".v1." in key:
            client.delete_registered_model_tag(promoted, key)
    result = verify("--model", promoted)
    assert result.exit_code == 1 and len(result.output.strip().splitlines()) == 1
    assert "is not in" in result.output and "decision log" in result.output


def test_files_changed_after_promotion(mlflow_server, tiny_rankings):
    """Changed weights fail verification; with the digest tags rewritten to the new files, the
    digest recorded at promotion still tells."""
    from fairltr.tracking.models.digests import folder_digest

    name = register(log_ranker(tiny_rankings), 1, prefix="tampered")
    assert promote(name, "1").exit_code == 0
    folder = stored_folder(mlflow_server, name, "1")
    weights = next(p for p in folder.rglob("*.safetensors"))
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    result = verify("--model", name)
    assert result.exit_code == 1
    assert "v1's files fail verification: " in result.output and "does not match its recorded digest" in result.output

    client = _client()
    mv = client.get_model_version(name, "1")
    new = folder_digest(folder)
    client.set_logged_model_tags(mv.source.split("/")[-1], {"fairltr.digest": new})
    client.set_model_version_tag(name, "1", "fairltr.digest", new)
    result = verify("--model", name)
    assert result.exit_code == 1, result.output
    at_promotion = json.loads(mv.tags["fairltr.promotion.decision"])["digest"]
    assert result.output.strip().splitlines() == [
        f"FAIL {name}@champion -> v1: v1's digest at promotion ({at_promotion[:19]}...) differs from its "
        f"fairltr.digest tag now ({new[:19]}...): the recorded digest changed after promotion",
        f"FAIL {name}@champion -> v1: v1's digest at promotion ({at_promotion[:19]}...) differs from its "
        f"files' digest now ({new[:19]}...): the artifacts changed after promotion"]


def test_unset_alias_and_errors(ranker_uri, mlflow_server):
    name = register(ranker_uri, 1)
    result = verify("--model", name)
    assert result.exit_code == 1 and result.output.strip() == f"FAIL {name}@champion: @champion is not set on {name}"
    assert verify("--model", name, "--all").output.strip() == f"FAIL {name}@*: {name} has no aliases"
    missing = verify("--model", "no-such-model-anywhere")
    assert missing.exit_code == 2 and len(missing.output.strip().splitlines()) == 1
    assert missing.output.startswith("Error: MLflow: ") and "Traceback" not in missing.output
    down = verify("--model", name, "--tracking-uri", "http://127.0.0.1:9")
    assert down.exit_code == 2 and len(down.output.strip().splitlines()) == 1, down.output
    assert "not reachable" in down.output or "answer" in down.output


def test_lean_records_keep_model_and_version():
    from fairltr.gates import GateResult
    from fairltr.tracking.model_registry.decision import PromotionDecision

    d = PromotionDecision(model="m", version="4", alias="champion", verdict="promoted",
                          results=[GateResult(gate="a>=1", metric="a", value=2.0, threshold=1.0, passed=True, margin=1.0)],
                          champion_before="3", champion_after="4", time="t", decision_id="abc", digest="sha256:x")
    lean = d.record(3)
    assert (lean["model"], lean["version"], lean["requested_alias"], lean["digest"]) == ("m", "4", "champion",
                                                                                         "sha256:x")


class _LockClient:
    """A registry whose only content is (or is not) the promotion lock of every model."""

    def __init__(self, held: bool) -> None:
        self.held = held

    def get_registered_model(self, name):
        from mlflow.exceptions import MlflowException

        if self.held and name.startswith("fairltr.lock."):
            return object()
        raise MlflowException(f"{name} not found")


def _checks(client, release_on_call=None, fixed_after=2):
    """A check that fails until call ``fixed_after`` and may release the lock on a call."""
    from fairltr.tracking.model_registry.alias_check import AliasCheck

    calls = []

    def check():
        calls.append(1)
        if release_on_call == len(calls):
            client.held = False  # the promotion in flight ends while this check runs
        return AliasCheck("m", "champion", "2", [] if len(calls) >= fixed_after else ["no record yet"])

    return check, calls


def test_settled_check_waits_for_a_promotion_in_flight():
    import threading
    import time

    from fairltr.tracking.model_registry.alias_check import settled_check

    free = _LockClient(held=False)
    check, calls = _checks(free)
    assert not settled_check(check, free, "m", poll_s=0.01).ok and len(calls) == 1  # no promotion: reported at once

    held = _LockClient(held=True)
    check, calls = _checks(held)
    threading.Timer(0.2, lambda: setattr(held, "held", False)).start()
    assert settled_check(check, held, "m", poll_s=0.01).ok and len(calls) == 2  # re-checked after the release

    ended = _LockClient(held=True)  # the lock is released while the first check reads the registry
    check, calls = _checks(ended, release_on_call=1)
    assert settled_check(check, ended, "m", poll_s=0.01).ok and len(calls) == 2

    stuck = _LockClient(held=True)  # a lock that is never released delays the verdict by wait_s only
    check, calls = _checks(stuck, fixed_after=99)
    started = time.monotonic()
    assert not settled_check(check, stuck, "m", wait_s=0.3, poll_s=0.01).ok
    assert time.monotonic() - started < 2


def test_promoting_a_version_the_alias_was_moved_to_checks_the_last_accepted_champion(promoted, tiny_rankings):
    """An alias moved with MlflowClient to a worse version, then `promote` of that version: the
    relative gate is checked against the champion fairltr last accepted (v1), not against the
    candidate itself, so the move is not laundered into an accepted promotion."""
    import mlflow

    from fairltr.tracking.model_registry.decision import decision_record

    client = _client()
    worse = mlflow.register_model(log_ranker(tiny_rankings, exposure=0.6), promoted).version  # v4
    client.set_registered_model_alias(promoted, "champion", worse)
    result = promote(promoted, worse, ["--gate", "exposure_ratio>=champion"])
    assert result.exit_code == 1, result.output
    record = decision_record(client.get_model_version(promoted, worse).tags)
    assert record["verdict"] == "rejected" and record["champion_before"] == "1"
    assert any("without an accepted promotion" in n for n in record["notes"])
    assert verify("--model", promoted).exit_code == 1  # still not backed by a promotion
    # a version as good as v1 held by a rogue move is accepted against v1, and then backed
    client.set_registered_model_alias(promoted, "champion", "2")
    result = promote(promoted, "2", ["--gate", "exposure_ratio>=champion"])
    assert result.exit_code == 0, result.output
    record = decision_record(client.get_model_version(promoted, "2").tags)
    assert record["verdict"] == "promoted" and record["champion_before"] == "1"
    assert verify("--model", promoted).exit_code == 0
    # promoting the accepted champion again is idempotent
    result = promote(promoted, "2", ["--gate", "exposure_ratio>=champion"])
    assert result.exit_code == 0 and "already holds" in " ".join(
        decision_record(client.get_model_version(promoted, "2").tags)["notes"])


def test_a_rogue_held_version_is_judged_against_the_last_champion_not_itself(promoted, tiny_rankings):
    """A margin gate that no version passes against itself (``champion+0.01``) is decided against
    v1, the champion fairltr last accepted: a better version held by a rogue move is promoted."""
    import mlflow

    from fairltr.tracking.model_registry.decision import decision_record

    client = _client()
    better = mlflow.register_model(log_ranker(tiny_rankings, exposure=0.95), promoted).version
    client.set_registered_model_alias(promoted, "champion", better)
    result = promote(promoted, better, ["--gate", "exposure_ratio>=champion+0.01"])
    assert result.exit_code == 0, result.output
    record = decision_record(client.get_model_version(promoted, better).tags)
    assert record["verdict"] == "promoted" and record["champion_before"] == "1"
