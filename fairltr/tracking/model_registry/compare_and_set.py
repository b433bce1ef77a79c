"""The compare-and-set loop of a promotion: move ``@alias`` to the candidate only if it passes its
gates against the champion the alias points to at the moment of the move.

One attempt (:func:`_attempt`): check the gates against the champion read before; if the alias
moved meanwhile, try again against the new one; a failed gate rejects, a candidate that already
holds the alias is promoted as it is. Otherwise the lock of the registered model is acquired
(:mod:`fairltr.tracking.model_registry.lock`) and, while it is held (:func:`_under_lock`), the champion
is re-read (if it moved, the gates are re-checked against it: measured outside the lock first when
it is new), the lease checked, the alias moved and the decision recorded. Concurrent promotions
therefore move the alias one at a time, each checked against the champion it replaces. After
``max_attempts`` attempts without a decision the verdict is ``contention`` (gates not decided).

The record's ``champion_before`` is the champion the decision was taken against: for a promotion
the version ``@alias`` pointed to when it was re-read under the lock, just before the move (so
the records of concurrent promotions chain: each names the version it replaced); for a
rejection the champion it was last checked against; ``champion_first_read`` is the one read
before the candidate was measured (the notes say how it moved meanwhile).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

from fairltr.gates import GateResult
from fairltr.tracking.model_registry.checks import GateCheck
from fairltr.tracking.model_registry.decision import PromotionDecision, write_decision
from fairltr.tracking.model_registry.lock import AliasLock, LockTimeout, acquire_lock
from fairltr.tracking.model_registry.sources import OpenedVersion, VersionSource, current_champion

__all__ = ["Race", "compare_and_set"]


def _version_words(v: str | None, unset: str = "unset") -> str:
    return "v" + v if v else unset


@dataclass
class Race:
    """One promotion's state while it races for ``@alias``: the champion it last read
    (``before``: under the lock, the one the move replaces; ``first_read`` is the first one read),
    the latest gate results against it, and the notes. :meth:`decide` records a verdict
    (:func:`write_decision`) with ``champion_before`` = ``before``."""

    client: Any
    versions: VersionSource
    checks: GateCheck
    cand: OpenedVersion
    alias: str
    before: str | None
    evaluation_run_id: str | None = None
    confidence: float | None = None
    interval: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)
    decision_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    results: list[GateResult] = field(default_factory=list)
    champion_metrics: dict[str, float] | None = None

    def __post_init__(self) -> None:
        self.first_read = self.before
        self.model, self.version = self.versions.model, self.versions.candidate

    def current(self) -> str | None:
        """The version ``@alias`` points to now (None when unset)."""
        return current_champion(self.client, self.model, self.alias)

    def recheck(self) -> bool:
        """Check the gates against ``before``; True when all pass."""
        self.results, self.champion_metrics = self.checks.check(self.cand, self.before)
        return all(r.passed for r in self.results)

    def champion_notes(self) -> None:
        """Add the notes of the champion checked against (its loading, verification) once each."""
        if self.before is not None and self.before != self.version:
            notes_champ = self.versions.sides[self.before].notes if self.versions.has_opened(self.before) else []
            self.notes.extend(n for n in notes_champ if n not in self.notes)

    def moved(self, now: str | None, when: str) -> None:
        """The alias moved from ``before`` to ``now``: say so, and compare with ``now`` from here."""
        self.notes.append(f"@{self.alias} moved from {_version_words(self.before)} to {_version_words(now)} {when}")
        self.before = now

    def decide(self, verdict: str, reason: str | None = None) -> PromotionDecision:
        """Record ``verdict`` (with ``reason``) in the registry and return the decision."""
        champ = self.before if self.before != self.version else None
        decision = PromotionDecision(
            model=self.model, version=self.version, alias=self.alias, verdict=verdict, results=self.results,
            champion_before=self.before, champion_after=self.current(), champion_first_read=self.first_read,
            time=datetime.now(timezone.utc).isoformat(timespec="microseconds"), decision_id=self.decision_id,
            candidate_metrics=self.cand.metrics or {}, champion_metrics=self.champion_metrics,
            evaluation_run_id=self.evaluation_run_id, notes=self.notes, reason=reason, kind=self.cand.kind,
            digest=self.cand.digest, champion_status=self.checks.champion_status(champ), confidence=self.confidence,
            interval=self.interval,
        )
        write_decision(self.client, decision)
        return decision


def compare_and_set(race: Race, *, max_attempts: int, lock_timeout: float, lock_lease: float) -> PromotionDecision:
    """Race for ``@alias`` (module docstring) and return the recorded decision: ``rejected`` at
    once when the candidate could not be opened or measured."""
    if race.cand.problem is not None:
        return race.decide("rejected", race.cand.problem)
    for _attempt_no in range(max_attempts):
        decision = _attempt(race, lock_timeout=lock_timeout, lock_lease=lock_lease)
        if decision is not None:
            return decision
    return race.decide("contention", f"@{race.alias} kept moving: gave up after {max_attempts} attempts "
                                     "(gates not decided)")


def _attempt(race: Race, *, lock_timeout: float, lock_lease: float) -> PromotionDecision | None:
    """One attempt outside the lock; the decision, or None to try again."""
    passed = race.recheck()
    race.champion_notes()
    now = race.current()
    if now != race.before:
        race.moved(now, "during the evaluation; gates re-checked against it")
        return None
    if race.before == race.version:
        return _already_holding(race, passed)
    if not passed:
        return race.decide("rejected")
    try:
        lock = acquire_lock(race.client, race.model, lease_s=lock_lease, timeout_s=lock_timeout)
    except LockTimeout as exc:
        return race.decide("contention", str(exc))
    with lock:
        return _under_lock(race, lock)


def _already_holding(race: Race, passed: bool) -> PromotionDecision:
    """The candidate holds ``@alias`` already. Backed by its own accepted promotion (the latest
    for the alias), its gates against itself (``passed``) decide. Otherwise the alias was moved to it outside
    ``fairltr promote`` (``MlflowClient``, the UI): the gates are checked against the champion
    fairltr last accepted for the alias (none: the no-champion policy), never against the
    candidate itself, and the record names that champion as ``champion_before``."""
    from fairltr.tracking.model_registry.alias_check import accepted_versions

    accepted = [v for _, v in accepted_versions(race.client, race.model, race.alias)]
    last = accepted[0] if accepted else None
    if last == race.version:
        if not passed:
            return race.decide("rejected")
        race.notes.append(f"v{race.version} already holds @{race.alias}")
        return race.decide("promoted")
    race.notes.append(f"v{race.version} holds @{race.alias} without an accepted promotion for it (the alias was "
                      f"moved outside 'fairltr promote'); gates checked against "
                      f"{_version_words(last, 'no champion')}, the last champion fairltr accepted")
    race.before = last
    if not race.recheck():
        race.champion_notes()
        race.notes.append(f"@{race.alias} still points to v{race.version}: move it back "
                          f"(fairltr verify-alias names the problem)")
        return race.decide("rejected")
    race.champion_notes()
    return race.decide("promoted")


def _under_lock(race: Race, lock: AliasLock) -> PromotionDecision | None:
    """The champion re-read and, if it moved, re-checked; the alias moved and the decision
    recorded, all while ``lock`` is held. The decision, or None to try again."""
    from mlflow.exceptions import MlflowException

    now = race.current()
    if now != race.before:
        race.moved(now, "before the lock was taken; gates re-checked")
        if now is not None and not race.versions.has_opened(now):
            return None  # measure the new champion outside the lock, then try again
        if not race.recheck():
            return race.decide("rejected")
        if race.before == race.version:
            return race.decide("promoted")
    if not lock.valid():
        race.notes.append("the lock's lease ran out before the alias move; tried again")
        return None
    try:
        race.client.set_registered_model_alias(race.model, race.alias, race.version)
    except MlflowException as exc:
        now = race.current()
        if now != race.version:
            race.notes.append(f"setting @{race.alias} failed ({type(exc).__name__}); it now points to "
                              f"{_version_words(now, 'nothing')}; gates re-checked")
            race.before = now
            time.sleep(0.05)
            return None
    return race.decide("promoted")
