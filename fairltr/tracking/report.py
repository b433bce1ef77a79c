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

from fairltr.metrics import direction_label, distance_from_ideal, metric_info
from fairltr.tracking.plots import figure_to_png

__all__ = ["figure_to_png", "fairness_report_html", "metric_sort_key", "ordered_metric_keys", "HEADLINE_METRICS",
           "COUNT_SUFFIX", "split_counts", "exposure_headline"]

COUNT_SUFFIX = "_n_queries"
# the short set a reader looks for first, in this order (present keys only)
HEADLINE_METRICS = ("exposure_ratio", "exposure_disparity", "exposure_shortfall", "selection_ratio_at_10",
                    "ndcg_at_10", "kendall_tau", "mrc_at_5", "mrr_at_100")

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em;color:#222;max-width:980px}
h1{font-size:1.3em;margin-bottom:.2em} h2{font-size:1.05em;margin-top:1.2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#777;font-size:.8em}
.grid{display:flex;flex-wrap:wrap;gap:1em} .grid figure{margin:0} img{max-width:100%}
.headline{font-size:1.05em;padding:.5em .8em;background:#f6f8fa;border-left:4px solid #0969da}
td.kind-fairness{font-weight:600}
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


def _metric_rows(values: Mapping[str, Any], counts: Mapping[str, Any]) -> str:
    rows = []
    for key in ordered_metric_keys(list(values)):
        try:
            kind, arrow = metric_info(key).kind, direction_label(key)
        except KeyError:
            kind, arrow = "other", ""
        rows.append(f"<tr><td>{html.escape(key)}</td><td class=num>{_fmt(values[key])}</td>"
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
) -> str:
    """The report as one HTML string: ``title``, a ``subtitle`` line (run, model, data), the
    exposure headline, the metric table (fairness first; direction, kind and the number of
    queries each average is over, from ``counts`` or ``<metric>_n_queries`` entries of
    ``metrics``), any extra ``tables`` (pandas DataFrames), the inlined figures and the params."""
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
        parts.append("<h2>Metrics</h2><table><tr><th>metric</th><th>value</th><th>kind</th>"
                     f"<th>direction</th><th>queries</th></tr>{_metric_rows(values, counts)}</table>")
    for caption, frame in (tables or {}).items():
        parts.append(f"<h2>{html.escape(caption)}</h2>"
                     + frame.to_html(index=False, escape=True, float_format=lambda v: f"{v:.4g}", border=0))
    if figures:
        parts.append("<h2>Figures</h2><div class=grid>")
        for caption, png in figures.items():
            data = base64.b64encode(png).decode("ascii")
            parts.append(f"<figure><img alt='{html.escape(caption)}' src='data:image/png;base64,{data}'>"
                         f"<figcaption class=muted>{html.escape(caption)}</figcaption></figure>")
        parts.append("</div>")
    if params:
        rows = "".join(f"<tr><td>{html.escape(str(k))}</td><td>{_fmt(v)}</td></tr>" for k, v in sorted(params.items()))
        parts.append(f"<h2>Parameters</h2><table>{rows}</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
