"""The audit of a Parquet table read in record batches (``fairltr audit`` on 10^7 rows): the same
figures as :func:`fairltr.metrics.audit_ranking` on the table in memory, in memory bounded by the
per-(query, category) statistics, one batch, and (for a scoring rate of the whole sample) one
float per row for the exact median.

Two passes. The first reads the group columns (and the scores for the sample median): every
attribute's categories, their intersection's observed cells, the reference category of the
binary figures, the unknown counts. The second reads each batch, keeps the rows of the last,
possibly unfinished, query for the next one (the table must be grouped by query: the rows of a
query contiguous, as :mod:`fairltr.parquet_stream` requires), and adds each finished query's
sufficient statistics (:mod:`fairltr.metrics.audit_stats`) and NDKL. The queries bootstrap runs on
those statistics; the candidate bootstrap (fewer than 30 queries) needs the rows and is refused.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator

import numpy as np
import pandas as pd
from scipy import sparse

from fairltr.columns import RankingColumns
from fairltr.data import is_string_categories, show_value
from fairltr.errors import ConfigError, DataError
from fairltr.metrics.audit import AuditConfig, AuditPlan, AuditResult, attach_table_bounds, interval_bounds
from fairltr.metrics.audit_blocks import Block, sorted_query_codes, unknown_mask
from fairltr.metrics.audit_stats import N_STATS, ndkl_per_query, stat_matrices
from fairltr.metrics.labels import attribute_key, category_label, intersection_name
from fairltr.metrics.ordering import tied_ranks_of_rows

__all__ = ["stream_audit", "BATCH_ROWS"]

BATCH_ROWS = 1 << 17
"""Rows per record batch read."""


def _batches(path: Path, columns: list[str], batch_rows: int) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    try:
        pf = pq.ParquetFile(path)
    except Exception as exc:
        raise DataError(f"{path}: cannot read as Parquet: {' '.join(str(exc).split())[:200]}") from None
    missing = [c for c in columns if c not in pf.schema_arrow.names]
    if missing:
        raise DataError(f"{path}: missing column(s) {missing}; columns: {pf.schema_arrow.names}")
    for rb in pf.iter_batches(batch_size=batch_rows, columns=columns):
        yield rb.to_pandas()


def _scores(frame: pd.DataFrame, score_column: str | None, rank_column: str | None, where: str) -> np.ndarray:
    col = score_column or rank_column
    values = pd.to_numeric(frame[col], errors="coerce").to_numpy(dtype=np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise DataError(f"{where}: column {col!r} holds {show_value(frame[col].iloc[int(np.flatnonzero(bad)[0])])}; "
                        f"{'scores' if score_column else 'ranks'} must be finite numbers")
    return values if score_column else -values


class _Categories:
    """Pass one: each attribute's categories (text, or integers as written) with their counts, the
    intersection's observed cells, the rows read."""

    def __init__(self, c: RankingColumns, unknown_values: tuple[str, ...]) -> None:
        self.c, self.unknown_values = c, unknown_values
        self.counts: dict[str, dict[str, int]] = {g: {} for g in c.groups}
        self.text: dict[str, bool] = {}
        self.cells: set[tuple[str, ...]] = set()
        self.n_rows = 0

    def labels(self, frame: pd.DataFrame) -> dict[str, np.ndarray]:
        """Each attribute's label per row of ``frame`` (None where unknown), as the in-memory audit
        writes categories: text as written, integers as their decimal text."""
        out = {}
        for g in self.c.groups:
            values = frame[g]
            unknown = unknown_mask(values, self.unknown_values)
            if (values.isna().to_numpy() & ~unknown).any():
                raise DataError(f"group column {g!r} has a missing value; list '' with the unknown values to count "
                                "empty cells as unknown")
            text = is_string_categories(values[~unknown])
            if self.text.setdefault(g, text) != text and (~unknown).any():
                raise DataError(f"group column {g!r} holds text in some batches and numbers in others")
            labels = np.full(len(values), None, dtype=object)
            known = values[~unknown]
            labels[~unknown] = known.astype(str).to_numpy() if self.text[g] else \
                pd.to_numeric(known).astype(np.int64).astype(str).to_numpy()
            out[g] = labels
        return out

    def add(self, frame: pd.DataFrame) -> None:
        self.n_rows += len(frame)
        labels = self.labels(frame)
        for g, lab in labels.items():
            for value, n in pd.Series(lab[lab != None]).value_counts().items():  # noqa: E711  (object array)
                self.counts[g][value] = self.counts[g].get(value, 0) + int(n)
        if len(self.c.groups) > 1:
            known = np.all(np.stack([lab != None for lab in labels.values()]), axis=0)  # noqa: E711
            cells = pd.DataFrame({g: lab[known] for g, lab in labels.items()}).drop_duplicates()
            self.cells.update(map(tuple, cells.itertuples(index=False, name=None)))

    def blocks(self) -> list[Block]:
        """The blocks of the whole table (labels and offsets, no row codes), ordered as
        :func:`fairltr.metrics.audit_blocks.category_blocks` orders them."""
        def order(g: str) -> list[str]:
            return sorted(self.counts[g]) if self.text.get(g, True) else sorted(self.counts[g], key=int)

        out = [Block(attribute_key(g), order(g), np.zeros(0, np.int64)) for g in self.c.groups]
        if len(self.c.groups) > 1:
            index = [{label: i for i, label in enumerate(b.labels)} for b in out]
            cells = sorted(self.cells, key=lambda cell: tuple(ix[v] for ix, v in zip(index, cell)))
            out.append(Block(intersection_name(self.c.groups), [category_label(cell) for cell in cells],
                             np.zeros(0, np.int64)))
        out.append(Block("__binary__", ["0", ">=1"], np.zeros(0, np.int64), visible=False))
        offset = 0
        for b in out:
            b.offset, offset = offset, offset + b.size
        return out

    def reference(self) -> str:
        """The first attribute's reference category (code 0 of the binary figures): 0 for integer
        categories, else the most frequent (ties: the first in sorted order)."""
        g = self.c.group
        counts = self.counts[g]
        if not self.text.get(g, True):
            return "0"
        top = max(counts.values())
        return next(v for v in sorted(counts) if counts[v] == top)


def _codes(labels: np.ndarray, categories: list[str]) -> np.ndarray:
    """Each label's position in ``categories`` (-1 for None), vectorised."""
    return pd.Categorical(labels, categories=categories).codes.astype(np.int64)


def _frame_blocks(frame: pd.DataFrame, cats: _Categories, ref: list[Block], reference: str) -> list[Block]:
    """The blocks of one chunk: every row coded with the table's categories (-1: unknown)."""
    labels = cats.labels(frame)
    attrs = list(cats.c.groups)
    out = []
    for g, b in zip(attrs, ref):
        codes = _codes(labels[g], b.labels)
        out.append(Block(b.name, b.labels, codes, offset=b.offset, n_unknown=int((codes < 0).sum())))
    if len(attrs) > 1:
        inter = ref[len(attrs)]
        escaped = [pd.Series(labels[g]).str.replace("\\", "\\\\", regex=False).str.replace("|", "\\|", regex=False)
                   for g in attrs]
        joined = escaped[0].str.cat(escaped[1:], sep="|")  # None where any part is unknown
        codes = _codes(joined.to_numpy(dtype=object), inter.labels)
        out.append(Block(inter.name, inter.labels, codes, offset=inter.offset, n_unknown=int((codes < 0).sum())))
    first = pd.Series(labels[attrs[0]])
    unknown = first.isna().to_numpy()
    if cats.text.get(attrs[0], True):
        binary = (first.to_numpy(dtype=object) != reference).astype(np.int64)
    else:  # integer categories: 0 vs >= 1, as written
        binary = (pd.to_numeric(first, errors="coerce").fillna(0).to_numpy() >= 1).astype(np.int64)
    out.append(Block("__binary__", ["0", ">=1"], np.where(unknown, -1, binary), offset=ref[-1].offset, visible=False))
    return out


def stream_audit(path: str | Path, *, columns: RankingColumns, config: AuditConfig = AuditConfig(),
                 score_column: str | None = None, rank_column: str | None = None,
                 batch_rows: int = BATCH_ROWS) -> AuditResult:
    """:func:`fairltr.metrics.audit_ranking` of a Parquet table grouped by query, read in batches
    (module docstring): the ranking is ``score_column`` (higher first) or ``rank_column`` (1 first)."""
    if (score_column is None) == (rank_column is None):
        raise ConfigError("give the ranking as a score column or a rank column (one of them)")
    c = columns.require("group", purpose="the audit")
    path = Path(path)
    judgment = c.judgment
    read = list(dict.fromkeys([c.query, *c.groups, score_column or rank_column, *([judgment] if judgment else [])]))
    cats, medians = _Categories(c, config.unknown_values), []
    for frame in _batches(path, read, batch_rows):
        cats.add(frame)
        if config.scoring == "sample":
            medians.append(_scores(frame, score_column, rank_column, str(path)))
    if cats.n_rows == 0:
        raise DataError(f"{path}: the table has no rows")
    median = float(np.median(np.concatenate(medians))) if medians else None
    plan = _second_pass(path, read, c, config, cats, median, score_column, rank_column, batch_rows)
    table, metrics = plan.point()
    interval = config.interval(plan.n_queries)
    if interval is not None:
        if interval["unit"] != "queries":
            raise ConfigError(f"{path} has {plan.n_queries} queries: intervals below 30 queries resample candidates, "
                              "which needs the table in memory (read it without streaming, or give --ci 0)")
        bounds, lows, highs = interval_bounds(plan)
        for key in list(metrics):
            if key in bounds:
                metrics[f"{key}_ci_low"], metrics[f"{key}_ci_high"] = bounds[key]
        table = attach_table_bounds(plan, table, lows, highs)
    return AuditResult(table=table, metrics=metrics, interval=interval, unknown_counts=plan.unknown_counts)


def _second_pass(path: Path, read: list[str], c: RankingColumns, config: AuditConfig, cats: _Categories,
                 median: float | None, score_column: str | None, rank_column: str | None,
                 batch_rows: int) -> AuditPlan:
    """The per-query statistics and NDKL of every finished query, batch by batch."""
    ref, reference = cats.blocks(), cats.reference()
    acc = _Accumulator(ref)
    carry: pd.DataFrame | None = None
    for frame in _batches(path, read, batch_rows):
        frame = frame if carry is None else pd.concat([carry, frame], ignore_index=True)
        q = frame[c.query].to_numpy()
        done = np.flatnonzero(q != q[-1])
        cut = int(done[-1]) + 1 if len(done) else 0
        carry = frame.iloc[cut:].reset_index(drop=True)
        if cut:
            _add_queries(frame.iloc[:cut], c, config, cats, ref, reference, median, score_column, rank_column, acc,
                         str(path))
    if carry is not None and len(carry):
        _add_queries(carry, c, config, cats, ref, reference, median, score_column, rank_column, acc, str(path))
    ranks, _ = sorted_query_codes(pd.DataFrame({"q": acc.ids}), "q")
    by_id = np.argsort(ranks, kind="stable")  # the plan's queries in sorted-id order, as in memory
    query_stats = sparse.vstack(acc.parts).tocsr()[by_id]
    ndkl = np.concatenate(acc.ndkl)[by_id]
    blocks = [replace(b, n_unknown=acc.n_unknown.get(b.name, 0)) for b in ref]
    counts = np.asarray(query_stats[:, 0::N_STATS].todense())
    share = counts.sum(axis=0) / cats.n_rows
    excluded = (share < config.min_category_share) if config.exclude_small else np.zeros(len(share), dtype=bool)
    excluded[ref[-1].slice] = False
    return AuditPlan(config=config, blocks=blocks, n_queries=len(acc.ids), n_rows=cats.n_rows,
                     query_of_row=np.zeros(0, np.int64), query_ids=[acc.ids[i] for i in by_id],
                     row_stats=sparse.csr_matrix((0, 0)), query_stats=query_stats, ndkl=ndkl, excluded=excluded,
                     strata=np.zeros(0, np.int64), n_queries_per_category=(counts > 0).sum(axis=0),
                     attributes=tuple(c.groups), merit_defined=acc.merit_defined,
                     unknown_queries=dict(acc.unknown_queries))


class _Accumulator:
    """What the second pass keeps: per finished query its statistics row and NDKL, its id, the
    unknown counts, whether merit is defined."""

    def __init__(self, ref: list[Block]) -> None:
        self.parts: list[sparse.csr_matrix] = []
        self.ndkl: list[np.ndarray] = []
        self.ids: list = []
        self.seen: set = set()
        self.n_unknown = {b.name: 0 for b in ref}
        self.unknown_queries = {b.name: 0 for b in ref if b.visible}
        self.merit_defined = True


def _add_queries(frame: pd.DataFrame, c: RankingColumns, config: AuditConfig, cats: _Categories, ref: list[Block],
                 reference: str, median: float | None, score_column: str | None, rank_column: str | None,
                 acc: _Accumulator, where: str) -> None:
    """Add the statistics of a chunk of finished queries (rows of a query contiguous)."""
    qcodes, qids = pd.factorize(frame[c.query], sort=False)
    qcodes = qcodes.astype(np.int64)
    runs = np.flatnonzero(np.diff(qcodes)) + 1
    if len(qids) != len(runs) + 1 or any(q in acc.seen for q in qids):
        raise DataError(f"{where} is not grouped by query: the rows of a query must be contiguous (sort or group the "
                        f"table by {c.query!r} before streaming it)")
    acc.seen.update(qids)
    acc.ids.extend(qids)
    s = _scores(frame, score_column, rank_column, where)
    y = np.zeros(len(frame))
    if c.judgment:
        y = pd.to_numeric(frame[c.judgment], errors="coerce").to_numpy(dtype=np.float64)
        if not np.isfinite(y).all():
            raise DataError(f"{where}: judgment column {c.judgment!r} holds a value that is not a finite number")
    if config.scoring == "sample":
        above = (s > median).astype(np.float64)
    elif config.scoring == "per-query":
        above = (s > pd.Series(s).groupby(qcodes).transform("median").to_numpy()).astype(np.float64)
    else:
        above = np.zeros(len(s))
    first, size = tied_ranks_of_rows(qcodes, s)
    blocks = _frame_blocks(frame, cats, ref, reference)
    n_q = len(qids)
    acc.parts.append(stat_matrices(blocks, qcodes, n_q, first, size, y, above, config.k)[1])
    sizes = np.bincount(qcodes, minlength=n_q)
    visible = [b for b in blocks if b.visible]
    acc.ndkl.append(np.stack([ndkl_per_query(qcodes, first, size, sizes, b.codes, b.size, config.k)
                              for b in visible], axis=1))
    for b in blocks:
        acc.n_unknown[b.name] += int((b.codes < 0).sum())
        if b.visible:
            acc.unknown_queries[b.name] += int(len(np.unique(qcodes[b.codes < 0])))
    acc.merit_defined &= bool((y >= 0).all())
