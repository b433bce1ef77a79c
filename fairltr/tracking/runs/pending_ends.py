"""Runs a fairltr command could not end (the tracking server was gone), remembered until the
next command against the same store ends them.

The record is ``pending_run_ends.json`` in the fairltr state folder (``$FAIRLTR_STATE_DIR``, else
``$XDG_STATE_HOME/fairltr``, else ``~/.local/state/fairltr``): run id, the status it should get
and a digest of the tracking URI (never the URI: it may hold a password; ``shown`` is the
redacted URI). :func:`record_pending_end` is called by :mod:`fairltr.tracking.runs.life_cycle`,
:func:`settle_pending_ends` by :func:`fairltr.tracking.runs.config.configure`.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

from fairltr.redaction import redact_uri

__all__ = ["pending_ends_file", "record_pending_end", "settle_pending_ends", "read_pending"]

def pending_ends_file() -> Path:
    """``pending_run_ends.json`` in ``$FAIRLTR_STATE_DIR`` / ``$XDG_STATE_HOME/fairltr`` /
    ``~/.local/state/fairltr``."""
    from fairltr.files import state_dir

    return state_dir() / "pending_run_ends.json"


def _store_key(uri: str) -> str:
    return hashlib.sha256(uri.encode("utf-8")).hexdigest()


def read_pending(path: Path) -> list[dict[str, Any]]:
    """The well-formed records in ``path`` ([] when it is missing or unreadable)."""
    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [e for e in entries if isinstance(e, dict) and {"store", "run_id", "status"} <= set(e)] \
        if isinstance(entries, list) else []


def record_pending_end(uri: str, run_id: str, status: str) -> Path:
    """Remember that ``run_id`` of the store ``uri`` should be ended with ``status``."""
    from fairltr.files import atomic_write_text, file_lock

    path = pending_ends_file()
    with file_lock(path.with_name(path.name + ".lock"), timeout=30.0):
        entries = [e for e in read_pending(path) if e["run_id"] != run_id]
        entries.append({"store": _store_key(uri), "shown": redact_uri(uri), "run_id": run_id, "status": status,
                        "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
        atomic_write_text(path, json.dumps(entries, indent=1))
    return path


_SETTLED: set[str] = set()


def settle_pending_ends(uri: str) -> list[str]:
    """End the recorded runs of store ``uri`` that are still RUNNING (once per process and
    store; best effort: any failure leaves the records for the next command). Returns the ids
    of the runs ended."""
    path = pending_ends_file()
    if uri in _SETTLED or not path.is_file():
        return []
    _SETTLED.add(uri)
    key = _store_key(uri)
    try:
        if not any(e["store"] == key for e in read_pending(path)):
            return []
        from mlflow import MlflowClient
        from mlflow.exceptions import MlflowException

        from fairltr.files import atomic_write_text, file_lock

        client = MlflowClient(uri)
        ended: list[str] = []
        with file_lock(path.with_name(path.name + ".lock"), timeout=30.0):
            keep = []
            reachable = True
            for e in read_pending(path):
                if e["store"] != key or not reachable:
                    keep.append(e)
                    continue
                try:
                    if client.get_run(e["run_id"]).info.status == "RUNNING":
                        client.set_terminated(e["run_id"], e["status"])
                        ended.append(e["run_id"])
                except MlflowException as exc:
                    if getattr(exc, "error_code", "") != "RESOURCE_DOES_NOT_EXIST":
                        keep.append(e)  # store unreachable: keep this one and the rest for later
                        reachable = False
            atomic_write_text(path, json.dumps(keep, indent=1))
        return ended
    except Exception:
        return []
