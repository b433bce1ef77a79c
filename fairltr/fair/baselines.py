"""The DELTR paper's FA*IR baselines (docs/spec.md §4): post-processing of predicted rankings and
pre-processing of training lists; plus p*, the protected share of a table."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import category_codes, check_group_column, check_table, query_codes
from fairltr.errors import DataError
from fairltr.fair.rerank import rerank

__all__ = ["fair_postprocess", "fair_preprocess", "protected_share"]


def protected_share(df: pd.DataFrame, group: str = UNSET, *, columns: RankingColumns | None = None) -> float:
    """p* = fraction of rows outside the reference category of the contract's group column
    (``group`` overrides it), the binary view of docs/spec.md section 3: integer categories >= 1,
    or, for text categories, every category but the reference (the most frequent one,
    :func:`fairltr.data.category_codes`). FA*IR itself takes two categories only
    (:func:`binary_group_codes`)."""
    c = resolve_columns(columns, group=group).require("group", purpose="the protected share")
    if c.group not in df.columns:
        raise DataError(f"group column {c.group!r} not in the table; columns: {list(df.columns)}")
    if len(df) == 0:
        raise DataError("empty table: no rows to compute the protected share from")
    check_group_column(df, c.group, query=c.query if c.query in df.columns else None)
    return float(np.mean(category_codes(df[c.group])[0] >= 1))


def _rank_values(out: pd.DataFrame, columns: RankingColumns) -> tuple[np.ndarray, np.ndarray]:
    """(rank, n_q) per row of a re-ranked frame."""
    codes, _ = query_codes(out, columns.query)
    sizes = np.bincount(codes)
    return out["rank"].to_numpy(dtype=np.int64), sizes[codes]


def fair_postprocess(
    ranked_df: pd.DataFrame,
    p: float,
    alpha: float,
    score: str = "score",
    query: str = UNSET,
    group: str = UNSET,
    k: int | None = None,
    adjust: bool = True,
    *,
    columns: RankingColumns | None = None,
) -> pd.DataFrame:
    """Post-processing baseline: FA*IR re-ranking of each predicted list by its ``score`` column.

    Returns every row, re-ranked, with a new 1-based ``rank``, ``fair_feasible``, the model's
    score kept as ``score_before_fair``, and ``score`` (the column named by ``score``) replaced by
    the strictly decreasing ``n_q - rank + 1`` so that ``evaluate_ranking(out, out[score])``
    evaluates the fair order. ``adjust=False`` uses alpha without the multiple-testing adjustment.
    ``columns`` names the query and group columns (``query`` / ``group`` override it).
    """
    c = resolve_columns(columns, query=query, group=group)
    out = rerank(ranked_df, score, k=k, p=p, alpha=alpha, adjust=adjust, columns=c)
    model_score = out["score"].to_numpy()
    if score != "score" and "score" not in ranked_df.columns:
        out = out.drop(columns="score")
    rank, n_q = _rank_values(out, c)
    out["score_before_fair"] = model_score
    out[score] = (n_q - rank + 1).astype(np.float64)
    return out


def fair_preprocess(
    train_df: pd.DataFrame,
    p: float,
    alpha: float,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
    adjust: bool = True,
    *,
    columns: RankingColumns | None = None,
) -> pd.DataFrame:
    """Pre-processing baseline: FA*IR re-ranking of each training list by its judgments
    (k = the list's length); the fair order becomes the new training judgments.

    New judgment of the item at new rank r of a query with n_q items and original judgments in
    [lo, hi]: ``lo + (hi - lo) * (n_q - r) / (n_q - 1)`` — evenly spaced, strictly decreasing in r,
    spanning the original range (so ListNet's softmax sees the same scale as before; on the
    paper's TREC lists, whose judgments are already evenly spaced by rank, this is exactly the
    same encoding). A query of one item, or whose judgments are all equal, keeps its judgments.
    Rows come back in the fair order with exactly the input's columns (so the result trains a
    model as is: no extra numeric column leaks into the features); per-query feasibility is in
    ``out.attrs["fair_feasible"]`` ({query id: bool}). ``adjust=False``: alpha unadjusted.
    ``columns`` names the query, group and judgment columns (the loose keywords override it).
    """
    c = resolve_columns(columns, query=query, group=group, judgment=judgment, item=None).require(
        "group", "judgment", purpose="FA*IR pre-processing")
    check_table(train_df, c)
    out = rerank(train_df, c.judgment, k=None, p=p, alpha=alpha, adjust=adjust, columns=c)
    feasible = out.groupby(c.query, sort=False)["fair_feasible"].first()
    old = out[c.judgment].to_numpy(dtype=np.float64)
    codes, _ = query_codes(out, c.query)
    n_codes = int(codes.max()) + 1
    lo = np.full(n_codes, np.inf)
    hi = np.full(n_codes, -np.inf)
    np.minimum.at(lo, codes, old)
    np.maximum.at(hi, codes, old)
    rank, n_q = _rank_values(out, c)
    span = (hi - lo)[codes]
    frac = (n_q - rank) / np.maximum(n_q - 1, 1)
    new = np.where((n_q > 1) & (span > 0), lo[codes] + span * frac, old)
    out[c.judgment] = new
    out = out[list(train_df.columns)]
    out.attrs["fair_feasible"] = {q: bool(v) for q, v in feasible.items()}
    return out
