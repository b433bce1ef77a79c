"""The signature of an MLflow 3 webhook delivery, checked.

MLflow (``mlflow/webhooks/delivery.py``, ``_send_webhook_request`` and
``_generate_hmac_signature``; headers in ``mlflow/webhooks/constants.py``) POSTs the JSON body
``{"entity", "action", "timestamp", "data"}`` with three headers:

* ``X-MLflow-Delivery-Id``: a fresh UUID per delivery (kept by MLflow's own retries);
* ``X-MLflow-Timestamp``: Unix seconds when it was sent;
* ``X-MLflow-Signature``: ``v1,<base64 of HMAC-SHA256(secret, "<id>.<timestamp>.<body>")>``
  (sent only when the webhook has a secret).

:func:`check_delivery` accepts a delivery only when all three are present, the timestamp is
within ``tolerance_s`` of this machine's clock (either way: replay protection) and one of the
``v1`` signatures equals the one computed here (compared in constant time).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from dataclasses import dataclass
from typing import Mapping

__all__ = ["SIGNATURE_HEADER", "TIMESTAMP_HEADER", "DELIVERY_ID_HEADER", "sign", "check_delivery", "Refusal",
           "DEFAULT_TOLERANCE_S"]

SIGNATURE_HEADER = "X-MLflow-Signature"
TIMESTAMP_HEADER = "X-MLflow-Timestamp"
DELIVERY_ID_HEADER = "X-MLflow-Delivery-Id"
DEFAULT_TOLERANCE_S = 300.0  # five minutes, as the Standard Webhooks scheme MLflow follows recommends


@dataclass(frozen=True)
class Refusal:
    """Why a delivery was refused, with the HTTP status to answer (401 unsigned or badly signed,
    403 outside the time window)."""

    status: int
    reason: str


def sign(secret: str, delivery_id: str, timestamp: str, body: bytes) -> str:
    """``v1,<base64 HMAC-SHA256>`` of ``<delivery_id>.<timestamp>.<body>`` under ``secret``."""
    mac = hmac.new(secret.encode("utf-8"), f"{delivery_id}.{timestamp}.".encode("utf-8") + body, hashlib.sha256)
    return "v1," + base64.b64encode(mac.digest()).decode("ascii")


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:  # a plain dict: look the name up case-insensitively
        value = next((v for k, v in headers.items() if k.lower() == name.lower()), None)
    return value.strip() if isinstance(value, str) else None


def check_delivery(secret: str, headers: Mapping[str, str], body: bytes, now: float,
                   tolerance_s: float = DEFAULT_TOLERANCE_S) -> tuple[str, Refusal | None]:
    """(delivery id, None) for a delivery signed with ``secret`` within the time window, else
    (delivery id or "", the :class:`Refusal`)."""
    delivery_id = _header(headers, DELIVERY_ID_HEADER) or ""
    stamp = _header(headers, TIMESTAMP_HEADER)
    given = _header(headers, SIGNATURE_HEADER)
    if not delivery_id or stamp is None or given is None:
        missing = [h for h, v in ((DELIVERY_ID_HEADER, delivery_id), (TIMESTAMP_HEADER, stamp),
                                  (SIGNATURE_HEADER, given)) if not v]
        return delivery_id, Refusal(401, f"unsigned delivery (no {', '.join(missing)})")
    try:
        sent = int(stamp)
    except ValueError:
        return delivery_id, Refusal(401, f"{TIMESTAMP_HEADER} {stamp[:40]!r} is not Unix seconds")
    if abs(now - sent) > tolerance_s:
        when = f"sent {now - sent:.0f} s ago" if now > sent else f"dated {sent - now:.0f} s ahead"
        return delivery_id, Refusal(403, f"timestamp {sent} ({when}) is outside the {tolerance_s:g} s window "
                                         "(a replay, or clocks apart)")
    expected = sign(secret, delivery_id, stamp, body)
    candidates = [s for s in given.split() if s.startswith("v1,")]
    if not any(hmac.compare_digest(expected.encode(), s.encode()) for s in candidates):
        return delivery_id, Refusal(401, "signature does not match (wrong secret, or the body was changed)")
    return delivery_id, None
