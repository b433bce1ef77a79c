"""The audit of docs/spec.md section 3b: any number of group attributes and categories, their
intersection, pooled selection rates and impact ratios, exposure and merit per category, the
worst-case figures and their confidence intervals.

Everything is computed from per-(query, category) sufficient statistics, built with one
``bincount`` over category codes (no per-query Python loop):

    n(q, c)      candidates of category c in query q
    sel(q, c)    of them ranked within the top k (1-based ranks by decreasing score, ties by row)
    exp(q, c)    sum of v(rank) = 1 / ln(1 + rank)   (the exposure discount of section 3)
    merit(q, c)  sum of judgments (merit figures are NaN when a judgment is negative)
    above(q, c)  of them scoring above the median (the scoring rate of section 3c, when asked)

Pooled over the table: SR(c) = sum_q sel / sum_q n; IR(c) = SR(c) / max_c' SR(c');
Exp(c) = sum_q exp / sum_q n; ER(c) = Exp(c) / max_c' Exp(c'); U(c) = sum_q merit / sum_q n;
exposure per merit Exp(c) / U(c) and its ratio to the largest (disparate treatment, Singh &
Joachims 2018); c' runs over the attribute's non-excluded categories. Scoring rate (section 3c,
``AuditConfig(scoring="sample" | "per-query")``): SR_s(c) = sum_q above / sum_q n, its impact ratio
to the largest. Unknown categories (``unknown_values``) are counted per attribute and left out of
every rate and ratio (:mod:`fairltr.metrics.audit_blocks`). A bootstrap resample only
re-weights queries (or candidates), so every resample is one matrix product of the weights with
these statistics. NDKL (Geyik et al. 2019) is a per-query value averaged over queries.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np
import pandas as pd
from scipy import sparse

from fairltr.columns import RankingColumns
from fairltr.data import check_group_column, check_table, numeric_column, show_value
from fairltr.errors import ConfigError, DataError
from fairltr.metrics.audit_blocks import UNKNOWN, Block, category_blocks, sorted_query_codes, unknown_mask
from fairltr.metrics.audit_stats import MEDIANS, N_STATS, above_median, ndkl_per_query, stat_matrices
from fairltr.metrics.ordering import tied_ranks_of_rows
from fairltr.metrics.resampling import bootstrap_candidates, bootstrap_queries, canonical_row_order, resolve_unit

__all__ = ["AuditConfig", "AuditResult", "AuditPlan", "audit_ranking", "prepare_audit", "TABLE_COLUMNS",
           "CI_TABLE_COLUMNS", "INTERSECTION_SEP", "CATEGORY_SEP", "PerQueryValues", "resampled_figures",
           "run_bootstrap", "interval_bounds", "attach_table_bounds"]

INTERSECTION_SEP = ":"
"""Joins attribute names of the intersection (``sex:race``), in the order the attributes were given
(each name escaped, :func:`fairltr.metrics.labels.attribute_key`: a name holding ``:`` cannot be
taken for an intersection)."""
CATEGORY_SEP = "|"
"""Joins the categories of an intersection cell (``Female|Hispanic``; a ``|`` inside a category is
escaped, :func:`fairltr.metrics.labels.category_label`)."""

TABLE_COLUMNS = ("attribute", "category", "n_candidates", "n_queries", "selected_at_k", "selection_rate_at_k",
                 "impact_ratio_at_k", "exposure", "exposure_ratio", "merit", "exposure_per_merit", "excluded")
"""The audit table's columns, in order (``<col>_ci_low`` / ``<col>_ci_high`` follow for :data:`CI_TABLE_COLUMNS`)."""
CI_TABLE_COLUMNS = ("selection_rate_at_k", "impact_ratio_at_k", "exposure_ratio")
"""The rates and ratios of the table that get a confidence interval."""


@dataclass(frozen=True)
class AuditConfig:
    """How to audit: selection cut-off ``k``, small-category exclusion, confidence interval.

    ``min_category_share``: a category holding less than this share of all candidates is
    reported with ``excluded=True`` and left out of the worst-case figures (never merged).
    ``ci``: confidence level in (0, 1), 0 = no intervals; ``n_boot`` resamples, ``seed``;
    ``unit``: ``"queries"``, ``"candidates"`` or ``"auto"`` (queries from 30 queries up);
    ``method``: ``"percentile"`` or ``"BCa"`` (queries unit only). ``scoring``: also the scoring
    rate of section 3c, the median over the whole sample or per query (``"none"``: not computed);
    ``unknown_values``: group values counted as unknown (``""`` makes a missing cell unknown);
    ``exclude_small=False`` keeps small categories in the worst cases (flagged in the table only);
    ``exclusion_reason``: the auditor's reason for excluding them, carried into the results.
    """

    k: int = 10
    min_category_share: float = 0.02
    ci: float = 0.95
    n_boot: int = 2000
    seed: int = 0
    unit: str = "auto"
    method: str = "percentile"
    scoring: str = "none"  # the scoring rate's median: "none" (no scoring rate), "sample" or "per-query"
    unknown_values: tuple[str, ...] = ()  # group values that mean "unknown" ("" = a missing cell)
    exclude_small: bool = True  # leave categories under min_category_share out of the worst cases
    exclusion_reason: str | None = None  # why small categories are left out (recorded; section 3c)

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, (int, np.integer)) or self.k < 1:
            raise ConfigError(f"audit k must be an integer >= 1, got {self.k!r}")
        share = self.min_category_share
        if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share < 1:
            raise ConfigError(f"min_category_share must be a number in [0, 1), got {share!r}")
        ci = self.ci
        if isinstance(ci, bool) or not isinstance(ci, (int, float)) or not (ci == 0 or 0 < ci < 1):
            raise ConfigError(f"confidence level must be 0 (no intervals) or in (0, 1), e.g. 0.95; got {ci!r}")
        if isinstance(self.n_boot, bool) or not isinstance(self.n_boot, (int, np.integer)) or self.n_boot < 10:
            raise ConfigError(f"n_boot (bootstrap resamples) must be an integer >= 10, got {self.n_boot!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or self.seed < 0:
            raise ConfigError(f"bootstrap seed must be an integer >= 0, got {self.seed!r}")
        resolve_unit(self.unit, 0)
        if self.method not in ("percentile", "BCa"):
            raise ConfigError(f"bootstrap method must be 'percentile' or 'BCa', got {self.method!r}")
        if self.method == "BCa" and self.unit == "candidates":
            raise ConfigError("the BCa interval needs the queries unit (the candidate bootstrap is stratified); "
                              "use method 'percentile'")
        if self.scoring not in MEDIANS:
            raise ConfigError(f"scoring (the scoring rate's median) must be one of {MEDIANS}, got {self.scoring!r}")
        if isinstance(self.unknown_values, str) or not all(isinstance(v, str) for v in self.unknown_values):
            raise ConfigError(f"unknown_values must be a tuple of strings, got {self.unknown_values!r}")
        object.__setattr__(self, "unknown_values", tuple(self.unknown_values))
        if self.exclusion_reason is not None and not str(self.exclusion_reason).strip():
            raise ConfigError("an exclusion reason must be a non-empty text")

    def interval(self, n_queries: int) -> dict[str, Any] | None:
        """The interval metadata recorded beside the bounds (None when ``ci == 0``)."""
        if self.ci == 0:
            return None
        unit = resolve_unit(self.unit, n_queries)
        return {"level": float(self.ci), "n_boot": int(self.n_boot), "seed": int(self.seed), "unit": unit,
                "method": self.method if unit == "queries" else "percentile"}


@dataclass(frozen=True)
class AuditResult:
    """``table``: one row per (attribute, category), intersection included (:data:`TABLE_COLUMNS`,
    then the ``_ci_low`` / ``_ci_high`` columns when intervals were asked); ``metrics``: the
    worst-case figures (``impact_ratio_at_<k>``, ``impact_ratio_at_<k>.<attribute>``,
    ``exposure_ratio_worst``, ``disparate_treatment_ratio``, ``ndkl_at_<k>``, each also per
    attribute), with ``_ci_low`` / ``_ci_high``; ``interval``: level, n_boot, seed, unit, method
    (None without intervals)."""

    table: pd.DataFrame
    metrics: dict[str, float]
    interval: dict[str, Any] | None = None
    unknown_counts: dict[str, int] = field(default_factory=dict)  # per attribute: rows of unknown category


def _judgments(df: pd.DataFrame, c: RankingColumns) -> tuple[np.ndarray, bool]:
    """The judgments and whether merit is defined (every judgment >= 0: merit is a mean judgment;
    with a negative one, ``merit``, ``exposure_per_merit`` and ``disparate_treatment_ratio`` are NaN)."""
    y = numeric_column(df, c.judgment, query=c.query)
    return y, bool((y >= 0).all())


def finite_scores(df: pd.DataFrame, scores: Any, c: RankingColumns) -> np.ndarray:
    """``scores`` (one per row of ``df``, or a column name) as a finite float array; a missing
    column, a wrong length or a non-finite score is a :class:`DataError` naming the row and query.
    The one check of every metric call (:func:`fairltr.metrics.evaluate.score_buckets` too)."""
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
    return s


@dataclass
class AuditPlan:
    """The audit's data for one table and one ranking: category blocks, per-row and per-query
    sufficient statistics, per-query NDKL. Built by :func:`prepare_audit`; every figure, point
    or resampled, is :meth:`figures` of re-weighted statistics."""

    config: AuditConfig
    blocks: list[Block]
    n_queries: int
    n_rows: int
    query_of_row: np.ndarray
    row_stats: sparse.csr_matrix  # (R, Q * C * S): row r's contribution to (q, c, stat), S = N_STATS
    query_stats: sparse.csr_matrix  # (Q, C * S): per-query sums
    ndkl: np.ndarray  # (Q, visible blocks)
    excluded: np.ndarray  # (C,) bool, decided on the whole table
    strata: np.ndarray  # (R,) query x intersection category: the candidate bootstrap's strata
    n_queries_per_category: np.ndarray  # (C,)
    attributes: tuple[str, ...] = field(default_factory=tuple)
    merit_defined: bool = True  # False with a negative judgment: merit figures are NaN
    query_ids: list = field(default_factory=list)  # the queries in the plan's (sorted) order
    row_order: np.ndarray | None = None  # the candidate bootstrap's canonical row order (by stratum, score, judgment)

    unknown_queries: dict = field(default_factory=dict)  # per attribute: queries holding an unknown row

    @property
    def n_categories(self) -> int:
        return sum(b.size for b in self.blocks)

    @property
    def unknown_counts(self) -> dict[str, int]:
        """Per visible attribute (and the intersection): the rows whose category is unknown there."""
        return {b.name: int(b.n_unknown) for b in self.visible} if self.config.unknown_values else {}

    @property
    def table_columns(self) -> list[str]:
        """:data:`TABLE_COLUMNS`, with the scoring rate's two columns after the impact ratio when asked."""
        cols = list(TABLE_COLUMNS)
        if self.config.scoring != "none":
            at = cols.index("impact_ratio_at_k") + 1
            cols[at:at] = ["scoring_rate", "scoring_impact_ratio"]
        return cols

    @property
    def ci_columns(self) -> list[str]:
        """The table columns with intervals (:data:`CI_TABLE_COLUMNS`, and the scoring ones when asked)."""
        return list(CI_TABLE_COLUMNS) + (["scoring_rate", "scoring_impact_ratio"] if self.config.scoring != "none"
                                         else [])

    @property
    def visible(self) -> list[Block]:
        return [b for b in self.blocks if b.visible]

    # ------------------------------------------------------------------ figures
    def figures(self, totals: np.ndarray, per_query: np.ndarray | None = None,
                ndkl: np.ndarray | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
        """Worst-case metrics (name -> (batch,)) and table cells (column -> (batch, C)) from pooled
        ``totals`` (batch, C, S); ``per_query`` (batch, Q, C, S) gives the section-3 binary
        figures per query (candidate unit); ``ndkl`` (batch, visible blocks) the averaged NDKL."""
        k = self.config.k
        n, sel, exp, merit, above = (totals[..., i] for i in range(N_STATS))
        scoring = self.config.scoring != "none"
        with np.errstate(all="ignore"):
            sr = np.where(n > 0, sel / n, np.nan)
            scr = np.where(n > 0, above / n, np.nan)
            ex = np.where(n > 0, exp / n, np.nan)
            mer = np.where((n > 0) & self.merit_defined, merit / n, np.nan)
            epm = np.where((merit > 0) & self.merit_defined, exp / merit, np.nan)
        ir = np.full_like(sr, np.nan)
        er = np.full_like(sr, np.nan)
        dt = np.full_like(sr, np.nan)
        sir = np.full_like(sr, np.nan)
        metrics: dict[str, np.ndarray] = {}
        worst = {"impact_ratio": [], "exposure_ratio_worst": [], "disparate_treatment_ratio": []}
        figures = [(sr, ir, "impact_ratio"), (ex, er, "exposure_ratio_worst"), (epm, dt, "disparate_treatment_ratio")]
        if scoring:
            worst["scoring_impact_ratio"] = []
            figures.append((scr, sir, "scoring_impact_ratio"))
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN, by design
            for b in self.visible:
                sl = b.slice
                inc = ~self.excluded[sl]
                for value, ratio, name in figures:
                    block = value[:, sl]
                    top = np.nanmax(np.where(inc, block, np.nan), axis=1, keepdims=True) if inc.any() \
                        else np.full((block.shape[0], 1), np.nan)
                    ratio[:, sl] = np.where(top > 0, block / top, np.nan)
                    w = (np.nanmin(np.where(inc, ratio[:, sl], np.nan), axis=1) if inc.any()
                         else np.full(block.shape[0], np.nan))
                    key = f"impact_ratio_at_{k}" if name == "impact_ratio" else name
                    metrics[f"{key}.{b.name}"] = w
                    worst[name].append(w)
        for name, parts in worst.items():
            key = f"impact_ratio_at_{k}" if name == "impact_ratio" else name
            metrics[key] = np.fmin.reduce(np.stack(parts), axis=0) if parts else np.full(totals.shape[0], np.nan)
        if ndkl is not None:
            for j, b in enumerate(self.visible):
                metrics[f"ndkl_at_{k}.{b.name}"] = ndkl[:, j]
            metrics[f"ndkl_at_{k}"] = np.fmax.reduce(ndkl, axis=1)
        if per_query is not None:
            metrics.update(self._binary(per_query))
        table = {"selection_rate_at_k": sr, "impact_ratio_at_k": ir, "exposure": ex, "exposure_ratio": er,
                 "merit": mer, "exposure_per_merit": epm}
        if scoring:
            table.update(scoring_rate=scr, scoring_impact_ratio=sir)
        return metrics, table

    def _binary(self, per_query: np.ndarray) -> dict[str, np.ndarray]:
        """Section 3's binary figures (group code 0 vs >= 1 of the first attribute) from per-query
        statistics (batch, Q, C, S): exposure_ratio, exposure_gap, exposure_disparity,
        exposure_shortfall, selection_ratio_at_k; per-query values averaged over the queries
        where they are defined, as :func:`fairltr.metrics.evaluate_ranking` does."""
        b = self.blocks[-1]
        s = per_query[:, :, b.slice, :]  # (batch, Q, 2, S): non-protected, protected
        n0, n1 = s[..., 0, 0], s[..., 1, 0]
        # a figure no query defines is NaN here (reported as undefined downstream), without the
        # "Mean of empty slice" warning np.nanmean gives for it
        with np.errstate(all="ignore"), warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            e0, e1 = s[..., 0, 2] / n0, s[..., 1, 2] / n1
            r0, r1 = s[..., 0, 1] / n0, s[..., 1, 1] / n1
            both = (n0 > 0) & (n1 > 0)
            ratio = np.where(both & (e0 > 0), e1 / e0, np.nan)
            gap = np.where(both, e0 - e1, np.nan)
            sel = np.where(both & (r0 > 0), r1 / r0, np.nan)
            out = {"exposure_ratio": np.nanmean(ratio, axis=1), "exposure_gap": np.nanmean(gap, axis=1),
                   f"selection_ratio_at_{self.config.k}": np.nanmean(sel, axis=1)}
        r = out["exposure_ratio"]
        out["exposure_disparity"] = np.where(r >= 1, 1 - 1 / np.maximum(r, 1), 1 - r)
        out["exposure_shortfall"] = np.maximum(0.0, 1 - r)
        return out

    # ------------------------------------------------------------------ point and resamples
    def totals(self) -> np.ndarray:
        """Pooled statistics of the whole table, (1, C, S)."""
        return np.asarray(self.query_stats.sum(axis=0)).reshape(1, self.n_categories, N_STATS)

    def resampled_totals_queries(self, weights: np.ndarray) -> np.ndarray:
        """(batch, C, S) pooled statistics of query-weighted tables ((batch, Q) multiplicities)."""
        t = np.asarray(self.query_stats.T @ weights.T).T
        return t.reshape(weights.shape[0], self.n_categories, N_STATS)

    def resampled_ndkl(self, weights: np.ndarray) -> np.ndarray:
        """(batch, visible blocks) weighted means of the per-query NDKL."""
        return (weights @ self.ndkl) / weights.sum(axis=1, keepdims=True)

    def resampled_per_query(self, weights: np.ndarray) -> np.ndarray:
        """(batch, Q, C, S) per-query statistics of candidate-weighted tables ((batch, R) multiplicities)."""
        t = np.asarray(self.row_stats.T @ weights.T).T
        return t.reshape(weights.shape[0], self.n_queries, self.n_categories, N_STATS)

    def point(self) -> tuple[pd.DataFrame, dict[str, float]]:
        """The audit table (without intervals) and the worst-case metrics of the table."""
        metrics, cells = self.figures(self.totals(), ndkl=self.ndkl.mean(axis=0, keepdims=True))
        totals = self.totals()[0]
        rows = []
        for b in self.visible:
            for j, label in enumerate(b.labels):
                c = b.offset + j
                rows.append({"attribute": b.name, "category": label, "n_candidates": int(totals[c, 0]),
                             "n_queries": int(self.n_queries_per_category[c]), "selected_at_k": float(totals[c, 1]),
                             **{col: float(cells[col][0, c]) for col in cells},
                             "excluded": bool(self.excluded[c])})
            if self.config.unknown_values:  # counted and named, left out of every rate and ratio
                rows.append({"attribute": b.name, "category": UNKNOWN, "n_candidates": b.n_unknown,
                             "n_queries": int(self.unknown_queries.get(b.name, 0)), "excluded": True})
        table = pd.DataFrame(rows, columns=self.table_columns)
        selected = table["selected_at_k"].to_numpy(dtype=np.float64)
        known = np.isfinite(selected)
        if known.all() and len(selected) and np.all(np.abs(selected - np.round(selected)) < 1e-9):
            table["selected_at_k"] = np.round(selected).astype(np.int64)  # no tie straddles the cut-off
        ordered = sorted(metrics, key=lambda key: "." in key)  # the worst cases first, then per attribute
        return table, {key: float(metrics[key][0]) for key in ordered}


def _check_groups(df: pd.DataFrame, c: RankingColumns, unknown_values: tuple[str, ...]) -> None:
    """Every group attribute checked (one line naming the bad cell), its unknown cells aside."""
    missing = [name for name in c.groups if name not in df.columns]
    if missing:
        raise DataError(f"missing column(s) {missing}; available columns: {list(df.columns)}")
    for name in c.groups:
        unknown = unknown_mask(df[name], unknown_values)
        part = df.loc[~unknown] if unknown.any() else df
        if len(part):
            check_group_column(part, name, query=c.query)


def prepare_audit(df: pd.DataFrame, scores: Any, *, columns: RankingColumns, config: AuditConfig) -> AuditPlan:
    """Validate the table (one-line errors naming file, line, column, query) and build the
    :class:`AuditPlan` of the ranking ``scores`` (one per row, or a column name)."""
    c = columns.require("group", "judgment", purpose="the audit")
    check_table(df, c.replace(group=None))
    _check_groups(df, c, config.unknown_values)
    s = finite_scores(df, scores, c)
    y, merit_defined = _judgments(df, c)
    qcodes, qids = sorted_query_codes(df, c.query)  # sorted ids: resamples independent of the row order
    n_q, n_rows = len(qids), len(df)
    sizes = np.bincount(qcodes, minlength=n_q)
    first, size = tied_ranks_of_rows(qcodes, s)
    blocks = category_blocks(df, c, config.unknown_values)
    row_stats, query_stats = stat_matrices(blocks, qcodes, n_q, first, size, y,
                                           above_median(s, qcodes, config.scoring), config.k)
    counts = np.asarray(query_stats[:, 0::N_STATS].todense())
    n_queries_per_category = (counts > 0).sum(axis=0)
    share = counts.sum(axis=0) / n_rows
    excluded = (share < config.min_category_share) if config.exclude_small else np.zeros(len(share), dtype=bool)
    excluded[blocks[-1].slice] = False
    visible = [b for b in blocks if b.visible]
    ndkl = np.stack([ndkl_per_query(qcodes, first, size, sizes, b.codes, b.size, config.k) for b in visible], axis=1)
    finest = visible[-1]
    strata = qcodes * (finest.size + 1) + finest.codes + 1  # an unknown row is a stratum of its own
    unknown_queries = {b.name: int(len(np.unique(qcodes[b.codes < 0]))) for b in visible}
    return AuditPlan(config=config, blocks=blocks, n_queries=n_q, n_rows=n_rows, query_of_row=qcodes,
                     query_ids=qids, row_order=canonical_row_order(strata, -s, y),
                     row_stats=row_stats, query_stats=query_stats, ndkl=ndkl, excluded=excluded, strata=strata,
                     n_queries_per_category=n_queries_per_category, attributes=tuple(c.groups),
                     merit_defined=merit_defined, unknown_queries=unknown_queries)


@dataclass
class PerQueryValues:
    """Extra per-query metrics to re-average in each resample (queries unit): ``values`` (Q, P),
    NaN where a query's value is undefined (left out of that average), named ``names``;
    ``derive(means) -> dict`` adds figures computed from the averages (exposure_disparity from
    the averaged exposure_ratio)."""

    values: np.ndarray
    names: Sequence[str]
    derive: Any = None


def resampled_figures(plan: AuditPlan, unit: str, extra: PerQueryValues | None = None):
    """``f(weights) -> (metrics {name: (batch,)}, cells {column: (batch, C)})`` for one bootstrap
    unit: ``weights`` are (batch, Q) query multiplicities (``"queries"``) or (batch, R)
    candidate multiplicities (``"candidates"``; rank-based per-query metrics and NDKL have no
    interval there, the section-3 binary exposure figures are recomputed from the statistics)."""
    if unit == "queries":
        if extra is not None:
            ok = ~np.isnan(extra.values)
            filled = np.where(ok, extra.values, 0.0)
            okf = ok.astype(np.float64)

        def f(w: np.ndarray):
            metrics, cells = plan.figures(plan.resampled_totals_queries(w), ndkl=plan.resampled_ndkl(w))
            if extra is not None:
                with np.errstate(all="ignore"):
                    means = (w @ filled) / (w @ okf)
                more = {name: means[:, j] for j, name in enumerate(extra.names)}
                if extra.derive is not None:
                    more.update(extra.derive(more))
                metrics.update(more)
            return metrics, cells
        return f

    def g(w: np.ndarray):
        per_q = plan.resampled_per_query(w)
        return plan.figures(per_q.sum(axis=1), per_query=per_q)
    return g


def run_bootstrap(plan: AuditPlan, statistic, unit: str) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) of ``statistic(weights) -> (M, batch)`` under the plan's config and ``unit``."""
    cfg = plan.config
    if unit == "queries":
        return bootstrap_queries(statistic, plan.n_queries, level=cfg.ci, n_boot=cfg.n_boot, seed=cfg.seed,
                                 method=cfg.method)
    return bootstrap_candidates(statistic, plan.strata, level=cfg.ci, n_boot=cfg.n_boot, seed=cfg.seed,
                                order=plan.row_order)


def interval_bounds(plan: AuditPlan, extra: PerQueryValues | None = None
                    ) -> tuple[dict[str, tuple[float, float]], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Bootstrap bounds of every audit figure (and of ``extra`` per-query averages, queries
    unit): ({metric: (low, high)}, table lows {column: (C,)}, table highs {column: (C,)})."""
    info = plan.config.interval(plan.n_queries)
    if info is None:
        raise ConfigError("no confidence interval asked (ci=0)")
    figures = resampled_figures(plan, info["unit"], extra)
    names: list[str] = []
    n_cat = plan.n_categories

    def statistic(w: np.ndarray) -> np.ndarray:
        metrics, cells = figures(w)
        if not names:
            names.extend(metrics)
        return np.concatenate([np.stack([metrics[m] for m in names])] + [cells[col].T for col in plan.ci_columns])

    low, high = run_bootstrap(plan, statistic, info["unit"])
    m = len(names)
    bounds = {name: (float(low[j]), float(high[j])) for j, name in enumerate(names)}
    lows = {col: low[m + i * n_cat: m + (i + 1) * n_cat] for i, col in enumerate(plan.ci_columns)}
    highs = {col: high[m + i * n_cat: m + (i + 1) * n_cat] for i, col in enumerate(plan.ci_columns)}
    return bounds, lows, highs


def attach_table_bounds(plan: AuditPlan, table: pd.DataFrame, lows: dict[str, np.ndarray],
                        highs: dict[str, np.ndarray]) -> pd.DataFrame:
    """The audit table with ``<col>_ci_low`` / ``<col>_ci_high`` after the point columns (NaN on the
    rows of unknown categories, which have no rates)."""
    idx = np.concatenate([np.arange(b.offset, b.offset + b.size) for b in plan.visible])
    known = np.ones(len(table), dtype=bool)
    if plan.config.unknown_values:
        known = (table["category"] != UNKNOWN).to_numpy()
    out = table.copy()
    for col in plan.ci_columns:
        for end, values in (("_ci_low", lows[col]), ("_ci_high", highs[col])):
            column = np.full(len(table), np.nan)
            column[known] = values[idx]
            out[f"{col}{end}"] = column
    return out


def audit_ranking(df: pd.DataFrame, scores: Any, *, columns: RankingColumns,
                  config: AuditConfig = AuditConfig()) -> AuditResult:
    """The audit table and worst-case figures of ``scores`` (one per row of ``df``, or a column
    name) on the table's group attributes ``columns.groups`` (docs/spec.md section 3b), with
    cluster-bootstrap intervals when ``config.ci > 0``."""
    plan = prepare_audit(df, scores, columns=columns, config=config)
    table, metrics = plan.point()
    interval = config.interval(plan.n_queries)
    if interval is not None:
        bounds, lows, highs = interval_bounds(plan)
        for key in list(metrics):
            if key in bounds:
                metrics[f"{key}_ci_low"], metrics[f"{key}_ci_high"] = bounds[key]
        table = attach_table_bounds(plan, table, lows, highs)
    return AuditResult(table=table, metrics=metrics, interval=interval, unknown_counts=plan.unknown_counts)


