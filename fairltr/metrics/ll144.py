"""The summary of an NYC Local Law 144 bias audit (6 RCNY 5-301 and 5-304) from an audit result
(:func:`fairltr.metrics.audit_ranking` or :func:`fairltr.metrics.stream_audit`).

Per attribute (``sex``, ``race``, and their intersection ``sex:race``) one row per category:

    n             members of the category (rows of the audited table)
    rate          selection rate at k (``method="selection@k"``) or scoring rate (``"scoring"``:
                  share of members scoring above the median; the median of the whole sample or
                  of each query, as ``median`` says)
    impact_ratio  rate / the largest rate among the attribute's categories not excluded
    ci_low/high   the impact ratio's bootstrap interval (None without intervals)
    rate_ci_low/high  the rate's interval
    share         n / n_individuals (the whole audited sample, unknown categories included)
    small         share < min_category_share (the rule's 2%)
    excluded      left out of the impact ratios: only a small category with the auditor's stated
                  ``exclusion_reason``; without a reason a small category stays in (flagged ``small``)
    exclusion_reason  that reason, or None

plus one row ``unknown`` (its count only: no rate, no ratio) and ``unknown_count``. A category is
below four-fifths when its impact ratio is < 0.8 (``below_four_fifths``).
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any, Mapping

import pandas as pd

from fairltr.errors import ConfigError

__all__ = ["METHODS", "ROW_FIELDS", "FOUR_FIFTHS", "summary_tables", "summary_frame", "summary_bytes", "sha256_of",
           "sha256_file", "categories_below", "check_method", "audit_scoring"]

METHODS = ("selection@k", "scoring")
ROW_FIELDS = ("category", "n", "rate", "impact_ratio", "ci_low", "ci_high", "rate_ci_low", "rate_ci_high",
              "share", "small", "below_four_fifths", "excluded", "exclusion_reason")
FOUR_FIFTHS = 0.8
_UNKNOWN = "unknown"


def _number(value: Any) -> float | None:
    """A JSON number, or None for a missing / NaN value."""
    if value is None:
        return None
    value = float(value)
    return None if math.isnan(value) else value


def _columns(method: str) -> tuple[str, str]:
    if method not in METHODS:
        raise ConfigError(f"method must be one of {METHODS}, got {method!r}")
    return ("selection_rate_at_k", "impact_ratio_at_k") if method == "selection@k" else \
        ("scoring_rate", "scoring_impact_ratio")


def _row(r: Mapping[str, Any], rate_col: str, ratio_col: str, n_total: int, min_share: float,
         reason: str | None) -> dict[str, Any]:
    n = int(r["n_candidates"])
    share = n / n_total if n_total else 0.0
    small = share < min_share
    ratio = _number(r.get(ratio_col))
    return {"category": str(r["category"]), "n": n, "rate": _number(r.get(rate_col)), "impact_ratio": ratio,
            "ci_low": _number(r.get(f"{ratio_col}_ci_low")), "ci_high": _number(r.get(f"{ratio_col}_ci_high")),
            "rate_ci_low": _number(r.get(f"{rate_col}_ci_low")), "rate_ci_high": _number(r.get(f"{rate_col}_ci_high")),
            "share": share, "small": bool(small),
            "below_four_fifths": bool(ratio is not None and ratio < FOUR_FIFTHS - 1e-12),
            "excluded": bool(small and reason is not None), "exclusion_reason": reason if small and reason else None}


def summary_tables(table: pd.DataFrame, unknown_counts: Mapping[str, int], *, method: str, n_individuals: int,
                   min_category_share: float = 0.02, exclusion_reason: str | None = None) -> dict[str, dict]:
    """``{attribute: {"unknown_count": int, "worst_impact_ratio": float | None, "rows": [...]}}``
    from an audit table (module docstring). The audit must have been run with small categories
    excluded exactly when ``exclusion_reason`` is given (``AuditConfig(exclude_small=reason is not None)``):
    its impact ratios are then the ratios this summary reports."""
    rate_col, ratio_col = _columns(method)
    if rate_col not in table.columns:
        raise ConfigError(f"the audit table has no {rate_col!r} column: audit with scoring on for method 'scoring'")
    out: dict[str, dict] = {}
    for attribute, part in table.groupby("attribute", sort=False):
        rows = [_row(r, rate_col, ratio_col, n_individuals, min_category_share, exclusion_reason)
                for r in part.to_dict("records") if r["category"] != _UNKNOWN]
        unknown = int(unknown_counts.get(attribute, 0))
        rows.append({f: None for f in ROW_FIELDS} | {
            "category": _UNKNOWN, "n": unknown, "share": unknown / n_individuals if n_individuals else 0.0,
            "small": False, "below_four_fifths": False, "excluded": True,
            "exclusion_reason": "unknown category: counted, left out of rates and impact ratios"})
        kept = [r["impact_ratio"] for r in rows[:-1] if not r["excluded"] and r["impact_ratio"] is not None]
        out[str(attribute)] = {"unknown_count": unknown, "worst_impact_ratio": min(kept) if kept else None,
                               "rows": rows}
    return out


def summary_frame(attributes: Mapping[str, Mapping[str, Any]], method: str, median: str | None) -> pd.DataFrame:
    """The summary's rows flat (``bias_audit.csv``): attribute, method, median, then :data:`ROW_FIELDS`."""
    records = [{"attribute": a, "method": method, "median": median, **r}
               for a, block in attributes.items() for r in block["rows"]]
    return pd.DataFrame(records, columns=["attribute", "method", "median", *ROW_FIELDS])


def summary_bytes(summary: Mapping[str, Any]) -> bytes:
    """The JSON text written to ``bias_audit.json`` (its sha256 names the filed summary)."""
    return (json.dumps(summary, indent=1, allow_nan=False) + "\n").encode("utf-8")


def sha256_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Any, chunk: int = 1 << 20) -> str:
    """The sha256 of a file, read in chunks (a 10^7-row table is never held for this)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while True:
            block = f.read(chunk)
            if not block:
                return h.hexdigest()
            h.update(block)


def categories_below(attributes: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """``attribute=category`` of every category kept in the ratios whose impact ratio is under 0.8."""
    return [f"{a}={r['category']}" for a, block in attributes.items() for r in block["rows"]
            if r["below_four_fifths"] and not r["excluded"]]



def check_method(method: str, median: str | None, k: int | None) -> None:
    """One-line errors for an impossible combination of method, median and k."""
    _columns(method)
    if method == "scoring" and median not in ("whole", "per-query"):
        raise ConfigError(f"--median must be 'whole' or 'per-query', got {median!r}")
    if method == "selection@k" and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"--k must be an integer >= 1 (the selection cut-off), got {k!r}")



def audit_scoring(method: str, median: str | None) -> str:
    """The audit's ``scoring`` setting (:class:`fairltr.metrics.AuditConfig`) of a method and median."""
    if method != "scoring":
        return "none"
    return "sample" if median == "whole" else "per-query"

