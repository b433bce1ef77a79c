"""The gates of a promotion checked: a candidate against the champion it would replace (or none),
fail closed (:func:`fairltr.gates.check_gates`); a champion that cannot be opened or evaluated
on the data fails the relative gates unless ``unloadable_champion="pass"`` (``--if-champion-unavailable
pass``) skips them, and a skipped gate is recorded as skipped with its reason, never as passed. In confidence mode the champion-relative gates read paired bootstrap
intervals of (candidate - champion) over the same resampled queries
(:func:`fairltr.metrics.paired_difference`); impact-ratio gates list each audited category's
ratio and the excluded categories from the candidate's audit table.
"""

from __future__ import annotations

from typing import Any

from fairltr.columns import RankingColumns
from fairltr.gates import Gate, GateResult, check_gates
from fairltr.tracking.model_registry.sources import OpenedVersion, VersionSource

__all__ = ["GateCheck"]


def _plain(v: Any) -> Any:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


class GateCheck:
    """Checks ``gates`` for the candidate of ``versions`` (a :class:`VersionSource`, which opens
    the champions on demand). ``no_champion`` / ``unloadable_champion`` (``"pass"`` or
    ``"fail"``) decide the relative gates without a champion / with one that cannot be used;
    ``confidence``, ``columns`` and ``audit`` (an AuditConfig) make the paired intervals."""

    def __init__(self, versions: VersionSource, gates: list[Gate], *, no_champion: str, unloadable_champion: str,
                 confidence: float | None = None, columns: RankingColumns | None = None, audit: Any = None) -> None:
        self.versions, self.gates = versions, gates
        self.version, self.data, self.config = versions.candidate, versions.data, versions.config
        self.no_champion, self.unloadable_champion = no_champion, unloadable_champion
        self.confidence, self.columns, self.audit = confidence, columns, audit
        self._differences: dict[tuple[str, str], dict[str, Any]] = {}

    def check(self, cand: OpenedVersion, champion: str | None) -> tuple[list[GateResult], dict[str, float] | None]:
        results, champ = self._check(cand, champion)
        return [self._with_categories(r, cand) for r in results], champ

    def _check(self, cand: OpenedVersion, champion: str | None) -> tuple[list[GateResult], dict[str, float] | None]:
        kw: dict[str, Any] = {"confidence": self.confidence}
        if champion is None:
            reason = "no champion yet" + (" (--no-champion pass)" if self.no_champion == "pass" else "")
            return check_gates(self.gates, cand.metrics or {}, None, self.no_champion, absent_reason=reason,
                               **kw), None
        if champion == self.version:
            same = {g.metric: {"difference": 0.0, "ci_low": 0.0, "ci_high": 0.0} for g in self.gates}
            return check_gates(self.gates, cand.metrics or {}, cand.metrics, self.no_champion,
                               differences=same if self.confidence else None, **kw), cand.metrics
        side = self.versions.opened(champion)
        if side.problem is not None:  # fail closed unless the user chose to skip (--if-champion-unavailable pass)
            reason = f"champion v{champion} unavailable ({side.problem})"
            if self.unloadable_champion == "pass":
                reason += "; --if-champion-unavailable pass"
            results = check_gates(self.gates, cand.metrics or {}, None, self.unloadable_champion,
                                  absent_reason=reason, **kw)
            return results, None
        differences = self.differences(cand, champion, side) if self.confidence is not None else None
        return check_gates(self.gates, cand.metrics or {}, side.metrics, self.no_champion,
                           differences=differences, **kw), side.metrics

    def differences(self, cand: OpenedVersion, champion: str, side: OpenedVersion) -> dict[str, dict[str, Any]]:
        """Paired bootstrap intervals of (candidate - champion) of the champion-relative gates'
        metrics, over the same resampled queries of the promotion data (computed once per champion)."""
        from dataclasses import replace

        from fairltr.metrics.bootstrap import paired_difference

        out: dict[str, dict[str, Any]] = {}
        if cand.scores is None or side.scores is None:
            return out
        audit = replace(self.audit, ci=self.confidence)
        for g in self.gates:
            if not any(b.relative and b.rel_op != "*" for b in g.bounds):
                continue
            key = (champion, g.metric)
            if key not in self._differences:
                self._differences[key] = paired_difference(self.data, cand.scores, side.scores, columns=self.columns,
                                                           metric=g.metric, config=audit)
            out[g.metric] = self._differences[key]
        return out

    def _with_categories(self, r: GateResult, cand: OpenedVersion) -> GateResult:
        """An impact-ratio gate's result with each audited category's ratio (and interval) and
        the exclusions, from the candidate's audit table at the gate's cut-off."""
        import re

        m = re.match(r"^impact_ratio_at_(\d+)(?:\.(.+))?$", r.metric)
        table = cand.audit_table
        if m is None or table is None or int(m.group(1)) != int((self.config.get("audit") or {}).get("k", 10)):
            return r
        if m.group(2):
            table = table[table["attribute"].astype(str) == m.group(2)]
        cats = []
        for _, row in table.iterrows():
            item = {"attribute": str(row["attribute"]), "category": str(row["category"]),
                    "impact_ratio": _plain(row["impact_ratio_at_k"]), "excluded": bool(row["excluded"])}
            for end in ("_ci_low", "_ci_high"):
                if f"impact_ratio_at_k{end}" in table.columns:
                    item[f"ci{end[3:]}"] = _plain(row[f"impact_ratio_at_k{end}"])
            cats.append(item)
        r.categories = cats
        excluded = [f"{c['attribute']}={c['category']}" for c in cats if c["excluded"]]
        if excluded:
            r.note = "; ".join(x for x in (r.note, f"excluded (small): {', '.join(excluded[:8])}"
                                           + (f" +{len(excluded) - 8}" if len(excluded) > 8 else "")) if x)
        return r

    def champion_status(self, champion: str | None) -> str:
        if champion is None:
            return "none"
        side = self.versions.sides.get(champion)
        if side is None:
            return "not opened"
        if side.problem is not None:
            return f"unloadable: {side.problem}"
        return "loaded and verified" if side.digest else "loaded (unverified)"
