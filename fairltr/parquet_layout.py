"""The layout of a Parquet ranking table (where each query starts, its length, the row group it
starts in, the features' running moments) and the column checks shared by the scan and the
readers of :mod:`fairltr.parquet_stream`."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from fairltr.columns import ColumnNames, RankingColumns
from fairltr.data import show_value
from fairltr.errors import DataError

__all__ = ["DEFAULT_CHUNK_ROWS", "RunningMoments", "ParquetLayout", "parquet_files", "open_parquet", "numeric_type",
           "text_type", "as_float", "feature_matrix", "check_finite", "choose_features"]

PathLike = str | os.PathLike

DEFAULT_CHUNK_ROWS = 1 << 16


# --------------------------------------------------------------------------- statistics
class RunningMoments:
    """Count, mean and M2 = sum (x - mean)^2 per column, merged chunk by chunk.

    Chan et al.: for parts A and B with delta = mean_B - mean_A and n = n_A + n_B,
    mean = mean_A + delta * n_B / n and M2 = M2_A + M2_B + delta^2 * n_A * n_B / n.
    Each chunk's own mean and M2 are computed in two passes, so nothing is squared before
    centring (no catastrophic cancellation). Population variance = M2 / n.
    """

    def __init__(self, n_columns: int) -> None:
        self.n = 0
        self.mean = np.zeros(n_columns, dtype=np.float64)
        self.m2 = np.zeros(n_columns, dtype=np.float64)

    def update(self, x: np.ndarray) -> "RunningMoments":
        """Add the rows of ``x`` (rows, columns)."""
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 2 or x.shape[1] != self.mean.shape[0]:
            raise ValueError(f"expected (rows, {self.mean.shape[0]}) values, got shape {x.shape}")
        if len(x) == 0:
            return self
        part = RunningMoments(x.shape[1])
        part.n = len(x)
        part.mean = x.mean(axis=0)
        part.m2 = ((x - part.mean) ** 2).sum(axis=0)
        return self.merge(part)

    def merge(self, other: "RunningMoments") -> "RunningMoments":
        """Fold ``other`` into this one (in place) and return self."""
        if other.n == 0:
            return self
        if self.n == 0:
            self.n, self.mean, self.m2 = other.n, other.mean.copy(), other.m2.copy()
            return self
        n = self.n + other.n
        delta = other.mean - self.mean
        self.mean = self.mean + delta * (other.n / n)
        self.m2 = self.m2 + other.m2 + delta * delta * (self.n * other.n / n)
        self.n = n
        return self

    @property
    def variance(self) -> np.ndarray:
        """Population variance M2 / n."""
        return self.m2 / max(self.n, 1)

    @property
    def std(self) -> np.ndarray:
        return np.sqrt(self.variance)

    @property
    def scale(self) -> np.ndarray:
        """Population std with 1 where it is 0 (the estimator's convention)."""
        s = self.std
        return np.where(s > 0, s, 1.0)


# --------------------------------------------------------------------------- layout
@dataclass
class ParquetLayout(ColumnNames):
    """What one streaming pass learnt about a ranking table stored as Parquet.

    A *unit* is one row group of one file; units are numbered in reading order and
    ``unit_start[u]`` is the global row (over all files) of unit ``u``'s first row.
    Query ``k`` occupies the global rows ``query_start[k] .. query_start[k] + query_size[k] - 1``;
    the queries that start in unit ``u`` are ``unit_queries[u] .. unit_queries[u + 1] - 1``.
    ``mean`` / ``scale`` are the standardisation statistics of ``feature_names`` over all rows
    (0 / 1 when ``standardize`` is False). ``columns``: the column contract of the table.
    """

    files: list[str]
    columns: RankingColumns
    feature_names: list[str]
    unit_file: np.ndarray
    unit_row_group: np.ndarray
    unit_start: np.ndarray
    unit_rows: np.ndarray
    query_ids: list
    query_start: np.ndarray
    query_size: np.ndarray
    unit_queries: np.ndarray
    mean: np.ndarray
    scale: np.ndarray
    n_groups: int
    standardize: bool = True
    file_start: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))
    categories: list[str] | None = None  # text categories in code order (the reference first); None: integers

    def group_codes(self, column: pa.Array | pa.ChunkedArray) -> np.ndarray:
        """Integer codes of a batch's group column: the integers as written, or the position of
        each text category in :attr:`categories` (``fairltr.data.category_codes``' coding)."""
        if self.categories is None:
            return as_float(column).astype(np.int64)
        values = column.to_pandas() if hasattr(column, "to_pandas") else pd.Series(column)
        codes = pd.Categorical(values.astype(str), categories=self.categories).codes.astype(np.int64)
        if (codes < 0).any():
            raise DataError(f"group column {self.group!r} holds {show_value(values[codes < 0].iloc[0])}, a category the "
                            "scan did not see (the file changed while streaming it)")
        return codes

    @property
    def n_rows(self) -> int:
        return int(self.unit_start[-1] + self.unit_rows[-1]) if len(self.unit_rows) else 0

    @property
    def n_queries(self) -> int:
        return len(self.query_start)

    @property
    def n_units(self) -> int:
        return len(self.unit_rows)

    @property
    def read_columns(self) -> list[str]:
        """Columns read per record batch: group, judgment, then the features."""
        return list(dict.fromkeys([self.group, self.judgment, *self.feature_names]))

    def queries_of(self, units: Sequence[int]) -> np.ndarray:
        """Positions of the queries that start in ``units``, in the order of ``units``."""
        units = np.asarray(units, dtype=np.int64)
        if len(units) == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = self.unit_queries[units], self.unit_queries[units + 1]
        sizes = hi - lo
        return np.repeat(lo - np.concatenate([[0], np.cumsum(sizes)[:-1]]), sizes) + np.arange(sizes.sum())

    def where(self, global_row: int) -> tuple[str, int]:
        """(file, 0-based row in that file) of a global row."""
        f = int(np.searchsorted(self.file_start, global_row, side="right") - 1)
        return self.files[f], int(global_row - self.file_start[f])


def parquet_files(path: PathLike) -> list[Path]:
    """The file itself, or a folder's ``*.parquet`` files (recursively) in sorted path order."""
    p = Path(path)
    if not p.exists():
        raise DataError(f"Parquet path not found: {p}")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*.parquet") if f.is_file())
        if not files:
            raise DataError(f"no *.parquet files in folder {p}")
        return files
    return [p]


def numeric_type(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def open_parquet(path: Path) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (pa.ArrowInvalid, OSError) as exc:
        raise DataError(f"cannot read {path} as Parquet: {exc}") from None


def choose_features(
    schema: pa.Schema, where: Path, columns: RankingColumns, features: Sequence[str] | None, colorblind: bool,
) -> list[str]:
    names = schema.names
    query, group, judgment = columns.query, columns.group, columns.judgment
    for role, col in (("query", query), ("group", group), ("judgment", judgment)):
        if col not in names:
            raise DataError(f"{role} column {col!r} not found in {where}; columns: {names}")
    if not (numeric_type(schema.field(group).type) or text_type(schema.field(group).type)):
        raise DataError(f"group column {group!r} in {where} holds neither integers nor text (type "
                        f"{schema.field(group).type})")
    if not numeric_type(schema.field(judgment).type):
        raise DataError(f"judgment column {judgment!r} in {where} is not numeric (type {schema.field(judgment).type})")
    if features is None:
        special = set(columns.special) | ({group} if text_type(schema.field(group).type) else set())
        feats = [c for c in names if c not in special and numeric_type(schema.field(c).type)]
    else:
        feats = list(features)
        missing = [c for c in feats if c not in names]
        if missing:
            raise DataError(f"feature column(s) {missing} not found in {where}; columns: {names}")
        for c in feats:
            t = schema.field(c).type
            if not numeric_type(t):
                raise DataError(f"feature column {c!r} in {where} is not numeric (type {t})")
    if colorblind:
        feats = [c for c in feats if c != group]
    if not feats:
        raise DataError(f"no feature columns to train on in {where} (after dropping the group column for colorblind)")
    return feats


def as_float(col: pa.Array | pa.ChunkedArray) -> np.ndarray:
    """float64 copy of a numeric column; nulls become NaN."""
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks()
    if pa.types.is_boolean(col.type) or pa.types.is_integer(col.type):
        col = col.cast(pa.float64())
    return col.to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def feature_matrix(rb: pa.RecordBatch | pa.Table, names: Sequence[str]) -> np.ndarray:
    out = np.empty((rb.num_rows, len(names)), dtype=np.float64)
    for j, name in enumerate(names):
        out[:, j] = as_float(rb.column(name))
    return out


def check_finite(values: np.ndarray, names: Sequence[str], qids: np.ndarray, where: Path, row0: int) -> None:
    bad = ~np.isfinite(values)
    if bad.any():
        r, c = np.argwhere(bad)[0]
        kind = "NaN or missing" if np.isnan(values[r, c]) else "infinite"
        raise DataError(
            f"{kind} value in {where}, column {names[c]!r}, row {row0 + int(r) + 1} (1-based), "
            f"query {show_value(qids[r])}"
        )


def text_type(t: pa.DataType) -> bool:
    """Whether an Arrow column type holds text categories (string, large string, or a dictionary of them)."""
    if pa.types.is_dictionary(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)
