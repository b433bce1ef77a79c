"""``bias_audit.html``: the LL144 summary as one page in the layout of a published bias-audit
summary (audit date, data source and period, the tool, the number of applicants, then per
attribute a table of categories with applicants, rate and impact ratio, unknown counts and
excluded categories with their reason). Self-contained (no script, no external file), readable
at 1,280 px."""

from __future__ import annotations

from html import escape
from typing import Any, Mapping

__all__ = ["summary_html"]

_STYLE = """body{font-family:system-ui,Segoe UI,Arial,sans-serif;max-width:1100px;margin:24px auto;padding:0 16px;
color:#1a1a1a;line-height:1.45}h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.2em;margin-top:28px}
table{border-collapse:collapse;width:100%;margin:8px 0 4px}th,td{border:1px solid #bbb;padding:6px 10px;
text-align:right}th:first-child,td:first-child,th:last-child,td:last-child{text-align:left}td{white-space:nowrap}
td:last-child{white-space:normal}th{background:#eef1f5}
tr.low td{background:#fdecea}tr.excl td{color:#666;font-style:italic}dl{display:grid;
grid-template-columns:max-content 1fr;gap:4px 16px}dt{font-weight:600}dd{margin:0}.note{color:#444;font-size:.92em}"""


def _pct(value: Any) -> str:
    return "" if value is None else f"{100 * value:.1f}%"


def _ratio(value: Any) -> str:
    return "" if value is None else f"{value:.3f}"


def _interval(row: Mapping[str, Any]) -> str:
    if row.get("ci_low") is None:
        return ""
    return f"{row['ci_low']:.3f} to {row['ci_high']:.3f}"


def _interval_text(interval: Mapping[str, Any]) -> str:
    """``95% percentile cluster bootstrap, 2,000 resamples of queries (seed 0)``."""
    level = interval.get("level")
    head = f"{100 * level:g}% " if isinstance(level, (int, float)) else ""
    return (f"{head}{interval.get('method', 'percentile')} cluster bootstrap, {interval.get('n_boot', 0):,} resamples "
            f"of {interval.get('unit', 'queries')} (seed {interval.get('seed')}), for the impact ratio")


def _table(name: str, block: Mapping[str, Any], rate_name: str, ci: bool) -> str:
    head = ["Category", "Applicants", rate_name, "Impact ratio"] + (["Interval"] if ci else []) + ["Note"]
    lines = [f"<h2>{escape(name)}</h2>", "<table><thead><tr>" + "".join(f"<th>{h}</th>" for h in head)
             + "</tr></thead><tbody>"]
    for r in block["rows"]:
        reason = r["exclusion_reason"]
        note = (f"excluded from the verdict and the reference rate: {reason}" if reason else
                "under the minimum share, kept in the ratios (no reason given)" if r["small"] else "")
        cls = "excl" if r["excluded"] else "low" if r["below_four_fifths"] else ""
        cells = [escape(r["category"]), f"{r['n']:,}", _pct(r["rate"]), _ratio(r["impact_ratio"])]
        cells += [_interval(r)] if ci else []
        cells.append(escape(note))
        lines.append(f'<tr class="{cls}">' + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    lines.append("</tbody></table>")
    lines.append(f'<p class="note">Individuals of unknown category (not included in the calculations): '
                 f"{block['unknown_count']:,}</p>")
    return "\n".join(lines)


def summary_html(summary: Mapping[str, Any]) -> str:
    """The page of a ``bias_audit.json`` summary (:mod:`fairltr.workflows.bias_audit`)."""
    scoring = summary["method"] == "scoring"
    rate_name = "Scoring rate" if scoring else "Selection rate"
    model = summary.get("model")
    tool = f"{model['name']} version {model['version']} (digest {model['digest'][:16]}...)" if model else "not named"
    how = (f"share of each category scoring above the median score of the "
           f"{'whole audited sample' if summary.get('median') == 'whole' else 'ranking (per query)'}" if scoring
           else f"share of each category ranked in the top {summary.get('k')} of its ranking")
    facts = [("Date of audit", summary["audit_date"]), ("Data source", summary["data_source"]["path"]),
             ("Data sha256", summary["data_source"]["sha256"]),
             ("Period", f"{summary.get('period_start') or 'not given'} to {summary.get('period_end') or 'not given'}"),
             ("Tool", tool), ("First used", summary.get("first_used") or "not recorded"),
             ("Number of individuals assessed", f"{summary['n_individuals']:,}"), (rate_name, how),
             ("Impact ratio", "the category's rate over the highest rate among the attribute's categories")]
    ci = any(r.get("ci_low") is not None for b in summary["attributes"].values() for r in b["rows"])
    body = [f"<h1>Summary of bias audit results</h1><p class=\"note\">NYC Local Law 144 (6 RCNY 5-301, 5-304); "
            f"computed by fairltr {escape(str(summary.get('fairltr_version', '')))}</p><dl>"]
    body += [f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in facts]
    body.append("</dl>")
    for name, block in summary["attributes"].items():
        title = "Intersectional categories (" + name.replace(":", " and ") + ")" if ":" in name else name.capitalize()
        body.append(_table(title, block, rate_name, ci))
    if ci:
        body.append(f'<p class="note">Intervals: {escape(_interval_text(summary.get("interval") or {}))}</p>')
    body.append('<p class="note">Rows shaded red: impact ratio under 0.8. Rows in grey italics: categories '
                "excluded from the verdict and from the reference rate, for the reason given (their counts, "
                "rates and ratios are still shown). "
                "This summary was computed by software; it is not itself an independent audit.</p>")
    return ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
            "content=\"width=device-width, initial-scale=1\"><title>Bias audit summary</title><style>" + _STYLE
            + "</style></head><body>" + "\n".join(body) + "</body></html>\n")
