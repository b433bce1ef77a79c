"""A per-registered-model lock that the tracking store itself enforces, with a lease.

Alias moves of fairltr promotions are serialized per registered model ``NAME`` by a lock
entity: the registered model ``fairltr.lock.NAME`` (``fairltr.lock.sha256-<hex>`` for long
names). Acquiring = ``create_registered_model(lock name, tags={holder, lease})``; releasing =
``delete_registered_model(lock name)``.

Why this is atomic everywhere: a registered model's name is the primary key of MLflow's
``registered_models`` table, and ``create_registered_model`` inserts the row and its tags in one
transaction; a second insert of the same name violates the key and MLflow answers
``RESOURCE_ALREADY_EXISTS``. That holds on SQLite (writes serialized by the database lock) and
PostgreSQL (unique index), directly and through ``mlflow server`` (the REST handler calls the
same store method). There is no read-then-write window. An answer lost in transit (the insert
landed, the client retried) is recognised by reading the lock back: its holder tag is ours.

Lease: the lock records its holder (a random id, plus host and pid for people) and a lease in
seconds; it expires at its creation time (``creation_timestamp``, the store's clock) plus the
lease. A holder that crashed is therefore taken over after the lease: the taker first creates
the marker ``<lock name>.takeover.<expired holder id>`` — again an atomic insert, so exactly one
taker deletes the expired lock; the others wait. Markers are unique per holder id and are
deleted once older than ten leases. A holder checks its lease (by its own monotonic clock,
with a margin) before every write it makes under the lock, and never deletes a lock whose
lease it may have outlived, so it cannot delete a successor's lock. Clocks of the store and
of the clients are assumed to agree within that margin.

While the lock exists, ``fairltr.lock.*`` registered models appear in the registry listing.
One that outlived its lease is harmless (the next promotion takes it over) and may be deleted
by hand.
"""

from __future__ import annotations

import hashlib
import os
import random
import socket
import time
import uuid
from dataclasses import dataclass
from typing import Any

from fairltr.errors import FairltrError

__all__ = ["AliasLock", "LockTimeout", "acquire_lock", "lock_name", "LOCK_PREFIX", "HOLDER_TAG", "LEASE_TAG",
           "OWNER_TAG"]

LOCK_PREFIX = "fairltr.lock."
HOLDER_TAG = "fairltr.lock.holder"
OWNER_TAG = "fairltr.lock.owner"
LEASE_TAG = "fairltr.lock.lease_s"
MODEL_TAG = "fairltr.lock.model"
_MARGIN_S = 5.0


class LockTimeout(FairltrError):
    """The lock stayed held by others for the whole wait."""


def lock_name(model: str) -> str:
    """The lock entity's name for registered model ``model``."""
    if len(model) <= 150:
        return LOCK_PREFIX + model
    return LOCK_PREFIX + "sha256-" + hashlib.sha256(model.encode("utf-8")).hexdigest()[:40]


def _error_code(exc: BaseException) -> str:
    return str(getattr(exc, "error_code", "") or "")


@dataclass
class AliasLock:
    """A held lock (see the module docstring)."""

    client: Any
    model: str
    name: str
    holder: str
    lease_s: float
    acquired_at: float  # time.monotonic() before the insert: the lease is counted from there

    def remaining(self) -> float:
        """Seconds of lease left by this process's clock, less the safety margin."""
        return self.lease_s - _margin(self.lease_s) - (time.monotonic() - self.acquired_at)

    def valid(self) -> bool:
        return self.remaining() > 0

    def release(self) -> None:
        """Delete the lock when it is still ours and within its lease (else leave it to expire)."""
        from mlflow.exceptions import MlflowException

        if not self.valid():
            return
        try:
            tags = self.client.get_registered_model(self.name).tags or {}
            if tags.get(HOLDER_TAG) == self.holder and self.valid():
                self.client.delete_registered_model(self.name)
        except MlflowException:
            pass  # gone already, or the store is unreachable: the lease ends it

    def __enter__(self) -> "AliasLock":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _margin(lease_s: float) -> float:
    return min(_MARGIN_S, lease_s / 4)


def _expired(rm: Any, now_ms: float) -> bool:
    try:
        lease = float((rm.tags or {}).get(LEASE_TAG, "60"))
    except ValueError:
        lease = 60.0
    return rm.creation_timestamp is not None and now_ms > rm.creation_timestamp + lease * 1000.0


def _holder_text(rm: Any) -> str:
    tags = rm.tags or {}
    age = (time.time() * 1000 - (rm.creation_timestamp or 0)) / 1000
    return f"{tags.get(OWNER_TAG, 'unknown')} (held {age:.0f} s, lease {tags.get(LEASE_TAG, '?')} s)"


def _create(client: Any, name: str, tags: dict[str, str], description: str) -> None:
    client.create_registered_model(name, tags=tags, description=description)


def _take_over(client: Any, name: str, rm: Any, lease_s: float) -> None:
    """Delete the expired lock ``rm`` if this process wins the takeover marker for its holder."""
    from mlflow.exceptions import MlflowException

    old = (rm.tags or {}).get(HOLDER_TAG, "unknown")
    marker = f"{name}.takeover.{old}"[:256]
    try:
        _create(client, marker, {MODEL_TAG: name, HOLDER_TAG: old},
                "fairltr: marker of a taken-over promotion lock (safe to delete)")
    except MlflowException:
        return  # another process is taking it over (or the store hiccuped): wait and look again
    try:
        current = client.get_registered_model(name)
        if (current.tags or {}).get(HOLDER_TAG) == old:
            client.delete_registered_model(name)
    except MlflowException:
        pass
    _sweep_markers(client, name, lease_s)


def _sweep_markers(client: Any, name: str, lease_s: float) -> None:
    """Delete takeover markers of this lock older than ten leases (best effort)."""
    from mlflow.exceptions import MlflowException

    if "'" in name:
        return
    try:
        now = time.time() * 1000
        for rm in client.search_registered_models(filter_string=f"name LIKE '{name}.takeover.%'"):
            if rm.name.startswith(f"{name}.takeover.") and now - (rm.creation_timestamp or now) > 10 * lease_s * 1000:
                client.delete_registered_model(rm.name)
    except MlflowException:
        pass


def acquire_lock(client: Any, model: str, *, lease_s: float = 60.0, timeout_s: float = 120.0) -> AliasLock:
    """Acquire the lock of registered model ``model`` within ``timeout_s`` seconds (polling with
    jittered back-off from 50 ms to 1 s), taking over a lock whose lease expired. Raises
    :class:`LockTimeout` naming the holder otherwise."""
    from mlflow.exceptions import MlflowException

    name = lock_name(model)
    holder = uuid.uuid4().hex
    owner = f"{socket.gethostname()} pid {os.getpid()}"
    tags = {HOLDER_TAG: holder, OWNER_TAG: owner, LEASE_TAG: f"{lease_s:g}", MODEL_TAG: model}
    description = f"fairltr promotion lock of registered model {model!r}; deleted on release"
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    last = "unknown"
    unconfirmed: float | None = None  # start of the first insert whose outcome is unknown
    while True:
        started = time.monotonic()
        try:
            _create(client, name, tags, description)
            return AliasLock(client, model, name, holder, lease_s, started)
        except MlflowException as exc:
            code = _error_code(exc)
        if code != "RESOURCE_ALREADY_EXISTS" and unconfirmed is None:
            unconfirmed = started
        try:
            rm = client.get_registered_model(name)
        except MlflowException:
            rm = None  # released meanwhile (or a transient store error)
        retry_now = False
        if rm is not None:
            if (rm.tags or {}).get(HOLDER_TAG) == holder:  # our insert landed, its answer was lost
                return AliasLock(client, model, name, holder, lease_s, min(started, unconfirmed or started))
            last = _holder_text(rm)
            if _expired(rm, time.time() * 1000):
                _take_over(client, name, rm, lease_s)
                retry_now = True
        elif code == "RESOURCE_ALREADY_EXISTS":
            retry_now = True  # released between our insert and our read
        if time.monotonic() >= deadline:
            raise LockTimeout(f"the promotion lock of {model!r} stayed held for {timeout_s:g} s by {last}")
        if not retry_now:
            time.sleep(min(delay * (0.5 + random.random()), max(0.0, deadline - time.monotonic())))
            delay = min(delay * 2, 1.0)
