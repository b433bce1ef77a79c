"""The webhook signature check against MLflow's own signer (``mlflow.webhooks.delivery.
_generate_hmac_signature``, an independent implementation): accepted when it matches within the
time window; refused (401/403, with the reason) when unsigned, signed with another secret, the
body or id changed, the timestamp is not Unix seconds, or it lies outside the window."""

from __future__ import annotations

import json
import uuid

import pytest

from fairltr.tracking.model_registry.webhook_signature import check_delivery, sign

SECRET = "s3cret-of-at-least-16-chars"
NOW = 1_800_000_000.0


def _delivery(secret: str = SECRET, sent: float = NOW, body: str | None = None) -> tuple[dict, bytes]:
    """Headers and body exactly as MLflow's delivery builds them."""
    from mlflow.webhooks.delivery import _generate_hmac_signature

    body = body or json.dumps({"entity": "model_version_alias", "action": "created", "timestamp": "t",
                               "data": {"name": "m", "alias": "champion", "version": "2"}})
    delivery_id, stamp = str(uuid.uuid4()), str(int(sent))
    headers = {"X-MLflow-Delivery-Id": delivery_id, "X-MLflow-Timestamp": stamp,
               "X-MLflow-Signature": _generate_hmac_signature(secret, delivery_id, stamp, body)}
    return headers, body.encode("utf-8")


def test_same_signature_as_mlflow_and_accepted():
    headers, body = _delivery()
    assert sign(SECRET, headers["X-MLflow-Delivery-Id"], headers["X-MLflow-Timestamp"], body) == \
        headers["X-MLflow-Signature"]
    delivery_id, refusal = check_delivery(SECRET, headers, body, NOW + 10)
    assert refusal is None and delivery_id == headers["X-MLflow-Delivery-Id"]
    lower = {k.lower(): v for k, v in headers.items()}  # header names are case-insensitive
    assert check_delivery(SECRET, lower, body, NOW)[1] is None
    several = dict(headers, **{"X-MLflow-Signature": "v1,AAAA " + headers["X-MLflow-Signature"]})
    assert check_delivery(SECRET, several, body, NOW)[1] is None


@pytest.mark.parametrize("change, status, words", [
    (lambda h, b: ({k: v for k, v in h.items() if k != "X-MLflow-Signature"}, b), 401, "unsigned"),
    (lambda h, b: (h, b.replace(b'"2"', b'"3"')), 401, "does not match"),
    (lambda h, b: (dict(h, **{"X-MLflow-Delivery-Id": str(uuid.uuid4())}), b), 401, "does not match"),
    (lambda h, b: (dict(h, **{"X-MLflow-Timestamp": "soon"}), b), 401, "not Unix seconds"),
    (lambda h, b: (dict(h, **{"X-MLflow-Signature": h["X-MLflow-Signature"][3:]}), b), 401, "does not match"),
])
def test_tampered_deliveries_are_refused(change, status, words):
    headers, body = change(*_delivery())
    _, refusal = check_delivery(SECRET, headers, body, NOW)
    assert refusal is not None and refusal.status == status and words in refusal.reason


def test_wrong_secret_and_time_window():
    headers, body = _delivery(secret="another-secret-of-16-chars")
    assert check_delivery(SECRET, headers, body, NOW)[1].status == 401
    old, body = _delivery(sent=NOW - 301)
    refusal = check_delivery(SECRET, old, body, NOW)[1]
    assert refusal.status == 403 and "sent 301 s ago" in refusal.reason and "300 s window" in refusal.reason
    future, body = _delivery(sent=NOW + 400)
    refusal = check_delivery(SECRET, future, body, NOW)[1]
    assert refusal.status == 403 and "dated 400 s ahead" in refusal.reason
    edge, body = _delivery(sent=NOW - 300)
    assert check_delivery(SECRET, edge, body, NOW)[1] is None
    assert check_delivery(SECRET, old, body, NOW, tolerance_s=1000)[1] is None  # only the window refused it
