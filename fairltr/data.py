"""Ranking tables <-> padded tensors.

A *ranking table* is a pandas DataFrame with one row per candidate and named columns:
a query id, one or more group attributes (integer categories, 0 = non-protected, >= 1
protected, or string categories: :func:`category_codes`), feature columns and a judgment (higher is better). :func:`to_batch` turns it into a :class:`RankingBatch` of
padded ``(Q, N, ...)`` tensors plus a boolean mask; queries keep the order of their first
appearance in the table, and candidates keep their row order inside each query.

The query, group, judgment and optional item (document id) columns are named by one
:class:`~fairltr.columns.RankingColumns` (the column contract; distinct columns); every other column is a feature and must be numeric (:func:`select_features`). Readers record
the file and the 1-based line of each row in ``df.attrs[ORIGIN_KEY]`` (:func:`set_origin`), so
that every later error names ``file:line``, the column, the query and the value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.columns import DEFAULT_COLUMNS, UNSET, RankingColumns, check_column_roles, resolve_columns
from fairltr.duplicate_rows import DUPLICATE_POLICIES, check_duplicate_rows
from fairltr.errors import ConfigError, DataError
from fairltr.query_order import positions_in_query, query_codes, rank_within_query, score_order
from fairltr.row_origin import (ORIGIN_KEY, cell_problem, frame_source, locate_row, row_place, set_origin,
                                show_value, source_prefix)

__all__ = [
    "RankingBatch", "to_batch", "check_table", "select_features", "check_column_roles",
    "numeric_column", "numeric_matrix", "query_codes", "positions_in_query", "score_order", "rank_within_query",
    "scatter_back", "show_value", "ORIGIN_KEY", "set_origin", "frame_source", "row_place", "locate_row",
    "RankingRows", "ranking_rows", "pad_queries", "NAMES_ONLY", "check_group_column", "category_codes",
    "is_string_categories", "DUPLICATE_POLICIES", "check_duplicate_rows",
]

NAMES_ONLY = DEFAULT_COLUMNS.replace(group=None, judgment=None)
"""Defaults of the validators that check only the columns they are told about (no group, no
judgment unless named): :func:`select_features` without a contract, and ``NAMES_ONLY.replace(...)``
for :func:`check_table` of just the columns given."""


@dataclass
class RankingBatch:
    """Padded tensors for Q queries of at most N candidates.

    ``features`` (Q, N, F), ``judgments`` (Q, N), ``groups`` (Q, N) long, ``mask`` (Q, N) bool,
    ``row_index`` (Q, N) long: the positional row of each slot in the source frame (-1 = padding).
    Padded slots hold 0 everywhere.
    """

    features: torch.Tensor
    judgments: torch.Tensor
    groups: torch.Tensor
    mask: torch.Tensor
    row_index: torch.Tensor
    query_ids: list = field(default_factory=list)
    feature_names: list[str] = field(default_factory=list)

    @property
    def n_queries(self) -> int:
        return int(self.mask.shape[0])

    @property
    def n_items(self) -> torch.Tensor:
        return self.mask.sum(dim=1)

    def to(self, device: torch.device | str) -> "RankingBatch":
        return RankingBatch(
            self.features.to(device),
            self.judgments.to(device),
            self.groups.to(device),
            self.mask.to(device),
            self.row_index.to(device),
            list(self.query_ids),
            list(self.feature_names),
        )

    def select(self, queries: torch.Tensor | Sequence[int]) -> "RankingBatch":
        """Sub-batch of the given query positions (used by data loaders)."""
        idx = torch.as_tensor(queries, dtype=torch.long)
        return RankingBatch(
            self.features[idx],
            self.judgments[idx],
            self.groups[idx],
            self.mask[idx],
            self.row_index[idx],
            [self.query_ids[i] for i in idx.tolist()],
            list(self.feature_names),
        )


def numeric_column(
    df: pd.DataFrame, col: object, *, query: str | None = None, source: str | None = None, hint: str = ""
) -> np.ndarray:
    """Column ``col`` as finite float64, or a :class:`DataError` naming the file, line, column,
    query and value of its first bad cell. Numbers, booleans and strings that parse as numbers
    are accepted; ``hint`` is appended to the message of a non-numeric cell."""
    values = df[col]
    if pd.api.types.is_bool_dtype(values) or (
        pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_complex_dtype(values)
    ):
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
    elif pd.api.types.is_object_dtype(values) or pd.api.types.is_string_dtype(values):
        converted = pd.to_numeric(values, errors="coerce")
        bad = (converted.isna() & values.notna()).to_numpy()
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            raise DataError(cell_problem(df, pos, col, query, source,
                                          f"non-numeric value {show_value(values.iloc[pos])}") + hint)
        arr = converted.to_numpy(dtype=np.float64, na_value=np.nan)
    else:  # datetimes, categories, intervals, complex numbers: not a number
        present = values.notna().to_numpy()
        pos = int(np.flatnonzero(present)[0]) if present.any() else 0
        what = f"non-numeric value {show_value(values.iloc[pos])} (dtype {values.dtype})"
        raise DataError(cell_problem(df, pos, col, query, source, what) + hint)
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        what = ("missing value (NaN or empty cell)" if np.isnan(arr[pos])
                else f"infinite value {show_value(values.iloc[pos])}")
        raise DataError(cell_problem(df, pos, col, query, source, what)
                        + f"; {int(bad.sum())} bad value(s) in that column")
    return arr


def numeric_matrix(
    df: pd.DataFrame, columns: Sequence[object], *, query: str | None = None, source: str | None = None,
    dtype: type = np.float64,
) -> np.ndarray:
    """``df[columns]`` as a finite ``(rows, len(columns))`` array of ``dtype`` (float64 or float32;
    each value is checked as float64, see :func:`numeric_column`, and rounded once to ``dtype``);
    a missing column is a :class:`DataError` listing the available ones. The array is always a
    fresh one (never a view of ``df``'s memory), filled column by column: no temporary of the
    whole table beyond the result."""
    columns = list(columns)
    missing = [c for c in dict.fromkeys(columns) if c not in df.columns]
    if missing:
        raise DataError(f"{source_prefix(df, source)}missing column(s) {missing}; available columns: {list(df.columns)}")
    if not columns:
        return np.zeros((len(df), 0), dtype=dtype)
    plain = all(pd.api.types.is_float_dtype(df[c]) for c in columns)
    if plain:  # fast path: one conversion, then locate the first bad cell only if there is one
        x = df[columns].to_numpy(dtype=dtype)
        if np.may_share_memory(x, df[columns[0]].to_numpy()) or not x.flags.writeable:
            x = x.copy()
        if np.isfinite(x).all():
            return x
        del x
    out = np.empty((len(df), len(columns)), dtype=dtype)
    for j, c in enumerate(columns):
        out[:, j] = numeric_column(df, c, query=query, source=source)
    return out


AUTO_FEATURES_HINT = (
    "; every column except the query, judgment and item columns is a feature: fix the value, or list "
    "the features (--features) or name the item column (--item)"
)


def select_features(
    df: pd.DataFrame,
    *,
    columns: RankingColumns | None = None,
    features: Sequence[str] | None = None,
    source: str | None = None,
) -> list[str]:
    """The feature columns of a ranking table with the column contract ``columns`` (None:
    :data:`NAMES_ONLY`, only the query column is special).

    ``features=None`` (automatic): every column except query, judgment and item, in table order,
    and except group attributes with string categories (a text category is not a number).
    An integer group column stays a feature (DELTR's "standard" ranker sees the protected attribute; a
    colorblind ranker drops it). Every selected column must be numeric: a cell that is not a
    number is a :class:`DataError` naming the file, 1-based line, column, query and value, never
    a silently dropped feature. Explicit ``features`` must exist, be distinct and not be the
    query, judgment or item column. No feature at all, or an automatic feature without a header
    name (pandas' ``Unnamed: 0``, usually a saved index), is a :class:`DataError`.
    """
    c = NAMES_ONLY if columns is None else resolve_columns(columns)
    prefix = source_prefix(df, source)
    if features is None:
        special = set(c.special) | {g for g in c.groups if g in df.columns and is_string_categories(df[g])}
        chosen = [col for col in df.columns if col not in special]
        if not chosen:
            raise DataError(f"{prefix}no feature columns: the table has only {list(df.columns)} "
                            f"(query {c.query!r}, judgment {c.judgment!r}, item {c.item!r})")
        for col in chosen:
            if isinstance(col, str) and col.startswith("Unnamed: "):  # pandas' name for an empty header cell
                raise DataError(f"{prefix}column {col!r} has no name in the header (an index saved with the data?); "
                                "automatic feature selection would train on it: name or drop it, or list the "
                                "features (--features)")
            if not (pd.api.types.is_bool_dtype(df[col]) or (pd.api.types.is_numeric_dtype(df[col])
                                                            and not pd.api.types.is_complex_dtype(df[col]))):
                numeric_column(df, col, query=c.query if c.query in df.columns else None, source=source,
                               hint=AUTO_FEATURES_HINT)
        return chosen
    if isinstance(features, str):
        raise ConfigError(f"features must be a list of column names, got the string {features!r}")
    chosen = list(features)
    if not chosen:
        raise DataError(f"{prefix}no feature columns: the feature list is empty")
    dup = [col for col in dict.fromkeys(chosen) if chosen.count(col) > 1]
    if dup:
        raise ConfigError(f"feature column(s) {dup} listed more than once")
    for role, name in (("query", c.query), ("judgment", c.judgment), ("item", c.item)):
        if name is not None and name in chosen:
            raise ConfigError(f"feature column {name!r} is the {role} column; a feature cannot be the query, "
                              "judgment or item column")
    missing = [col for col in chosen if col not in df.columns]
    if missing:
        raise DataError(f"{prefix}missing column(s) {missing}; available columns: {list(df.columns)}")
    return chosen


def is_string_categories(values: pd.Series) -> bool:
    """Whether a group column holds string categories (some present cell is not a number),
    rather than integer categories (0 = non-protected / the reference, >= 1 protected)."""
    if pd.api.types.is_bool_dtype(values) or (pd.api.types.is_numeric_dtype(values)
                                              and not pd.api.types.is_complex_dtype(values)):
        return False
    present = pd.Series(values.dropna().unique())  # each distinct category once: cheap on long columns
    return bool(len(present)) and bool(pd.to_numeric(present, errors="coerce").isna().any())


def check_group_column(df: pd.DataFrame, col: str, *, query: str | None = None, source: str | None = None) -> None:
    """A :class:`DataError` naming the file, line, column, query and value of the first bad cell
    of group attribute ``col``: a missing cell, or, for integer categories, a value that is not an
    integer >= 0. String categories (any text, as written in the file) are legal."""
    values = df[col]
    missing = values.isna().to_numpy()
    if missing.any():
        pos = int(np.flatnonzero(missing)[0])
        raise DataError(cell_problem(df, pos, col, query, source, "missing group category")
                        + f"; {int(missing.sum())} missing value(s) in that column (training needs every category; "
                        "to audit rankings with unknown categories use fairltr audit --unknown-value '')")
    if is_string_categories(values):
        return
    arr = numeric_column(df, col, query=query, source=source)
    for bad, rule in ((arr != np.round(arr), "must hold integers"), (arr < 0, "must be >= 0")):
        if bad.any():
            pos = int(np.flatnonzero(bad)[0])
            q = f" (query {show_value(df[query].iloc[pos])})" if query is not None and query in df.columns else ""
            raise DataError(
                f"{locate_row(df, pos, source)}: group column {col!r} {rule} (0 = non-protected, "
                f">= 1 protected), got {show_value(values.iloc[pos])}{q}"
            )


def category_codes(values: pd.Series | np.ndarray, reference: object = None) -> tuple[np.ndarray, list]:
    """Integer code per row of a (checked) group attribute, and the categories in code order.

    Integer categories without a declared ``reference`` keep their values as codes (0 =
    non-protected, >= 1 protected: today's coding). String categories, or integer ones with a
    declared ``reference``: the ``reference`` category (strings by default: the most frequent
    one, ties to the first in sorted order) gets code 0, the others 1, 2, ... in sorted order.
    So the binary section-3 metrics and DELTR's hinge compare every other category with the
    reference (docs/audit.md, "Training with several categories")."""
    s = pd.Series(values) if not isinstance(values, pd.Series) else values
    if not is_string_categories(s):
        codes = pd.to_numeric(s).to_numpy(dtype=np.float64).astype(np.int64)
        found_ints = sorted(np.unique(codes).tolist())
        if reference is None:
            return codes, found_ints
        try:
            ref = int(reference)
        except (TypeError, ValueError):
            ref = None
        if ref is None or str(ref) != str(reference).strip() or ref not in found_ints:
            raise ConfigError(f"reference category {reference!r} does not occur; categories: {found_ints}")
        order_ints = [ref] + [v for v in found_ints if v != ref]
        lookup = {v: i for i, v in enumerate(order_ints)}
        return pd.Series(codes).map(lookup).to_numpy(dtype=np.int64), order_ints
    text = s.astype(str)
    counts = text.value_counts()
    found = sorted(counts.index.tolist())
    if reference is None:
        top = counts.max()
        reference = next(c for c in found if counts[c] == top)
    elif str(reference) not in counts.index:
        raise ConfigError(f"reference category {reference!r} does not occur; categories: {found}")
    reference = str(reference)
    order = [reference] + [c for c in found if c != reference]
    codes = pd.Categorical(text, categories=order).codes.astype(np.int64)
    return codes, order
INT64_MIN, INT64_MAX = int(np.iinfo(np.int64).min), int(np.iinfo(np.int64).max)


def _beyond_int64(ids: pd.Series) -> int | None:
    """Position of the first integer id outside int64 (pandas reads such ids as uint64 or as
    Python ints in an object column), or None."""
    if ids.dtype == np.uint64:
        bad = ids.to_numpy() > np.uint64(INT64_MAX)
    elif ids.dtype == object and pd.api.types.infer_dtype(ids, skipna=True) in ("integer", "mixed-integer"):
        bad = np.fromiter((isinstance(v, int) and not isinstance(v, bool) and not INT64_MIN <= v <= INT64_MAX
                           for v in ids), dtype=bool, count=len(ids))
    else:
        return None
    return int(np.flatnonzero(bad)[0]) if bad.any() else None


def check_table(
    df: pd.DataFrame, columns: RankingColumns, *, numeric: Sequence[str] = (), source: str | None = None
) -> None:
    """Raise :class:`DataError` naming the file, 1-based line, column, query and value of the
    first problem of ``df`` under the column contract ``columns`` (see :func:`locate_row` for
    how rows are named).

    Checks: the table is non-empty, the named columns are present, no query id is missing,
    ``numeric`` and the judgment column (when the contract names one) hold finite numbers, every
    group attribute (when named) has no missing cell and holds integers >= 0 or string categories
    (:func:`check_group_column`), and no (query, item) pair occurs twice when
    the contract names an item column. ``source`` names a frame without a recorded origin.
    """
    query, group, judgment, item = columns.query, columns.group, columns.judgment, columns.item
    prefix = source_prefix(df, source)
    if len(df) == 0:
        raise DataError(f"{prefix}empty ranking table: no rows")
    checked = list(dict.fromkeys([*numeric, *([judgment] if judgment else [])]))
    needed = [query, *checked] + list(columns.groups) + ([item] if item else [])
    missing = [col for col in dict.fromkeys(needed) if col not in df.columns]
    if missing:
        raise DataError(f"{prefix}missing column(s) {missing}; available columns: {list(df.columns)}")
    qna = df[query].isna().to_numpy()
    if qna.any():
        pos = int(np.flatnonzero(qna)[0])
        raise DataError(f"{locate_row(df, pos, source)}: missing query id in column {query!r}")
    big = _beyond_int64(df[query])
    if big is not None:
        raise DataError(f"{locate_row(df, big, source)}: query id {show_value(df[query].iloc[big])} in column "
                        f"{query!r} is outside the 64-bit integer range [{INT64_MIN}, {INT64_MAX}] (MLflow, "
                        f"Parquet and the model signature store query ids as int64)")
    for col in checked:
        if col not in columns.groups:
            numeric_column(df, col, query=query, source=source)
    for name in columns.groups:
        check_group_column(df, name, query=query, source=source)
    if item is not None:
        ina = df[item].isna().to_numpy()
        if ina.any():
            pos = int(np.flatnonzero(ina)[0])
            raise DataError(f"{locate_row(df, pos, source)}: missing item id in column {item!r} "
                            f"(query {show_value(df[query].iloc[pos])})")
        dup = df.duplicated(subset=[query, item], keep="first").to_numpy()
        if dup.any():
            pos = int(np.flatnonzero(dup)[0])
            q, it = df[query].iloc[pos], df[item].iloc[pos]
            same = ((df[query] == q) & (df[item] == it)).to_numpy()
            first = int(np.flatnonzero(same)[0])
            raise DataError(
                f"{locate_row(df, pos, source)}: duplicate (query, item) pair: query {show_value(q)}, "
                f"item {show_value(it)}; first seen at {row_place(df, first, source)[1]}"
            )


@dataclass
class RankingRows:
    """A validated ranking table as flat per-row arrays (no padding): memory O(rows).

    ``features`` (R, F) float64, ``judgments`` (R,) float64, ``groups`` (R,) int64; ``codes`` (R,)
    the position of each row's query in ``query_ids`` (first appearance), ``slots`` (R,) its
    position inside the query (row order), ``sizes`` (Q,) the candidates of each query.
    Row r is the r-th (positional) row of the source frame. :func:`pad_queries` pads any subset
    of the queries into a :class:`RankingBatch`.
    """

    features: np.ndarray
    judgments: np.ndarray
    groups: np.ndarray
    codes: np.ndarray
    slots: np.ndarray
    sizes: np.ndarray
    query_ids: list
    feature_names: list[str]

    @property
    def n_rows(self) -> int:
        return int(len(self.codes))

    @property
    def n_queries(self) -> int:
        return int(len(self.sizes))


def ranking_rows(
    df: pd.DataFrame,
    *,
    columns: RankingColumns | None = None,
    features: Sequence[str] | None = None,
    source: str | None = None,
    feature_dtype: type = np.float64,
) -> RankingRows:
    """Validate ``df`` (exactly as :func:`to_batch`) and return its rows unpadded; ``columns``
    None: :data:`~fairltr.columns.DEFAULT_COLUMNS`; the features as ``feature_dtype`` (float64 or
    float32: a float32 batch is built without a float64 copy of the table)."""
    c = resolve_columns(columns)
    features = select_features(df, columns=c, features=features, source=source)
    check_table(df, c, numeric=features, source=source)
    codes, qids = query_codes(df, c.query)
    slots, sizes = positions_in_query(codes, len(qids))
    feat = numeric_matrix(df, features, query=c.query, source=source, dtype=feature_dtype)
    jud = numeric_column(df, c.judgment, query=c.query, source=source) if c.judgment else np.zeros(len(df))
    grp = category_codes(df[c.group])[0] if c.group else np.zeros(len(df), np.int64)
    return RankingRows(features=feat, judgments=jud, groups=grp, codes=codes, slots=slots, sizes=sizes,
                       query_ids=qids, feature_names=list(features))


def pad_queries(
    rows: RankingRows, queries: Sequence[int] | np.ndarray | None = None, dtype: torch.dtype = torch.float64
) -> RankingBatch:
    """A :class:`RankingBatch` of the given query positions (in that order; None: every query in
    table order), padded to the longest of them: (len(queries), max n_q, F) cells.
    ``row_index`` holds each slot's positional row in the source frame (-1 = padding)."""
    if queries is None:
        codes, slots, take = rows.codes, rows.slots, None
        qpos = np.arange(rows.n_queries)
    else:
        qpos = np.asarray(queries, dtype=np.int64).reshape(-1)
        local = np.full(rows.n_queries, -1, dtype=np.int64)
        local[qpos] = np.arange(len(qpos))
        codes = local[rows.codes]
        take = np.flatnonzero(codes >= 0)
        codes, slots = codes[take], rows.slots[take]
    n_q = len(qpos)
    n_max = int(rows.sizes[qpos].max()) if n_q else 0

    # every query full and its rows contiguous in table order: the padded tensor is a reshape
    dense = take is None and n_q * n_max == rows.n_rows and bool(
        np.array_equal(codes * n_max + slots, np.arange(rows.n_rows)))

    def pad(values: np.ndarray, fill: float, np_dtype, fresh: bool = False) -> np.ndarray:
        if dense and fresh and values.dtype == np_dtype:  # ``values`` is ours (never a view of the frame)
            return values.reshape((n_q, n_max) + values.shape[1:])
        out = np.full((n_q, n_max) + values.shape[1:], fill, dtype=np_dtype)
        out[codes, slots] = values if take is None else values[take]
        return out

    mask = np.zeros((n_q, n_max), dtype=bool)
    mask[codes, slots] = True
    return RankingBatch(
        features=torch.from_numpy(pad(rows.features, 0.0, rows.features.dtype, fresh=True)).to(dtype),
        judgments=torch.from_numpy(pad(rows.judgments, 0.0, np.float64)).to(dtype),
        groups=torch.from_numpy(pad(rows.groups, 0, np.int64)),
        mask=torch.from_numpy(mask),
        row_index=torch.from_numpy(pad(np.arange(rows.n_rows, dtype=np.int64), -1, np.int64)),
        query_ids=[rows.query_ids[i] for i in qpos.tolist()],
        feature_names=list(rows.feature_names),
    )


def to_batch(
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
) -> RankingBatch:
    """Validate ``df`` and pad it into a :class:`RankingBatch` of (Q, longest query) slots.

    ``columns``: the column contract (default :data:`~fairltr.columns.DEFAULT_COLUMNS`); the
    ``query`` / ``group`` / ``judgment`` / ``item`` keywords override its names.
    ``features=None`` takes every column except query, judgment and item (the group column is
    kept as a feature: DELTR's "standard" ranker sees it; drop it for colorblind); each of them
    must be numeric, a non-numeric cell is an error (see :func:`select_features`).
    ``group=None`` puts every candidate in group 0; ``judgment=None`` gives zero judgments.
    Rows of one query need not be adjacent: they are grouped, keeping their relative order.
    Errors name the file and line recorded by the reader (``df.attrs``), else ``source``.
    One long query pads every other to its length: for tables of very unequal query lengths
    use :func:`fairltr.buckets.to_buckets` (memory proportional to the rows).
    """
    rows = ranking_rows(df, columns=resolve_columns(columns, query=query, group=group, judgment=judgment, item=item),
                        features=features, source=source)
    return pad_queries(rows, dtype=dtype)


def scatter_back(values: torch.Tensor, batch: RankingBatch, n_rows: int) -> np.ndarray:
    """Inverse of padding: a (Q, N) tensor -> a length-``n_rows`` array in the frame's row order."""
    out = np.empty(n_rows, dtype=np.float64)
    m = batch.mask.cpu()
    out[batch.row_index.cpu()[m].numpy()] = values.detach().cpu()[m].to(torch.float64).numpy()
    return out
