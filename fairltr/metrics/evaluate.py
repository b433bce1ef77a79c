"""One call from a ranking table and scores to the metric dictionary (relevance, exposure, parity).

Metrics are computed per query on queries padded in length buckets
(:func:`fairltr.buckets.to_buckets`: padded slots <= 2 x rows, so one very long query does not
pad every other to its length) and averaged over queries in table order.
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.buckets import BucketedBatch, to_buckets
from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import RankingBatch
from fairltr.errors import ConfigError, DataError
from fairltr.metrics.audit import (
    AuditConfig, AuditPlan, AuditResult, PerQueryValues, attach_table_bounds, finite_scores, interval_bounds,
    prepare_audit,
)
from fairltr.metrics.conventions import RelevanceConventions
from fairltr.metrics.ordering import TiedRanks, ranks_by, tied_ranks
from fairltr.metrics.parity import RATIO_DERIVED, derive_from_ratio
from fairltr.metrics.per_query_builtins import RankingView
from fairltr.metrics.per_query_builtins import tied_share
from fairltr.metrics.plugins import CI_SUFFIXES, QUERY_INTERVAL_METRICS, headline_metrics, per_query_declarations

__all__ = ["per_query_metrics", "tied_score_share", "aggregate", "evaluate_batch", "evaluate_ranking", "per_query_table", "score_buckets",
           "evaluate_with_table", "evaluate_ranking_audit", "CI_METADATA_KEYS", "per_query_extra", "TIE_POLICIES",
           "plan_order"]

CI_METADATA_KEYS = ("ci_level", "ci_n_boot", "ci_seed", "ci_unit", "ci_method")
"""Keys of the interval metadata in an evaluation dictionary (values: level, resamples, seed,
unit ``"queries"`` / ``"candidates"``, method)."""

DEFAULT_K = (1, 5, 10, 20, 100)

TIE_POLICIES = ("expected", "input-order")
"""How a metric treats tied scores (docs/spec.md section 3, "Ties"): ``"expected"`` (the default:
the exact expectation over every order of the ties) or ``"input-order"`` (ties keep the table's row
order: how the DELTR paper's own evaluation scored its runs, used by ``fairltr reproduce deltr``
only, to compare with the paper's numbers)."""


def check_ties(ties: str) -> str:
    if ties not in TIE_POLICIES:
        raise ConfigError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    return ties


def per_query_metrics(
    scores: torch.Tensor | Sequence[torch.Tensor],
    batch: RankingBatch | BucketedBatch,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
    ties: str = "expected",
    conventions: RelevanceConventions = RelevanceConventions(),
) -> dict[str, torch.Tensor]:
    """Per-query metric tensors (Q,), NaN where undefined; ``ties``: :data:`TIE_POLICIES`;
    ``conventions``: empty queries and linear-gain nDCG
    (:class:`~fairltr.metrics.conventions.RelevanceConventions`). The metrics are those the
    registry declares with a ``compute`` (:func:`~fairltr.metrics.plugins.per_query_declarations`:
    built-ins and plugins alike), each at every cut-off of ``k`` when it takes one.

    ``batch`` is one padded batch with ``scores`` (Q, N), or length buckets with ``scores`` one
    (Q_b, N_b) tensor per bucket; either way the result is in table query order.
    ``exposure_disparity`` / ``exposure_shortfall`` here are each query's own value computed from
    that query's exposure ratio; :func:`aggregate` reports them from the averaged ratio instead.
    """
    if isinstance(batch, BucketedBatch):
        if isinstance(scores, torch.Tensor) or len(scores) != len(batch.batches):
            raise ValueError(f"per_query_metrics: give one score tensor per bucket ({len(batch.batches)})")
        k = tuple(k)
        per = [per_query_metrics(s, b, k=k, exposure_k=exposure_k, retrieval=retrieval, ties=ties,
                                 conventions=conventions) for s, b in zip(scores, batch.batches)]
        return {name: batch.per_query([p[name] for p in per]) for name in per[0]}
    mask = batch.mask.to(scores.device)
    judg = batch.judgments.to(scores.device)
    groups = batch.groups.to(scores.device)
    if check_ties(ties) == "expected":  # tied scores are unordered: every metric is its expectation over their orders
        pred, true = tied_ranks(scores, mask), tied_ranks(judg, mask)
    else:
        pred, true = ranks_by(scores, mask), ranks_by(judg, mask)
    view = RankingView(scores=scores, judgments=judg, groups=groups, mask=mask, pred=pred, true=true,
                       tied=pred if isinstance(pred, TiedRanks) else tied_ranks(scores, mask), exposure_k=exposure_k)
    wanted = {"always": True, "retrieval": retrieval, "linear_ndcg": conventions.linear_ndcg}
    declared = [m for m in per_query_declarations() if wanted[m.when]]
    for kk in k:  # the metrics at a cut-off, cut-off by cut-off (ndcg_at_5, precision_at_5, ..., ndcg_at_10, ...)
        for info in (m for m in declared if m.takes_k):
            _store(view.done, f"{info.name}_at_{kk}", info.compute_fn()(view, kk))
    for info in (m for m in declared if not m.takes_k):
        _store(view.done, info.name, info.compute_fn()(view))
    return conventions.apply(view.done, mask.sum(-1))


def _store(out: dict[str, torch.Tensor], key: str, value: torch.Tensor | dict[str, torch.Tensor]) -> None:
    """A metric's per-query values under its key (a dict: several keys computed together)."""
    out.update(value if isinstance(value, dict) else {key: value})


tied_score_share = tied_share  # per query (Q,): the share of candidates whose score another candidate shares


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


def _metric_columns(columns: RankingColumns | None) -> RankingColumns:
    """The contract of a metric call (None: the default one): query, group and judgment
    columns all named; the item column plays no part."""
    return resolve_columns(columns, item=None).require("group", "judgment", purpose="the ranking metrics")


def score_buckets(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
) -> tuple[BucketedBatch, list[torch.Tensor]]:
    """Check ``scores`` (one finite number per row, or a column name) and pad the table's query,
    group and judgment columns (the column contract ``columns``) with them in length buckets; returns the buckets and the per-bucket (Q_b, N_b)
    score tensors. Errors name the column, row and query."""
    c = _metric_columns(columns)
    named = list(dict.fromkeys([c.query, *c.groups, c.judgment]))
    missing = [col for col in named if col not in df.columns]
    if missing:
        raise DataError(f"missing column(s) {missing}; available columns: {list(df.columns)}")
    s = finite_scores(df, scores, c)
    frame = df[named].copy()
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
    audit: AuditConfig | None = None,
    ties: str = "expected",
    conventions: RelevanceConventions = RelevanceConventions(),
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

    ``audit`` (docs/spec.md section 3b, :func:`evaluate_ranking_audit`): also the worst-case
    figures over every group attribute of ``columns`` and their intersection, and, when
    ``audit.ci > 0``, ``<metric>_ci_low`` / ``<metric>_ci_high`` for them and for every headline
    metric (:func:`~fairltr.metrics.plugins.headline_metrics` at ``audit.k``) plus the interval
    metadata :data:`CI_METADATA_KEYS`. Today's keys keep their values (``audit.k`` is added to ``k``).

    ``ties`` (:data:`TIE_POLICIES`): tied scores are unordered by default (every metric is its
    expectation over the orders of the ties); ``"input-order"`` only reproduces evaluations that
    broke ties by row order (the DELTR paper's), and cannot be combined with ``audit``.
    ``conventions`` (:class:`~fairltr.metrics.conventions.RelevanceConventions`): queries without a
    relevant item left out (default) or counted 0, ``ndcg_linear_at_<k>`` on request (the
    dictionary holds numbers only: writers name the convention, see ``RelevanceConventions.metadata``).
    """
    c = _metric_columns(resolve_columns(columns, query=query, group=group, judgment=judgment, item=None))
    if audit is not None:
        if check_ties(ties) != "expected":
            raise ConfigError("the audit treats tied scores as unordered; ties='input-order' is for reproducing "
                              "the DELTR paper's evaluation only")
        return evaluate_ranking_audit(df, scores, columns=c, k=k, exposure_k=exposure_k, retrieval=retrieval,
                                      audit=audit, conventions=conventions)[0]
    buckets, s = score_buckets(df, scores, columns=c)
    return evaluate_batch(s, buckets, k=tuple(k), exposure_k=exposure_k, retrieval=retrieval, ties=ties,
                          conventions=conventions)


def plan_order(buckets: BucketedBatch, plan: AuditPlan) -> np.ndarray:
    """Positions in the buckets' query order (first appearance) of the plan's queries (sorted ids)."""
    where = {qid: i for i, qid in enumerate(buckets.query_ids)}
    return np.asarray([where[qid] for qid in plan.query_ids], dtype=np.int64)


def per_query_extra(per_q: dict[str, torch.Tensor], keys: Iterable[str],
                    order: np.ndarray | None = None) -> PerQueryValues | None:
    """The per-query values of ``keys`` (those :func:`per_query_metrics` computed) for the
    bootstrap, in the audit plan's query order (``order``: :func:`plan_order`);
    ``exposure_disparity`` / ``exposure_shortfall`` are re-derived from the resampled average
    ``exposure_ratio``, as :func:`aggregate` derives them."""
    wanted = [key for key in keys if key in per_q and key not in RATIO_DERIVED]
    if any(key in RATIO_DERIVED for key in keys) and "exposure_ratio" in per_q and "exposure_ratio" not in wanted:
        wanted.append("exposure_ratio")
    if not wanted:
        return None
    values = np.stack([per_q[key].detach().cpu().to(torch.float64).numpy() for key in wanted], axis=1)
    if order is not None:
        values = values[order]

    def derive(means: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        if "exposure_ratio" not in means:
            return {}
        r = means["exposure_ratio"]
        return {"exposure_disparity": np.where(r >= 1, 1 - 1 / np.maximum(r, 1), 1 - r),
                "exposure_shortfall": np.maximum(0.0, 1 - r)}
    return PerQueryValues(values=values, names=wanted, derive=derive)


def _audited(
    df: pd.DataFrame, scores, c: RankingColumns, k: tuple[int, ...], exposure_k: int | None, retrieval: bool,
    audit: AuditConfig, conventions: RelevanceConventions = RelevanceConventions(),
) -> tuple[dict[str, float], dict[str, torch.Tensor], BucketedBatch, AuditResult, AuditPlan]:
    """One pass: today's per-query metrics and averages, the audit, and the intervals."""
    if audit.k not in k:
        k = (*k, audit.k)
    buckets, s = score_buckets(df, scores, columns=c)
    per_q = per_query_metrics(s, buckets, k=k, exposure_k=exposure_k, retrieval=retrieval, conventions=conventions)
    metrics = aggregate(per_q)
    plan = prepare_audit(df, scores, columns=c, config=audit)
    table, audit_metrics = plan.point()
    metrics.update(audit_metrics)
    interval = audit.interval(plan.n_queries)
    if interval is not None:
        headline = [key for key in (*headline_metrics(audit.k), *QUERY_INTERVAL_METRICS) if key in metrics]
        extra = per_query_extra(per_q, headline, plan_order(buckets, plan)) if interval["unit"] == "queries" else None
        bounds, lows, highs = interval_bounds(plan, extra)
        if interval["unit"] == "candidates" and exposure_k is not None:  # the plan's exposure has no cut-off
            bounds = {key: b for key, b in bounds.items() if not key.startswith("exposure_")
                      or key == "exposure_ratio_worst" or key.startswith("exposure_ratio_worst.")}
        for key in [*headline, *audit_metrics]:
            if key in bounds and key in metrics:
                metrics[f"{key}{CI_SUFFIXES[0]}"], metrics[f"{key}{CI_SUFFIXES[1]}"] = bounds[key]
        table = attach_table_bounds(plan, table, lows, highs)
        for meta, value in zip(CI_METADATA_KEYS, (interval["level"], interval["n_boot"], interval["seed"],
                                                  interval["unit"], interval["method"])):
            metrics[meta] = value
    result = AuditResult(table=table, metrics={key: metrics[key] for key in metrics
                                               if key.split("_ci_")[0] in audit_metrics}, interval=interval,
                         unknown_counts=plan.unknown_counts)
    return metrics, per_q, buckets, result, plan


def evaluate_ranking_audit(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
    audit: AuditConfig = AuditConfig(),
    conventions: RelevanceConventions = RelevanceConventions(),
) -> tuple[dict[str, Any], AuditResult]:
    """:func:`evaluate_ranking`'s dictionary with the audit (see there) and the
    :class:`~fairltr.metrics.audit.AuditResult` (per-category table, worst cases, interval
    metadata), from ONE pass; the same resampled queries give every interval."""
    c = _metric_columns(columns)
    metrics, _, _, result, _ = _audited(df, scores, c, tuple(k), exposure_k, retrieval, audit, conventions)
    return metrics, result


def evaluate_with_table(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
    audit: AuditConfig | None = None,
    conventions: RelevanceConventions = RelevanceConventions(),
) -> tuple[dict[str, float], pd.DataFrame]:
    """:func:`evaluate_ranking`'s dictionary and :func:`per_query_table`'s table from ONE pass of
    the per-query metrics (the averages are aggregated from the table's values); with ``audit``
    the dictionary holds the audit's keys too (as :func:`evaluate_ranking` with ``audit``)."""
    c = _metric_columns(columns)
    if audit is not None:
        metrics, per_q, buckets, _, _ = _audited(df, scores, c, tuple(k), exposure_k, retrieval, audit, conventions)
    else:
        buckets, s = score_buckets(df, scores, columns=c)
        per_q = per_query_metrics(s, buckets, k=tuple(k), exposure_k=exposure_k, retrieval=retrieval,
                                  conventions=conventions)
        metrics = aggregate(per_q)
    table = pd.DataFrame({name: v.detach().cpu().to(torch.float64).numpy() for name, v in per_q.items()})
    table.insert(0, c.query, buckets.query_ids)
    return metrics, table


def per_query_table(
    df: pd.DataFrame,
    scores: Sequence[float] | np.ndarray | pd.Series | str,
    *,
    columns: RankingColumns | None = None,
    k: Iterable[int] = DEFAULT_K,
    exposure_k: int | None = None,
    retrieval: bool = False,
    conventions: RelevanceConventions = RelevanceConventions(),
) -> pd.DataFrame:
    """One row per query (table order of first appearance): the query id in the contract's
    query column, then every :func:`per_query_metrics` value (NaN where undefined). Memory
    proportional to the rows (length buckets)."""
    return evaluate_with_table(df, scores, columns=_metric_columns(columns), k=k,
                               exposure_k=exposure_k, retrieval=retrieval, conventions=conventions)[1]
