"""The audit of docs/spec.md section 3b, once per time window.

Each window is audited on its own rows (pooled selection rates, impact ratios, exposure ratios
per category and the intersection, with their bootstrap intervals over the window's queries):
a window's verdict never borrows data from another window.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterable, Iterator, Mapping

import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.metrics.audit import AuditConfig, audit_ranking

__all__ = ["WindowAudit", "audit_windows", "failing_categories", "category_column_of"]


@dataclass
class WindowAudit:
    """One window: its index, start and end, size, the audit table and the worst-case metrics."""

    index: int
    start: pd.Timestamp
    end: pd.Timestamp
    n_rows: int
    n_queries: int
    table: pd.DataFrame
    metrics: dict[str, float]
    interval: dict | None = None
    failures: list[dict] = field(default_factory=list)  # filled by the gates
    verdict: str = "pass"  # pass, fail or insufficient evidence (fairltr.monitoring.window_verdicts)
    insufficient: list[str] = field(default_factory=list)  # why the evidence is insufficient, one line each
    tables: dict = field(default_factory=dict)  # {k: audit table} of every cut-off computed (``table`` is config.k's)
    k: int = 10  # the cut-off of ``table``

    def table_at(self, metric: str) -> pd.DataFrame:
        """The audit table a gate's metric reads: the one at its cut-off (``impact_ratio_at_5``), else ``table``."""
        import re

        m = re.match(r"^(?:impact_ratio|ndkl)_at_(\d+)", metric)
        return self.tables.get(int(m.group(1)), self.table) if m else self.table

    @property
    def label(self) -> str:
        """The window's start date, ISO (``2026-01-28``; with the time when it is not midnight)."""
        return self.start.isoformat() if (self.start.hour or self.start.minute) else self.start.date().isoformat()


def audit_windows(frames: Iterable[tuple[int, pd.Timestamp, pd.Timestamp, pd.DataFrame]], scores_of,
                  *, columns: RankingColumns, config: AuditConfig, extra_ks: Iterable[int] = ()) -> Iterator[WindowAudit]:
    """Audit each ``(index, start, end, frame)``; ``scores_of(frame)`` gives the frame's scores
    (higher = ranked first; for a table of served ranks, minus the rank). The table is the audit
    at ``config.k``; ``extra_ks`` (the cut-offs the gates name, ``four_fifths@5``) add their
    worst-case figures, computed by the same audit (:func:`fairltr.metrics.audit_ranking`)."""
    from dataclasses import replace

    more = sorted({int(k) for k in extra_ks} - {int(config.k)})
    for index, start, end, frame in frames:
        scores = scores_of(frame)
        result = audit_ranking(frame, scores, columns=columns, config=config)
        metrics = dict(result.metrics)
        tables = {int(config.k): result.table}
        for k in more:
            extra = audit_ranking(frame, scores, columns=columns, config=replace(config, k=k))
            metrics.update({key: v for key, v in extra.metrics.items() if key not in metrics})
            tables[k] = extra.table
        yield WindowAudit(index=index, start=start, end=end, n_rows=len(frame),
                          n_queries=int(frame[columns.query].nunique()), table=result.table,
                          metrics=metrics, interval=result.interval, tables=tables, k=int(config.k))


# which audit-table column a worst-case metric is the minimum of
_COLUMN_OF = {"impact_ratio": "impact_ratio_at_k", "exposure_ratio_worst": "exposure_ratio",
              "scoring_impact_ratio": "scoring_impact_ratio"}


def category_column_of(metric: str) -> tuple[str | None, str | None]:
    """(audit-table column, attribute or None) behind a worst-case metric key:
    ``impact_ratio_at_10.race`` -> ("impact_ratio_at_k", "race"); (None, None) for metrics that
    are not a minimum over categories of one table column."""
    base, _, attribute = metric.partition(".")
    if base.startswith("impact_ratio_at_"):
        return _COLUMN_OF["impact_ratio"], attribute or None
    if base in ("exposure_ratio_worst", "scoring_impact_ratio"):
        return _COLUMN_OF[base], attribute or None
    return None, None


def failing_categories(table: pd.DataFrame, metric: str, passes, confidence: bool) -> list[dict]:
    """The audited (non-excluded) categories whose own value of ``metric``'s table column fails
    ``passes(value) -> bool``; in confidence mode the conservative end is tested (the interval's
    low end for a lower bound, both ends for a two-sided one: the caller's ``passes`` takes
    ``(low, high)``). Each: attribute, category, value, ci_low, ci_high."""
    column, attribute = category_column_of(metric)
    if column is None or column not in table.columns:
        return []
    rows = table[~table["excluded"].astype(bool)]
    if attribute is not None:
        rows = rows[rows["attribute"] == attribute]
    out = []
    for rec in rows.itertuples(index=False):  # one row per category: a short, explicit list
        value = float(getattr(rec, column))
        low = float(getattr(rec, f"{column}_ci_low", math.nan)) if f"{column}_ci_low" in table.columns else math.nan
        high = float(getattr(rec, f"{column}_ci_high", math.nan)) if f"{column}_ci_high" in table.columns else math.nan
        ok = passes((low, high)) if confidence else passes((value, value))
        if not ok:
            out.append({"attribute": rec.attribute, "category": rec.category, "value": value, "ci_low": low,
                        "ci_high": high})
    return out


def metrics_frame(windows: list[WindowAudit]) -> pd.DataFrame:
    """One row per window: index, start, end, rows, queries, verdict and every worst-case metric."""
    rows: list[Mapping] = []
    for w in windows:
        rows.append({"window": w.index, "window_start": w.start, "window_end": w.end, "n_rows": w.n_rows,
                     "n_queries": w.n_queries, "verdict": w.verdict, **w.metrics})
    return pd.DataFrame(rows)


def tables_frame(windows: list[WindowAudit]) -> pd.DataFrame:
    """Every window's audit table, stacked, with the window index and start in front."""
    parts = []
    for w in windows:
        t = w.table.copy()
        t.insert(0, "window_start", w.start)
        t.insert(0, "window", w.index)
        parts.append(t)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()

