"""Ranking tables streamed from Parquet in query-aligned batches, never materialised whole.

* :func:`scan_parquet` makes ONE pass over a Parquet file (or a folder of ``*.parquet`` files,
  read in sorted name order) in record batches of ``chunk_rows`` rows. It validates the columns
  (numeric, finite; the group column integer >= 0), checks that the rows of each query are
  contiguous (a query id that re-appears after another one is a :class:`DataError`), and returns
  a :class:`ParquetLayout`: where every query starts and how long it is, which row group ("unit")
  it starts in, and the per-feature mean / population std of the real candidates computed with
  :class:`RunningMoments` (Chan, Golub & LeVeque's pairwise merge). Memory: one record batch plus
  O(number of queries) for the layout.
* :func:`iter_query_batches` reads the queries that START in a given list of units (a query
  that runs over a row-group boundary is finished by reading the next row group's leading rows)
  and yields padded :class:`~fairltr.data.RankingBatch` es of ``batch_queries`` whole queries,
  standardised with the layout's statistics. Memory: one batch plus one record batch.
* :func:`split_units` deals contiguous blocks of row groups to the processes of a data-parallel
  run, balanced by the number of queries that start in them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch

from fairltr.columns import RankingColumns, resolve_columns
from fairltr.data import RankingBatch, positions_in_query, show_value
from fairltr.errors import ConfigError, DataError
from fairltr.parquet_layout import (DEFAULT_CHUNK_ROWS, ParquetLayout, RunningMoments, as_float, check_finite,
                                    choose_features, feature_matrix, open_parquet, parquet_files,
                                    text_type)

__all__ = [
    "RunningMoments", "ParquetLayout", "parquet_files", "scan_parquet", "split_units",
    "iter_query_batches", "pad_rows",
]

PathLike = str | os.PathLike


@dataclass
class _ScanState:
    """What :func:`scan_parquet` has learnt so far: the units (row groups) met, where each query
    starts, the ids seen (a re-appearing id means the table is not grouped by query), the largest
    group category and the running feature moments."""

    columns: RankingColumns
    standardize: bool
    feature_names: list[str] | None = None
    moments: RunningMoments | None = None
    unit_file: list[int] = field(default_factory=list)
    unit_row_group: list[int] = field(default_factory=list)
    unit_rows: list[int] = field(default_factory=list)
    starts: list[np.ndarray] = field(default_factory=list)
    ids: list = field(default_factory=list)
    seen: set = field(default_factory=set)
    open_id: object = None
    have_open: bool = False
    max_group: int = 0
    file_start: list[int] = field(default_factory=list)
    row: int = 0
    text_groups: bool | None = None  # None until the first batch says which
    category_counts: dict = field(default_factory=dict)  # text categories: how many rows each
    reference: object = None  # a declared reference category (text), else the most frequent

    def start_file(self, pf: pq.ParquetFile, f: Path, first: Path, features: Sequence[str] | None,
                   colorblind: bool) -> list[str]:
        """Record where file ``f`` starts and return the columns to read statistics of: group,
        judgment, then its features (which must equal the first file's when chosen automatically)."""
        self.file_start.append(self.row)
        chosen = choose_features(pf.schema_arrow, f, self.columns, features, colorblind)
        if self.feature_names is None:
            self.feature_names = chosen
            self.moments = RunningMoments(len(chosen))
        elif features is None and chosen != self.feature_names:
            raise DataError(f"{f} has feature columns {chosen}, but {first} has {self.feature_names}")
        return [self.columns.group, self.columns.judgment, *self.feature_names]

    def add_unit(self, fi: int, rg: int, n_rows: int) -> int:
        """Record row group ``rg`` of file ``fi``; returns the 0-based row in that file it starts at."""
        self.unit_file.append(fi)
        self.unit_row_group.append(rg)
        self.unit_rows.append(n_rows)
        return self.row - self.file_start[-1]

    def add_batch(self, rb: pa.RecordBatch, f: Path, file_row: int, stat_cols: Sequence[str]) -> None:
        """Check one non-empty record batch (its first row is ``file_row`` of ``f``) and take in
        its queries, group categories and feature moments."""
        q = self._query_runs(rb, f, file_row)
        column = rb.column(self.columns.group)
        text = text_type(column.type)
        if self.text_groups is None:
            self.text_groups = text
        elif text != self.text_groups:
            raise DataError(f"group column {self.columns.group!r} in {f} holds {'text' if text else 'numbers'}, "
                            f"but earlier files or row groups hold {'numbers' if text else 'text'}")
        if text:
            self._count_categories(column, q, f, file_row)
            values = np.concatenate([np.zeros((rb.num_rows, 1)), feature_matrix(rb, stat_cols[1:])], axis=1)
            check_finite(values[:, 1:], stat_cols[1:], q, f, file_row)
        else:
            values = feature_matrix(rb, stat_cols)
            check_finite(values, stat_cols, q, f, file_row)
            g = values[:, 0]
            _check_group_categories(g, q, f, file_row, self.columns.group)
            self.max_group = max(self.max_group, int(g.max()))
        if self.standardize:
            self.moments.update(values[:, 2:])
        self.row += rb.num_rows

    def _count_categories(self, column: pa.Array, q: np.ndarray, f: Path, file_row: int) -> None:
        """Take in a batch's text categories (a missing one is an error naming its row)."""
        import pyarrow.compute as pc

        if column.null_count:
            r = int(np.flatnonzero(np.asarray(column.is_null()))[0])
            raise DataError(f"{f}, row {file_row + r + 1} (1-based, query {show_value(q[r])}): missing group category "
                            f"in column {self.columns.group!r}")
        counts = pc.value_counts(column.cast(pa.string()))
        for value, n in zip(counts.field("values").to_pylist(), counts.field("counts").to_pylist()):
            self.category_counts[value] = self.category_counts.get(value, 0) + int(n)

    def categories(self) -> list[str] | None:
        """The text categories in code order: the reference (declared, else the most frequent,
        ties to the first in sorted order) then the others sorted; None for integer categories."""
        if not self.text_groups:
            return None
        found = sorted(self.category_counts)
        if self.reference is not None:
            if str(self.reference) not in self.category_counts:
                raise ConfigError(f"reference category {self.reference!r} does not occur; categories: {found}")
            ref = str(self.reference)
        else:
            top = max(self.category_counts.values())
            ref = next(c for c in found if self.category_counts[c] == top)
        return [ref] + [c for c in found if c != ref]

    def _query_runs(self, rb: pa.RecordBatch, f: Path, file_row: int) -> np.ndarray:
        """The batch's query ids; records where each new query starts (an id met before, after
        other queries, is a :class:`DataError`)."""
        query = self.columns.query
        qcol = rb.column(query)
        if qcol.null_count:
            r = int(np.flatnonzero(qcol.is_null().to_numpy(zero_copy_only=False))[0])
            raise DataError(f"missing query id in {f}, column {query!r}, row {file_row + r + 1} (1-based)")
        q = qcol.to_numpy(zero_copy_only=False)
        cut = np.flatnonzero(q[1:] != q[:-1]) + 1
        run_starts = np.concatenate([[0], cut])
        run_ids = q[run_starts]
        if self.have_open and run_ids[0] == self.open_id:
            run_starts, run_ids = run_starts[1:], run_ids[1:]
        for r0, qid in zip(run_starts.tolist(), run_ids.tolist()):
            if qid in self.seen:
                raise DataError(
                    f"{f} is not grouped by query: query {show_value(qid)} re-appears at row "
                    f"{file_row + r0 + 1} (1-based) after other queries; sort or group the table by "
                    f"{query!r} (e.g. ORDER BY {query}) before streaming it"
                )
            self.seen.add(qid)
        self.starts.append(run_starts.astype(np.int64) + self.row)
        self.ids.extend(run_ids.tolist())
        if len(q):
            self.open_id, self.have_open = q[-1], True
        return q

    def layout(self, files: Sequence[Path]) -> ParquetLayout:
        """The :class:`ParquetLayout` of the finished pass."""
        row, feats = self.row, self.feature_names
        cats = self.categories()
        query_start = np.concatenate(self.starts) if self.starts else np.zeros(0, dtype=np.int64)
        query_size = np.diff(np.concatenate([query_start, [row]]))
        unit_rows = np.asarray(self.unit_rows, dtype=np.int64)
        unit_start = np.concatenate([[0], np.cumsum(unit_rows)[:-1]]).astype(np.int64)
        unit_queries = np.searchsorted(query_start, np.concatenate([unit_start, [row]]), side="left").astype(np.int64)
        if self.standardize:
            mean, scale = self.moments.mean, self.moments.scale
        else:
            mean, scale = np.zeros(len(feats)), np.ones(len(feats))
        return ParquetLayout(
            files=[str(f) for f in files], columns=self.columns, feature_names=list(feats),
            unit_file=np.asarray(self.unit_file, dtype=np.int64),
            unit_row_group=np.asarray(self.unit_row_group, dtype=np.int64), unit_start=unit_start,
            unit_rows=unit_rows, query_ids=self.ids, query_start=query_start.astype(np.int64),
            query_size=query_size.astype(np.int64), unit_queries=unit_queries, mean=mean, scale=scale,
            n_groups=max(2, len(cats) if cats else self.max_group + 1), standardize=self.standardize,
            file_start=np.asarray(self.file_start, dtype=np.int64), categories=cats,
        )


def _check_group_categories(g: np.ndarray, q: np.ndarray, f: Path, file_row: int, group: str) -> None:
    """A :class:`DataError` at the first group value that is not an integer >= 0."""
    nonint = g != np.round(g)
    if nonint.any() or (g < 0).any():
        r = int(np.flatnonzero(nonint | (g < 0))[0])
        raise DataError(
            f"group column {group!r} in {f} must hold integers >= 0 (0 = non-protected, >= 1 "
            f"protected); row {file_row + r + 1} (1-based, query {show_value(q[r])}) has {show_value(g[r])}"
        )


def scan_parquet(
    path: PathLike,
    *,
    columns: RankingColumns | None = None,
    features: Sequence[str] | None = None,
    colorblind: bool = False,
    standardize: bool = True,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
    reference: object = None,
) -> ParquetLayout:
    """One streaming pass: validate, locate every query, and compute mean / population std.

    The group column holds integer categories (0 = the reference) or text categories, coded as
    :func:`fairltr.data.category_codes` codes them: ``reference`` (declared), else the most frequent
    category, gets code 0 and the others follow in sorted order (:attr:`ParquetLayout.categories`).

    ``columns``: the column contract (default :data:`~fairltr.columns.DEFAULT_COLUMNS`); the
    query, group and judgment columns must exist.
    ``features=None`` takes every numeric column except query, judgment and item (the group
    column included unless ``colorblind``), as the DELTR estimator does for a DataFrame. Rows of
    a query must be contiguous (the table sorted or grouped by query id).
    """
    c = resolve_columns(columns).require("group", "judgment", purpose="streamed DELTR training")
    if chunk_rows < 1:
        raise ConfigError(f"chunk_rows must be >= 1, got {chunk_rows}")
    files = parquet_files(path)
    scan = _ScanState(c, standardize, reference=reference)
    for fi, f in enumerate(files):
        pf = open_parquet(f)
        stat_cols = scan.start_file(pf, f, files[0], features, colorblind)
        read = list(dict.fromkeys([c.query, *stat_cols]))
        for rg in range(pf.num_row_groups):
            file_row = scan.add_unit(fi, rg, pf.metadata.row_group(rg).num_rows)
            for rb in pf.iter_batches(batch_size=chunk_rows, row_groups=[rg], columns=read):
                if rb.num_rows:
                    scan.add_batch(rb, f, file_row, stat_cols)
                    file_row += rb.num_rows
    if scan.row == 0:
        raise DataError(f"empty Parquet data: {path} has no rows")
    return scan.layout(files)


# --------------------------------------------------------------------------- sharding
def split_units(layout: ParquetLayout, parts: int) -> list[np.ndarray]:
    """``parts`` contiguous blocks of units, balanced by the number of queries starting in them."""
    if parts < 1:
        raise ConfigError(f"parts must be >= 1, got {parts}")
    owned = np.diff(layout.unit_queries)
    cum = np.concatenate([[0], np.cumsum(owned)])
    targets = np.arange(1, parts) * (cum[-1] / parts)
    cuts = np.searchsorted(cum, targets, side="left")
    # a cut at unit c means units [prev, c) go to the earlier part; keep cuts monotone
    bounds = np.concatenate([[0], np.clip(cuts, 0, layout.n_units), [layout.n_units]])
    bounds = np.maximum.accumulate(bounds)
    return [np.arange(bounds[i], bounds[i + 1], dtype=np.int64) for i in range(parts)]


# --------------------------------------------------------------------------- reading
class _RowCursor:
    """Global rows [lo, hi) of the layout's files, read record batch by record batch.

    Requests that move forward continue the open reader; a request before the open position
    (or in another unit) reopens the unit that holds it. Holds one record batch.
    """

    def __init__(self, layout: ParquetLayout, chunk_rows: int) -> None:
        self.layout = layout
        self.chunk_rows = chunk_rows
        self.columns = layout.read_columns
        self._files: dict[int, pq.ParquetFile] = {}
        self._unit = -1
        self._reader: Iterator[pa.RecordBatch] | None = None
        self._buf: pa.RecordBatch | None = None
        self._buf_start = 0  # global row of self._buf's first row
        self._next = 0  # global row after the last row handed out by the reader

    def _file(self, fi: int) -> pq.ParquetFile:
        if fi not in self._files:
            self._files = {fi: open_parquet(Path(self.layout.files[fi]))}  # one open file at a time
        return self._files[fi]

    def _open_unit(self, u: int) -> None:
        lay = self.layout
        pf = self._file(int(lay.unit_file[u]))
        self._reader = iter(pf.iter_batches(batch_size=self.chunk_rows, row_groups=[int(lay.unit_row_group[u])],
                                            columns=self.columns))
        self._unit = u
        self._buf = None
        self._buf_start = self._next = int(lay.unit_start[u])

    def _advance(self) -> None:
        lay = self.layout
        while True:
            rb = next(self._reader, None) if self._reader is not None else None
            if rb is not None and rb.num_rows:
                self._buf, self._buf_start = rb, self._next
                self._next += rb.num_rows
                return
            if rb is None:
                end = int(lay.unit_start[self._unit] + lay.unit_rows[self._unit])
                if self._next != end:
                    f, r = lay.where(self._next)
                    raise DataError(f"{f} changed while streaming it: row group ended at row {r}")
                if self._unit + 1 >= lay.n_units:
                    raise DataError(f"{lay.files[-1]} ended early while streaming it (the file changed?)")
                self._open_unit(self._unit + 1)

    def take(self, lo: int, hi: int) -> list[pa.RecordBatch]:
        """Record-batch slices covering global rows [lo, hi)."""
        lay = self.layout
        unit = int(np.searchsorted(lay.unit_start, lo, side="right") - 1)
        behind = lo < self._buf_start if self._buf is not None else lo < self._next
        if self._reader is None or unit != self._unit or behind:
            self._open_unit(unit)  # skip ahead to (or back to) the unit holding lo
        out: list[pa.RecordBatch] = []
        pos = lo
        while pos < hi:
            end = self._buf_start + (self._buf.num_rows if self._buf is not None else 0)
            if self._buf is None or pos >= end:
                self._advance()  # the next record batch, continuing into the next unit
                continue
            stop = min(hi, end)
            out.append(self._buf.slice(pos - self._buf_start, stop - pos))
            pos = stop
        return out


def pad_rows(
    features: np.ndarray, judgments: np.ndarray, groups: np.ndarray, sizes: np.ndarray,
    *, rows: np.ndarray | None = None, query_ids: list | None = None, feature_names: Sequence[str] = (),
    dtype: torch.dtype = torch.float64,
) -> RankingBatch:
    """Pad the rows of consecutive whole queries (``sizes[k]`` rows each, in order) into a batch.

    ``rows`` (optional) are the source row numbers kept in ``row_index``; padding holds 0
    (-1 in ``row_index``) exactly as :func:`fairltr.data.to_batch` pads.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    nq, n_max = len(sizes), int(sizes.max()) if len(sizes) else 0
    # flat slot of every row: query k's rows fill slots k * n_max .. k * n_max + sizes[k] - 1
    codes = np.repeat(np.arange(nq, dtype=np.int64), sizes)
    flat = codes * n_max + positions_in_query(codes, nq)[0]
    x = np.zeros((nq * n_max, features.shape[1]), dtype=np.float64)
    x[flat] = features
    x = x.reshape(nq, n_max, features.shape[1])
    y = np.zeros(nq * n_max, dtype=np.float64)
    y[flat] = judgments
    g = np.zeros(nq * n_max, dtype=np.int64)
    g[flat] = groups
    m = np.zeros(nq * n_max, dtype=bool)
    m[flat] = True
    idx = np.full(nq * n_max, -1, dtype=np.int64)
    idx[flat] = rows if rows is not None else np.arange(len(flat))
    y, g, m, idx = (a.reshape(nq, n_max) for a in (y, g, m, idx))
    return RankingBatch(
        features=torch.from_numpy(x).to(dtype), judgments=torch.from_numpy(y).to(dtype),
        groups=torch.from_numpy(g), mask=torch.from_numpy(m), row_index=torch.from_numpy(idx),
        query_ids=list(query_ids) if query_ids is not None else list(range(nq)), feature_names=list(feature_names),
    )


def iter_query_batches(
    layout: ParquetLayout,
    units: Sequence[int] | None = None,
    *,
    batch_queries: int,
    dtype: torch.dtype = torch.float64,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> Iterator[RankingBatch]:
    """Padded, standardised batches of ``batch_queries`` whole queries (the last may be smaller).

    The queries are those that start in ``units`` (default: all), in the order of ``units`` and
    of the file inside a unit. ``row_index`` holds each candidate's global row (over all files).
    """
    if batch_queries < 1:
        raise ConfigError(f"batch_queries must be >= 1, got {batch_queries}")
    units = np.arange(layout.n_units) if units is None else np.asarray(units, dtype=np.int64)
    queries = layout.queries_of(units)
    cursor = _RowCursor(layout, chunk_rows)
    for b0 in range(0, len(queries), batch_queries):
        qs = queries[b0:b0 + batch_queries]
        starts, sizes = layout.query_start[qs], layout.query_size[qs]
        # contiguous runs of rows (consecutive queries of the file form one run)
        brk = np.flatnonzero(starts[1:] != starts[:-1] + sizes[:-1]) + 1
        run_lo = starts[np.concatenate([[0], brk])]
        run_hi = (starts + sizes)[np.concatenate([brk - 1, [len(qs) - 1]])]
        pieces: list[pa.RecordBatch] = []
        for lo, hi in zip(run_lo.tolist(), run_hi.tolist()):
            pieces.extend(cursor.take(lo, hi))
        table = pa.Table.from_batches(pieces)
        del pieces
        x = feature_matrix(table, layout.feature_names)
        if layout.standardize:  # in place: (x - mean) / scale
            x -= layout.mean
            x /= layout.scale
        judgments, groups = as_float(table.column(layout.judgment)), layout.group_codes(table.column(layout.group))
        del table
        rows = np.concatenate([np.arange(lo, hi) for lo, hi in zip(run_lo.tolist(), run_hi.tolist())])
        yield pad_rows(
            x, judgments, groups, sizes, rows=rows,
            query_ids=[layout.query_ids[k] for k in qs.tolist()],
            feature_names=layout.feature_names, dtype=dtype,
        )
