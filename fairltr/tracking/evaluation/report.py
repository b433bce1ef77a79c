"""A one-page, self-contained HTML fairness report (figures inlined as base64 PNG), so it
opens in the MLflow UI's artifact viewer without any other file.

What a reader sees first: the title (what was evaluated), one line of context (run, model, data),
the exposure headline (the compared categories' exposure relative to the reference category's,
naming both sides when the caller passes a :class:`fairltr.metrics.verdicts.BinaryView`; its
side of parity and its distance from parity as the metric registry defines them), the
conclusions (each naming the worst category), the audit per category (one table per attribute,
the intersection last, a verdict column), then the metric table with the fairness metrics first
and cut-offs in numeric order. Written to fit a 1,280 px browser window without horizontal
scrolling (tests/fairltr/tracking/test_browser.py renders it in Chromium).
"""

from __future__ import annotations

import base64
import html
import math
import re
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

from fairltr.metrics import HEADLINE_METRICS, direction_label, distance_from_ideal, metric_info  # the one headline list
from fairltr.metrics.verdicts import GATE_TOLERANCE, BinaryView, at_least, at_most, category_verdicts, worst_category
from fairltr.tracking.evaluation.plots import figure_to_png

__all__ = ["figure_to_png", "fairness_report_html", "metric_sort_key", "ordered_metric_keys", "HEADLINE_METRICS",
           "COUNT_SUFFIX", "split_counts", "exposure_headline", "conclusions", "audit_table_html"]

COUNT_SUFFIX = "_n_queries"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em;color:#222;max-width:1180px}
p,ul{max-width:980px}
h1{font-size:1.3em;margin-bottom:.2em} h2{font-size:1.05em;margin-top:1.2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#777;font-size:.8em}
.grid{display:flex;flex-wrap:wrap;gap:1em} .grid figure{margin:0} img{max-width:100%}
.headline{font-size:1.05em;padding:.5em .8em;background:#f6f8fa;border-left:4px solid #0969da}
td.kind-fairness{font-weight:600}
#conclusions li{margin:.15em 0}
h3{font-size:.95em;margin:1em 0 .3em} .table-wrap{overflow-x:auto;max-width:100%}
table.audit{table-layout:fixed;width:max-content} table.audit th{vertical-align:bottom;font-weight:600}
table.audit td{vertical-align:top} table.audit th,table.audit td{padding:2px 6px}
table.audit th.num{text-align:right} table.audit .cat{position:sticky;left:0;background:#fff;overflow-wrap:anywhere}
table.audit tr.excluded td{color:#777} .ci{display:block;color:#666;font-size:.85em;white-space:nowrap}
.verdict-pass{color:#1a7f37;font-weight:600} .verdict-fail{color:#cf222e;font-weight:600}
.verdict-excluded,.verdict-undefined{color:#777}
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


def exposure_headline(metrics: Mapping[str, Any], *, binary: BinaryView | None = None) -> str | None:
    """One sentence on ``exposure_ratio`` with the registry's parity semantics (target 1.0,
    both sides worse; distance = ``exposure_disparity`` = 1 - min(R, 1/R)), or None without it.

    ``binary`` names the two sides (the compared categories against the reference one, as
    :func:`fairltr.data.category_codes` codes the first group attribute); without it the words
    are those of integer 0/1 groups: the protected group (>= 1) against the non-protected (0)."""
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
    if binary is None:
        return (f"Exposure: the protected group receives {ratio:.3f} times the positional exposure of the "
                f"non-protected group ({side}; exposure_disparity {disparity:.3f}, 0 at parity). "
                f"exposure_ratio: {direction_label('exposure_ratio')}, both sides are worse.")
    verb = "receive" if binary.compared_is_plural else "receives"
    return (f"Exposure: {binary.compared_words()} {verb} {ratio:.3f} times the positional exposure of "
            f"{binary.reference_words()}; {side}; exposure_disparity {disparity:.3f}, 0 at parity. "
            f"exposure_ratio: {direction_label('exposure_ratio')}, both sides are worse.")


def _headline_html(metrics: Mapping[str, Any], binary: BinaryView | None = None) -> str:
    text = exposure_headline(metrics, binary=binary)
    if text is None:
        both = ("both groups" if binary is None or binary.protected_words
                else "both the reference category and a compared one")
        return ("<p id=exposure-headline class='headline muted'>Exposure: no exposure ratio "
                f"(no query holds {both}).</p>")
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
    binary: BinaryView | None = None,
    threshold: float = 0.8,
    confidence: bool = False,
    audit_k: int | None = None,
    conventions: Any = None,
) -> str:
    """The report as one HTML string: ``title``, a ``subtitle`` line (run, model, data), the
    exposure headline (its two sides named by ``binary``, :func:`exposure_headline`), the metric
    table (fairness first; direction, kind and the number of queries each average is over, from
    ``counts`` or ``<metric>_n_queries`` entries of ``metrics``), any extra ``tables`` (pandas
    DataFrames), the inlined figures and the params.

    With intervals (``<metric>_ci_low`` / ``_ci_high`` entries) the metric table shows
    ``value [low, high]`` and ``interval`` (level, resamples, seed, unit) is stated; ``audit`` (the
    audit table at cut-off ``audit_k``, SPEC 3b) adds the per-category tables with a verdict at
    ``threshold`` (on the interval's lower end with ``confidence`` when the table has intervals,
    :func:`audit_table_html`); a conclusion line is given for each gate-like figure, naming the
    worst category of each impact ratio (:func:`conclusions`). The metric table's note names the
    relevance ``conventions`` (:class:`~fairltr.metrics.conventions.RelevanceConventions`; None =
    the default): how a query without a relevant item counts."""
    values, companion = split_counts(metrics)
    counts = {**companion, **(counts or {})}
    parts = _page_start(title, subtitle)
    if values:
        parts.append(_headline_html(values, binary))
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    if values:
        parts.extend(_conclusions_section(values, audit, audit_k))
    if audit is not None:
        parts.append(audit_table_html(audit, threshold=threshold, confidence=confidence,
                                      k=_audit_cutoff(values, audit_k), interval=interval))
    if values:
        parts.extend(_metrics_section(values, counts, interval, conventions))
    parts.extend(_tables_section(tables or {}))
    if figures:
        parts.extend(_figures_section(figures))
    if params:
        parts.append(_params_section(params))
    parts.append("</body></html>")
    return "\n".join(parts)


def _page_start(title: str, subtitle: str | None) -> list[str]:
    """The page's head (title and style), its heading, the ``subtitle`` line if any and the
    line saying when the report was made (UTC)."""
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>"]
    if subtitle:
        parts.append(f"<p class=subtitle>{html.escape(subtitle)}</p>")
    parts.append(f"<p class=muted>fairltr fairness report · {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}</p>")
    return parts


def _tables_section(tables: Mapping[str, Any]) -> list[str]:
    """Each extra table (a pandas DataFrame) under its caption, values to 4 significant digits."""
    return [f"<h2>{html.escape(caption)}</h2>"
            + frame.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}", border=0)
            for caption, frame in tables.items()]


def _params_section(params: Mapping[str, Any]) -> str:
    """The parameters as a two-column table, sorted by name."""
    rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{_fmt(v)}</td></tr>" for k, v in sorted(params.items()))
    return f"<h2>Parameters</h2><table>{rows}</table>"


def _conclusions_section(values: Mapping[str, float], audit: Any = None, audit_k: int | None = None) -> list[str]:
    """The conclusion lines (:func:`conclusions`) as a list, none when there are none."""
    lines = conclusions(values, audit=audit, audit_k=audit_k)
    if not lines:
        return []
    return ["<h2>Conclusions</h2><ul id=conclusions>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"]


def _metrics_section(values: Mapping[str, float], counts: Mapping[str, Any],
                     interval: Mapping[str, Any] | None, conventions: Any = None) -> list[str]:
    """The metric table (an interval column when ``<metric>_ci_low`` entries exist), the line
    saying how the intervals were made and the one naming the relevance conventions."""
    from fairltr.metrics.conventions import RelevanceConventions

    lows = {key[: -len("_ci_low")] for key in values if key.endswith("_ci_low")}
    shown = {key: v for key, v in values.items() if not key.endswith(("_ci_low", "_ci_high"))}
    head = "<th>value</th>" + ("<th>interval</th>" if lows else "")
    parts = [f"<h2>Metrics</h2><table><tr><th>metric</th>{head}<th>kind</th>"
             f"<th>direction</th><th>queries</th></tr>{_metric_rows(shown, counts, values if lows else None)}"
             "</table>"]
    if interval:
        parts.append(f"<p class=muted id=interval-note>{html.escape(_interval_words(interval))}</p>")
    words = (conventions or RelevanceConventions()).describe()
    parts.append(f"<p class=muted id=conventions-note>{html.escape(words[0].upper() + words[1:])}.</p>")
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


_TOLERANCE_WORDS = f"{GATE_TOLERANCE:g}".replace("e-0", "e-")  # 1e-9
_IMPACT_KEY = re.compile(r"^impact_ratio_at_(\d+)(?:\.(.+))?$")


def _audit_cutoff(metrics: Mapping[str, Any], audit_k: int | None) -> int | None:
    """The audit table's cut-off: ``audit_k`` when given, else the one k of the
    ``impact_ratio_at_<k>`` metrics (None when there are none or several)."""
    if audit_k is not None:
        return int(audit_k)
    ks = {int(m.group(1)) for m in map(_IMPACT_KEY.match, metrics) if m}
    return ks.pop() if len(ks) == 1 else None


def _worst_words(audit: Any, attribute: str | None) -> str:
    """``; worst category: race = Native American, 0.441 [0.296, 0.511]`` (its own value and
    interval in the audit table), or "" when the audit table names none."""
    worst = worst_category(audit, attribute=attribute)
    if worst is None:
        return ""
    iv = ""
    if worst["ci_low"] is not None and worst["ci_high"] is not None:
        iv = f" [{worst['ci_low']:.3f}, {worst['ci_high']:.3f}]"
    return f"; worst category: {worst['attribute']} = {worst['category']}, {worst['value']:.3f}{iv}"


def conclusions(metrics: Mapping[str, Any], low: float = 0.8, high: float = 1.25, *, audit: Any = None,
                audit_k: int | None = None) -> list[str]:
    """One line per gate-like figure present in ``metrics``: what it says against its usual bound,
    and, with an interval, whether the whole interval agrees (the conservative reading).
    Comparisons use :data:`fairltr.metrics.verdicts.GATE_TOLERANCE` (an exact 4/5 meets >= 0.8).

    * ``exposure_ratio``, ``exposure_ratio_worst``, ``disparate_treatment_ratio``,
      ``selection_ratio_at_<k>``: "inside 0.8-1.25: yes/no";
    * ``impact_ratio_at_<k>`` (worst category; per attribute ``.race``): "meets four-fifths: yes/no",
      naming the worst category and its own interval from ``audit`` (the audit table at cut-off
      ``audit_k``; inferred when the metrics hold one k only)."""
    out: list[str] = []
    k_audit = _audit_cutoff(metrics, audit_k) if audit is not None else None

    def interval_of(key: str) -> tuple[float, float] | None:
        lo, hi = metrics.get(key + "_ci_low"), metrics.get(key + "_ci_high")
        return (float(lo), float(hi)) if _finite(lo) and _finite(hi) else None

    for key in ordered_metric_keys([k for k in metrics if not k.endswith(("_ci_low", "_ci_high"))]):
        v = metrics[key]
        if not _finite(v):
            continue
        v = float(v)
        iv = interval_of(key)
        impact = _IMPACT_KEY.match(key)
        if impact:
            worst = _worst_words(audit, impact.group(2)) if k_audit == int(impact.group(1)) else ""
            line = f"{key} = {v:.3f}: meets four-fifths (>= {low:g}): {_verdict(at_least(v, low))}{worst}"
            if iv:
                line += (f"; {'worst-case interval' if worst else 'interval'} [{iv[0]:.3f}, {iv[1]:.3f}]: "
                         + ("meets it at this confidence: yes" if at_least(iv[0], low)
                            else "meets it at this confidence: no (the interval reaches below the line)"))
            out.append(line)
        elif key in ("exposure_ratio", "exposure_ratio_worst", "disparate_treatment_ratio", "selection_ratio_at_10"):
            line = f"{key} = {v:.3f}: inside {low:g}-{high:g}: {_verdict(at_least(v, low) and at_most(v, high))}"
            if iv:
                inside = at_least(iv[0], low) and at_most(iv[1], high)
                line += f"; interval [{iv[0]:.3f}, {iv[1]:.3f}] inside: {_verdict(inside)}"
            out.append(line)
    return out


# (table column, header, what it is, width in em), in display order; the verdict follows the impact ratio
_AUDIT_COLUMNS = (
    ("n_candidates", "candidates", "candidates of the category, summed over queries", 6.5),
    ("n_queries", "queries", "queries in which the category appears", 5),
    ("selected_at_k", "selected in the top\u00a0k", "candidates of the category ranked within the top k", 6.5),
    ("selection_rate_at_k", "selection rate at\u00a0k", "selected in the top k / candidates (pooled)", 9.5),
    ("impact_ratio_at_k", "impact ratio at\u00a0k", "selection rate / the most-selected category's", 9.5),
    ("exposure", "exposure", "mean positional exposure 1/ln(1+rank) of the category's candidates", 6),
    ("exposure_ratio", "exposure ratio", "exposure / the most-exposed category's", 9.5),
    ("merit", "merit", "mean judgment of the category's candidates", 5.5),
    ("exposure_per_merit", "exposure per merit", "exposure / merit (disparate treatment)", 6.5),
)
"""Widths: 15 + 5.5 (verdict) + these <= 86 em, about 1,170 px at the table's 13.6 px font: within a
1,280 px window (the page's body is at most 1,180 px wide)."""
_CATEGORY_EM, _VERDICT_EM = 15, 5.5


def _cell(r: Any, column: str) -> str:
    v = r[column]
    text = _fmt(float(v)) if _finite(v) else _fmt(v)
    lo, hi = r.get(column + "_ci_low"), r.get(column + "_ci_high")
    if _finite(lo) and _finite(hi):
        text += f" <span class=ci>[{_fmt(float(lo))}, {_fmt(float(hi))}]</span>"
    return f"<td class=num>{text}</td>"


def _category_cell(category: Any) -> str:
    """The category name as written (a name too long for its column wraps: ``overflow-wrap:anywhere``)."""
    return f"<td class=cat>{html.escape(str(category))}</td>"


def _attribute_table(part: Any, cols: Sequence[tuple[str, str, str, float]], verdicts: Any) -> str:
    """One attribute's rows as a table (fixed layout and widths: every attribute's table has the
    same columns, aligned)."""
    head, widths = ["<th class=cat>category</th>"], [f"<col style='width:{_CATEGORY_EM}em'>"]
    for column, header, what, em in cols:
        head.append(f"<th class=num title='{html.escape(column)}: {html.escape(what)}'>{html.escape(header)}</th>")
        widths.append(f"<col style='width:{em:g}em'>")
        if column == "impact_ratio_at_k":
            head.append("<th title='verdict at the threshold stated above'>verdict</th>")
            widths.append(f"<col style='width:{_VERDICT_EM:g}em'>")
    rows = []
    for idx, r in part.iterrows():
        cells = [_category_cell(r["category"])]
        for column, *_ in cols:
            cells.append(_cell(r, column))
            if column == "impact_ratio_at_k":
                cells.append(f"<td class=verdict-{verdicts[idx]}>{verdicts[idx]}</td>")
        rows.append(f"<tr{' class=excluded' if bool(r.get('excluded', False)) else ''}>{''.join(cells)}</tr>")
    name = str(part["attribute"].iloc[0])
    return (f"<h3>{html.escape(name)}</h3><div class=table-wrap>"
            f"<table class=audit data-attribute='{html.escape(name)}'><colgroup>{''.join(widths)}</colgroup>"
            f"<thead><tr>{''.join(head)}</tr></thead>"
            f"<tbody>{''.join(rows)}</tbody></table></div>")


def audit_table_html(table: Any, *, threshold: float = 0.8, confidence: bool = False, k: int | None = None,
                     interval: Mapping[str, Any] | None = None) -> str:
    """The audit table (SPEC 3b) as HTML: one table per attribute (in table order, so the
    intersection last), one row per category, each value with its interval under it, excluded
    rows muted, and a verdict column (:func:`fairltr.metrics.verdicts.category_verdicts` at
    ``threshold``; on the interval's lower end when ``confidence`` and the table has intervals,
    else on the point value). ``k`` (the audit's cut-off) and ``interval`` (its level) are stated."""
    cols = [c for c in _AUDIT_COLUMNS if c[0] in table.columns]
    on_interval = confidence and "impact_ratio_at_k_ci_low" in table.columns
    verdicts = category_verdicts(table, threshold=threshold, confidence=on_interval)
    level = (interval or {}).get("ci_level", (interval or {}).get("level"))
    level_words = f" at {float(level):.0%}" if _finite(level) else ""
    if on_interval:
        read = (f"on the lower end of the category's impact-ratio interval{level_words} (confidence mode; the "
                "gate itself reads the worst case's own interval, see Conclusions)")
    elif confidence:
        read = "on the point values (confidence mode asked, but this audit has no intervals)"
    else:
        read = "on the point values"
    at_k = f" (k = {k})" if k is not None else ""
    intro = (f"Pooled selection rate in the top k{at_k} per category; impact ratio = a category's rate / the "
             f"most-selected category's. Verdict: impact ratio >= {threshold:g} {read}, within a relative "
             f"tolerance of {_TOLERANCE_WORDS}; excluded (small) categories hold less than the minimum share of the "
             "candidates: reported, greyed, left out of the worst-case figures. Intervals are shown under the values.")
    tables = [_attribute_table(table[table["attribute"] == name], cols, verdicts)
              for name in dict.fromkeys(table["attribute"])]
    return (f"<h2>Audit per category</h2><div id=audit-table><p class=muted>{html.escape(intro)}</p>"
            + "".join(tables) + "</div>")
