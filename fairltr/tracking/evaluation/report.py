"""A one-page, self-contained HTML fairness report (figures inlined as base64 PNG), so it
opens in the MLflow UI's artifact viewer without any other file.

What a reader sees first: the title (what was evaluated), one line of context (run, model, data),
the exposure headline (the protected group's exposure relative to the non-protected group's,
its side of parity and its distance from parity as the metric registry defines them), then the
metric table with the fairness metrics first and cut-offs in numeric order.
"""

from __future__ import annotations

import base64
import html
import math
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from fairltr.metrics import HEADLINE_METRICS, direction_label, distance_from_ideal, metric_info  # the one headline list
from fairltr.tracking.evaluation.plots import figure_to_png

__all__ = ["figure_to_png", "fairness_report_html", "metric_sort_key", "ordered_metric_keys", "HEADLINE_METRICS",
           "COUNT_SUFFIX", "split_counts", "exposure_headline", "conclusions", "audit_table_html"]

COUNT_SUFFIX = "_n_queries"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em;color:#222;max-width:980px}
h1{font-size:1.3em;margin-bottom:.2em} h2{font-size:1.05em;margin-top:1.2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#777;font-size:.8em}
.grid{display:flex;flex-wrap:wrap;gap:1em} .grid figure{margin:0} img{max-width:100%}
.headline{font-size:1.05em;padding:.5em .8em;background:#f6f8fa;border-left:4px solid #0969da}
td.kind-fairness{font-weight:600}
#audit-table{display:block;overflow-x:auto;max-width:100%} #conclusions li{margin:.15em 0}
"""


def split_counts(metrics: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(values, counts): ``<metric>_n_queries`` entries (how many queries an average is over)
    go to ``counts`` keyed by their metric, everything else to ``values``."""
    values, counts = {}, {}
    for key, v in metrics.items():
        if key.endswith(COUNT_SUFFIX):
            counts[key[: -len(COUNT_SUFFIX)]] = v
        else:
            values[key] = v
    return values, counts


def metric_sort_key(key: str) -> tuple:
    """Presentation order: the headline metrics first (:data:`HEADLINE_METRICS` order), then
    the other fairness metrics, then relevance, then unknown keys; within a group by name with
    the cut-off k compared as a number (``_at_5`` before ``_at_10`` before ``_at_100``)."""
    try:
        kind = metric_info(key).kind
    except KeyError:
        kind = "other"
    head = HEADLINE_METRICS.index(key) if key in HEADLINE_METRICS else len(HEADLINE_METRICS)
    group = 0 if head < len(HEADLINE_METRICS) else {"fairness": 1, "relevance": 2}.get(kind, 3)
    name, lang = key.partition("/")[::2]
    base, _, tail = name.rpartition("_at_") if "_at_" in name else (name, "", "")
    k_text, _, variant = tail.partition("_")
    k = int(k_text) if k_text.isdigit() else -1
    return (group, head, base if base else name, k, variant, lang)


def ordered_metric_keys(keys: Sequence[str]) -> list[str]:
    """``keys`` in :func:`metric_sort_key` order."""
    return sorted(keys, key=metric_sort_key)


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def _metric_rows(values: Mapping[str, Any], counts: Mapping[str, Any],
                 intervals: Mapping[str, Any] | None = None) -> str:
    rows = []
    for key in ordered_metric_keys(list(values)):
        try:
            kind, arrow = metric_info(key).kind, direction_label(key)
        except KeyError:
            kind, arrow = "other", ""
        iv = ""
        if intervals is not None:
            lo, hi = intervals.get(key + "_ci_low"), intervals.get(key + "_ci_high")
            iv = f"<td class=num>[{_fmt(lo)}, {_fmt(hi)}]</td>" if _finite(lo) and _finite(hi) else "<td></td>"
        rows.append(f"<tr><td>{html.escape(key)}</td><td class=num>{_fmt(values[key])}</td>{iv}"
                    f"<td class=kind-{kind}>{kind}</td><td class=muted>{arrow}</td>"
                    f"<td class=num>{_fmt(counts.get(key, ''))}</td></tr>")
    return "".join(rows)


def exposure_headline(metrics: Mapping[str, Any]) -> str | None:
    """One sentence on ``exposure_ratio`` with the registry's parity semantics (target 1.0,
    both sides worse; distance = ``exposure_disparity`` = 1 - min(R, 1/R)), or None without it."""
    ratio = metrics.get("exposure_ratio")
    if not isinstance(ratio, (int, float)) or isinstance(ratio, bool) or not math.isfinite(ratio):
        return None
    disparity = distance_from_ideal("exposure_ratio", ratio)
    if ratio == 1.0:
        side = "exactly at parity"
    elif ratio < 1.0:
        side = f"under-exposed: {100 * (1 - ratio):.1f}% below parity"
    else:
        side = f"over-exposed: {100 * (ratio - 1):.1f}% above parity"
    return (f"Exposure: the protected group receives {ratio:.3f} times the positional exposure of the "
            f"non-protected group ({side}; exposure_disparity {disparity:.3f}, 0 at parity). "
            f"exposure_ratio: {direction_label('exposure_ratio')}, both sides are worse.")


def _headline_html(metrics: Mapping[str, Any]) -> str:
    text = exposure_headline(metrics)
    if text is None:
        return ("<p id=exposure-headline class='headline muted'>Exposure: no exposure ratio "
                "(no query holds both groups).</p>")
    ratio = float(metrics["exposure_ratio"])
    bold = html.escape(f"{ratio:.3f} times")
    body = html.escape(text).replace(bold, f"<b>{bold}</b>", 1)
    return (f"<p id=exposure-headline class=headline>{body} "
            "<span class=muted>Exposure of a position r is 1/ln(1+r), averaged per group and over queries."
            "</span></p>")


def fairness_report_html(
    title: str,
    *,
    metrics: Mapping[str, float],
    params: Mapping[str, Any] | None = None,
    figures: Mapping[str, bytes] | None = None,
    notes: str | None = None,
    tables: Mapping[str, Any] | None = None,
    subtitle: str | None = None,
    counts: Mapping[str, Any] | None = None,
    audit: Any = None,
    interval: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML string: ``title``, a ``subtitle`` line (run, model, data), the
    exposure headline, the metric table (fairness first; direction, kind and the number of
    queries each average is over, from ``counts`` or ``<metric>_n_queries`` entries of
    ``metrics``), any extra ``tables`` (pandas DataFrames), the inlined figures and the params.

    With intervals (``<metric>_ci_low`` / ``_ci_high`` entries) the metric table shows
    ``value [low, high]`` and ``interval`` (level, resamples, seed, unit) is stated; ``audit`` (the
    audit table, SPEC 3b) adds the per-category table; a conclusion line is given for each
    gate-like figure (:func:`conclusions`)."""
    values, companion = split_counts(metrics)
    counts = {**companion, **(counts or {})}
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if subtitle:
        parts.append(f"<p class=subtitle>{html.escape(subtitle)}</p>")
    parts.append(f"<p class=muted>fairltr fairness report · {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}</p>")
    if values:
        parts.append(_headline_html(values))
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    if values:
        parts.extend(_conclusions_section(values))
    if audit is not None:
        parts.append(audit_table_html(audit))
    if values:
        parts.extend(_metrics_section(values, counts, interval))
    for caption, frame in (tables or {}).items():
        parts.append(f"<h2>{html.escape(caption)}</h2>"
                     + frame.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}", border=0))
    if figures:
        parts.extend(_figures_section(figures))
    if params:
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{_fmt(v)}</td></tr>" for k, v in sorted(params.items()))
        parts.append(f"<h2>Parameters</h2><table>{rows}</table>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _conclusions_section(values: Mapping[str, float]) -> list[str]:
    """The conclusion lines (:func:`conclusions`) as a list, none when there are none."""
    lines = conclusions(values)
    if not lines:
        return []
    return ["<h2>Conclusions</h2><ul id=conclusions>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"]


def _metrics_section(values: Mapping[str, float], counts: Mapping[str, Any],
                     interval: Mapping[str, Any] | None) -> list[str]:
    """The metric table (an interval column when ``<metric>_ci_low`` entries exist) and the line
    saying how the intervals were made."""
    lows = {key[: -len("_ci_low")] for key in values if key.endswith("_ci_low")}
    shown = {key: v for key, v in values.items() if not key.endswith(("_ci_low", "_ci_high"))}
    head = "<th>value</th>" + ("<th>interval</th>" if lows else "")
    parts = [f"<h2>Metrics</h2><table><tr><th>metric</th>{head}<th>kind</th>"
             f"<th>direction</th><th>queries</th></tr>{_metric_rows(shown, counts, values if lows else None)}"
             "</table>"]
    if interval:
        parts.append(f"<p class=muted id=interval-note>{html.escape(_interval_words(interval))}</p>")
    return parts


def _figures_section(figures: Mapping[str, bytes]) -> list[str]:
    """The PNG figures inlined (base64) with their captions."""
    parts = ["<h2>Figures</h2><div class=grid>"]
    for caption, png in figures.items():
        data = base64.b64encode(png).decode("ascii")
        parts.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
                     f"<figcaption class=muted>{html.escape(caption)}</figcaption></figure>")
    parts.append("</div>")
    return parts


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def _interval_words(interval: Mapping[str, Any]) -> str:
    level = interval.get("ci_level", interval.get("level"))
    n_boot = interval.get("ci_n_boot", interval.get("n_boot"))
    unit = interval.get("ci_unit", interval.get("unit"))
    seed = interval.get("ci_seed", interval.get("seed"))
    method = interval.get("ci_method", interval.get("method", "percentile"))
    pct = f"{float(level):.0%}" if _finite(level) else str(level)
    return (f"Intervals: {pct} {method} cluster bootstrap, {n_boot} resamples of {unit}, seed {seed} "
            "(docs/spec.md section 3b).")


def _verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("yes" if ok else "no")


def conclusions(metrics: Mapping[str, Any], low: float = 0.8, high: float = 1.25) -> list[str]:
    """One line per gate-like figure present in ``metrics``: what it says against its usual bound,
    and, with an interval, whether the whole interval agrees (the conservative reading).

    * ``exposure_ratio``, ``exposure_ratio_worst``, ``disparate_treatment_ratio``,
      ``selection_ratio_at_<k>``: "inside 0.8-1.25: yes/no";
    * ``impact_ratio_at_<k>`` (worst category; per attribute ``.race``): "meets four-fifths: yes/no"."""
    out: list[str] = []

    def interval_of(key: str) -> tuple[float, float] | None:
        lo, hi = metrics.get(key + "_ci_low"), metrics.get(key + "_ci_high")
        return (float(lo), float(hi)) if _finite(lo) and _finite(hi) else None

    for key in ordered_metric_keys([k for k in metrics if not k.endswith(("_ci_low", "_ci_high"))]):
        v = metrics[key]
        if not _finite(v):
            continue
        v = float(v)
        iv = interval_of(key)
        base = key.split(".", 1)[0]
        if base.startswith("impact_ratio_at_"):
            line = f"{key} = {v:.3f}: meets four-fifths (>= {low:g}): {_verdict(v >= low)}"
            if iv:
                line += (f"; interval [{iv[0]:.3f}, {iv[1]:.3f}]: "
                         + ("meets it at this confidence: yes" if iv[0] >= low
                            else "meets it at this confidence: no (the interval reaches below the line)"))
            out.append(line)
        elif key in ("exposure_ratio", "exposure_ratio_worst", "disparate_treatment_ratio", "selection_ratio_at_10"):
            line = f"{key} = {v:.3f}: inside {low:g}-{high:g}: {_verdict(low <= v <= high)}"
            if iv:
                inside = low <= iv[0] and iv[1] <= high
                line += f"; interval [{iv[0]:.3f}, {iv[1]:.3f}] inside: {_verdict(inside)}"
            out.append(line)
    return out


def audit_table_html(table: Any) -> str:
    """The audit table (SPEC 3b) as HTML: one row per attribute and category (the intersection
    last), rates and ratios with their intervals as ``value [low, high]``, excluded rows muted."""
    cols = [c for c in ("n_candidates", "n_queries", "selected_at_k", "selection_rate_at_k", "impact_ratio_at_k",
                        "exposure", "exposure_ratio", "merit", "exposure_per_merit") if c in table.columns]
    head = "".join(f"<th>{html.escape(c)}</th>" for c in ["attribute", "category", *cols, "excluded"])
    rows = []
    for _, r in table.iterrows():
        cells = [f"<td>{html.escape(str(r['attribute']))}</td>", f"<td>{html.escape(str(r['category']))}</td>"]
        for c in cols:
            v = r[c]
            text = _fmt(float(v)) if _finite(v) else _fmt(v)
            lo, hi = r.get(c + "_ci_low"), r.get(c + "_ci_high")
            if _finite(lo) and _finite(hi):
                text += f" [{_fmt(float(lo))}, {_fmt(float(hi))}]"
            cells.append(f"<td class=num>{text}</td>")
        excluded = bool(r.get("excluded", False))
        cells.append(f"<td>{'yes (small category)' if excluded else 'no'}</td>")
        rows.append(f"<tr{' class=muted' if excluded else ''}>{''.join(cells)}</tr>")
    return ("<h2>Audit per category</h2><p class=muted>Pooled selection rate in the top k per category; impact "
            "ratio = a category's rate / the most-selected category's (the four-fifths rule asks >= 0.8). "
            "Excluded categories are below the minimum share: reported, left out of the worst-case figures."
            f"</p><table id=audit-table><tr>{head}</tr>{''.join(rows)}</table>")
