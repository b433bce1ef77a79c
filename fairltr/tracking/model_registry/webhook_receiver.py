"""A receiver of MLflow 3 model-registry webhooks that checks every alias move.

MLflow's tracking server (SQL backends; ``mlflow/server/handlers.py``,
``_set_registered_model_alias`` / ``_delete_registered_model_alias``) delivers the events
``model_version_alias.created`` (payload ``data`` = ``{"name", "alias", "version"}``) and
``model_version_alias.deleted`` (``{"name", "alias"}``) to the registered webhooks.
:class:`AliasEventReceiver` serves ``POST /webhook`` (and ``GET /health``):

1. the body (at most 1 MiB) and the signature are checked first
   (:mod:`~fairltr.tracking.model_registry.webhook_signature`): unsigned or badly signed -> 401, a
   timestamp outside the window -> 403, a delivery id already accepted -> 409; each refusal is
   one log line, and nothing is read from or written to the registry;
2. an accepted delivery is answered 202 at once and queued; one worker thread takes the events
   in order: for ``created``, the version is checked for that alias
   (:func:`~fairltr.tracking.model_registry.alias_check.check_version`, waiting for a promotion in
   flight: :func:`~fairltr.tracking.model_registry.alias_check.settled_check`) and the outcome
   recorded (:func:`~fairltr.tracking.model_registry.alias_record.record_alias_check`); with
   ``revert`` a failing alias is moved back to the latest accepted version; ``deleted`` is logged
   on the registered model; other events are ignored;
3. one log line per event: ``<delivery id> <event> <model>@<alias> -> v<version>: OK|FAIL ...``.

:func:`register_webhook` creates (or updates, by name) the MLflow webhook that points here.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

from fairltr.tracking.model_registry.webhook_signature import DEFAULT_TOLERANCE_S, check_delivery

__all__ = ["AliasEventReceiver", "ReceiverSettings", "register_webhook", "ALIAS_EVENTS", "WEBHOOK_PATH",
           "DEFAULT_WEBHOOK_NAME", "LOGGER_NAME"]

ALIAS_EVENTS = ("model_version_alias.created", "model_version_alias.deleted")
WEBHOOK_PATH = "/webhook"
DEFAULT_WEBHOOK_NAME = "fairltr-alias-check"
LOGGER_NAME = "fairltr.webhook"
MAX_BODY = 1 << 20
log = logging.getLogger(LOGGER_NAME)


@dataclass
class ReceiverSettings:
    """``secret``: the webhook's HMAC secret; ``tolerance_s``: the timestamp window; ``revert``:
    move a failing alias back; ``settle_s``: how long to wait for a promotion in flight."""

    secret: str
    tolerance_s: float = DEFAULT_TOLERANCE_S
    revert: bool = False
    allow_unverified: bool = False
    settle_s: float = 90.0
    clock: Callable[[], float] = field(default=time.time)


class AliasEventReceiver:
    """The receiver (module docstring); ``client`` is an ``MlflowClient`` of the tracking server."""

    def __init__(self, client: Any, settings: ReceiverSettings) -> None:
        self.client, self.settings = client, settings
        self.events: queue.Queue = queue.Queue()
        self._seen: dict[str, float] = {}
        self._seen_lock = threading.Lock()
        self.processed = 0  # events the worker finished (tests wait on it)
        self._worker = threading.Thread(target=self._work, name="fairltr-alias-check", daemon=True)
        self._worker.start()
        self.server: ThreadingHTTPServer | None = None

    # ----------------------------------------------------------------- the HTTP side
    def admit(self, headers: Any, body: bytes) -> tuple[int, str]:
        """(HTTP status, message) for one POSTed delivery; queues it when accepted."""
        now = self.settings.clock()
        delivery_id, refusal = check_delivery(self.settings.secret, headers, body, now, self.settings.tolerance_s)
        if refusal is not None:
            log.warning("refused %s: HTTP %d, %s", delivery_id[:36] or "(no delivery id)", refusal.status,
                        refusal.reason)
            return refusal.status, refusal.reason
        with self._seen_lock:
            for key in [k for k, t in self._seen.items() if now - t > 2 * self.settings.tolerance_s]:
                del self._seen[key]
            if delivery_id in self._seen:
                log.warning("refused %s: HTTP 409, delivery id already accepted (a replay)", delivery_id[:36])
                return 409, "delivery id already accepted"
            self._seen[delivery_id] = now
        try:
            event = json.loads(body)
            name = f"{event['entity']}.{event['action']}"
            data = dict(event.get("data") or {})
        except (ValueError, KeyError, TypeError, AttributeError):
            log.warning("refused %s: HTTP 400, the body is not an MLflow webhook event", delivery_id[:36])
            return 400, "not an MLflow webhook event"
        self.events.put((delivery_id, name, data))
        return 202, "queued"

    def serve(self, host: str, port: int) -> ThreadingHTTPServer:
        """Bind ``host:port`` (0: any free port) and return the server (call ``serve_forever``)."""
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            server_version = "fairltr-webhook-receiver"

            def log_message(self, *args: Any) -> None:  # one line per event is logged elsewhere
                pass

            def _answer(self, status: int, message: str) -> None:
                body = json.dumps({"status": status, "message": message}).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:
                self._answer(200, "ok") if self.path == "/health" else self._answer(404, "not found")

            def do_POST(self) -> None:
                if self.path != WEBHOOK_PATH:
                    return self._answer(404, f"POST to {WEBHOOK_PATH}")
                try:
                    length = int(self.headers.get("Content-Length", ""))
                except ValueError:
                    return self._answer(411, "Content-Length required")
                if length > MAX_BODY or length < 0:
                    return self._answer(413, f"body over {MAX_BODY} bytes")
                self._answer(*receiver.admit(self.headers, self.rfile.read(length)))

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.server.daemon_threads = True
        return self.server

    def close(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
        self.events.put(None)
        self._worker.join(timeout=self.settings.settle_s + 30)

    # ----------------------------------------------------------------- the worker
    def _work(self) -> None:
        while True:
            item = self.events.get()
            if item is None:
                return
            delivery_id, name, data = item
            try:
                line = self.handle(name, data)
            except Exception as exc:  # keep serving: the event is logged as an error
                line = f"ERROR {type(exc).__name__}: {' '.join(str(exc).split())[:300]}"
            log.info("%s %s %s", delivery_id[:36], name, line)
            self.processed += 1

    def handle(self, name: str, data: dict[str, Any]) -> str:
        """Check and record one event; returns the text of its log line."""
        from fairltr.tracking.model_registry.alias_check import check_version, settled_check
        from fairltr.tracking.model_registry.alias_record import record_alias_check, record_alias_deleted, revert_alias
        from fairltr.tracking.model_registry.lock import LOCK_PREFIX

        model, alias, version = str(data.get("name", "")), str(data.get("alias", "")), data.get("version")
        if name not in ALIAS_EVENTS or not model or not alias or model.startswith(LOCK_PREFIX):
            return f"ignored ({model or 'no model'})"
        if name.endswith(".deleted"):
            return f"{model}@{alias}: " + record_alias_deleted(self.client, model, alias)
        s = self.settings
        check = settled_check(lambda: check_version(self.client, model, str(version), alias,
                                                    allow_unverified=s.allow_unverified),
                              self.client, model, wait_s=s.settle_s)
        record_alias_check(self.client, check)
        line = "; ".join(x.split(": ", 1)[-1] for x in check.lines())
        text = f"{check.target}: {'OK' if check.ok else 'FAIL'}: {line}"
        if not check.ok and s.revert:
            text += "; " + revert_alias(self.client, check, allow_unverified=s.allow_unverified)
        return text


def register_webhook(client: Any, url: str, secret: str, name: str = DEFAULT_WEBHOOK_NAME) -> tuple[str, bool]:
    """Create the MLflow webhook ``name`` for :data:`ALIAS_EVENTS` at ``url`` with ``secret``, or
    update the one of that name (URL, secret, events, ACTIVE). Returns (webhook id, created)."""
    token = None
    while True:
        page = client.list_webhooks(max_results=100, page_token=token)
        for hook in page:
            if hook.name == name:
                client.update_webhook(hook.webhook_id, url=url, events=list(ALIAS_EVENTS), secret=secret,
                                      status="ACTIVE")
                return hook.webhook_id, False
        token = page.token
        if not token:
            break
    hook = client.create_webhook(name=name, url=url, events=list(ALIAS_EVENTS), secret=secret,
                                 description="fairltr: checks every alias move against the promotion records "
                                             "(fairltr webhook-receiver)")
    return hook.webhook_id, True
