"""Length buckets: padded batches whose size is proportional to the rows, not to queries x longest.

Padding every query of a table to the longest list costs Q x N_max cells: one query of 10,000
candidates among 9,999 of 100 turns 1M rows into 100M cells. :func:`length_buckets` splits the
queries into groups of similar length so that each group is padded only to its own longest
list, with the bound

    padded cells of a bucket (its queries x its longest query) <= max_padding x its rows,

hence padded cells in all <= max_padding x rows (2 x rows by default). Every per-query
quantity (losses, metrics, re-rankings) is computed bucket by bucket and put back in table
order with :meth:`BucketedBatch.per_query` / :meth:`BucketedBatch.scatter_back`; sums and
means over queries are therefore exact up to floating-point summation order. A table whose
padding already meets the bound (every query of one length, for instance) is a single bucket
holding the queries in table order, i.e. exactly :func:`fairltr.data.to_batch`'s batch.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import RankingBatch, pad_queries, ranking_rows
from fairltr.errors import ConfigError

__all__ = ["DEFAULT_MAX_PADDING", "length_buckets", "bucket_rows", "BucketedBatch", "to_buckets", "split_batch"]

DEFAULT_MAX_PADDING = 2.0


def length_buckets(sizes: Sequence[int] | np.ndarray, max_padding: float = DEFAULT_MAX_PADDING) -> list[np.ndarray]:
    """Partition query positions 0..Q-1 (``sizes[q]`` = candidates of query q) into buckets with
    padded cells (len(bucket) x its longest query) <= ``max_padding`` x its rows.

    Greedy over the queries by decreasing length (ties: table order): a bucket opens with the
    longest remaining query and takes the next longest while the bound holds. With queries
    taken longest first the ratio padded/rows of a bucket never decreases, so the greedy bucket
    is the largest possible, every query at least 1/max_padding as long as the first one joins
    it, and there are at most floor(log_{max_padding}(N_max)) + 1 buckets (max_padding > 1).
    The whole table is one bucket whenever Q x N_max <= max_padding x rows. Each bucket lists
    its query positions in increasing (table) order; buckets come longest first.
    """
    if not max_padding >= 1.0:
        raise ConfigError(f"max_padding must be >= 1 (padded cells per row), got {max_padding!r}")
    sizes = np.asarray(sizes, dtype=np.int64).reshape(-1)
    if len(sizes) == 0:
        return []
    if len(sizes) * int(sizes.max()) <= max_padding * int(sizes.sum()):
        return [np.arange(len(sizes), dtype=np.int64)]
    order = np.lexsort((np.arange(len(sizes)), -sizes))  # longest first, ties by table order
    s = sizes[order].astype(np.float64)
    buckets = []
    start = 0
    while start < len(s):
        rest = s[start:]
        count = np.arange(1, len(rest) + 1, dtype=np.float64)
        ok = count * rest[0] <= max_padding * np.cumsum(rest)  # True, ..., True, False, ... (monotone)
        stop = start + (len(rest) if ok.all() else max(1, int(np.argmin(ok))))
        buckets.append(np.sort(order[start:stop]))
        start = stop
    return buckets


@dataclass
class BucketedBatch:
    """A ranking table as several padded batches of similar-length queries.

    ``batches[b]`` holds the queries at positions ``queries[b]`` of ``query_ids`` (table order of
    first appearance), padded to that bucket's longest list; its ``row_index`` names positional
    rows of the source frame (``n_rows`` rows). Per-query results of the buckets go back to
    table order with :meth:`per_query`, per-slot results to rows with :meth:`scatter_back`.
    """

    batches: list[RankingBatch]
    queries: list[np.ndarray]
    query_ids: list
    n_rows: int
    feature_names: list[str] = field(default_factory=list)
    disposable: bool = False
    """True when no one else holds these tensors (a trainer built them for itself), so training
    may overwrite the features in place instead of copying them; :func:`to_buckets` leaves it False."""

    @property
    def n_queries(self) -> int:
        return int(sum(len(q) for q in self.queries))

    @property
    def padded_cells(self) -> int:
        """Slots in all buckets (sum of queries x longest query): <= max_padding x rows."""
        return int(sum(b.mask.numel() for b in self.batches))

    def per_query(self, values: Sequence[torch.Tensor]) -> torch.Tensor:
        """Per-bucket (Q_b, ...) tensors -> one (Q, ...) tensor in table query order."""
        if len(values) != len(self.batches):
            raise ValueError(f"per_query: {len(values)} tensors for {len(self.batches)} buckets")
        if len(values) == 1 and np.array_equal(self.queries[0], np.arange(self.n_queries)):
            return values[0]  # one bucket in table order: already (Q, ...)
        first = values[0]
        out = torch.empty((self.n_queries,) + tuple(first.shape[1:]), dtype=first.dtype, device=first.device)
        for v, q in zip(values, self.queries):
            out[torch.as_tensor(q, device=first.device)] = v
        return out

    def scatter_back(self, values: Sequence[torch.Tensor]) -> np.ndarray:
        """Per-bucket (Q_b, N_b) slot values -> a float64 array of ``n_rows`` in the frame's row order."""
        if len(values) != len(self.batches):
            raise ValueError(f"scatter_back: {len(values)} tensors for {len(self.batches)} buckets")
        out = np.empty(self.n_rows, dtype=np.float64)
        for v, b in zip(values, self.batches):
            m = b.mask.cpu()
            out[b.row_index.cpu()[m].numpy()] = v.detach().cpu()[m].to(torch.float64).numpy()
        return out


def bucket_rows(codes: np.ndarray, queries: np.ndarray, n_queries: int, whole: bool) -> tuple[np.ndarray, np.ndarray]:
    """The rows of one length bucket (``queries``: its query codes) and each row's query index
    inside the bucket; ``whole``: the bucket is the whole table (rows and codes as they are)."""
    if whole:
        return np.arange(len(codes)), codes
    to_local = np.full(n_queries, -1, dtype=np.int64)
    to_local[queries] = np.arange(len(queries))
    local = to_local[codes]
    rows = np.flatnonzero(local >= 0)
    return rows, local[rows]


def to_buckets(
    df: pd.DataFrame,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str | None = UNSET,
    judgment: str | None = UNSET,
    features: Sequence[str] | None = None,
    item: str | None = UNSET,
    dtype: torch.dtype = torch.float64,
    source: str | None = None,
    max_padding: float = DEFAULT_MAX_PADDING,
) -> BucketedBatch:
    """:func:`fairltr.data.to_batch` in length buckets: the same column contract (``columns``,
    overridden by the loose name keywords), validation and errors (file, line, column, query),
    the same per-query content, but padded cells <= ``max_padding`` x rows.
    """
    c = resolve_columns(columns, query=query, group=group, judgment=judgment, item=item)
    feature_dtype = np.float32 if dtype == torch.float32 else np.float64  # float32: no float64 copy
    rows = ranking_rows(df, columns=c, features=features, source=source, feature_dtype=feature_dtype)
    buckets = length_buckets(rows.sizes, max_padding)
    batches = [pad_queries(rows, None if len(buckets) == 1 else q, dtype=dtype) for q in buckets]
    return BucketedBatch(batches=batches, queries=buckets, query_ids=list(rows.query_ids), n_rows=rows.n_rows,
                         feature_names=list(rows.feature_names))


def split_batch(batch: RankingBatch, max_padding: float = DEFAULT_MAX_PADDING) -> BucketedBatch:
    """An already padded batch cut into length buckets, each trimmed to its longest list (the
    extent of a query is its last real slot + 1). A batch that meets the bound stays one bucket
    (the same object). ``n_rows`` is one more than the largest ``row_index``."""
    mask = batch.mask
    n_rows = int(batch.row_index.max()) + 1 if batch.row_index.numel() else 0
    q, n = mask.shape
    if q == 0 or n == 0:
        return BucketedBatch([batch], [np.arange(q, dtype=np.int64)], list(batch.query_ids), n_rows,
                             list(batch.feature_names))
    slots = torch.arange(1, n + 1, device=mask.device)
    extent = (mask * slots).amax(dim=1).cpu().numpy()  # last real slot + 1 (0 for an empty query)
    buckets = length_buckets(extent, max_padding)
    if len(buckets) == 1:
        return BucketedBatch([batch], buckets, list(batch.query_ids), n_rows, list(batch.feature_names))
    ids = list(batch.query_ids)
    named = len(ids) == q
    parts = []
    for idx in buckets:
        width = int(extent[idx].max())
        rows = torch.as_tensor(idx, device=mask.device)
        # columns first, then rows: the copy is (queries of the bucket) x (its own width)
        parts.append(RankingBatch(batch.features[:, :width][rows], batch.judgments[:, :width][rows],
                                  batch.groups[:, :width][rows], mask[:, :width][rows],
                                  batch.row_index[:, :width][rows], [ids[i] for i in idx.tolist()] if named else [],
                                  list(batch.feature_names)))
    return BucketedBatch(parts, buckets, list(batch.query_ids), n_rows, list(batch.feature_names))
