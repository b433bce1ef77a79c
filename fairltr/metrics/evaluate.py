"""One call from a ranking table and scores to the metric dictionary (relevance, exposure, parity).

Metrics are computed per query on queries padded in length buckets
(:func:`fairltr.buckets.to_buckets`: padded slots <= 2 x rows, so one very long query does not
pad every other to its length) and averaged over queries in table order.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch, to_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import RankingBatch, show_value
from fairltr.errors import DataError
from fairltr.metrics.exposure import exposure_per_query
from fairltr.metrics.ordering import ranks_by
from fairltr.metrics.parity import (
    RATIO_DERIVED, derive_from_ratio, exposure_disparity, exposure_shortfall, selection_ratio_at_k,
)
from fairltr.metrics.relevance import kendall_tau, mrr_at_k, ndcg_at_k, precision_at_k, recall_at_k

__all__ = ["per_query_metrics", "aggregate", "evaluate_batch", "evaluate_ranking", "per_query_table", "score_buckets"]

DEFAULT_K = (1, 5, 10, 20, 100)


def per_query_metrics(
    scores: torch.Tensor | Sequence[torch.Tensor],
    batch: RankingBatch | BucketedBatch,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
) -> dict[str, torch.Tensor]:
    """Per-query metric tensors (Q,), NaN where undefined.

    ``batch`` is one padded batch with ``scores`` (Q, N), or length buckets with ``scores`` one
    (Q_b, N_b) tensor per bucket; either way the result is in table query order.
    ``exposure_disparity`` / ``exposure_shortfall`` here are each query's own value computed from
    that query's exposure ratio; :func:`aggregate` reports them from the averaged ratio instead.
    """
    if isinstance(batch, BucketedBatch):
        if isinstance(scores, torch.Tensor) or len(scores) != len(batch.batches):
            raise ValueError(f"per_query_metrics: give one score tensor per bucket ({len(batch.batches)})")
        k = tuple(k)
        per = [per_query_metrics(s, b, k=k, exposure_k=exposure_k, retrieval=retrieval)
               for s, b in zip(scores, batch.batches)]
        return {name: batch.per_query([p[name] for p in per]) for name in per[0]}
    mask = batch.mask.to(scores.device)
    judg = batch.judgments.to(scores.device)
    groups = batch.groups.to(scores.device)
    pred = ranks_by(scores, mask)
    true = ranks_by(judg, mask)
    out: dict[str, torch.Tensor] = {}
    for kk in k:
        out[f"ndcg_at_{kk}"] = ndcg_at_k(pred, judg, mask, kk)
        out[f"precision_at_{kk}"] = precision_at_k(pred, true, mask, kk)
        out[f"selection_ratio_at_{kk}"] = selection_ratio_at_k(pred, groups, mask, kk)
        if retrieval:
            out[f"mrr_at_{kk}"] = mrr_at_k(pred, judg, mask, kk)
            out[f"recall_at_{kk}"] = recall_at_k(pred, judg, mask, kk)
    out["kendall_tau"] = kendall_tau(pred, judg, mask)
    out.update(exposure_per_query(pred, groups, mask, exposure_k))
    out["exposure_disparity"] = exposure_disparity(out["exposure_ratio"])
    out["exposure_shortfall"] = exposure_shortfall(out["exposure_ratio"])
    return out


def aggregate(per_query: dict[str, torch.Tensor]) -> dict[str, float]:
    """Mean over queries where defined, plus ``<metric>_n_queries`` for each metric.

    Exception: ``exposure_disparity`` = 1 - min(R, 1/R) and ``exposure_shortfall`` = max(0, 1 - R)
    are computed from R = the reported (averaged) ``exposure_ratio``, not averaged per query, so
    they always agree with the reported ratio; their count is the ratio's.
    """
    result: dict[str, float] = {}
    for name, values in per_query.items():
        v = values.detach().cpu().to(torch.float64)
        ok = ~torch.isnan(v)
        n = int(ok.sum())
        result[name] = float(v[ok].mean()) if n else float("nan")
        result[f"{name}_n_queries"] = n
    if all(name in result for name in RATIO_DERIVED):
        derive_from_ratio(result)
    return result


def evaluate_batch(
    scores: torch.Tensor | Sequence[torch.Tensor], batch: RankingBatch | BucketedBatch, **kw
) -> dict[str, float]:
    """:func:`aggregate` of :func:`per_query_metrics` (one batch, or length buckets)."""
    return aggregate(per_query_metrics(scores, batch, **kw))


def _metric_columns(columns: RankingColumns | None, query: str, group: str, judgment: str) -> RankingColumns:
    """The contract of a metric call: query, group and judgment columns all named."""
    return resolve_columns(columns, query=query, group=group, judgment=judgment, item=None).require(
        "group", "judgment", purpose="the ranking metrics")


def score_buckets(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
) -> tuple[BucketedBatch, list[torch.Tensor]]:
    """Check ``scores`` (one finite number per row, or a column name) and pad the table's query,
    group and judgment columns (the column contract ``columns``, overridden by the loose name
    keywords) with them in length buckets; returns the buckets and the per-bucket (Q_b, N_b)
    score tensors. Errors name the column, row and query."""
    c = _metric_columns(columns, query, group, judgment)
    missing = [col for col in dict.fromkeys([c.query, c.group, c.judgment]) if col not in df.columns]
    if missing:
        raise DataError(f"missing column(s) {missing}; available columns: {list(df.columns)}")
    if isinstance(scores, str):
        if scores not in df.columns:
            raise DataError(f"score column {scores!r} not in the table; columns: {list(df.columns)}")
        scores = df[scores]
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    if len(s) != len(df):
        raise DataError(f"got {len(s)} scores for {len(df)} rows")
    if not np.all(np.isfinite(s)):
        row = int(np.flatnonzero(~np.isfinite(s))[0])
        raise DataError(f"score at row {row} is {s[row]} (query {show_value(df[c.query].iloc[row])}); "
                        "scores must be finite")
    frame = df[list(dict.fromkeys([c.query, c.group, c.judgment]))].copy()
    frame["__score__"] = s
    buckets = to_buckets(frame, columns=c, features=["__score__"])
    return buckets, [b.features[..., 0] for b in buckets.batches]


def evaluate_ranking(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
) -> dict[str, float]:
    """Metrics of ``scores`` (one per row of ``df``, or a column name) averaged over queries;
    ``columns`` names the query, group and judgment columns (default
    :data:`~fairltr.columns.DEFAULT_COLUMNS`; the loose name keywords override it).

    Keys: ``ndcg_at_<k>``, ``precision_at_<k>``, ``selection_ratio_at_<k>`` (and ``mrr_at_<k>``,
    ``recall_at_<k>`` with ``retrieval=True``) for every k in ``k``, ``kendall_tau``,
    ``exposure_protected``, ``exposure_nonprotected``, ``exposure_ratio`` (mean over queries of
    the per-query ratio), ``exposure_gap``, ``exposure_disparity`` and ``exposure_shortfall``
    (from that reported ``exposure_ratio`` R: 1 - min(R, 1/R) and max(0, 1 - R)); each with a
    ``<metric>_n_queries`` companion. Memory is proportional to the rows (length buckets).
    """
    buckets, s = score_buckets(df, scores, columns=_metric_columns(columns, query, group, judgment))
    return evaluate_batch(s, buckets, k=tuple(k), exposure_k=exposure_k, retrieval=retrieval)


def evaluate_with_table(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
) -> tuple[dict[str, float], pd.DataFrame]:
    """:func:`evaluate_ranking`'s dictionary and :func:`per_query_table`'s table from ONE pass of
    the per-query metrics (the averages are aggregated from the table's values)."""
    c = _metric_columns(columns, query, group, judgment)
    buckets, s = score_buckets(df, scores, columns=c)
    per_q = per_query_metrics(s, buckets, k=tuple(k), exposure_k=exposure_k, retrieval=retrieval)
    table = pd.DataFrame({name: v.detach().cpu().to(torch.float64).numpy() for name, v in per_q.items()})
    table.insert(0, c.query, buckets.query_ids)
    return aggregate(per_q), table


def per_query_table(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str = UNSET,
    judgment: str = UNSET,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
) -> pd.DataFrame:
    """One row per query (table order of first appearance): the query id in the contract's
    query column, then every :func:`per_query_metrics` value (NaN where undefined). Memory
    proportional to the rows (length buckets)."""
    return evaluate_with_table(df, scores, columns=_metric_columns(columns, query, group, judgment), k=k,
                               exposure_k=exposure_k, retrieval=retrieval)[1]
