"""The audit's category blocks (docs/spec.md sections 3b and 3c): one block per group attribute,
their intersection, and the hidden binary block of section 3; each row's category code in each
block, with ``-1`` for a row whose category is *unknown* there.

Unknown (section 3c): a cell that is missing (when ``""`` is listed among the unknown values) or
equal to a listed value (``"Decline to state"``). An unknown row is counted per attribute and left
out of that attribute's categories, of the intersection (unknown in either attribute is unknown
there) and of the binary figures; it keeps its place in the ranking.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.data import category_codes, is_string_categories
from fairltr.errors import ConfigError
from fairltr.metrics.labels import attribute_key, category_label, intersection_name

__all__ = ["Block", "UNKNOWN", "unknown_mask", "category_blocks", "sorted_query_codes"]

UNKNOWN = "unknown"
"""The category an audit reports unknown values under."""


@dataclass
class Block:
    """One attribute (or the intersection) with its categories, as global category indices;
    ``codes`` is -1 where the row's category is unknown."""

    name: str
    labels: list[str]
    codes: np.ndarray  # (R,) 0..len(labels)-1, or -1 (unknown)
    offset: int = 0
    visible: bool = True  # the hidden binary block (section-3 coding) is not in the table
    n_unknown: int = 0

    @property
    def size(self) -> int:
        return len(self.labels)

    @property
    def slice(self) -> slice:
        return slice(self.offset, self.offset + self.size)


def unknown_mask(values: pd.Series, unknown_values: Sequence[str]) -> np.ndarray:
    """Rows whose category is unknown: missing (when ``""`` is listed) or equal, as text, to a
    listed value."""
    if not unknown_values:
        return np.zeros(len(values), dtype=bool)
    listed = {str(v) for v in unknown_values}
    missing = values.isna().to_numpy()
    text = values.astype(str).str.strip().to_numpy()
    return (missing & ("" in listed)) | (~missing & np.isin(text, sorted(listed)))


def _labels(values: pd.Series) -> tuple[np.ndarray, list[str]]:
    """Category codes in sorted order of the categories as written (ints numerically)."""
    if is_string_categories(values):
        codes, uniques = pd.factorize(values.astype(str), sort=True)
        return codes.astype(np.int64), [str(u) for u in uniques]
    ints = pd.to_numeric(values).to_numpy(dtype=np.float64).astype(np.int64)
    codes, uniques = pd.factorize(ints, sort=True)
    return codes.astype(np.int64), [str(int(u)) for u in uniques]


def _attribute(df: pd.DataFrame, name: str, unknown_values: Sequence[str]) -> Block:
    unknown = unknown_mask(df[name], unknown_values)
    codes = np.full(len(df), -1, dtype=np.int64)
    labels: list[str] = []
    if (~unknown).any():
        known, labels = _labels(df[name][~unknown])
        codes[~unknown] = known
    if unknown.any() and UNKNOWN in labels:
        raise ConfigError(f"group column {name!r} has a category written {UNKNOWN!r}, the name unknown values are "
                          f"reported under: list it with the unknown values, or rename it")
    return Block(attribute_key(name), labels, codes, n_unknown=int(unknown.sum()))


def category_blocks(df: pd.DataFrame, c: RankingColumns, unknown_values: Sequence[str] = ()) -> list[Block]:
    """One block per group attribute, the intersection of them all (two or more attributes),
    and the hidden binary block (the first attribute's reference category vs the others,
    :func:`fairltr.data.category_codes`); offsets set, in this order."""
    blocks = [_attribute(df, name, unknown_values) for name in c.groups]
    if len(c.groups) >= 2:
        any_unknown = np.zeros(len(df), dtype=bool)
        combined = np.zeros(len(df), dtype=np.int64)
        for b in blocks:
            any_unknown |= b.codes < 0
            combined = combined * max(1, b.size) + np.maximum(b.codes, 0)
        codes = np.full(len(df), -1, dtype=np.int64)
        labels: list[str] = []
        if (~any_unknown).any():
            known, uniques = pd.factorize(combined[~any_unknown], sort=True)
            codes[~any_unknown] = known
            for u in uniques:
                parts = []
                for b in reversed(blocks):
                    parts.append(b.labels[int(u) % max(1, b.size)])
                    u = int(u) // max(1, b.size)
                labels.append(category_label(reversed(parts)))  # '|' inside a category is escaped: A\|B|C
        blocks.append(Block(intersection_name(c.groups), labels, codes, n_unknown=int(any_unknown.sum())))
    first = blocks[0].codes >= 0
    binary = np.full(len(df), -1, dtype=np.int64)
    if first.any():
        binary[first] = (category_codes(df[c.group][first])[0] >= 1).astype(np.int64)
    blocks.append(Block("__binary__", ["0", ">=1"], binary, visible=False))
    offset = 0
    for b in blocks:
        b.offset = offset
        offset += b.size
    return blocks


def sorted_query_codes(df: pd.DataFrame, query: str) -> tuple[np.ndarray, list]:
    """Integer code per row with the queries numbered in sorted order of their ids (numbers
    numerically, text as text; mixed ids by (type, text)), and the ids in that order: a bootstrap
    over these codes draws the same queries whatever the table's row order."""
    values = df[query]
    try:
        codes, uniques = pd.factorize(values, sort=True)
        return codes.astype(np.int64), list(uniques)
    except TypeError:  # ids of mixed types do not sort together: sort by (type, text)
        key = values.map(lambda v: f"{type(v).__name__}\x1f{v}")
        codes, _ = pd.factorize(key, sort=True)
        codes = codes.astype(np.int64)
        first = np.full(int(codes.max()) + 1, len(codes), dtype=np.int64)
        np.minimum.at(first, codes, np.arange(len(codes)))
        return codes, [values.iloc[i] for i in first]
