"""Rows that repeat another row of their query in every column (no item column to tell the
candidates apart): refused, kept or counted once, by the user's choice."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.row_origin import frame_source, locate_row, row_place, show_value

__all__ = ["DUPLICATE_POLICIES", "check_duplicate_rows"]


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
