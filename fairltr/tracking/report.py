"""A one-page, self-contained HTML fairness report (figures inlined as base64 PNG), so it
opens in the MLflow UI's artifact viewer without any other file."""

from __future__ import annotations

import base64
import html
import io
import math
from datetime import datetime, timezone
from typing import Any, Mapping

from fairltr.metrics import direction_label, metric_info

__all__ = ["figure_to_png", "fairness_report_html"]

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;margin:1.2em;color:#222;max-width:980px}
h1{font-size:1.3em;margin-bottom:.2em} h2{font-size:1.05em;margin-top:1.2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.85em} td,th{padding:2px 10px;border-bottom:1px solid #eee;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums} .muted{color:#777;font-size:.8em}
.grid{display:flex;flex-wrap:wrap;gap:1em} .grid figure{margin:0} img{max-width:100%}
.good{color:#1a7f37} .bad{color:#cf222e}
"""


def figure_to_png(fig) -> bytes:
    """PNG bytes of a matplotlib figure (the figure is closed)."""
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "NaN" if math.isnan(v) else f"{v:.4g}"
    return html.escape(str(v))


def _metric_rows(metrics: Mapping[str, float]) -> str:
    rows = []
    for key in sorted(k for k in metrics if not k.endswith("_n_queries")):
        try:
            kind, arrow = metric_info(key).kind, direction_label(key)
        except KeyError:
            kind, arrow = "other", ""
        n = metrics.get(f"{key}_n_queries", "")
        rows.append(f"<tr><td>{html.escape(key)}</td><td class=num>{_fmt(metrics[key])}</td>"
                    f"<td>{kind}</td><td class=muted>{arrow}</td><td class=num>{_fmt(n)}</td></tr>")
    return "".join(rows)


def _verdict(metrics: Mapping[str, float]) -> str:
    ratio = metrics.get("exposure_ratio")
    if ratio is None or not isinstance(ratio, (int, float)) or math.isnan(ratio):
        return "<p class=muted>No exposure ratio (no query holds both groups).</p>"
    cls = "good" if ratio >= 0.9 else "bad"
    side = "less" if ratio < 1 else "at least as much"
    return (f"<p>The protected group receives <b class={cls}>{ratio:.3f}</b> times the positional "
            f"exposure of the non-protected group ({side} exposure; 1.0 = equal, SPEC §3: "
            f"v(r) = 1/ln(1+r), averaged per group and over queries).</p>")


def fairness_report_html(
    title: str,
    *,
    metrics: Mapping[str, float],
    params: Mapping[str, Any] | None = None,
    figures: Mapping[str, bytes] | None = None,
    notes: str | None = None,
    tables: Mapping[str, Any] | None = None,
) -> str:
    """The report as one HTML string: headline exposure ratio, metric table (direction, kind,
    number of queries each average is over), parameters, the inlined figures and any extra
    ``tables`` (pandas DataFrames, e.g. one row per run)."""
    parts = [f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
             f"<style>{_CSS}</style></head><body>",
             f"<h1>{html.escape(title)}</h1>",
             f"<p class=muted>fairltr fairness report · {datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}</p>"]
    if metrics:
        parts.append(_verdict(metrics))
    if notes:
        parts.append(f"<p>{html.escape(notes)}</p>")
    if metrics:
        parts.append("<h2>Metrics</h2><table><tr><th>metric</th><th>value</th><th>kind</th>"
                     f"<th>direction</th><th>queries</th></tr>{_metric_rows(metrics)}</table>")
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
