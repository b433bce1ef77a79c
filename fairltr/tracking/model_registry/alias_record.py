"""Writing an alias check's outcome into the registry, and moving an alias back.

A FAIL (:func:`record_alias_check`) is written three times:

* tag ``fairltr.alias_check`` on the version: ``FAIL <UTC time> @<alias>: <problem>; <problem>``;
* the version's description gets an ``Alias check: FAIL ...`` paragraph at its end (a later
  check replaces it; a later promotion drops it, the model's log keeps it);
* a tag on the registered model, ``fairltr.alias_check.<utc>.v<version>.<alias>``, holding the
  same line: one per event, so it is a history that later checks do not overwrite.

A PASS writes nothing, except on a version whose ``fairltr.alias_check`` tag says FAIL: that tag
becomes ``PASS <time> @<alias> (earlier: FAIL ...)``; the model's log keeps the FAIL.

An alias deleted is recorded on the registered model only (the event names no version).

:func:`revert_alias` moves ``@alias`` back to the latest version accepted for it by a promotion
whose check still passes, under the model's promotion lock and only while the alias still points
at the failing version; the move is logged on the registered model like a FAIL.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from fairltr.tracking.model_registry.alias_check import AliasCheck, accepted_versions, check_version
from fairltr.tracking.model_registry.decision import TAG_LIMIT, cut_text, with_alias_check
from fairltr.tracking.model_registry.lock import LockTimeout, acquire_lock

__all__ = ["ALIAS_CHECK_TAG", "ALIAS_LOG_PREFIX", "record_alias_check", "record_alias_deleted", "revert_alias",
           "utc_now"]

ALIAS_CHECK_TAG = "fairltr.alias_check"
ALIAS_LOG_PREFIX = "fairltr.alias_check."


def utc_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _log_key(when: str, what: str) -> str:
    stamp = when.replace("+00:00", "Z").replace("-", "").replace(":", "")
    return f"{ALIAS_LOG_PREFIX}{stamp}.{what}"[:250]


def _safe(alias: str) -> str:
    return "".join(c if c.isalnum() or c in "_-" else "_" for c in alias)


def record_alias_check(client: Any, check: AliasCheck, source: str = "fairltr webhook-receiver") -> str | None:
    """Write ``check`` (a check of a version, module docstring); returns the line written, None
    when nothing was (a PASS on a version without an earlier FAIL)."""
    if check.version is None:
        return None
    when = utc_now()
    model, version = check.model, check.version
    current = (client.get_model_version(model, version).tags or {}).get(ALIAS_CHECK_TAG, "")
    if check.ok:
        if not current.startswith("FAIL"):
            return None
        line = cut_text(f"PASS {when} @{check.alias} ({source}; earlier: {current})", TAG_LIMIT)
        client.set_model_version_tag(model, version, ALIAS_CHECK_TAG, line)
        return line
    line = cut_text(f"FAIL {when} @{check.alias}: {'; '.join(check.problems)} ({source})", TAG_LIMIT)
    client.set_model_version_tag(model, version, ALIAS_CHECK_TAG, line)
    mv = client.get_model_version(model, version)
    client.update_model_version(model, version, description=with_alias_check(mv.description, line))
    client.set_registered_model_tag(model, _log_key(when, f"v{version}.{_safe(check.alias)}"),
                                    cut_text(f"v{version} {line}", TAG_LIMIT))
    return line


def record_alias_deleted(client: Any, model: str, alias: str, source: str = "fairltr webhook-receiver") -> str:
    """Log on ``model`` that ``@alias`` was deleted (no fairltr command deletes an alias)."""
    when = utc_now()
    line = f"FAIL {when} @{alias}: the alias was deleted outside 'fairltr promote' ({source})"
    client.set_registered_model_tag(model, _log_key(when, f"deleted.{_safe(alias)}"), line)
    return line


def revert_alias(client: Any, failed: AliasCheck, *, allow_unverified: bool = False, lock_timeout: float = 60.0,
                 lock_lease: float = 60.0) -> str:
    """Move ``@alias`` from the failing version back to the latest accepted one (module
    docstring). Returns one line saying what was done (or why nothing was)."""
    model, alias, bad = failed.model, failed.alias, failed.version
    target = None
    for _when, v in accepted_versions(client, model, alias):
        if v != bad and check_version(client, model, v, alias, allow_unverified=allow_unverified).ok:
            target = v
            break
    if target is None:
        return f"{model}@{alias}: no version accepted for @{alias} passes its check; @{alias} left on v{bad}"
    try:
        lock = acquire_lock(client, model, lease_s=lock_lease, timeout_s=lock_timeout)
    except LockTimeout as exc:
        return f"{model}@{alias}: not reverted ({exc})"
    with lock:
        now = str(client.get_model_version_by_alias(model, alias).version)
        if now != bad:
            return f"{model}@{alias}: not reverted, it now points to v{now}"
        if not lock.valid():
            return f"{model}@{alias}: not reverted, the lock's lease ran out"
        client.set_registered_model_alias(model, alias, target)
        when = utc_now()
        line = f"REVERTED {when} @{alias} from v{bad} to v{target}, the latest version accepted for it"
        client.set_registered_model_tag(model, _log_key(when, f"v{bad}.{_safe(alias)}.reverted"), line)
    return f"{model}@{alias}: {line}"
