"""Ranking tables <-> padded tensors.

A *ranking table* is a pandas DataFrame with one row per candidate and named columns:
a query id, a group (int, 0 = non-protected, >= 1 protected), feature columns and a
judgment (higher is better). :func:`to_batch` turns it into a :class:`RankingBatch` of
padded ``(Q, N, ...)`` tensors plus a boolean mask; queries keep the order of their first
appearance in the table, and candidates keep their row order inside each query.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np
import pandas as pd
import torch

from fairltr.errors import DataError

__all__ = ["RankingBatch", "to_batch", "validate_ranking_frame", "query_codes", "scatter_back", "show_value"]


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


def _where(source: str | None) -> str:
    return f" in {source}" if source else ""


def show_value(value: object) -> str:
    """repr of a cell for error messages, with numpy scalars shown as plain Python values."""
    item = getattr(value, "item", None)
    if isinstance(value, np.generic) and callable(item):
        value = item()
    return repr(value)


def validate_ranking_frame(
    df: pd.DataFrame,
    *,
    query: str,
    columns: Sequence[str],
    group: str | None = None,
    item: str | None = None,
    source: str | None = None,
) -> None:
    """Raise :class:`DataError` naming the file/column/row/query of the first problem.

    Checks: non-empty, required columns present, numeric finite values in ``columns``,
    integer non-negative ``group``, no duplicate (query, item) pair when ``item`` is given.
    """
    where = _where(source)
    if len(df) == 0:
        raise DataError(f"empty ranking table{where}: no rows")
    needed = [query, *columns] + ([group] if group else []) + ([item] if item else [])
    missing = [c for c in dict.fromkeys(needed) if c not in df.columns]
    if missing:
        raise DataError(
            f"missing column(s) {missing}{where}; available columns: {list(df.columns)}"
        )
    if df[query].isna().any():
        row = int(np.flatnonzero(df[query].isna().to_numpy())[0])
        raise DataError(f"missing query id{where} at row {row} (column {query!r})")
    for col in dict.fromkeys(list(columns) + ([group] if group else [])):
        values = df[col]
        if not (pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values)):
            converted = pd.to_numeric(values, errors="coerce")
            bad = converted.isna() & values.notna()
            if bad.any():
                row = int(np.flatnonzero(bad.to_numpy())[0])
                raise DataError(
                    f"non-numeric value {show_value(values.iloc[row])}{where} in column {col!r} at row {row} "
                    f"(query {show_value(df[query].iloc[row])})"
                )
            values = converted
        arr = values.to_numpy(dtype=np.float64, na_value=np.nan)
        bad = ~np.isfinite(arr)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise DataError(
                f"{'NaN' if np.isnan(arr[row]) else 'infinite'} value{where} in column {col!r} "
                f"at row {row} (query {show_value(df[query].iloc[row])}); {int(bad.sum())} bad value(s) in that column"
            )
        if col == group:
            nonint = arr != np.round(arr)
            if nonint.any():
                row = int(np.flatnonzero(nonint)[0])
                raise DataError(
                    f"group column {col!r}{where} must hold integers (0 = non-protected, >= 1 protected); "
                    f"row {row} has {show_value(arr[row])}"
                )
            if (arr < 0).any():
                row = int(np.flatnonzero(arr < 0)[0])
                raise DataError(
                    f"group column {col!r}{where} must be >= 0; row {row} has {show_value(arr[row])}"
                )
    if item is not None:
        dup = df.duplicated(subset=[query, item], keep="first")
        if dup.any():
            row = int(np.flatnonzero(dup.to_numpy())[0])
            raise DataError(
                f"duplicate (query, item) pair{where}: query {show_value(df[query].iloc[row])}, "
                f"item {show_value(df[item].iloc[row])} at row {row}"
            )


def query_codes(df: pd.DataFrame, query: str) -> tuple[np.ndarray, list]:
    """Integer code per row (queries numbered by first appearance) and the ordered query ids."""
    codes, uniques = pd.factorize(df[query], sort=False)
    return codes.astype(np.int64), list(uniques)


def _positions(codes: np.ndarray, n_queries: int) -> tuple[np.ndarray, np.ndarray, int]:
    """Slot (position inside its query, stable by row order) of every row, and query sizes."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes, minlength=n_queries)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    slot_sorted = np.arange(len(codes)) - np.repeat(starts, sizes)
    slots = np.empty(len(codes), dtype=np.int64)
    slots[order] = slot_sorted
    return slots, sizes, int(sizes.max()) if len(sizes) else 0


def to_batch(
    df: pd.DataFrame,
    *,
    query: str = "query_id",
    group: str | None = "protected",
    judgment: str | None = "judgment",
    features: Sequence[str] | None = None,
    item: str | None = None,
    dtype: torch.dtype = torch.float64,
    source: str | None = None,
) -> RankingBatch:
    """Validate ``df`` and pad it into a :class:`RankingBatch`.

    ``features=None`` takes every numeric column except query, judgment and item (the group
    column is kept as a feature: DELTR's "standard" ranker sees it; drop it for colorblind).
    ``group=None`` puts every candidate in group 0; ``judgment=None`` gives zero judgments.
    Rows of one query need not be adjacent: they are grouped, keeping their relative order.
    """
    if features is None:
        excluded = {query, judgment, item}
        features = [
            c for c in df.columns if c not in excluded and pd.api.types.is_numeric_dtype(df[c])
        ]
    features = list(features)
    cols = features + ([judgment] if judgment else [])
    validate_ranking_frame(df, query=query, columns=cols, group=group, item=item, source=source)

    codes, qids = query_codes(df, query)
    slots, sizes, n_max = _positions(codes, len(qids))
    n_q = len(qids)

    def pad(values: np.ndarray, fill: float, np_dtype) -> np.ndarray:
        out = np.full((n_q, n_max) + values.shape[1:], fill, dtype=np_dtype)
        out[codes, slots] = values
        return out

    feat = df[features].to_numpy(dtype=np.float64) if features else np.zeros((len(df), 0))
    jud = df[judgment].to_numpy(dtype=np.float64) if judgment else np.zeros(len(df))
    grp = df[group].to_numpy(dtype=np.float64).astype(np.int64) if group else np.zeros(len(df), np.int64)
    mask = np.zeros((n_q, n_max), dtype=bool)
    mask[codes, slots] = True
    return RankingBatch(
        features=torch.from_numpy(pad(feat, 0.0, np.float64)).to(dtype),
        judgments=torch.from_numpy(pad(jud, 0.0, np.float64)).to(dtype),
        groups=torch.from_numpy(pad(grp, 0, np.int64)),
        mask=torch.from_numpy(mask),
        row_index=torch.from_numpy(pad(np.arange(len(df), dtype=np.int64), -1, np.int64)),
        query_ids=qids,
        feature_names=features,
    )


def scatter_back(values: torch.Tensor, batch: RankingBatch, n_rows: int) -> np.ndarray:
    """Inverse of padding: a (Q, N) tensor -> a length-``n_rows`` array in the frame's row order."""
    out = np.empty(n_rows, dtype=np.float64)
    m = batch.mask.cpu()
    out[batch.row_index.cpu()[m].numpy()] = values.detach().cpu()[m].to(torch.float64).numpy()
    return out
