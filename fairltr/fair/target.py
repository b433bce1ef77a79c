"""Categories of a group column and a target distribution over them, for the multi-category
re-rankers (Geyik et al., KDD 2019).

* :func:`category_codes`: one integer code per row (categories numbered by first appearance) and
  the categories as written in the table (integers or strings; several columns give their
  combination, names joined with ``|``).
* :func:`parse_target`: ``"race=Black:0.3,White:0.5,Asian:0.2"`` (the ``race=`` prefix is
  optional) into the column name and a ``{category: share}`` mapping, checked once.
* :func:`target_shares`: a mapping matched against the table's categories (by their text, so
  ``"1"`` matches the integer 1): shares in category-code order; a category the table lacks is an
  error, a category of the table the target leaves out gets share 0.
"""

from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["category_codes", "parse_target", "target_shares", "SHARE_TOLERANCE"]

SHARE_TOLERANCE = 1e-6  # |sum of shares - 1| allowed


def category_codes(df: pd.DataFrame, group: str | Sequence[str]) -> tuple[np.ndarray, list]:
    """(codes per row, categories) of ``group`` (one column, or several combined)."""
    cols = [group] if isinstance(group, str) else list(group)
    missing = [col for col in cols if col not in df.columns]
    if missing:
        raise DataError(f"group column(s) {missing} not in the table; columns: {list(df.columns)}")
    if len(cols) == 1:
        values = df[cols[0]]
        na = values.isna().to_numpy()
    else:
        values = df[cols].astype(str).agg("|".join, axis=1)
        na = df[cols].isna().any(axis=1).to_numpy()
    if na.any():
        row = int(np.flatnonzero(na)[0])
        raise DataError(f"group column {'|'.join(cols)!r} is missing a value at row {row}")
    codes, uniques = pd.factorize(values, sort=False)
    return codes.astype(np.int64), [u.item() if hasattr(u, "item") else u for u in uniques]


def parse_target(text: str) -> tuple[str | None, dict[str, float]]:
    """``"[column=]cat:share,cat:share,..."`` -> (column or None, {category: share}); shares in
    [0, 1] summing to 1 (within :data:`SHARE_TOLERANCE`)."""
    if not isinstance(text, str) or not text.strip():
        raise ConfigError("target must look like 'race=Black:0.3,White:0.5,Asian:0.2'")
    column, body = None, text.strip()
    if "=" in body:
        column, _, body = body.partition("=")
        column = column.strip()
        if not column:
            raise ConfigError(f"target {text!r}: empty column name before '='")
    shares: dict[str, float] = {}
    for part in body.split(","):
        name, sep, value = part.strip().rpartition(":")
        name = name.strip()
        if not sep or not name:
            raise ConfigError(f"target {text!r}: {part.strip()!r} is not 'category:share'")
        try:
            share = float(value)
        except ValueError:
            raise ConfigError(f"target {text!r}: share {value.strip()!r} of {name!r} is not a number") from None
        if name in shares:
            raise ConfigError(f"target {text!r}: category {name!r} given twice")
        shares[name] = share
    check_shares(shares, text)
    return column, shares


def check_shares(shares: Mapping[object, float], label: object = None) -> None:
    """Each share a finite number in [0, 1], together summing to 1."""
    what = f"target {label!r}" if label is not None else "target"
    for name, share in shares.items():
        if not (isinstance(share, (int, float)) and math.isfinite(share) and 0.0 <= share <= 1.0):
            raise ConfigError(f"{what}: share of {name!r} must be in [0, 1], got {share!r}")
    total = float(sum(shares.values()))
    if abs(total - 1.0) > SHARE_TOLERANCE:
        raise ConfigError(f"{what}: shares sum to {total:g}, they must sum to 1")


def target_shares(target: Mapping[object, float] | str, categories: Sequence[object], group: str) -> np.ndarray:
    """Shares (G,) in the order of ``categories`` (the table's, from :func:`category_codes`)."""
    if isinstance(target, str):
        column, shares = parse_target(target)
        if column is not None and column != group:
            raise ConfigError(f"target names column {column!r} but the group column is {group!r}")
    else:
        shares = dict(target)
        check_shares(shares)
    by_text = {str(c): i for i, c in enumerate(categories)}
    out = np.zeros(len(categories), dtype=np.float64)
    for name, share in shares.items():
        i = by_text.get(str(name))
        if i is None:
            raise ConfigError(f"target category {name!r} does not occur in group column {group!r}; "
                              f"categories: {[str(c) for c in categories]}")
        out[i] = float(share)
    return out
