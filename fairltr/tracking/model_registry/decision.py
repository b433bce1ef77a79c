"""The decision record of a promotion: :class:`PromotionDecision` (what was decided and why) and
how it is written.

Every decision is written

* into the model version's description, BELOW the version's own training summary (kept): one
  line with the verdict, the gates passed and what the alias points to
  (:meth:`PromotionDecision.description`); a later decision replaces the earlier verdict line;
* as four tags on the model version: ``fairltr.promotion.verdict``, ``.time``,
  ``.evaluation_run`` and ``.decision`` (the whole decision as JSON of at most 4,900 characters:
  gates, results with intervals and per-category ratios, values, champion values, champion
  before/after and status, digest, reason, notes; leaner forms when long, never cut;
  :func:`decision_record` reads it back);
* as one tag per decision on the registered model (``fairltr.decision.<utc>.v<version>.<id>``,
  which concurrent writers cannot overwrite) holding the same one-line text;
* with data, on the ``promote NAME vV`` run: the full decision as ``promotion_decision.json``,
  the gate values as metrics (``candidate/<metric>``, ``champion/<metric>``, ``gate_lower/<metric>``,
  ``gate_upper/<metric>``, ``gates_passed``, ``gates_failed``, ``promoted``) and the decision as
  the run's description (:func:`log_decision_run`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Mapping, Sequence

from fairltr.gates import GateResult

__all__ = ["PromotionDecision", "TAG_PREFIX", "EXIT_CODES", "TAG_LIMIT", "json_within", "decision_record",
           "DECISION_ARTIFACT", "VERDICT_MARK", "ALIAS_CHECK_MARK", "with_verdict", "with_alias_check",
           "write_decision", "log_decision_run", "cut_text"]

TAG_PREFIX = "fairltr.promotion."
TAG_LIMIT = 4900  # model version / registered model tag values are VARCHAR(5000) in MLflow's SQL stores
EXIT_CODES = {"promoted": 0, "rejected": 1, "contention": 3}
_HEADS = {"promoted": "PROMOTED", "rejected": "REJECTED", "contention": "LOST TO CONTENTION"}
DECISION_ARTIFACT = "promotion_decision.json"
_STALE_TAGS = tuple(f"fairltr.promotion.{k}" for k in (
    "decision_id", "requested_alias", "gates", "results", "values", "champion_values", "champion_before",
    "champion_after", "champion_status", "digest", "reason", "notes"))
VERDICT_MARK = "\n\nPromotion decision: "  # separates the version's training summary from the latest verdict
ALIAS_CHECK_MARK = "\n\nAlias check: "  # the latest alias-integrity FAIL (alias_record.py), after everything else
_NO_DECISION = " No promotion decision yet."


def with_verdict(description: str | None, verdict_line: str) -> str:
    """The version description with ``verdict_line`` as its latest decision: the training
    summary above :data:`VERDICT_MARK` is kept (its "No promotion decision yet." dropped), an
    earlier verdict replaced, an alias check's FAIL line (:data:`ALIAS_CHECK_MARK`) dropped: the
    description tells the version's current state, the FAIL stays in the registered model's log."""
    summary = (description or "").split(ALIAS_CHECK_MARK, 1)[0].split(VERDICT_MARK, 1)[0].replace(_NO_DECISION, "").rstrip()
    if not summary:
        return cut_text(verdict_line, 4900)
    return summary[:2500] + VERDICT_MARK + cut_text(verdict_line, 4900 - min(len(summary), 2500) - len(VERDICT_MARK))


def with_alias_check(description: str | None, line: str) -> str:
    """The version description with ``line`` as its latest alias check (after
    :data:`ALIAS_CHECK_MARK`, an earlier one replaced), within 4,900 characters."""
    base = (description or "").split(ALIAS_CHECK_MARK, 1)[0][:3500]
    return base + ALIAS_CHECK_MARK + cut_text(line, 4900 - len(base) - len(ALIAS_CHECK_MARK))


def decision_record(tags: Mapping[str, str]) -> dict[str, Any]:
    """The decision a model version's ``fairltr.promotion.decision`` tag holds, as a dict ({} when
    the version has none)."""
    text = tags.get(f"{TAG_PREFIX}decision")
    return json.loads(text) if text else {}


def json_within(candidates: Sequence[Any], limit: int = TAG_LIMIT) -> str:
    """The JSON text of the first of ``candidates`` (richest first) that fits in ``limit``
    characters; the last one is expected to fit, and if it does not, a JSON object saying so is
    returned. Always valid JSON."""
    for value in candidates:
        text = json.dumps(value)
        if len(text) <= limit:
            return text
    return json.dumps({"summary": "too long to store", "chars": len(json.dumps(candidates[-1]))})


def cut_text(text: str, limit: int = TAG_LIMIT) -> str:
    """``text`` within ``limit`` characters, a cut one saying how much was left out."""
    if len(text) <= limit:
        return text
    tail = f" ... (+{len(text) - limit + 40} characters)"
    return text[:limit - len(tail)] + tail


@dataclass
class PromotionDecision:
    """What :func:`promote` decided and why (also written as tags)."""

    model: str
    version: str
    alias: str
    verdict: str  # "promoted" | "rejected" | "contention"
    results: list[GateResult]
    champion_before: str | None
    champion_after: str | None
    time: str
    decision_id: str
    candidate_metrics: dict[str, float] = field(default_factory=dict)
    champion_metrics: dict[str, float] | None = None
    evaluation_run_id: str | None = None
    notes: list[str] = field(default_factory=list)
    reason: str | None = None
    kind: str | None = None
    digest: str | None = None
    champion_status: str = "none"
    confidence: float | None = None
    interval: dict[str, Any] | None = None  # how the intervals were made: level, n_boot, seed, unit, method
    champion_first_read: str | None = None  # the champion read before the candidate was measured

    @property
    def promoted(self) -> bool:
        return self.verdict == "promoted"

    @property
    def exit_code(self) -> int:
        """0 promoted, 1 rejected (gate failed, model unloadable/unverified), 3 lost to contention."""
        return EXIT_CODES[self.verdict]

    def summary(self) -> str:
        head = (f"{self.model} v{self.version}: {_HEADS[self.verdict]} "
                f"(@{self.alias} was {'v' + self.champion_before if self.champion_before else 'unset'}, "
                f"now {'v' + self.champion_after if self.champion_after else 'unset'})")
        lines = [head]
        if self.reason:
            lines.append(f"  reason: {self.reason}")
        lines += ["  " + r.describe() for r in self.results] + ["  note: " + n for n in self.notes]
        return "\n".join(lines)

    def record(self, lean: int = 0) -> dict[str, Any]:
        """The decision as one JSON-able dict; ``lean`` 1..3 drops detail (categories, notes,
        then everything but the verdict and the gates' pass/fail) to fit a tag."""
        gated = sorted({r.metric for r in self.results})
        values = {m: self.candidate_metrics[m] for m in gated if m in self.candidate_metrics}
        values.update({f"{m}{end}": self.candidate_metrics[f"{m}{end}"] for m in gated for end in ("_ci_low", "_ci_high")
                       if f"{m}{end}" in self.candidate_metrics})
        champ = None if self.champion_metrics is None else {
            m: self.champion_metrics[m] for m in gated if m in self.champion_metrics}
        results = [asdict(r) for r in self.results]
        if lean >= 1:
            for r in results:
                cats = r.pop("categories", None) or []
                r["excluded"] = [f"{c['attribute']}={c['category']}" for c in cats if c.get("excluded")][:20]
                r["note"] = (r.get("note") or "")[:200]
        if lean >= 2:
            results = [{k: r.get(k) for k in ("gate", "rule", "passed", "skipped", "value", "threshold", "margin",
                                              "interval", "difference_interval", "compared")} for r in results]
        out: dict[str, Any] = {
            "decision_id": self.decision_id, "verdict": self.verdict, "time": self.time,
            "requested_alias": self.alias, "model": self.model, "version": self.version,
            "gates": [r.gate for r in self.results], "results": results, "values": values,
            "champion_values": champ, "champion_before": self.champion_before,
            "champion_after": self.champion_after, "champion_first_read": self.champion_first_read,
            "champion_status": self.champion_status or None,
            "digest": self.digest, "reason": self.reason, "notes": list(self.notes) if lean < 1 else self.notes[:5],
            "confidence": self.confidence, "interval": self.interval, "evaluation_run": self.evaluation_run_id,
        }
        if lean >= 3:
            failed = [r.gate[:100] for r in self.results if not r.passed]
            out = {k: out[k] for k in ("decision_id", "verdict", "time", "requested_alias", "model", "version",
                                       "champion_before", "champion_after", "digest", "confidence",
                                       "evaluation_run")}
            out.update(n_gates=len(self.results), n_failed=len(failed), failed=failed[:20],
                       reason=cut_text(self.reason or "", 1000) or None)
        return out

    def version_tags(self) -> dict[str, str]:
        """The few ``fairltr.promotion.*`` tags of the version: ``verdict``, ``time``,
        ``evaluation_run`` (``none`` without data) and ``decision`` (the :meth:`record` JSON, the
        richest form within :data:`TAG_LIMIT`). ``requested_alias`` in the record is the alias
        the decision was about: the version holds it only when the verdict is ``promoted``."""
        return {
            f"{TAG_PREFIX}verdict": self.verdict,
            f"{TAG_PREFIX}time": self.time,
            f"{TAG_PREFIX}evaluation_run": self.evaluation_run_id or "none",
            f"{TAG_PREFIX}decision": json_within([self.record(lean) for lean in range(4)]),
        }

    def description(self) -> str:
        """One line for the version page: verdict, alias, UTC time, gates passed (the failed ones
        with their values, or the values of the passed ones), the reason, where the alias points.

        ``REJECTED for @champion (2026-11-30 22:17 UTC): 0 of 2 gates passed: 0.8<=exposure_ratio<=1.25
        failed (exposure_ratio 0.716); ...; @champion stays v1.``"""
        head = {"promoted": f"PROMOTED to @{self.alias}", "rejected": f"REJECTED for @{self.alias}",
                "contention": f"NOT DECIDED for @{self.alias} (lost to contention)"}[self.verdict]
        when = self.time.replace("T", " ")[:16] + " UTC" if "T" in self.time else self.time
        parts = [f"{head} ({when})"]
        if self.results:
            n_pass = sum(r.status == "passed" for r in self.results)
            n_skip = sum(r.skipped for r in self.results)
            failed = [r for r in self.results if not r.passed]
            shown = failed if failed else sorted(self.results, key=lambda r: not r.skipped)  # skipped ones first
            detail = ", ".join(_gate_words(r) for r in shown[:4])
            detail += f", +{len(shown) - 4} more" if len(shown) > 4 else ""
            skipped = f", {n_skip} skipped" if n_skip else ""
            parts.append(f"{n_pass} of {len(self.results)} gates passed{skipped}: {detail}")
        if self.reason:
            parts.append(" ".join(self.reason.split()))
        if self.verdict == "promoted":
            was = "v" + self.champion_before if self.champion_before and self.champion_before != self.version else None
            parts.append(f"replaces {was}" if was else f"first @{self.alias}" if not self.champion_before
                         else f"already held @{self.alias}")
        else:
            parts.append(f"@{self.alias} stays {'v' + self.champion_after if self.champion_after else 'unset'}")
        return cut_text("; ".join(parts) + ".")

    def model_tag(self) -> tuple[str, str]:
        """(key, value) of the registered model's decision log entry: ``v<version> <description>``."""
        stamp = self.time.replace("+00:00", "Z").replace("-", "").replace(":", "")
        key = f"fairltr.decision.{stamp}.v{self.version}.{self.decision_id[:8]}"
        return key, cut_text(f"v{self.version} {self.description()}")

    def run_metrics(self) -> dict[str, float]:
        """The decision as metrics of the promotion run: per gated metric the candidate's and the
        champion's value and the gate's bounds, plus the counts of passed and failed gates and
        ``promoted`` (1 or 0)."""
        out: dict[str, float] = {}
        for r in self.results:
            if r.value is not None:
                out[f"candidate/{r.metric}"] = r.value
            champ = (self.champion_metrics or {}).get(r.metric)
            if champ is not None:
                out[f"champion/{r.metric}"] = champ
            if r.lower is not None:
                out[f"gate_lower/{r.metric}"] = r.lower
            if r.upper is not None:
                out[f"gate_upper/{r.metric}"] = r.upper
        n_pass = sum(r.status == "passed" for r in self.results)
        n_skip = sum(r.skipped for r in self.results)
        out.update(gates_passed=float(n_pass), gates_failed=float(len(self.results) - n_pass - n_skip),
                   gates_skipped=float(n_skip), promoted=1.0 if self.promoted else 0.0)
        return out


def _gate_words(r: GateResult) -> str:
    if r.skipped:
        return f"{r.gate} skipped ({r.note or 'no bound checked'})"
    value = "no value" if r.value is None else f"{r.metric} {r.value:.4g}"
    if r.value is not None and r.confidence is not None:
        iv = r.difference_interval or r.interval
        what = "candidate - champion " if r.difference_interval else ""
        value += f", {what}{r.confidence:.0%} interval [{iv[0]:.4g}, {iv[1]:.4g}]" if iv else ", no interval"
    return f"{r.gate} {'passed' if r.passed else 'failed'} ({value})"


def _run_description(decision: PromotionDecision) -> str:
    """The promotion run's description (Markdown): the verdict line, then one line per gate."""
    lines = [f"**{decision.model} v{decision.version}:** {decision.description()}"]
    lines += [f"- `{r.describe()}`" for r in decision.results]
    return cut_text("\n".join(lines), 7900)  # MLflow keeps at most 8,000 characters of a run tag


# ---------------------------------------------------------------------------- writing it
def write_decision(client: Any, decision: PromotionDecision) -> None:
    """Write ``decision`` to the registry: the version's tags (the per-field tags of earlier
    fairltr releases deleted: the decision tag holds them), the verdict line in the version's
    description, and the registered model's decision-log tag."""
    model, version = decision.model, decision.version
    for key, value in decision.version_tags().items():
        client.set_model_version_tag(model, version, key, value)
    mv = client.get_model_version(model, version)
    for key in _STALE_TAGS:
        if key in (mv.tags or {}):
            client.delete_model_version_tag(model, version, key)
    client.update_model_version(model, version, description=with_verdict(mv.description, decision.description()))
    client.set_registered_model_tag(model, *decision.model_tag())


def log_decision_run(decision: PromotionDecision, run_id: str) -> None:
    """Write ``decision`` on the active ``promote NAME vV`` run ``run_id``: its metrics
    (:meth:`PromotionDecision.run_metrics`), :data:`DECISION_ARTIFACT`, and the verdict tags and
    description."""
    import mlflow

    from fairltr.tracking.runs.life_cycle import log_metrics

    log_metrics(run_id, decision.run_metrics())
    mlflow.log_dict(decision.record(), DECISION_ARTIFACT)
    mlflow.set_tags({"fairltr.promotion.verdict": decision.verdict, "fairltr.promotion.model": decision.model,
                     "fairltr.promotion.version": decision.version,
                     "mlflow.note.content": _run_description(decision)})
