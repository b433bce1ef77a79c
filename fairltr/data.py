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

import os
from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.columns import DEFAULT_COLUMNS, UNSET, RankingColumns, check_column_roles, resolve_columns
from fairltr.errors import ConfigError, DataError

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


# ---------------------------------------------------------------------------- origins
ORIGIN_KEY = "fairltr_origin"
"""Key in ``DataFrame.attrs`` under which the readers record where a frame came from."""


def set_origin(df: pd.DataFrame, path: str | os.PathLike, lines: int | Sequence[int] | None) -> pd.DataFrame:
    """Record in ``df.attrs`` that ``df`` was read from ``path`` (in place; returns ``df``).

    ``lines``: the 1-based file line of data row 0 when rows occupy consecutive lines (an int),
    the line of every row (a sequence: blank or comment lines in between, multi-line records),
    or None for a file without lines (Parquet: rows are then named 1-based). Rows are found by
    index label, so a filtered, sampled or re-sorted frame still names the right line; a frame
    whose index was reset after re-ordering must drop the origin (``df.attrs.pop(ORIGIN_KEY)``).
    The record is a small JSON-able dict (pandas deep-copies ``attrs`` on every operation).
    """
    n = len(df)
    by_label = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
    rows: list[int] | None
    starts: list[int] | None
    if lines is None:
        rows = starts = None
    elif isinstance(lines, (int, np.integer)):
        rows, starts = [0], [int(lines)]
    else:
        arr = np.asarray(lines, dtype=np.int64)
        if len(arr) != n:
            raise ValueError(f"set_origin: {len(arr)} line numbers for {n} rows")
        # keep only the rows where the numbering jumps: line(r) = starts[i] + (r - rows[i])
        jump = np.flatnonzero(np.diff(arr) != 1) + 1
        keep = np.concatenate([[0], jump]).astype(np.int64) if n else np.zeros(0, np.int64)
        rows, starts = keep.tolist(), arr[keep].tolist()
    df.attrs[ORIGIN_KEY] = {"path": str(path), "n_rows": n, "by_label": bool(by_label),
                            "rows": rows, "lines": starts}
    return df


def frame_source(df: pd.DataFrame, source: str | None = None) -> str | None:
    """The file ``df`` was read from (its recorded origin), else ``source``."""
    origin = df.attrs.get(ORIGIN_KEY)
    if isinstance(origin, dict) and isinstance(origin.get("path"), str):
        return origin["path"]
    return source


def _prefix(df: pd.DataFrame, source: str | None) -> str:
    name = frame_source(df, source)
    return f"{name}: " if name else ""


def row_place(df: pd.DataFrame, pos: int, source: str | None = None) -> tuple[str | None, str]:
    """(file or None, place) of the row at position ``pos``: place is ``"line 5"`` (1-based file
    line), ``"row 3 (1-based)"`` (a file without lines) or ``"row 2 (0-based)"`` (a frame
    without a recorded origin, or a row the origin cannot map)."""
    origin = df.attrs.get(ORIGIN_KEY)
    if isinstance(origin, dict) and isinstance(origin.get("path"), str):
        path = origin["path"]
        row: int | None = pos
        if origin.get("by_label", True):
            label = df.index[pos]
            row = int(label) if isinstance(label, (int, np.integer)) and not isinstance(label, bool) else None
        if row is not None and 0 <= row < int(origin.get("n_rows", 0)):
            rows, starts = origin.get("rows"), origin.get("lines")
            if rows is None or starts is None:
                return path, f"row {row + 1} (1-based)"
            i = int(np.searchsorted(np.asarray(rows), row, side="right")) - 1
            return path, f"line {int(starts[i]) + row - int(rows[i])}"
        return path, f"row {pos} (0-based)"
    return source, f"row {pos} (0-based)"


def locate_row(df: pd.DataFrame, pos: int, source: str | None = None) -> str:
    """Where the row at position ``pos`` is, for the start of an error message:
    ``train.csv:5`` (file and 1-based line), ``t.parquet, row 3 (1-based)``, or, for a frame
    not read from a file, ``[source, ]row 2 (0-based)``."""
    path, place = row_place(df, pos, source)
    if path is None:
        return place
    if place.startswith("line "):
        return f"{path}:{place[5:]}"
    return f"{path}, {place}"


def show_value(value: object, limit: int = 80) -> str:
    """repr of a cell for error messages (numpy scalars as plain Python values, long reprs cut)."""
    item = getattr(value, "item", None)
    if isinstance(value, np.generic) and callable(item):
        value = item()
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# ---------------------------------------------------------------------------- cells
def _cell_problem(df: pd.DataFrame, pos: int, col: object, query: str | None, source: str | None, what: str) -> str:
    q = f" (query {show_value(df[query].iloc[pos])})" if query is not None and query in df.columns else ""
    return f"{locate_row(df, pos, source)}: {what} in column {col!r}{q}"


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
            raise DataError(_cell_problem(df, pos, col, query, source,
                                          f"non-numeric value {show_value(values.iloc[pos])}") + hint)
        arr = converted.to_numpy(dtype=np.float64, na_value=np.nan)
    else:  # datetimes, categories, intervals, complex numbers: not a number
        present = values.notna().to_numpy()
        pos = int(np.flatnonzero(present)[0]) if present.any() else 0
        what = f"non-numeric value {show_value(values.iloc[pos])} (dtype {values.dtype})"
        raise DataError(_cell_problem(df, pos, col, query, source, what) + hint)
    bad = ~np.isfinite(arr)
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        what = ("missing value (NaN or empty cell)" if np.isnan(arr[pos])
                else f"infinite value {show_value(values.iloc[pos])}")
        raise DataError(_cell_problem(df, pos, col, query, source, what)
                        + f"; {int(bad.sum())} bad value(s) in that column")
    return arr


def numeric_matrix(
    df: pd.DataFrame, columns: Sequence[object], *, query: str | None = None, source: str | None = None
) -> np.ndarray:
    """``df[columns]`` as a finite float64 ``(rows, len(columns))`` array (see :func:`numeric_column`);
    a missing column is a :class:`DataError` listing the available ones."""
    columns = list(columns)
    missing = [c for c in dict.fromkeys(columns) if c not in df.columns]
    if missing:
        raise DataError(f"{_prefix(df, source)}missing column(s) {missing}; available columns: {list(df.columns)}")
    if not columns:
        return np.zeros((len(df), 0))
    plain = all(pd.api.types.is_float_dtype(df[c]) for c in columns)
    if plain:  # fast path: one conversion, then locate the first bad cell only if there is one
        x = df[columns].to_numpy(dtype=np.float64)
        if np.isfinite(x).all():
            return x
    return np.column_stack([numeric_column(df, c, query=query, source=source) for c in columns])


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
    prefix = _prefix(df, source)
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
        raise DataError(_cell_problem(df, pos, col, query, source, "missing group category")
                        + f"; {int(missing.sum())} missing value(s) in that column")
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
    prefix = _prefix(df, source)
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


DUPLICATE_POLICIES = ("refuse", "keep", "once")
"""What to do with rows that repeat another row of their query in every column when no item column
names the candidates: refuse (the default: fairltr cannot tell one candidate listed twice from two
candidates with equal values), keep them as distinct candidates, or count each once."""


def check_duplicate_rows(df: pd.DataFrame, columns: RankingColumns, policy: str = "refuse",
                         source: str | None = None) -> pd.DataFrame:
    """``df`` under the duplicate-row ``policy`` (:data:`DUPLICATE_POLICIES`): with an item column,
    or ``"keep"``, unchanged (a repeated (query, item) pair is :func:`check_table`'s error);
    ``"refuse"``: a :class:`DataError` naming the first repeated row, the row it repeats and how
    many there are; ``"once"``: the repeats dropped, with a :class:`~fairltr.errors.FairltrWarning`."""
    if policy not in DUPLICATE_POLICIES:
        raise ConfigError(f"duplicate-row policy must be one of {DUPLICATE_POLICIES}, got {policy!r}")
    if columns.item is not None or policy == "keep" or len(df) < 2:
        return df
    try:
        dup = df.duplicated(keep="first").to_numpy()
    except TypeError:  # unhashable cells (lists): compare their text
        dup = df.astype(str).duplicated(keep="first").to_numpy()
    if not dup.any():
        return df
    n = int(dup.sum())
    pos = int(np.flatnonzero(dup)[0])
    if policy == "refuse":
        row = df.iloc[pos]
        same = (df == row).all(axis=1).to_numpy() if not df.isna().any().any() else \
            (df.astype(str) == row.astype(str)).all(axis=1).to_numpy()
        first = int(np.flatnonzero(same)[0])
        q = f" (query {show_value(df[columns.query].iloc[pos])})" if columns.query in df.columns else ""
        raise DataError(f"{locate_row(df, pos, source)}: this row repeats {row_place(df, first, source)[1]} in every "
                        f"column{q}; {n} repeated row(s) in all. fairltr cannot tell one candidate listed twice from "
                        "two candidates with equal values: name each candidate's id column (--item COLUMN), or say "
                        "what they are: --duplicate-rows keep (distinct candidates) or --duplicate-rows once "
                        "(count each once)")
    import warnings

    from fairltr.errors import FairltrWarning

    name = frame_source(df, source) or "the table"
    warnings.warn(f"{name}: {n} row(s) repeat another row of their query in every column; counted once "
                  "(--duplicate-rows once)", FairltrWarning, stacklevel=2)
    attrs = dict(df.attrs)
    out = df.loc[~dup]
    out.attrs.update(attrs)
    return out


def query_codes(df: pd.DataFrame, query: str) -> tuple[np.ndarray, list]:
    """Integer code per row (queries numbered by first appearance) and the ordered query ids."""
    codes, uniques = pd.factorize(df[query], sort=False)
    return codes.astype(np.int64), list(uniques)


def positions_in_query(codes: np.ndarray, n_queries: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(slots, sizes): the 0-based position of every row inside its query, counting the query's
    rows in row order, and the number of rows of each query. ``codes[r]`` is row r's query
    (0..Q-1, e.g. from :func:`query_codes`); ``n_queries`` defaults to max code + 1. The one
    implementation of "position within query": padding slots, ranks of a sorted table
    (:func:`rank_within_query`) and FA*IR's layout all use it."""
    codes = np.asarray(codes, dtype=np.int64)
    if n_queries is None:
        n_queries = int(codes.max()) + 1 if len(codes) else 0
    sizes = np.bincount(codes, minlength=n_queries)
    starts = np.cumsum(sizes) - sizes
    if len(codes) < 2 or bool(np.all(codes[1:] >= codes[:-1])):  # rows already grouped by query
        return np.arange(len(codes), dtype=np.int64) - starts[codes], sizes
    order = np.argsort(codes, kind="stable")
    slots = np.empty(len(codes), dtype=np.int64)
    slots[order] = np.arange(len(codes), dtype=np.int64) - starts[codes[order]]
    return slots, sizes


def score_order(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Row permutation that groups the queries (in code order) and sorts each by decreasing
    score; ties keep row order."""
    codes = np.asarray(codes, dtype=np.int64)
    return np.lexsort((np.arange(len(codes)), -np.asarray(scores, dtype=np.float64).reshape(-1), codes))


def rank_within_query(codes: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """1-based rank of every row inside its query by decreasing score (ties: the earlier row
    first), in the rows' own order (not sorted)."""
    order = score_order(codes, scores)
    slots, _ = positions_in_query(np.asarray(codes, dtype=np.int64)[order])
    ranks = np.empty(len(order), dtype=np.int64)
    ranks[order] = slots + 1
    return ranks


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
) -> RankingRows:
    """Validate ``df`` (exactly as :func:`to_batch`) and return its rows unpadded; ``columns``
    None: :data:`~fairltr.columns.DEFAULT_COLUMNS`."""
    c = resolve_columns(columns)
    features = select_features(df, columns=c, features=features, source=source)
    check_table(df, c, numeric=features, source=source)
    codes, qids = query_codes(df, c.query)
    slots, sizes = positions_in_query(codes, len(qids))
    feat = numeric_matrix(df, features, query=c.query, source=source)
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

    def pad(values: np.ndarray, fill: float, np_dtype) -> np.ndarray:
        out = np.full((n_q, n_max) + values.shape[1:], fill, dtype=np_dtype)
        out[codes, slots] = values if take is None else values[take]
        return out

    mask = np.zeros((n_q, n_max), dtype=bool)
    mask[codes, slots] = True
    return RankingBatch(
        features=torch.from_numpy(pad(rows.features, 0.0, np.float64)).to(dtype),
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
