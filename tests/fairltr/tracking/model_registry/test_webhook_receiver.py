"""The webhook receiver against a real ``mlflow server`` (SQLite backend) that delivers its
registry webhooks to it over loopback: registered by :func:`register_webhook` (idempotent); a
version promoted by ``fairltr promote`` gives no FAIL; ``@champion`` moved with ``MlflowClient``
to an unpromoted version is recorded as a FAIL on that version within seconds (tag, description,
the model's log) and ``verify-alias`` names it; with ``revert`` the alias goes back to the latest
accepted version; a deleted alias is logged; a wrong signature, an old timestamp and a replayed
delivery id are refused and record nothing."""

from __future__ import annotations

import json
import logging
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from alias_fixtures import log_ranker, point_at, promote, register, start_webhook_server, verify, wait_for  # noqa: E402

from fairltr.tracking.model_registry.webhook_signature import sign  # noqa: E402

# about 32 s in all: a webhook-delivering mlflow server and promotions (slow stage of CI)
pytestmark = pytest.mark.slow

SECRET = "test-secret-" + uuid.uuid4().hex


class Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@pytest.fixture(scope="module")
def hooked(tmp_path_factory, tiny_rankings):
    """(MLflow server with webhooks to loopback, receiver, its URL, log lines, a logged ranker)."""
    import mlflow

    from fairltr.tracking.model_registry.webhook_receiver import (
        LOGGER_NAME, AliasEventReceiver, ReceiverSettings, register_webhook,
    )

    server = start_webhook_server(tmp_path_factory)
    mp = point_at(server.uri)
    lines = Lines()
    logger = logging.getLogger(LOGGER_NAME)
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    receiver = AliasEventReceiver(mlflow.MlflowClient(), ReceiverSettings(SECRET, settle_s=60))
    http = receiver.serve("127.0.0.1", 0)
    thread = threading.Thread(target=http.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{http.server_address[1]}/webhook"
    try:
        hook_id, created = register_webhook(mlflow.MlflowClient(), url, SECRET)
        assert created
        yield {"server": server, "receiver": receiver, "url": url, "log": lines.lines, "hook": hook_id,
               "uri": log_ranker(tiny_rankings)}
    finally:
        receiver.close()
        logger.removeHandler(lines)
        mp.undo()
        server.stop()


def _settled(receiver, before: int, n: int = 1) -> None:
    wait_for(lambda: receiver.processed >= before + n, timeout=60, what=f"{n} event(s) processed")


def _tags(name: str, version: str) -> dict:
    import mlflow

    return mlflow.MlflowClient().get_model_version(name, version).tags


def test_registration_is_idempotent(hooked):
    import mlflow

    from fairltr.tracking.model_registry.webhook_receiver import register_webhook

    client = mlflow.MlflowClient()
    assert register_webhook(client, hooked["url"], SECRET) == (hooked["hook"], False)
    hooks = [h for h in client.list_webhooks() if h.name == "fairltr-alias-check"]
    assert len(hooks) == 1 and hooks[0].url == hooked["url"]
    assert sorted(str(e) for e in hooks[0].events) == ["model_version_alias.created", "model_version_alias.deleted"]


def test_promoted_passes_and_a_moved_alias_is_recorded(hooked):
    import mlflow

    client = mlflow.MlflowClient()
    receiver, log = hooked["receiver"], hooked["log"]
    name = register(hooked["uri"], 2, prefix="hooked")
    before = receiver.processed
    assert promote(name, "1").exit_code == 0
    _settled(receiver, before)
    assert "fairltr.alias_check" not in _tags(name, "1")
    assert log[-1].endswith(f"model_version_alias.created {name}@champion -> v1: OK: PROMOTED "
                            f"{_tags(name, '1')['fairltr.promotion.time']} "
                            f"(decision {json.loads(_tags(name, '1')['fairltr.promotion.decision'])['decision_id'][:8]}), "
                            + log[-1].rsplit(", ", 1)[1])

    before = receiver.processed
    moved = time.monotonic()
    client.set_registered_model_alias(name, "champion", "2")
    tag = wait_for(lambda: _tags(name, "2").get("fairltr.alias_check"), timeout=30, what="the FAIL tag")
    print(f"FAIL recorded {time.monotonic() - moved:.1f} s after the alias move")
    _settled(receiver, before)
    assert tag.startswith("FAIL ") and "@champion: v2 has no promotion decision record" in tag
    description = client.get_model_version(name, "2").description
    assert "\n\nAlias check: FAIL " in description and "v2 has no promotion decision record" in description
    history = {k: v for k, v in client.get_registered_model(name).tags.items() if k.startswith("fairltr.alias_check.")}
    assert len(history) == 1 and list(history)[0].endswith(".v2.champion") and list(history.values())[0] == f"v2 {tag}"
    assert f"{name}@champion -> v2: FAIL: v2 has no promotion decision record" in log[-1]
    result = verify("--model", name)
    assert result.exit_code == 1 and f"FAIL {name}@champion -> v2: v2 has no promotion" in result.output
    assert "fairltr.alias_check" not in _tags(name, "1")

    # v2 promoted properly afterwards: its FAIL tag turns PASS, the description drops the FAIL, the log keeps it
    before = receiver.processed
    assert promote(name, "2").exit_code == 0
    time.sleep(0.5)
    assert receiver.processed == before  # v2 already held the alias: no move, no event
    client.set_registered_model_alias(name, "champion", "1")
    client.set_registered_model_alias(name, "champion", "2")
    _settled(receiver, before, 2)
    assert _tags(name, "2")["fairltr.alias_check"].startswith("PASS ")
    assert "; earlier: FAIL " in _tags(name, "2")["fairltr.alias_check"]
    description = client.get_model_version(name, "2").description
    assert "Alias check" not in description and "PROMOTED to @champion" in description
    assert any(k.endswith(".v2.champion") for k in client.get_registered_model(name).tags)  # the log keeps the FAIL


def test_bad_deliveries_are_refused_and_record_nothing(hooked):
    receiver, url, log = hooked["receiver"], hooked["url"], hooked["log"]
    name = register(hooked["uri"], 1, prefix="forged")
    body = json.dumps({"entity": "model_version_alias", "action": "created", "timestamp": "now",
                       "data": {"name": name, "alias": "champion", "version": "1"}}).encode()

    def post(secret: str, sent: int, delivery_id: str | None = None) -> int:
        delivery_id = delivery_id or str(uuid.uuid4())
        request = urllib.request.Request(url, data=body, method="POST", headers={
            "Content-Type": "application/json", "X-MLflow-Delivery-Id": delivery_id,
            "X-MLflow-Timestamp": str(sent), "X-MLflow-Signature": sign(secret, delivery_id, str(sent), body)})
        try:
            with urllib.request.urlopen(request, timeout=10) as resp:
                return resp.status
        except urllib.error.HTTPError as exc:
            return exc.code

    before = receiver.processed
    assert post("wrong-secret-wrong-secret", int(time.time())) == 401
    assert "HTTP 401, signature does not match" in log[-1]
    assert post(SECRET, int(time.time()) - 3600) == 403
    assert "HTTP 403, timestamp" in log[-1] and ("sent 3600 s ago" in log[-1] or "sent 3601 s ago" in log[-1])
    time.sleep(0.5)
    assert receiver.processed == before and "fairltr.alias_check" not in _tags(name, "1")

    # a genuine delivery is checked once; the same delivery again is a replay
    delivery_id = str(uuid.uuid4())
    assert post(SECRET, int(time.time()), delivery_id) == 202
    assert post(SECRET, int(time.time()), delivery_id) == 409
    _settled(receiver, before)
    time.sleep(0.3)
    assert receiver.processed == before + 1
    assert _tags(name, "1")["fairltr.alias_check"].startswith("FAIL ")  # v1 never promoted: a forged event still checks
    assert urllib.request.urlopen(url.replace("/webhook", "/health"), timeout=5).status == 200


def test_revert_and_deleted_alias(hooked):
    import mlflow

    client = mlflow.MlflowClient()
    receiver, log = hooked["receiver"], hooked["log"]
    name = register(hooked["uri"], 3, prefix="revert")
    before = receiver.processed
    assert promote(name, "1").exit_code == 0 and promote(name, "2").exit_code == 0
    _settled(receiver, before, 2)
    receiver.settings.revert = True
    try:
        before = receiver.processed
        client.set_registered_model_alias(name, "champion", "3")
        _settled(receiver, before, 2)  # v3's FAIL, then the revert's own move back to v2 (OK)
    finally:
        receiver.settings.revert = False
    assert str(client.get_model_version_by_alias(name, "champion").version) == "2"
    assert any(f"{name}@champion -> v3: FAIL" in line and "REVERTED" in line and "from v3 to v2" in line for line in log)
    assert any(line.endswith("model_version_alias.created " + f"{name}@champion -> v2: OK: " + line.split(": OK: ")[-1])
               for line in log if ": OK: " in line)
    assert "fairltr.alias_check" not in _tags(name, "2")
    keys = [k for k in client.get_registered_model(name).tags if k.startswith("fairltr.alias_check.")]
    assert sorted(k.rsplit(".", 3)[-3:] == ["v3", "champion", "reverted"] for k in keys) == [False, True]
    assert verify("--model", name).exit_code == 0

    before = receiver.processed
    client.delete_registered_model_alias(name, "champion")
    _settled(receiver, before)
    assert "@champion: FAIL" in log[-1] and "deleted outside 'fairltr promote'" in log[-1]
    assert any(k.endswith(".deleted.champion") for k in client.get_registered_model(name).tags)
