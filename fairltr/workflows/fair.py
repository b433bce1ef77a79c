"""Re-ranking jobs: re-rank every query of a scored file (``fairltr rerank``: FA*IR, or Geyik et
al.'s DetGreedy / DetCons / DetRelaxed / DetConstSort for any number of categories) and FA*IR's
exact test table (``fairltr fair mtable``)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from typing import TYPE_CHECKING

from fairltr.columns import RankingColumns
from fairltr.errors import DataError
from fairltr.workflows.rerank_tables import (
    TABLE_SUFFIXES, RerankConfig, RerankResult, read_category_table, read_rerank_table, top_k_shares)

if TYPE_CHECKING:  # pandas loads with the table readers; the mtable needs numpy and scipy only
    import pandas as pd

__all__ = ["RerankConfig", "RerankResult", "rerank_file", "mtable_report", "EXPOSURE_KEYS", "RERANK_METHODS"]

RERANK_METHODS = ("fair", "detgreedy", "detcons", "detrelaxed", "detconstsort")

EXPOSURE_KEYS = ("exposure_protected", "exposure_nonprotected", "exposure_ratio")
def _exposure(df: pd.DataFrame, scores, columns: RankingColumns) -> dict[str, float]:
    """Exposure metrics of a ranking (a zero judgment column stands in when there is none)."""
    from fairltr.metrics import evaluate_ranking

    frame = df if columns.judgment in df.columns else df.assign(**{columns.judgment: 0.0})
    m = evaluate_ranking(frame, scores, columns=columns, k=(1,))
    return {key: m[key] for key in EXPOSURE_KEYS}


def _check_method(cfg: RerankConfig) -> None:
    from fairltr.errors import ConfigError

    if cfg.method not in RERANK_METHODS:
        raise ConfigError(f"method must be one of {list(RERANK_METHODS)}, got {cfg.method!r}")
    if cfg.method == "fair":
        if cfg.target is not None:
            raise ConfigError("target applies to the Geyik methods (detgreedy, detcons, detrelaxed, detconstsort); "
                              "FA*IR takes p")
        if cfg.p is None:
            raise ConfigError("p (the target proportion of protected candidates) is required with method 'fair'")
    elif cfg.p is not None:
        raise ConfigError(f"p applies to method 'fair'; {cfg.method} takes a target distribution")


def _rerank_geyik_file(cfg: RerankConfig) -> RerankResult:
    from fairltr.data import numeric_column, query_codes, rank_within_query
    from fairltr.errors import ConfigError
    from fairltr.fair import parse_target, rerank_geyik
    from fairltr.fair.target import category_codes, target_shares
    from fairltr.io import read_ranking, write_table

    c = cfg.columns
    if c.group is None:
        raise ConfigError(f"method {cfg.method} needs a group column")
    if len(c.groups) > 1:  # every option given is used or refused
        raise ConfigError(f"--method {cfg.method} re-ranks on one group attribute; got {len(c.groups)} "
                          f"({', '.join(c.groups)}): give one --group (for their intersection, add a column that "
                          "combines them)")
    if cfg.target is not None:
        column, _ = parse_target(cfg.target)  # a malformed target fails before any file is read
        if column is not None and column != c.group:
            raise ConfigError(f"target names column {column!r} but the group column is {c.group!r}")
    if cfg.k is not None and (isinstance(cfg.k, bool) or not isinstance(cfg.k, int) or cfg.k < 1):
        raise ConfigError(f"k must be an integer >= 1, got {cfg.k!r}")
    df = read_category_table(cfg)  # categories: any values
    df[cfg.scores_col] = numeric_column(df, cfg.scores_col, query=c.query)
    _, cats = category_codes(df, c.group)
    if cfg.target is not None:
        shares = target_shares(cfg.target, cats, c.group)
        target = {str(cat): float(x) for cat, x in zip(cats, shares)}
    else:  # each query's own mix: pooled over the table
        counts = df[c.group].astype(str).value_counts()
        target = {str(cat): float(counts[str(cat)]) / len(df) for cat in cats}
    k_show = cfg.k or 10
    label = f"share in top {k_show}"
    codes, _ = query_codes(df, c.query)
    before = top_k_shares(df[c.group], rank_within_query(codes, df[cfg.scores_col].to_numpy(dtype=float)),
                           k_show, label)
    out = rerank_geyik(df, cfg.scores_col, method=cfg.method, target=cfg.target, k=cfg.k,
                       columns=c.replace(judgment=None))
    after = top_k_shares(out[c.group], out["rank"].to_numpy(), k_show, label)
    write_table(out, cfg.out_path)
    feasible = out.groupby(c.query, sort=False)["fair_feasible"].first()
    return RerankResult(len(feasible), int((~feasible).sum()), before, after, len(out), cfg.out_path, cfg.method,
                        {f"{label}: {cat}": v for cat, v in target.items()})


def rerank_file(cfg: RerankConfig) -> RerankResult:
    """Check parameters, input and output first; then re-rank and write atomically."""
    _check_method(cfg)
    if cfg.method != "fair":
        return _rerank_geyik_file(cfg)
    from fairltr.workflows.fair_multinomial import is_share_list, rerank_multinomial_file

    if is_share_list(cfg.p):
        return rerank_multinomial_file(cfg)
    from fairltr.fair import check_params, rerank
    from fairltr.io import read_ranking, write_table
    from fairltr.workflows.outputs import check_output_file

    check_params(cfg.k, float(cfg.p) if isinstance(cfg.p, str) else cfg.p, cfg.alpha)
    check_output_file(cfg.out_path, TABLE_SUFFIXES)
    c = cfg.columns
    df = read_rerank_table(cfg, c.replace(judgment=None))  # the judgment is optional here
    if cfg.scores_col not in df.columns:
        raise DataError(f"{cfg.input_path}: score column {cfg.scores_col!r} not found; columns: {list(df.columns)}")
    from fairltr.data import numeric_column

    df[cfg.scores_col] = numeric_column(df, cfg.scores_col, query=c.query)  # a bad score names its file and line
    before = _exposure(df, df[cfg.scores_col], c)
    out = rerank(df, cfg.scores_col, k=cfg.k, p=float(cfg.p), alpha=cfg.alpha, adjust=cfg.adjust, columns=c)
    after = _exposure(out, -out["rank"].to_numpy(dtype=float), c)
    write_table(out, cfg.out_path)
    feasible = out.groupby(c.query, sort=False)["fair_feasible"].first()
    return RerankResult(len(feasible), int((~feasible).sum()), before, after, len(out), cfg.out_path)


def mtable_report(k: int, p: float, alpha: float, adjust: bool = True) -> dict[str, object]:
    """m(1..k), alpha_c and the exact fail probability of the FA*IR test."""
    from fairltr.fair import adjust_alpha, check_params, fail_probability, mtable

    check_params(k, p, alpha)
    if k > MAX_MTABLE_K:
        from fairltr.errors import ConfigError

        raise ConfigError(f"--k {k} is above {MAX_MTABLE_K:,}: the exact table would need more memory and time "
                          "than a ranking of people can use; re-rank the top k you show")
    alpha_c = alpha if not adjust else adjust_alpha(k, p, alpha)
    table = mtable(k, p, alpha, adjust=adjust)
    return {"k": k, "p": p, "alpha": alpha, "adjusted": adjust, "alpha_c": alpha_c,
            "fail_probability": fail_probability(table, p), "mtable": np.asarray(table)}


MAX_MTABLE_K = 100_000
