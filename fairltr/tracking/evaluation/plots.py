"""Figures logged to MLflow (matplotlib, Agg backend; each function returns a Figure).

One way to log a figure: :func:`figure_to_png` turns it into PNG bytes (and closes it); the
caller writes the bytes into the folder it uploads with one ``log_artifacts`` call.

* :func:`exposure_by_position` — the DELTR paper's Figure 2: share of compared ("protected")
  vs reference items in each rank bucket (positions 1..b, b+1..2b, ...), over all queries.
* :func:`relevance_fairness_scatter` — its Figure 1: relevance (x) vs exposure ratio (y) of runs.
* :func:`mrc_heatmap` — the L x L language-pair rank-correlation matrix (LaKDA's Figure 3).
* :func:`impact_ratio_chart` — SPEC 3b's audit: each category's impact ratio at k (pooled
  selection rate / the most-selected category's) with its interval, the four-fifths line at 0.8.
* :func:`training_curve` — objective terms per iteration (DELTR ``history``): the total and
  its two summands, the ListNet term and gamma x the exposure term.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.data import category_codes, check_group_column
from fairltr.errors import DataError
from fairltr.metrics.verdicts import binary_view, category_verdicts
from fairltr.tracking.models.ranks import aligned_ranks

__all__ = [
    "position_shares", "exposure_by_position", "relevance_fairness_scatter", "mrc_heatmap",
    "training_curve", "figure_to_png", "save_figure", "impact_ratio_chart",
]

PNG_DPI = 100

PROTECTED_COLOR = "#ff7f0e"     # the paper's orange (women / protected)
NONPROTECTED_COLOR = "#1f77b4"  # the paper's blue


def _pyplot():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def position_shares(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray,
    *,
    query: str = DEFAULT_COLUMNS.query,
    group: str = DEFAULT_COLUMNS.group,
    bucket: int | None = None,
    n_buckets: int = 10,
    reference: object = None,
) -> pd.DataFrame:
    """Per rank bucket: item counts and shares of the compared ("protected", code >= 1) and the
    reference ("non-protected", code 0) items, pooled over queries, with the section-3 binary
    coding of :func:`fairltr.data.category_codes`: integer categories as written (0 against
    >= 1) unless a ``reference`` is declared; text categories: the ``reference`` category (by
    default the most frequent one) against every other. Bucket b holds ranks
    ``(b-1)*bucket+1 .. b*bucket``; ``bucket=None`` takes ``ceil(longest list / n_buckets)``.
    Shares of a bucket sum to 1."""
    for col in (query, group):
        if col not in df.columns:
            raise DataError(f"column {col!r} not in the table; columns: {list(df.columns)}")
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(s) != len(df):
        raise DataError(f"got {len(s)} scores for {len(df)} rows")
    check_group_column(df, group, query=query)
    ranks = aligned_ranks(df, s, query)
    if bucket is None:
        bucket = max(1, math.ceil(int(ranks.max()) / max(1, n_buckets)))
    if bucket < 1:
        raise DataError(f"bucket must be >= 1, got {bucket}")
    b = (ranks - 1) // bucket
    prot = category_codes(df[group], reference)[0] >= 1
    n_b = int(b.max()) + 1
    n_prot = np.bincount(b, weights=prot.astype(np.float64), minlength=n_b)
    n_all = np.bincount(b, minlength=n_b).astype(np.float64)
    lo = np.arange(n_b) * bucket + 1
    return pd.DataFrame({
        "bucket": [f"{a}-{a + bucket - 1}" if bucket > 1 else str(a) for a in lo],
        "first_rank": lo,
        "n_protected": n_prot.astype(np.int64),
        "n_nonprotected": (n_all - n_prot).astype(np.int64),
        "share_protected": n_prot / n_all,
        "share_nonprotected": 1.0 - n_prot / n_all,
    })


def exposure_by_position(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray,
    *,
    query: str = DEFAULT_COLUMNS.query,
    group: str = DEFAULT_COLUMNS.group,
    bucket: int | None = None,
    n_buckets: int = 10,
    title: str | None = None,
    reference: object = None,
):
    """Stacked bars of the compared (bottom) / reference (top) share per rank bucket (DELTR
    Figure 2; the binary coding of :func:`position_shares`), with the compared share of the whole
    table as a dashed line at that height: a compared bar below the line means those categories
    are under-represented in that bucket. The legend names the categories of each side
    (:class:`fairltr.metrics.verdicts.BinaryView`): ``protected: sex = 1`` / ``non-protected:
    sex = 0`` for integer 0/1 groups, ``compared: the other 5 categories`` / ``reference: race =
    African-American`` for text categories."""
    shares = position_shares(df, scores, query=query, group=group, bucket=bucket, n_buckets=n_buckets,
                             reference=reference)
    view = binary_view(df[group], attribute=group, reference=reference)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 3.2))
    x = np.arange(len(shares))
    ax.bar(x, shares["share_protected"], color=PROTECTED_COLOR, label=view.compared_label())
    ax.bar(x, shares["share_nonprotected"], bottom=shares["share_protected"], color=NONPROTECTED_COLOR,
           label=view.reference_label())
    overall = float(shares["n_protected"].sum() / (shares["n_protected"].sum() + shares["n_nonprotected"].sum()))
    side = "protected" if view.protected_words else "compared"
    ax.axhline(overall, color="black", linestyle="--", linewidth=1, label=f"overall {side} share {overall:.2f}")
    ranged = any("-" in b for b in shares["bucket"])
    ax.set_xticks(x, shares["bucket"], rotation=45 if ranged and len(x) > 8 else 0, fontsize=8)
    ax.set_xlabel("rank positions")
    ax.set_ylabel("share of the bucket's items")
    ax.set_ylim(0, 1)
    default = ("Protected vs non-protected items by rank position" if view.protected_words
               else f"{group}: {view.reference} (reference) vs the other categories by rank position")
    ax.set_title(title or default)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def _runs_frame(runs: pd.DataFrame | Iterable[Mapping[str, Any]]) -> pd.DataFrame:
    if isinstance(runs, pd.DataFrame):
        frame = runs.copy()
        # mlflow.search_runs() columns are "metrics.<name>" / "params.<name>" / "tags.<name>"
        frame.columns = [c.split(".", 1)[1] if c.startswith(("metrics.", "params.")) else c
                         for c in frame.columns]
        if "tags.mlflow.runName" in frame.columns and "label" not in frame.columns:
            frame["label"] = frame["tags.mlflow.runName"]
        return frame
    return pd.DataFrame(list(runs))


_MARKERS = ("o", "s", "^", "v", "D", "P", "X", "<", ">", "h")


def relevance_fairness_scatter(
    runs: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    relevance: str = "kendall_tau",
    fairness: str = "exposure_ratio",
    label: str | None = "label",
    series: str | None = None,
    title: str | None = None,
    max_labels: int = 20,
):
    """Relevance (x) vs exposure ratio of the protected group (y) of several runs or settings
    (DELTR Figure 1). ``runs``: ``mlflow.search_runs()`` output or dicts with the metric keys;
    ``series`` (a column) joins the points of one approach by a line (e.g. varying gamma).

    Points are named in the legend (one colour and marker per point, up to ``max_labels``
    points), never by text next to the point, which overlaps as soon as two settings are close."""
    frame = _runs_frame(runs)
    for col in (relevance, fairness):
        if col not in frame.columns:
            raise DataError(f"metric {col!r} missing from the runs; columns: {list(frame.columns)}")
    frame = frame[np.isfinite(pd.to_numeric(frame[relevance], errors="coerce"))
                  & np.isfinite(pd.to_numeric(frame[fairness], errors="coerce"))]
    plt = _pyplot()
    named = bool(label) and label in frame.columns and 0 < len(frame) <= max_labels
    fig, ax = plt.subplots(figsize=(7.2 if named else 5, 4))
    groups = frame.groupby(series, sort=False) if series and series in frame.columns else [(None, frame)]
    idx = 0
    for gi, (name, part) in enumerate(groups):
        line_color = None if name is None else f"C{gi % 10}"
        if name is not None:
            ax.plot(part[relevance].astype(float), part[fairness].astype(float), linestyle="-", color=line_color,
                    alpha=0.6, label=f"{series}={name}")
        for _, row in part.iterrows():
            color = line_color or (f"C{idx % 10}" if named else "C0")
            ax.plot(float(row[relevance]), float(row[fairness]), linestyle="none", color=color,
                    marker=_MARKERS[idx % len(_MARKERS)] if named else "o", label=str(row[label]) if named else None)
            idx += 1
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(relevance)
    ax.set_ylabel(f"{fairness} (protected / non-protected)")
    ax.set_title(title or "Relevance vs exposure")
    if named or (series and series in frame.columns):
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    return fig


def mrc_heatmap(matrix: pd.DataFrame, *, title: str | None = None, vmin: float = -100, vmax: float = 100,
                k: int | None = None):
    """Heat map of an L x L language-pair matrix (rows/columns = languages, values x100): every
    cell's value printed (white on dark cells), both axes titled, the colour bar labelled with
    what its ends mean (100: the two languages rank the same top-k; about -86: disjoint top-k)."""
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1]:
        raise DataError("mrc_heatmap expects a square DataFrame indexed and labelled by language")
    plt = _pyplot()
    n = matrix.shape[0]
    side = max(5.0, 1.6 + 0.55 * n)
    fig, ax = plt.subplots(figsize=(side + 1.6, side), dpi=110)
    values = matrix.to_numpy(dtype=np.float64)
    im = ax.imshow(values, cmap="RdBu", vmin=vmin, vmax=vmax)
    fontsize = 10 if n <= 8 else 9 if n <= 16 else 8
    value_size = 9 if n <= 8 else 8 if n <= 16 else 6
    ax.set_xticks(range(n), [str(c) for c in matrix.columns], rotation=90 if n > 8 else 0, fontsize=fontsize)
    ax.set_yticks(range(n), [str(i) for i in matrix.index], fontsize=fontsize)
    ax.set_xlabel("language of the parallel query", fontsize=10)
    ax.set_ylabel("query language", fontsize=10)
    if n <= 24:
        for i in range(n):
            for j in range(n):
                if np.isfinite(values[i, j]):
                    dark = abs(values[i, j]) > 0.6 * max(abs(vmin), abs(vmax))
                    ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=value_size,
                            color="white" if dark else "black")
    bar = fig.colorbar(im, ax=ax, fraction=0.046, pad=0.04)
    name = f"MRC{'@' + str(k) if k else ''}"
    bar.set_label(f"{name} x100", fontsize=9)
    disjoint = " (about -86: disjoint top-5 lists)" if k == 5 else ""
    ax.set_title(title or "MRC by language pair", fontsize=11)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.text(0.5, 0.015, f"{name} x100: 100 (blue) = both languages get the same ranking;\n"
             f"below 0 (red) = they retrieve different documents{disjoint}", ha="center", fontsize=8)
    return fig


def training_curve(history: Sequence[Mapping[str, float]], *, gamma: float | None = None, title: str | None = None):
    """The objective per iteration: ``total`` = ``listnet`` + gamma x ``exposure`` (DELTR's loss).

    Top panel: the total (black, dashed, drawn over) and the ListNet term; bottom panel: the
    fairness term as it enters the total, gamma x exposure (with ``gamma``; without it the raw
    exposure term, labelled unweighted). Two panels, because the fairness term is often orders
    of magnitude below the ListNet term and a shared axis hides one line under the other.
    A PLRank history (``dcg``, ``disparity``) is drawn the same way: E[DCG] on top, lambda x
    disparity below (the total is E[DCG] - lambda x disparity, maximised)."""
    frame = pd.DataFrame(list(history))
    if frame.empty or "iteration" not in frame.columns:
        raise DataError("training history is empty or lacks 'iteration'")
    plt = _pyplot()
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(6.4, 4.2), sharex=True, height_ratios=(3, 2))
    it = frame["iteration"]
    if "dcg" in frame.columns and "disparity" in frame.columns:  # a PLRank policy: total = dcg - lambda x disparity
        frame = frame.rename(columns={"dcg": "listnet", "disparity": "exposure"})
        names = ("E[DCG]", "lambda", "disparity")
    else:
        names = ("listnet", "gamma", "exposure")
    if "listnet" in frame.columns:
        top.plot(it, frame["listnet"], color="C0", linewidth=2.2, label=names[0])
    if "total" in frame.columns:
        top.plot(it, frame["total"], color="black", linestyle="--", linewidth=1.2, label="total", zorder=3)
    top.set_ylabel("objective\n(summed over queries)", fontsize=8)
    top.legend(fontsize=7)
    if "exposure" in frame.columns:
        w, term = names[1], names[2]
        if gamma is not None:
            bottom.plot(it, float(gamma) * frame["exposure"], color="C3", label=f"{w} x {term} ({w}={gamma:g})")
        else:
            bottom.plot(it, frame["exposure"], color="C3", label=f"{term} term (unweighted)")
        bottom.legend(fontsize=7)
    bottom.set_ylabel("fairness term", fontsize=8)
    bottom.set_xlabel("iteration")
    top.set_title(title or "Training objective")
    fig.tight_layout()
    return fig


def figure_to_png(fig, dpi: int = PNG_DPI) -> bytes:
    """PNG bytes of a matplotlib figure; the figure is closed (its memory released)."""
    import io

    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=dpi)
    finally:
        _pyplot().close(fig)
    return buf.getvalue()


def save_figure(fig, path) -> None:
    """Write ``fig`` as PNG (:func:`figure_to_png`) to ``path`` and release its memory."""
    from pathlib import Path

    Path(path).write_bytes(figure_to_png(fig))


_VERDICT_COLORS = {"pass": "#1f6feb", "fail": "#cf222e", "excluded": "#bbbbbb", "undefined": "#bbbbbb"}
_VERDICT_NAMES = {"pass": "at or above the line", "fail": "below the line", "excluded": "excluded (small category)",
                  "undefined": "undefined (no selection)"}


def _interval_ends(rows: pd.DataFrame, ratio: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(low, high, has_interval) of each row's ``impact_ratio_at_k`` interval (NaN without one)."""
    if {"impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"} <= set(rows.columns):
        lo = pd.to_numeric(rows["impact_ratio_at_k_ci_low"], errors="coerce").to_numpy(dtype=float)
        hi = pd.to_numeric(rows["impact_ratio_at_k_ci_high"], errors="coerce").to_numpy(dtype=float)
    else:
        lo = hi = np.full(len(rows), np.nan)
    return lo, hi, np.isfinite(lo) & np.isfinite(hi) & np.isfinite(ratio)


def impact_ratio_chart(table: pd.DataFrame, *, k: int = 10, threshold: float = 0.8, title: str | None = None,
                       confidence: bool = False):
    """Horizontal bars of each audited category's ``impact_ratio_at_k`` (one block per attribute,
    the intersection last, blocks separated by a thin line), its bootstrap interval as error bars
    when the table has ``impact_ratio_at_k_ci_low`` / ``_ci_high``, and the line at ``threshold``.
    Colours follow :func:`fairltr.metrics.verdicts.category_verdicts` (with its tolerance; on the
    interval's lower end with ``confidence``): red below the line, blue at or above, grey and
    hatched for excluded (small) categories.

    Layout: each value is printed right of its interval's end (or of its bar), the x axis reaches
    past the largest interval end, and the legend sits below the axes, so no label covers an
    error bar, no interval is clipped and the legend hides no bar."""
    from matplotlib.patches import Patch

    plt = _pyplot()
    rows = table.reset_index(drop=True)
    n = len(rows)
    verdicts = category_verdicts(rows, threshold=threshold, confidence=confidence).to_numpy()
    ratio = pd.to_numeric(rows["impact_ratio_at_k"], errors="coerce").to_numpy(dtype=float)
    lo, hi, has_iv = _interval_ends(rows, ratio)
    ends = np.where(has_iv, np.fmax(hi, ratio), ratio)  # where a row's drawing ends on the x axis
    right = max(1.1, float(np.nanmax(ends)) if np.isfinite(ends).any() else 0.0)
    xmax = right * 1.13 + 0.02  # room for the value labels beyond the farthest interval end
    fig, ax = plt.subplots(figsize=(9.0, max(2.6, 0.3 * n + 1.9)))
    y = np.arange(n)[::-1]
    bars = ax.barh(y, np.nan_to_num(ratio), color=[_VERDICT_COLORS[v] for v in verdicts], height=0.65)
    for bar, v in zip(bars, verdicts):
        if v == "excluded":
            bar.set_hatch("//")
    handles = [Patch(facecolor=_VERDICT_COLORS[v], edgecolor="#555555" if v == "excluded" else _VERDICT_COLORS[v],
                     hatch="//" if v == "excluded" else None, label=_VERDICT_NAMES[v])
               for v in ("pass", "fail", "excluded") if (verdicts == v).any()]
    if has_iv.any():
        err = np.vstack([np.clip(ratio - lo, 0, None), np.clip(hi - ratio, 0, None)])
        handles.append(ax.errorbar(ratio[has_iv], y[has_iv], xerr=err[:, has_iv], fmt="none", ecolor="black",
                                   elinewidth=1, capsize=3, label="bootstrap interval"))
    line_name = "four-fifths line" if abs(threshold - 0.8) < 1e-12 else "threshold"
    handles.append(ax.axvline(threshold, color="#cf222e", linestyle="--", linewidth=1.2,
                              label=f"{line_name} ({threshold:g})"))
    attrs = rows["attribute"].astype(str).to_numpy()
    for i in range(1, n):
        if attrs[i] != attrs[i - 1]:
            ax.axhline(y[i] + 0.5, color="#999999", linewidth=0.6)
    labels = [f"{a} = {c}" + (" (excluded)" if v == "excluded" else "")
              for a, c, v in zip(attrs, rows["category"].astype(str), verdicts)]
    ax.set_yticks(y, labels, fontsize=8)
    ax.set_ylim(-0.6, n - 0.4)
    pad = 0.012 * xmax
    for yy, r, end in zip(y, ratio, ends):
        text, at = (f"{r:.2f}", end + pad) if np.isfinite(r) else ("undefined", pad)
        ax.text(at, yy, text, va="center", ha="left", fontsize=7)
    ax.set_xlim(0, xmax)
    ax.set_xlabel(f"impact ratio at {k} (category's selection rate / the highest category's)")
    ax.set_title(title or f"Impact ratio at {k} per category (four-fifths rule: at least {threshold:g})")
    legend_in = 0.35  # inches under the axes' tick labels and x label, for the legend
    fig.legend(handles=handles, fontsize=7, loc="lower center", ncol=len(handles), frameon=False,
               bbox_to_anchor=(0.5, 0.0))
    fig.tight_layout(rect=(0, legend_in / fig.get_figheight(), 1, 1))
    return fig
