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

__all__ = ["RerankConfig", "RerankResult", "rerank_file", "mtable_report", "EXPOSURE_KEYS", "RERANK_METHODS",
           "rerank_method_names", "rerank_declaration"]


def rerank_method_names() -> list[str]:
    """Every declared re-ranker (:data:`fairltr.fair.rerankers.RERANKERS`): ``--method``'s choices."""
    from fairltr.fair.rerankers import reranker_names

    return reranker_names()


def rerank_declaration(method: str):
    """The :class:`~fairltr.fair.rerankers.Reranker` called ``method`` (None if there is none)."""
    from fairltr.fair.rerankers import RERANKERS

    return RERANKERS.get(method)


def __getattr__(name: str):  # RERANK_METHODS: the declared names when asked for
    if name == "RERANK_METHODS":
        return tuple(rerank_method_names())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


EXPOSURE_KEYS = ("exposure_protected", "exposure_nonprotected", "exposure_ratio")
def _exposure(df: pd.DataFrame, scores, columns: RankingColumns) -> dict[str, float]:
    """Exposure metrics of a ranking (a zero judgment column stands in when there is none)."""
    from fairltr.metrics import evaluate_ranking

    frame = df if columns.judgment in df.columns else df.assign(**{columns.judgment: 0.0})
    m = evaluate_ranking(frame, scores, columns=columns, k=(1,))
    return {key: m[key] for key in EXPOSURE_KEYS}


def _given(cfg: RerankConfig) -> dict[str, object]:
    """The settings ``cfg`` gives by name (the built-ins' fields, then its ``settings``)."""
    return {"p": cfg.p, "alpha": cfg.alpha, "adjust": cfg.adjust, "target": cfg.target, **dict(cfg.settings)}


def _check_method(cfg: RerankConfig):
    """The declaration of ``cfg.method`` after checking that it takes every setting given and
    gets the ones it requires; returns it with the settings it is called with."""
    from fairltr.errors import ConfigError
    from fairltr.fair.rerankers import owners_text

    decl = rerank_declaration(cfg.method)
    if decl is None:
        raise ConfigError(f"method must be one of {rerank_method_names()}, got {cfg.method!r}")
    given = _given(cfg)
    for name in ("target", "p", *dict(cfg.settings)):
        if given[name] is not None and not decl.takes_setting(name):
            who = decl.label_text if sum(d.label == decl.label for d in _declarations()) == 1 else decl.name
            raise ConfigError(f"{name} applies to {owners_text(name)}; {who} takes {decl.takes_text}")
    for name in decl.required:
        if given.get(name) is None:
            raise ConfigError(f"{name} ({decl.describe_setting(name)}) is required with method {cfg.method!r}")
    builtin = ("p", "alpha", "adjust", "target")
    settings = {f: (given.get(f) if f in builtin else decl.check_value(f, given[f]) if given.get(f) is not None
                    else None) for f in decl.fields if f != "k"}
    return decl, settings


def _declarations():
    from fairltr.fair.rerankers import RERANKERS

    return RERANKERS.declarations()


def _check_k(k) -> None:
    from fairltr.errors import ConfigError

    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")


def _rerank_categories_file(cfg: RerankConfig, decl, settings: dict) -> RerankResult:
    """A re-ranker of any number of categories (Geyik's, a plugin's): category shares of the top k
    before and after, beside the target (or each category's pooled share without one)."""
    from fairltr.data import numeric_column, query_codes, rank_within_query
    from fairltr.errors import ConfigError
    from fairltr.fair import parse_target
    from fairltr.fair.target import category_codes, target_shares
    from fairltr.io import write_table

    c = cfg.columns
    if c.group is None:
        raise ConfigError(f"method {cfg.method} needs a group column")
    if len(c.groups) > 1 and not decl.several_attributes:  # every option given is used or refused
        raise ConfigError(f"--method {cfg.method} re-ranks on one group attribute; got {len(c.groups)} "
                          f"({', '.join(c.groups)}): give one --group (for their intersection, add a column that "
                          "combines them)")
    if cfg.target is not None:
        column, _ = parse_target(cfg.target)  # a malformed target fails before any file is read
        if column is not None and column != c.group:
            raise ConfigError(f"target names column {column!r} but the group column is {c.group!r}")
    _check_k(cfg.k)
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
    out = decl.run(df, cfg.scores_col, columns=c.replace(judgment=None), k=cfg.k, **settings)
    after = top_k_shares(out[c.group], out["rank"].to_numpy(), k_show, label)
    write_table(out, cfg.out_path)
    feasible = out.groupby(c.query, sort=False)["fair_feasible"].first()
    return RerankResult(len(feasible), int((~feasible).sum()), before, after, len(out), cfg.out_path, cfg.method,
                        {f"{label}: {cat}": v for cat, v in target.items()})


def rerank_file(cfg: RerankConfig) -> RerankResult:
    """Check parameters, input and output first; then re-rank with the declared re-ranker
    (:data:`fairltr.fair.rerankers.RERANKERS`) and write atomically: a re-ranker of categories
    reports category shares, FA*IR with a share list too (:mod:`fairltr.workflows.fair_multinomial`),
    a binary one the exposure metrics."""
    decl, settings = _check_method(cfg)
    from fairltr.workflows.fair_multinomial import is_share_list, rerank_multinomial_file

    if decl.takes_setting("p") and is_share_list(cfg.p):
        return rerank_multinomial_file(cfg)
    if decl.categories:
        return _rerank_categories_file(cfg, decl, settings)
    from fairltr.io import write_table
    from fairltr.workflows.outputs import check_output_file

    if decl.takes_setting("p"):
        from fairltr.fair import check_params

        check_params(cfg.k, float(cfg.p) if isinstance(cfg.p, str) else cfg.p, cfg.alpha)
        settings["p"] = float(cfg.p)
    else:
        _check_k(cfg.k)
    check_output_file(cfg.out_path, TABLE_SUFFIXES)
    c = cfg.columns
    df = read_rerank_table(cfg, c.replace(judgment=None))  # the judgment is optional here
    if cfg.scores_col not in df.columns:
        raise DataError(f"{cfg.input_path}: score column {cfg.scores_col!r} not found; columns: {list(df.columns)}")
    from fairltr.data import numeric_column

    df[cfg.scores_col] = numeric_column(df, cfg.scores_col, query=c.query)  # a bad score names its file and line
    before = _exposure(df, df[cfg.scores_col], c)
    out = decl.run(df, cfg.scores_col, columns=c, k=cfg.k, **settings)
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
