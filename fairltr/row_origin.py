"""Where a row of a ranking table came from (file and 1-based line, recorded by the readers in
``df.attrs``), and the messages that name it: every data error of fairltr says ``file:line``,
the column, the query and the value."""

from __future__ import annotations

import os
from typing import Sequence

import numpy as np
import pandas as pd

__all__ = ["ORIGIN_KEY", "set_origin", "frame_source", "row_place", "locate_row", "show_value", "cell_problem", "source_prefix"]

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


def source_prefix(df: pd.DataFrame, source: str | None) -> str:
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
def cell_problem(df: pd.DataFrame, pos: int, col: object, query: str | None, source: str | None, what: str) -> str:
    q = f" (query {show_value(df[query].iloc[pos])})" if query is not None and query in df.columns else ""
    return f"{locate_row(df, pos, source)}: {what} in column {col!r}{q}"
