"""FA*IR jobs: re-rank every query of a scored file (``fairltr rerank``) and the exact test
table (``fairltr fair mtable``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from typing import TYPE_CHECKING

from fairltr.columns import RankingColumns
from fairltr.errors import DataError

if TYPE_CHECKING:  # pandas loads with the table readers; the mtable needs numpy and scipy only
    import pandas as pd

__all__ = ["RerankConfig", "RerankResult", "rerank_file", "mtable_report", "EXPOSURE_KEYS"]

EXPOSURE_KEYS = ("exposure_protected", "exposure_nonprotected", "exposure_ratio")
TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True)
class RerankConfig:
    """Re-rank ``input_path`` by ``scores_col`` with FA*IR (``p``, ``alpha``; top ``k`` or whole
    lists) and write every row with ``score``, ``rank``, ``fair_feasible`` to ``out_path``."""

    input_path: Path
    out_path: Path
    p: float
    alpha: float = 0.1
    k: int | None = None
    scores_col: str = "score"
    fmt: str = "auto"
    columns: RankingColumns = RankingColumns()
    adjust: bool = True


@dataclass
class RerankResult:
    n_queries: int
    n_infeasible: int
    before: dict[str, float]
    after: dict[str, float]
    n_rows: int
    out_path: Path


def _exposure(df: pd.DataFrame, scores, columns: RankingColumns) -> dict[str, float]:
    """Exposure metrics of a ranking (a zero judgment column stands in when there is none)."""
    from fairltr.metrics import evaluate_ranking

    frame = df if columns.judgment in df.columns else df.assign(**{columns.judgment: 0.0})
    m = evaluate_ranking(frame, scores, columns=columns, k=(1,))
    return {key: m[key] for key in EXPOSURE_KEYS}


def rerank_file(cfg: RerankConfig) -> RerankResult:
    """Check parameters, input and output first; then re-rank and write atomically."""
    from fairltr.fair import check_params, rerank
    from fairltr.io import read_ranking, write_table
    from fairltr.workflows.outputs import check_output_file

    check_params(cfg.k, cfg.p, cfg.alpha)
    check_output_file(cfg.out_path, TABLE_SUFFIXES)
    c = cfg.columns
    df = read_ranking(cfg.input_path, cfg.fmt, columns=c.replace(judgment=None))  # the judgment is optional here
    if cfg.scores_col not in df.columns:
        raise DataError(f"{cfg.input_path}: score column {cfg.scores_col!r} not found; columns: {list(df.columns)}")
    from fairltr.data import numeric_column

    df[cfg.scores_col] = numeric_column(df, cfg.scores_col, query=c.query)  # a bad score names its file and line
    before = _exposure(df, df[cfg.scores_col], c)
    out = rerank(df, cfg.scores_col, k=cfg.k, p=cfg.p, alpha=cfg.alpha, adjust=cfg.adjust, columns=c)
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
