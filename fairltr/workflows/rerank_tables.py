"""What every re-ranking job shares: its configuration and result, the table it reads (under the
reading options) and the top-k category shares it reports (:mod:`fairltr.workflows.fair` and
:mod:`fairltr.workflows.fair_multinomial` both build on it, so neither imports the other back)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fairltr.columns import RankingColumns

if TYPE_CHECKING:  # pandas loads with the table readers; the mtable needs numpy and scipy only
    import numpy as np
    import pandas as pd

__all__ = ["TABLE_SUFFIXES", "RerankConfig", "RerankResult", "read_rerank_table", "read_category_table",
           "top_k_shares"]

TABLE_SUFFIXES = (".csv", ".parquet", ".pq")


@dataclass(frozen=True)
class RerankConfig:
    """Re-rank ``input_path`` by ``scores_col`` (top ``k`` or whole lists) and write every row with
    ``score``, ``rank``, ``fair_feasible`` to ``out_path``. ``method="fair"`` (default): FA*IR with
    ``p``, ``alpha``, ``adjust`` on the binary group (>= 1 protected); a Geyik method
    (``detgreedy``, ``detcons``, ``detrelaxed``, ``detconstsort``): the group column's categories
    (any values) with ``target`` (``"race=Black:0.3,..."``; None: each query's own mix); any other
    declared re-ranker (:data:`fairltr.fair.rerankers.RERANKERS`) with its ``settings``."""

    input_path: Path
    out_path: Path
    p: float | str | None  # a number: binomial FA*IR; "A=0.2,B=0.1": multinomial (fair_multinomial)
    alpha: float = 0.1
    k: int | None = None
    scores_col: str = "score"
    fmt: str = "auto"
    columns: RankingColumns = RankingColumns()
    adjust: bool = True
    method: str = "fair"
    target: str | None = None
    na_values: tuple[str, ...] | None = None  # CSV cells read as missing (None: pandas' defaults)
    duplicates: str = "refuse"  # repeated rows without an item column: fairltr.data.DUPLICATE_POLICIES
    settings: tuple[tuple[str, Any], ...] = ()  # a plugin re-ranker's other declared settings (name, value)


@dataclass
class RerankResult:
    """``before`` / ``after``: FA*IR: the exposure metrics; Geyik methods: each category's share
    of the top k (pooled over queries), ``target`` beside them (the mean target share)."""

    n_queries: int
    n_infeasible: int
    before: dict[str, float]
    after: dict[str, float]
    n_rows: int
    out_path: Path
    method: str = "fair"
    target: dict[str, float] | None = None


def top_k_shares(groups: pd.Series, rank: np.ndarray, k: int, label: str) -> dict[str, float]:
    """Share of each category among the candidates ranked within the top k of their query."""
    text = groups.astype(str)
    top = text[rank <= k].value_counts()
    n_top = max(int(top.sum()), 1)
    import pandas as pd  # with the table readers (the mtable path loads no pandas)

    return {f"{label}: {cat}": float(top.get(cat, 0)) / n_top for cat in pd.unique(text)}


def read_rerank_table(cfg: RerankConfig, columns: RankingColumns) -> pd.DataFrame:
    """The input table under the reading options (missing markers, repeated rows)."""
    from fairltr.data import check_duplicate_rows
    from fairltr.io import read_ranking

    df = read_ranking(cfg.input_path, cfg.fmt, columns=columns, na_values=cfg.na_values)
    return check_duplicate_rows(df, cfg.columns, cfg.duplicates, source=str(cfg.input_path))


def read_category_table(cfg: RerankConfig) -> pd.DataFrame:
    """A category re-ranker's input (Geyik methods, multinomial FA*IR): the output path checked
    first, then the table read with any group values (no judgment needed), its group and score
    columns present (a one-line DataError naming the file otherwise)."""
    from fairltr.errors import DataError
    from fairltr.workflows.outputs import check_output_file

    c = cfg.columns
    check_output_file(cfg.out_path, TABLE_SUFFIXES)
    df = read_rerank_table(cfg, c.replace(judgment=None, group=None))
    for role, col in (("group", c.group), ("score", cfg.scores_col)):
        if col not in df.columns:
            raise DataError(f"{cfg.input_path}: {role} column {col!r} not found; columns: {list(df.columns)}")
    return df
