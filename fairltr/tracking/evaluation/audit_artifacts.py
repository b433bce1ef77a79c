"""The audit's files in a run, written one way by every job that audits (a tracked training run
and the ``fair_ranking`` evaluator of ``evaluate-model`` / ``promote``): ``audit_table.csv`` (the
per-category table, SPEC 3b, with its intervals) and ``impact_ratios.png`` (each category's impact
ratio with its interval and the four-fifths line), plus the report's inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

__all__ = ["AUDIT_ARTIFACT", "IMPACT_CHART", "main_audit", "write_audit_artifacts", "impact_caption",
           "binary_of", "POSITION_CAPTION"]

POSITION_CAPTION = "Share of the reference vs the compared categories by rank bucket (DELTR Fig. 2)"


def binary_of(df, group: str | None, reference: object = None):
    """The :class:`fairltr.metrics.verdicts.BinaryView` of ``df``'s first group attribute (the
    categories the section-3 binary figures compare), or None without one."""
    from fairltr.metrics.verdicts import binary_view

    if group is None or group not in df.columns:
        return None
    return binary_view(df[group], attribute=group, reference=reference)

AUDIT_ARTIFACT = "audit_table.csv"
IMPACT_CHART = "impact_ratios.png"


def main_audit(audits: Mapping[int, Any], k: int | None = None):
    """The audit at cut-off ``k`` (the job's audit cut-off), else the first one computed; None without."""
    if not audits:
        return None
    if k is not None and int(k) in audits:
        return audits[int(k)]
    return next(iter(audits.values()))


def impact_caption(k: int) -> str:
    return f"Impact ratio at {k} per category, with its interval; the four-fifths line at 0.8"


def write_audit_artifacts(out: Path, audits: Mapping[int, Any], k: int | None = None, *, threshold: float = 0.8,
                          confidence: bool = False) -> tuple[Any, dict[str, bytes]]:
    """Write :data:`AUDIT_ARTIFACT` and :data:`IMPACT_CHART` of the main audit into ``out`` (bars
    coloured by the verdict at ``threshold``, on the interval's low end with ``confidence``);
    returns (that AuditResult or None, ``{caption: png}`` for the report)."""
    from fairltr.metrics.audit_jobs import write_audit_table
    from fairltr.tracking.evaluation.plots import figure_to_png, impact_ratio_chart

    audit = main_audit(audits, k)
    if audit is None:
        return None, {}
    main_k = next(kk for kk, a in audits.items() if a is audit)
    write_audit_table(audit, Path(out) / AUDIT_ARTIFACT)
    png = figure_to_png(impact_ratio_chart(audit.table, k=main_k, threshold=threshold,
                                           confidence=confidence and bool(audit.interval)))
    (Path(out) / IMPACT_CHART).write_bytes(png)
    return audit, {impact_caption(main_k): png}
