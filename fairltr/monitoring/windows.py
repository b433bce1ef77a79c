"""Time windows: ``7d``, ``2w``, ``24h``, ``1mo``, ``1y``.

Fixed windows (h, d, w) start at midnight (UTC-naive) of the first timestamp's day and are
``n`` units long; calendar windows (mo, y) start on the first day of the first timestamp's month
(or year) and span ``n`` months (years). Window ``i`` covers ``[start_i, start_{i+1})``; every row
lands in exactly one window; windows without rows are not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["WindowSpec", "parse_window", "parse_time_column", "assign_windows"]

_SPEC = re.compile(r"^\s*(\d+)\s*(h|d|w|mo|y)\s*$")
_UNIT_WORDS = {"h": "hour", "d": "day", "w": "week", "mo": "month", "y": "year"}


@dataclass(frozen=True)
class WindowSpec:
    """``count`` units of ``unit`` (``h``, ``d``, ``w``, ``mo`` or ``y``)."""

    count: int
    unit: str

    @property
    def calendar(self) -> bool:
        return self.unit in ("mo", "y")

    @property
    def months(self) -> int:
        return self.count * (12 if self.unit == "y" else 1)

    @property
    def delta(self) -> pd.Timedelta:
        return pd.Timedelta(**{{"h": "hours", "d": "days", "w": "weeks"}[self.unit]: self.count})

    def text(self) -> str:
        return f"{self.count}{self.unit}"

    def describe(self) -> str:
        word = _UNIT_WORDS[self.unit]
        return f"{self.count} {word}{'s' if self.count != 1 else ''}"


def parse_window(text: str) -> WindowSpec:
    """``"7d"`` -> WindowSpec(7, "d"); a one-line :class:`ConfigError` otherwise."""
    m = _SPEC.match(str(text))
    if not m or int(m.group(1)) < 1:
        raise ConfigError(f"--window must be a positive count and a unit (h, d, w, mo, y), e.g. 7d, 2w or 1mo; "
                          f"got {text!r}")
    return WindowSpec(int(m.group(1)), m.group(2))


def parse_time_column(df: pd.DataFrame, column: str, source: str = "") -> pd.Series:
    """The time column as timezone-naive UTC timestamps; a missing column or an unparseable
    value is a :class:`DataError` naming the file, column, line and value."""
    where = f"{source}: " if source else ""
    if column not in df.columns:
        raise DataError(f"{where}time column {column!r} not in the table; columns: {list(df.columns)}")
    raw = df[column]
    if pd.api.types.is_datetime64_any_dtype(raw):
        t = pd.to_datetime(raw, utc=True)
    else:
        t = pd.to_datetime(raw, errors="coerce", utc=True, format="mixed")
    bad = t.isna().to_numpy()
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        from fairltr.data import locate_row, show_value

        raise DataError(f"{locate_row(df, pos, source or None)}: time column {column!r} holds {show_value(raw.iloc[pos])}, not a date or time "
                        "(use ISO 8601, e.g. 2026-01-28 or 2026-01-28T09:30:00)")
    return t.dt.tz_localize(None)


def assign_windows(times: pd.Series, spec: WindowSpec) -> tuple[np.ndarray, pd.DatetimeIndex]:
    """Window index of every row (0 = the first window) and the start of every window up to
    the last one holding a row (``len(starts) = max(index) + 1``; ``starts[i+1]`` ends window i,
    and one more start closes the last window)."""
    t = pd.DatetimeIndex(times).as_unit("ns")  # pandas 3 may parse to s or us resolution
    if len(t) == 0:
        raise DataError("the traffic table has no rows")
    first = t.min()
    if spec.calendar:
        origin = pd.Timestamp(year=first.year, month=first.month if spec.unit == "mo" else 1, day=1)
        month_no = (t.year - origin.year) * 12 + (t.month - origin.month)
        index = np.asarray(month_no // spec.months, dtype=np.int64)
        starts = pd.DatetimeIndex([origin + pd.DateOffset(months=spec.months * i) for i in range(int(index.max()) + 2)])
    else:
        origin = first.normalize()
        step = spec.delta.value
        index = np.asarray((t.asi8 - origin.value) // step, dtype=np.int64)
        starts = pd.DatetimeIndex(origin + pd.to_timedelta(np.arange(int(index.max()) + 2) * step, unit="ns"))
    return index, starts
