"""What a person reads about a retriever's fairness across languages: the MLflow run and
version description (Markdown) and a self-contained HTML report, both built from one
evaluation (``fairltr.workflows.retriever.report_of``: the headline metrics x100, the
per-language table and the MRC pair matrix).

The verdict names MRC@k (cross-language consistency of the top k, 100 = the same ranking in
every language), the least consistent language pair, and MRR@k (relevance), with a one-line
conclusion.
"""

from __future__ import annotations

import html
import math
from typing import Any, Mapping

import pandas as pd

__all__ = ["worst_pair", "retrieval_verdict", "retrieval_description", "retrieval_report_html"]


def _matrix(metrics: Mapping[str, Any]) -> pd.DataFrame | None:
    m = metrics.get("mrc_matrix")
    if m is None:
        return None
    frame = m if isinstance(m, pd.DataFrame) else pd.DataFrame(m)
    return frame if frame.shape[0] and frame.shape[0] == frame.shape[1] else None


def worst_pair(matrix: pd.DataFrame | None) -> tuple[str, str, float] | None:
    """The language pair (row, column) with the lowest finite off-diagonal MRC, or None."""
    if matrix is None:
        return None
    best: tuple[str, str, float] | None = None
    for i, a in enumerate(matrix.index):
        for j, b in enumerate(matrix.columns):
            v = float(matrix.iloc[i, j])
            if i != j and math.isfinite(v) and (best is None or v < best[2]):
                best = (str(a), str(b), v)
    return best


def _fmt(x: Any) -> str:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return "n/a"
    return f"{v:.1f}" if math.isfinite(v) else "n/a"


def retrieval_verdict(metrics: Mapping[str, Any], k: int = 100, mrc_k: int = 5) -> list[str]:
    """Three lines: MRC@k with its meaning, the worst language pair, MRR@k (with the weakest
    query language), then the conclusion."""
    mrc = metrics.get(f"mrc_at_{mrc_k}")
    mrr = metrics.get(f"mrr_at_{k}")
    lines = [f"MRC@{mrc_k} = {_fmt(mrc)} (x100; 100 = every language gets the same top {mrc_k}, "
             f"below 0 = the languages' top {mrc_k} lists disagree)"]
    pair = worst_pair(_matrix(metrics))
    if pair is not None:
        lines.append(f"least consistent language pair: {pair[0]}-{pair[1]} (MRC@{mrc_k} {pair[2]:.1f})")
    weakest = ""
    per_lang = metrics.get("per_language")
    if isinstance(per_lang, Mapping) and isinstance(per_lang.get(f"mrr_at_{k}"), Mapping):
        by_lang = {str(a): float(v) for a, v in per_lang[f"mrr_at_{k}"].items()
                   if str(a) != "all" and math.isfinite(float(v))}
        if by_lang:
            low = min(by_lang, key=by_lang.get)
            weakest = f"; lowest language: {low} ({by_lang[low]:.1f})"  # "lowest for it" read as a pronoun
    lines.append(f"MRR@{k} = {_fmt(mrr)} (x100, relevance){weakest}")
    try:
        value = float(mrc)
    except (TypeError, ValueError):
        value = float("nan")
    if not math.isfinite(value):
        conclusion = f"Conclusion: MRC@{mrc_k} could not be computed (no item has two languages)."
    elif value < 0:
        conclusion = (f"Conclusion: not consistent across languages: what a user finds depends on the language "
                      f"they ask in (MRC@{mrc_k} {value:.1f} < 0).")
    elif value < 50:
        conclusion = f"Conclusion: partly consistent across languages (MRC@{mrc_k} {value:.1f} of 100)."
    else:
        conclusion = f"Conclusion: largely consistent across languages (MRC@{mrc_k} {value:.1f} of 100)."
    return [*lines, conclusion]


def retrieval_description(title: str, metrics: Mapping[str, Any], k: int = 100, mrc_k: int = 5, *,
                          params: Mapping[str, Any] | None = None, split: str | None = None) -> str:
    """Markdown for the MLflow run page or a registered version: the verdict, then the
    training parameters (when given), each once."""
    *facts, conclusion = retrieval_verdict(metrics, k, mrc_k)
    where = f" on the {split} split" if split else ""
    out = [f"**{title}**{where}", "", *[f"- {line}" for line in facts], "", conclusion]
    if params:
        out += ["", "Training: " + ", ".join(f"{key}={value}" for key, value in params.items())]
    return "\n".join(out)


def _colour(value: float, vmax: float = 100.0) -> str:
    """The heat map's RdBu scale: red below 0, white at 0, blue above."""
    if not math.isfinite(value):
        return "#eeeeee"
    t = max(-1.0, min(1.0, value / vmax))
    if t >= 0:
        r, g, b = (int(255 - t * (255 - 33)), int(255 - t * (255 - 102)), int(255 - t * (255 - 172)))
    else:
        t = -t
        r, g, b = (int(255 - t * (255 - 178)), int(255 - t * (255 - 24)), int(255 - t * (255 - 43)))
    return f"#{r:02x}{g:02x}{b:02x}"


def retrieval_report_html(title: str, metrics: Mapping[str, Any], k: int = 100, mrc_k: int = 5, *,
                          params: Mapping[str, Any] | None = None) -> str:
    """A self-contained HTML page: the verdict and conclusion, the per-language table, the MRC
    pair matrix (axis titles, every value, the colour scale explained) and the parameters."""
    e = html.escape
    *facts, conclusion = retrieval_verdict(metrics, k, mrc_k)
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title><style>"
             "body{font-family:system-ui,sans-serif;margin:2em;max-width:70em;color:#222}"
             "table{border-collapse:collapse;margin:1em 0}td,th{border:1px solid #bbb;padding:.3em .6em;"
             "text-align:right}th{background:#f3f3f3}.conclusion{font-weight:bold;font-size:1.1em}"
             ".scale span{display:inline-block;width:5em;text-align:center;padding:.2em}</style></head><body>",
             f"<h1>{e(title)}</h1>", "<ul>", *[f"<li>{e(x)}</li>" for x in facts], "</ul>",
             f"<p class='conclusion'>{e(conclusion)}</p>"]
    summary = [(key, metrics[key]) for key in (f"mrr_at_{k}", f"recall_at_{k}", f"mrc_at_{mrc_k}",
                                                f"mrc_at_{mrc_k}_intersection", f"overlap_at_{mrc_k}",
                                                f"rbo_at_{mrc_k}") if key in metrics]
    if summary:
        parts.append("<h2>Headline metrics (x100)</h2><table><tr>" + "".join(f"<th>{e(a)}</th>" for a, _ in summary)
                     + "</tr><tr>" + "".join(f"<td>{_fmt(v)}</td>" for _, v in summary) + "</tr></table>")
    per_lang = metrics.get("per_language")
    if per_lang is not None:
        frame = per_lang if isinstance(per_lang, pd.DataFrame) else pd.DataFrame(per_lang)
        parts.append("<h2>Per query language (x100)</h2><table><tr><th>language</th>"
                     + "".join(f"<th>{e(str(c))}</th>" for c in frame.columns) + "</tr>")
        for lang, row in frame.iterrows():
            parts.append(f"<tr><th>{e(str(lang))}</th>" + "".join(
                f"<td>{int(v) if c == 'n_queries' and math.isfinite(float(v)) else _fmt(v)}</td>"  # a count: 50, not 50.0
                for c, v in row.items()) + "</tr>")
        parts.append("</table>")
    matrix = _matrix(metrics)
    if matrix is not None:
        parts.append(f"<h2>MRC@{mrc_k} by language pair</h2><p>Rows: the query language; columns: the language "
                     f"of its parallel query. Each cell is the mean rank correlation (x100) of the two top-{mrc_k} "
                     f"lists over the items both languages have.</p>")
        parts.append("<table><tr><th>query language \\ parallel</th>"
                     + "".join(f"<th>{e(str(c))}</th>" for c in matrix.columns) + "</tr>")
        for i, lang in enumerate(matrix.index):
            cells = []
            for j in range(matrix.shape[1]):
                v = float(matrix.iloc[i, j])
                ink = ";color:#fff" if math.isfinite(v) and abs(v) > 60 else ""
                cells.append(f"<td style='background:{_colour(v)}{ink}'>{_fmt(v)}</td>")
            parts.append(f"<tr><th>{e(str(lang))}</th>{''.join(cells)}</tr>")
        parts.append("</table><p class='scale'>Colour scale: "
                     + "".join(f"<span style='background:{_colour(v)}'>{v:g}</span>" for v in (-100, -50, 0, 50, 100))
                     + f" &mdash; blue: the two languages rank the same documents at the top; white: unrelated; "
                       f"red: they retrieve different documents.</p>")
    if params:
        parts.append("<h2>Training parameters</h2><table>" + "".join(
            f"<tr><th>{e(str(a))}</th><td style='text-align:left'>{e(str(v))}</td></tr>" for a, v in params.items())
            + "</table>")
    parts.append("</body></html>")
    return "\n".join(parts)
