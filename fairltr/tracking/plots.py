"""Figures logged to MLflow (matplotlib, Agg backend; each function returns a Figure).

* :func:`exposure_by_position` — the DELTR paper's Figure 2: share of protected vs
  non-protected items in each rank bucket (positions 1..b, b+1..2b, ...), over all queries.
* :func:`relevance_fairness_scatter` — its Figure 1: relevance (x) vs exposure ratio (y) of runs.
* :func:`mrc_heatmap` — the L x L language-pair rank-correlation matrix (LaKDA's Figure 3).
* :func:`training_curve` — objective terms per iteration (DELTR ``history``).
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import DataError
from fairltr.tracking.ranks import aligned_ranks

__all__ = [
    "position_shares", "exposure_by_position", "relevance_fairness_scatter", "mrc_heatmap",
    "training_curve", "save_figure",
]

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
    query: str = "query_id",
    group: str = "protected",
    bucket: int | None = None,
    n_buckets: int = 10,
) -> pd.DataFrame:
    """Per rank bucket: item counts and shares of the protected (group >= 1) and non-protected
    (group 0) items, pooled over queries. Bucket b holds ranks ``(b-1)*bucket+1 .. b*bucket``;
    ``bucket=None`` takes ``ceil(longest list / n_buckets)``. Shares of a bucket sum to 1."""
    for col in (query, group):
        if col not in df.columns:
            raise DataError(f"column {col!r} not in the table; columns: {list(df.columns)}")
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(s) != len(df):
        raise DataError(f"got {len(s)} scores for {len(df)} rows")
    ranks = aligned_ranks(df, s, query)
    if bucket is None:
        bucket = max(1, math.ceil(int(ranks.max()) / max(1, n_buckets)))
    if bucket < 1:
        raise DataError(f"bucket must be >= 1, got {bucket}")
    b = (ranks - 1) // bucket
    prot = df[group].to_numpy() >= 1
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
    query: str = "query_id",
    group: str = "protected",
    bucket: int | None = None,
    n_buckets: int = 10,
    title: str | None = None,
):
    """Stacked bars of the protected / non-protected share per rank bucket (DELTR Figure 2),
    with the protected share of the whole table as a dashed reference line."""
    shares = position_shares(df, scores, query=query, group=group, bucket=bucket, n_buckets=n_buckets)
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(8.5, 3.2))
    x = np.arange(len(shares))
    ax.bar(x, shares["share_nonprotected"], color=NONPROTECTED_COLOR, label="non-protected (group 0)")
    ax.bar(x, shares["share_protected"], bottom=shares["share_nonprotected"], color=PROTECTED_COLOR,
           label="protected (group >= 1)")
    overall = float((df[group].to_numpy() >= 1).mean())
    ax.axhline(1.0 - overall, color="black", linestyle="--", linewidth=1,
               label=f"overall protected share {overall:.2f}")
    ranged = any("-" in b for b in shares["bucket"])
    ax.set_xticks(x, shares["bucket"], rotation=45 if ranged and len(x) > 8 else 0, fontsize=8)
    ax.set_xlabel("rank positions")
    ax.set_ylabel("share of items")
    ax.set_ylim(0, 1)
    ax.set_title(title or "Protected vs non-protected items by rank position")
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


def relevance_fairness_scatter(
    runs: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    relevance: str = "kendall_tau",
    fairness: str = "exposure_ratio",
    label: str | None = "label",
    series: str | None = None,
    title: str | None = None,
):
    """Relevance (x) vs exposure ratio of the protected group (y) of several runs or settings
    (DELTR Figure 1). ``runs``: ``mlflow.search_runs()`` output or dicts with the metric keys;
    ``series`` (a column) joins the points of one approach by a line (e.g. varying gamma)."""
    frame = _runs_frame(runs)
    for col in (relevance, fairness):
        if col not in frame.columns:
            raise DataError(f"metric {col!r} missing from the runs; columns: {list(frame.columns)}")
    frame = frame[np.isfinite(pd.to_numeric(frame[relevance], errors="coerce"))
                  & np.isfinite(pd.to_numeric(frame[fairness], errors="coerce"))]
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5, 4))
    groups = frame.groupby(series, sort=False) if series and series in frame.columns else [(None, frame)]
    for name, part in groups:
        ax.plot(part[relevance].astype(float), part[fairness].astype(float), marker="o",
                linestyle="-" if name is not None else "none", label=None if name is None else str(name))
        if label and label in part.columns:
            for _, row in part.iterrows():
                ax.annotate(str(row[label]), (float(row[relevance]), float(row[fairness])),
                            fontsize=7, xytext=(3, 3), textcoords="offset points")
    ax.axhline(1.0, color="grey", linestyle=":", linewidth=1)
    ax.set_xlabel(relevance)
    ax.set_ylabel(f"{fairness} (protected / non-protected)")
    ax.set_title(title or "Relevance vs exposure")
    if series:
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def mrc_heatmap(matrix: pd.DataFrame, *, title: str | None = None, vmin: float = -100, vmax: float = 100):
    """Heat map of an L x L language-pair matrix (rows/columns = languages, values x100)."""
    if not isinstance(matrix, pd.DataFrame) or matrix.shape[0] != matrix.shape[1]:
        raise DataError("mrc_heatmap expects a square DataFrame indexed and labelled by language")
    plt = _pyplot()
    n = matrix.shape[0]
    fig, ax = plt.subplots(figsize=(1.0 + 0.5 * n, 0.8 + 0.5 * n))
    values = matrix.to_numpy(dtype=np.float64)
    im = ax.imshow(values, cmap="RdBu", vmin=vmin, vmax=vmax)
    ax.set_xticks(range(n), [str(c) for c in matrix.columns], rotation=90, fontsize=7)
    ax.set_yticks(range(n), [str(i) for i in matrix.index], fontsize=7)
    if n <= 12:
        for i in range(n):
            for j in range(n):
                if np.isfinite(values[i, j]):
                    ax.text(j, i, f"{values[i, j]:.0f}", ha="center", va="center", fontsize=6)
    fig.colorbar(im, ax=ax, fraction=0.046)
    ax.set_title(title or "MRC by language pair")
    fig.tight_layout()
    return fig


def training_curve(history: Sequence[Mapping[str, float]], *, title: str | None = None):
    """Objective terms (``total``, ``listnet``, ``exposure``) against the iteration."""
    frame = pd.DataFrame(list(history))
    if frame.empty or "iteration" not in frame.columns:
        raise DataError("training history is empty or lacks 'iteration'")
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6, 3))
    for col in ("total", "listnet", "exposure"):
        if col in frame.columns:
            ax.plot(frame["iteration"], frame[col], label=col)
    ax.set_xlabel("iteration")
    ax.set_ylabel("objective (summed over queries)")
    if (frame.get("total", pd.Series([1.0])) > 0).all():
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    ax.set_title(title or "Training objective")
    fig.tight_layout()
    return fig


def save_figure(fig, path) -> None:
    """Write ``fig`` as PNG and release its memory."""
    fig.savefig(path, dpi=110)
    _pyplot().close(fig)
