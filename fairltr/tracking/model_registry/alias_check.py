"""Alias integrity: does ``NAME@alias`` point at a version that ``fairltr promote`` accepted for
that alias, with the files it accepted?

A version passes (:func:`check_version`) when all of these hold:

1. it has a decision record (tag ``fairltr.promotion.decision``, written by
   :func:`~fairltr.tracking.model_registry.decision.write_decision`) whose verdict is ``promoted``;
2. the record names this registered model, this version and this alias (``requested_alias``):
   a record copied from another version or written for another alias does not count;
3. the record is in the registered model's decision log (the tag
   ``fairltr.decision.<utc>.v<version>.<decision id[:8]>`` written with it);
4. the version's files verify now: they are downloaded and their digest is RECOMPUTED
   (:func:`fairltr.tracking.models.verify.fetch_verified`, which also compares it with the
   digests the tracking store holds: the version's ``fairltr.digest`` tag and the logged model's);
5. the digest recorded at promotion equals the recomputed digest and, where the version has
   one, its ``fairltr.digest`` tag now (files or tag changed after promotion otherwise).

Every failed condition is one problem line; :class:`AliasCheck` holds them. The check is as
strong as the tags it reads: whoever may write registry tags can also write a decision record
(docs/governance.md says what is and is not protected).

A promotion moves the alias first and writes its record right after, both under the model's
promotion lock (:mod:`~fairltr.tracking.model_registry.lock`): :func:`settled_check` waits for a held
lock to be released before it reports a problem, so an in-flight promotion is not a FAIL.
"""

from __future__ import annotations

import json
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from fairltr.tracking.model_registry.decision import TAG_PREFIX

__all__ = ["AliasCheck", "check_version", "check_alias", "check_all_aliases", "settled_check", "lock_held",
           "accepted_versions", "DECISION_LOG_PREFIX"]

DECISION_LOG_PREFIX = "fairltr.decision."
_VERDICT_WORDS = {"promoted": "PROMOTED", "rejected": "REJECTED", "contention": "LOST TO CONTENTION"}


@dataclass
class AliasCheck:
    """The check of ``model@alias`` -> ``version`` (None: the alias is not set): ``problems``
    (empty when it passes), the decision record read, and the digest of the files now."""

    model: str
    alias: str
    version: str | None
    problems: list[str] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)
    digest: str | None = None

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def target(self) -> str:
        return f"{self.model}@{self.alias} -> v{self.version}" if self.version else f"{self.model}@{self.alias}"

    def lines(self) -> list[str]:
        """``OK <target>: ...`` (one line) when it passes, else one ``FAIL <target>: <problem>``
        line per problem."""
        if self.ok:
            r = self.record
            digest = f"digest {self.digest[:19]}... verified" if self.digest else "unverified (no digest)"
            return [f"OK {self.target}: PROMOTED {r.get('time', '?')} (decision {str(r.get('decision_id', '?'))[:8]}), "
                    f"{digest}"]
        return [f"FAIL {self.target}: {p}" for p in self.problems]


def _record(tags: dict[str, str], version: str) -> tuple[dict[str, Any], str | None]:
    text = tags.get(f"{TAG_PREFIX}decision")
    if not text:
        return {}, (f"v{version} has no promotion decision record (tag {TAG_PREFIX}decision): the alias was set "
                    "outside 'fairltr promote'")
    try:
        record = json.loads(text)
    except ValueError:
        return {}, f"v{version}'s decision record (tag {TAG_PREFIX}decision) is not valid JSON"
    if not isinstance(record, dict):
        return {}, f"v{version}'s decision record (tag {TAG_PREFIX}decision) is not a JSON object"
    return record, None


def _record_problems(model: str, version: str, alias: str, record: dict[str, Any],
                     model_tags: dict[str, str]) -> list[str]:
    """Conditions 1-3 of the module docstring on a parsed record."""
    out = []
    verdict = str(record.get("verdict"))
    if verdict != "promoted":
        why = f": {' '.join(str(record['reason']).split())[:300]}" if record.get("reason") else ""
        out.append(f"v{version}'s decision record is {_VERDICT_WORDS.get(verdict, verdict.upper())} for "
                   f"@{record.get('requested_alias', '?')} ({record.get('time', 'no time')}){why}")
    if record.get("requested_alias") != alias:
        out.append(f"v{version}'s decision record is for @{record.get('requested_alias')}, not @{alias}")
    if str(record.get("version")) != version:
        out.append(f"the decision record on v{version} names version {record.get('version')!r} "
                   "(copied from another version?)")
    if record.get("model") is not None and record.get("model") != model:
        out.append(f"the decision record on v{version} names registered model {record.get('model')!r}")
    decision_id = str(record.get("decision_id") or "")
    suffix = f".v{version}.{decision_id[:8]}"
    if not decision_id or not any(k.startswith(DECISION_LOG_PREFIX) and k.endswith(suffix) for k in model_tags):
        out.append(f"v{version}'s decision {decision_id[:8] or '(no id)'} is not in {model}'s decision log "
                   f"(no tag {DECISION_LOG_PREFIX}*{suffix})")
    return out


def _digest_problems(client: Any, model: str, version: str, record: dict[str, Any], tags: dict[str, str],
                     allow_unverified: bool) -> tuple[list[str], str | None]:
    """Conditions 4-5: the files downloaded and verified, their digest against the record's."""
    from fairltr.tracking.models.digests import DIGEST_TAG
    from fairltr.tracking.models.verify import ModelRejected, fetch_verified

    out: list[str] = []
    digest = None
    with tempfile.TemporaryDirectory(prefix="fairltr-alias-check-") as tmp:
        try:
            digest = fetch_verified(f"models:/{model}/{version}", Path(tmp), allow_unverified=allow_unverified,
                                    client=client).digest
        except ModelRejected as exc:
            out.append(f"v{version}'s files fail verification: {exc}")
    at_promotion = record.get("digest")
    if not record:
        return out, digest
    if not at_promotion:
        if not allow_unverified:
            out.append(f"v{version}'s decision record holds no digest (promoted unverified): its files cannot be "
                       "tied to the decision (--allow-unverified accepts that)")
        return out, digest
    tag_now = tags.get(DIGEST_TAG)  # absent on versions registered without it (the logged model's tag counts then)
    if tag_now is not None and tag_now != at_promotion:
        out.append(f"v{version}'s digest at promotion ({at_promotion[:19]}...) differs from its {DIGEST_TAG} tag now "
                   f"({tag_now[:19]}...): the recorded digest changed after promotion")
    if digest is not None and digest != at_promotion:
        out.append(f"v{version}'s digest at promotion ({at_promotion[:19]}...) differs from its files' digest now "
                   f"({digest[:19]}...): the artifacts changed after promotion")
    return out, digest


def check_version(client: Any, model: str, version: str, alias: str = "champion", *,
                  allow_unverified: bool = False) -> AliasCheck:
    """Whether version ``version`` of ``model`` may hold ``@alias`` (module docstring): every
    problem found, one line each."""
    version = str(version)
    mv = client.get_model_version(model, version)
    tags = dict(mv.tags or {})
    model_tags = dict(client.get_registered_model(model).tags or {})
    check = AliasCheck(model, alias, version)
    record, missing = _record(tags, version)
    check.record = record
    if missing:
        check.problems.append(missing)
    else:
        check.problems += _record_problems(model, version, alias, record, model_tags)
    digest_problems, check.digest = _digest_problems(client, model, version, record, tags, allow_unverified)
    check.problems += digest_problems
    return check


def check_alias(client: Any, model: str, alias: str = "champion", *, allow_unverified: bool = False) -> AliasCheck:
    """The check of the version ``model@alias`` points to now (a problem when it is unset).
    An unknown registered model raises MLflow's error."""
    from mlflow.exceptions import MlflowException

    rm = client.get_registered_model(model)
    version = (getattr(rm, "aliases", None) or {}).get(alias)
    if version is None:
        try:
            version = client.get_model_version_by_alias(model, alias).version
        except MlflowException:
            return AliasCheck(model, alias, None, [f"@{alias} is not set on {model}"])
    return check_version(client, model, str(version), alias, allow_unverified=allow_unverified)


def check_all_aliases(client: Any, model: str, *, allow_unverified: bool = False) -> list[AliasCheck]:
    """One check per alias of ``model`` (sorted by alias); one failing check when it has none."""
    aliases = dict(getattr(client.get_registered_model(model), "aliases", None) or {})
    if not aliases:
        return [AliasCheck(model, "*", None, [f"{model} has no aliases"])]
    return [check_version(client, model, str(v), a, allow_unverified=allow_unverified)
            for a, v in sorted(aliases.items())]


def lock_held(client: Any, model: str) -> bool:
    """Whether the promotion lock of ``model`` exists now (a promotion is moving an alias)."""
    from mlflow.exceptions import MlflowException

    from fairltr.tracking.model_registry.lock import lock_name

    try:
        client.get_registered_model(lock_name(model))
        return True
    except MlflowException:
        return False


def settled_check(check: Callable[[], AliasCheck], client: Any, model: str, *, wait_s: float = 90.0,
                  poll_s: float = 0.25) -> AliasCheck:
    """``check()``; when it finds problems and ``model``'s promotion lock was held when it started
    or is held now, wait (at most ``wait_s`` seconds) for the lock to be released and check again:
    a promotion moves the alias before it writes its decision record, both under the lock, so
    once the lock is seen free after an alias event, the record of that move is written."""
    held = lock_held(client, model)  # read BEFORE the check: a promotion may end while it runs
    result = check()
    deadline = time.monotonic() + wait_s
    while not result.ok and (held or lock_held(client, model)) and time.monotonic() < deadline:
        held = False
        while lock_held(client, model) and time.monotonic() < deadline:
            time.sleep(poll_s)
        result = check()
    return result


def accepted_versions(client: Any, model: str, alias: str) -> list[tuple[str, str]]:
    """``(decision time, version)`` of every version of ``model`` whose decision record says
    ``promoted`` for ``@alias``, latest first (their files are not checked here)."""
    found = []
    for mv in client.search_model_versions(f"name='{model}'"):
        record, missing = _record(dict(mv.tags or {}), str(mv.version))
        if not missing and record.get("verdict") == "promoted" and record.get("requested_alias") == alias:
            found.append((str(record.get("time", "")), str(mv.version)))
    return sorted(found, reverse=True)
