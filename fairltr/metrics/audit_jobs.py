"""The audit of a job (SPEC 3b): which audit a job runs, on which cut-off, and how its table and
interval metadata are written. Pure core (no MLflow): the workflows, the MLflow adapter's evaluator
and promotion, and the CLI read it (``fairltr.workflows.audit`` re-exports it). The formulas live
in :mod:`fairltr.metrics.audit`; this module only decides *what* to compute for a command and
where it goes.

* The audit's cut-off: a command's ``--k`` lists several cut-offs (``1,5,10,20,100``); the audit
  (``impact_ratio_at_<k>``, ``ndkl_at_<k>`` and the table's ``selected_at_k``) uses 10 when it is
  listed, else the first one given. Gates and sweep objectives that name another cut-off
  (``four_fifths@5``, ``impact_ratio_at_5:max``) add theirs.
* ``--ci 0`` computes the point figures only (no ``_ci_low`` / ``_ci_high`` keys).
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.gates import expand_preset

__all__ = ["names_scoring_rate", "audit_wanted", "make_audit_config", "audit_cutoff", "audit_cutoffs_in", "AUDIT_METRICS", "names_audit_metric",
           "audit_evaluation", "interval_metadata", "write_audit_table", "AUDIT_TABLE_COLUMNS", "INTERVAL_KEYS",
           "audit_to_config", "audit_from_config"]

from fairltr.metrics.plugins import AUDIT_METRICS  # noqa: E402  (SPEC 3b's worst-case figures, declared once)
# the audit table's columns, in the contract's order (the _ci_low/_ci_high ones follow when ci > 0)
AUDIT_TABLE_COLUMNS = ("attribute", "category", "n_candidates", "n_queries", "selected_at_k", "selection_rate_at_k",
                       "impact_ratio_at_k", "exposure", "exposure_ratio", "merit", "exposure_per_merit", "excluded")
INTERVAL_KEYS = ("ci_level", "ci_n_boot", "ci_seed", "ci_unit", "ci_method")
_AUDIT_KEY = re.compile(r"\b(impact_ratio|ndkl)_at_(\d+)")


def make_audit_config(*, k: int = 10, ci: float = 0.0, min_category_share: float = 0.02, n_boot: int = 2000,
                      seed: int = 0, unit: str = "auto", method: str = "percentile", scoring: str = "none",
                      unknown_values: Sequence[str] = (), exclude_small: bool = True,
                      exclusion_reason: str | None = None):
    """A checked :class:`fairltr.metrics.AuditConfig` (one-line :class:`ConfigError` otherwise)."""
    from fairltr.metrics.audit import AuditConfig

    if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not (0.0 <= float(ci) < 1.0):
        raise ConfigError(f"--ci must be a confidence level in (0, 1), e.g. 0.95, or 0 for no intervals; got {ci!r}")
    if not (isinstance(min_category_share, (int, float)) and 0.0 <= float(min_category_share) < 1.0):
        raise ConfigError(f"--min-category-share must be in [0, 1), got {min_category_share!r}")
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 10:
        raise ConfigError(f"--n-boot must be an integer >= 10, got {n_boot!r}")
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ConfigError(f"the audit's cut-off k must be an integer >= 1, got {k!r}")
    return AuditConfig(k=int(k), min_category_share=float(min_category_share), ci=float(ci), n_boot=int(n_boot),
                       seed=int(seed), unit=unit, method=method, scoring=scoring, unknown_values=tuple(unknown_values),
                       exclude_small=exclude_small, exclusion_reason=exclusion_reason)


def audit_cutoff(ks: Sequence[int]) -> int:
    """The audit's cut-off for a command's ``--k`` list: 10 when listed, else the first."""
    ks = list(ks)
    return 10 if 10 in ks or not ks else int(ks[0])


def _named_metrics(text: str | None) -> str:
    """``text`` (a gate, a constraint, or comma-separated objectives) with each gate preset written
    out as the expression it reads, by the one grammar (:func:`fairltr.gates.expand_preset`):
    ``four_fifths@5`` -> ``impact_ratio_at_5>=0.8``. A malformed preset is left as written: the
    parser of the text it belongs to refuses it with its own message."""

    def expanded(part: str) -> str:
        try:
            preset = expand_preset(part)
        except ConfigError:
            return part
        return preset[1] if preset else part

    return ",".join(expanded(part) for part in (text or "").split(","))


def audit_cutoffs_in(texts: Iterable[str]) -> list[int]:
    """Cut-offs of the ``impact_ratio_at_<k>`` / ``ndkl_at_<k>`` names (and ``four_fifths@<k>``
    presets) in gates, objectives or constraints."""
    return sorted({int(m.group(2)) for t in texts for m in _AUDIT_KEY.finditer(_named_metrics(t))})


def names_audit_metric(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` (gates, objectives, constraints) names a worst-case audit metric
    (or the four-fifths preset)."""
    return any(re.search(rf"\b{base}", _named_metrics(t)) for t in texts for base in AUDIT_METRICS)


_CONFIG_KEYS = ("k", "ci", "min_category_share", "n_boot", "seed", "unit", "method", "scoring", "unknown_values",
                "exclude_small", "exclusion_reason")


def audit_to_config(audit) -> dict[str, Any]:
    """An AuditConfig as plain values (the ``fair_ranking`` evaluator's ``audit`` config key)."""
    out = {key: getattr(audit, key) for key in _CONFIG_KEYS}
    out["unknown_values"] = list(out["unknown_values"])
    return out


def audit_from_config(value: Mapping[str, Any] | None):
    """The inverse of :func:`audit_to_config` (None stays None)."""
    if value is None:
        return None
    return make_audit_config(**{k: value[k] for k in _CONFIG_KEYS if k in value})


def names_scoring_rate(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` (gates, objectives, constraints) reads the scoring rate's impact
    ratio (``scoring_impact_ratio``, or the ``scoring_four_fifths`` preset): the audit must then
    compute scoring rates (docs/spec.md section 3c)."""
    return any(re.search(r"\bscoring_impact_ratio", _named_metrics(t)) for t in texts)


def audit_wanted(df: pd.DataFrame, columns: RankingColumns, audit, required: bool | None = None) -> bool:
    """Whether a job runs the audit: always when ``required`` (``--audit FILE``), or asked for
    (intervals, several attributes); the default point audit of a single attribute is skipped on
    a table with negative judgments, whose merit (mean judgment per category) is undefined, so a
    command that worked before the audit keeps working (ask with ``--ci``/``--audit`` to see why)."""
    if audit is None or not columns.groups:
        return False
    if required is None:
        required = bool(audit.ci) or len(columns.groups) > 1
    if required:
        return True
    j = columns.judgment
    if j is None or j not in df.columns:
        return True
    values = pd.to_numeric(df[j], errors="coerce")
    return not bool((values < 0).any())


def audit_evaluation(df: pd.DataFrame, scores: np.ndarray | pd.Series | str, *, columns: RankingColumns,
                     k: Sequence[int], audit, extra_ks: Iterable[int] = (),
                     required: bool | None = None, conventions=None) -> tuple[dict[str, float], dict[int, Any]]:
    """Today's metrics plus the audit's (one :func:`fairltr.metrics.evaluate_ranking_audit` pass at
    ``audit.k``; one more point-or-interval audit per cut-off of ``extra_ks``). Returns
    (metrics, {k: AuditResult}). Without a group column, or when :func:`audit_wanted` says no:
    today's metrics only. ``conventions``: the relevance metrics' conventions
    (:class:`~fairltr.metrics.conventions.RelevanceConventions`; None = the default)."""
    from dataclasses import replace

    from fairltr.metrics import evaluate_ranking
    from fairltr.metrics.audit import audit_ranking
    from fairltr.metrics.conventions import RelevanceConventions
    from fairltr.metrics.evaluate import evaluate_ranking_audit

    conventions = conventions or RelevanceConventions()
    if not audit_wanted(df, columns, audit, required):
        return evaluate_ranking(df, scores, columns=columns, k=tuple(k), conventions=conventions), {}
    metrics, result = evaluate_ranking_audit(df, scores, columns=columns, k=tuple(k), audit=audit,
                                             conventions=conventions)
    results = {audit.k: result}
    for kk in sorted(set(int(x) for x in extra_ks) - {audit.k}):
        more = audit_ranking(df, scores, columns=columns, config=replace(audit, k=kk))
        metrics.update({key: v for key, v in more.metrics.items() if key not in metrics})
        results[kk] = more
    return dict(metrics), results


def interval_metadata(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ci_*`` metadata keys of an evaluation (level, resamples, seed, unit, method)."""
    return {key: metrics[key] for key in INTERVAL_KEYS if key in metrics}


def write_audit_table(result, path: Path) -> Path:
    """The audit table as CSV with exactly the contract's column names (attribute, category, the
    counts, rates and ratios, excluded, then the ``_ci_low`` / ``_ci_high`` columns)."""
    from fairltr.files import atomic_write_text

    table = result.table
    missing = [c for c in AUDIT_TABLE_COLUMNS if c not in table.columns]
    if missing:
        raise ConfigError(f"the audit table lacks column(s) {missing}")
    ordered = list(AUDIT_TABLE_COLUMNS) + [c for c in table.columns if c not in AUDIT_TABLE_COLUMNS]
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, table[ordered].to_csv(index=False))
    return path


def finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))
