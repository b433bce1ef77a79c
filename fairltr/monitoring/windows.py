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

__all__ = ["WindowSpec", "parse_window", "parse_time_column", "assign_windows", "TIME_UNITS"]

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


TIME_UNITS = ("s", "ms", "us", "ns")
_ISO = re.compile(r"^\s*\d{4}-\d{2}-\d{2}(?:[T ]\d{2}(?::\d{2}(?::\d{2}(?:\.\d+)?)?)?)?\s*(?:Z|[+-]\d{2}:?\d{2})?\s*$")
_NUMERIC_DATE = re.compile(r"^\s*\d{1,2}[/.-]\d{1,2}[/.-]\d{2,4}\b")
_NUMBER = re.compile(r"^\s*[-+]?\d+(?:\.\d*)?\s*$")


def _where(df: pd.DataFrame, pos: int, source: str) -> str:
    from fairltr.data import locate_row

    return locate_row(df, pos, source or None)


def _bad_value(df: pd.DataFrame, raw: pd.Series, bad: np.ndarray, column: str, source: str, hint: str) -> DataError:
    from fairltr.data import show_value

    pos = int(np.flatnonzero(bad)[0])
    return DataError(f"{_where(df, pos, source)}: time column {column!r} holds {show_value(raw.iloc[pos])}, {hint}")


def _numeric_times(df: pd.DataFrame, raw: pd.Series, column: str, source: str, unit: str | None) -> pd.Series:
    from fairltr.data import show_value

    values = pd.to_numeric(raw, errors="coerce")
    if unit is None:
        first = raw.iloc[int(np.flatnonzero(values.notna().to_numpy())[0])] if values.notna().any() else raw.iloc[0]
        raise ConfigError(f"time column {column!r} holds numbers ({show_value(first)}): say what they count with "
                          f"--time-unit {'|'.join(TIME_UNITS)} (seconds, milliseconds, microseconds or nanoseconds "
                          "since 1970-01-01 UTC)")
    bad = values.isna().to_numpy()
    if bad.any():
        raise _bad_value(df, raw, bad, column, source, "not a number of " + unit)
    t = pd.to_datetime(values, unit=unit, utc=True)
    if len(t) and t.max().year < 1980:
        raise DataError(f"{source + ': ' if source else ''}time column {column!r} read with --time-unit {unit} puts "
                        f"every row before 1980 (latest {t.max().isoformat()}): the values count a larger unit "
                        f"(e.g. --time-unit s for epoch seconds)")
    return t


def parse_time_column(df: pd.DataFrame, column: str, source: str = "", *, time_format: str | None = None,
                      time_unit: str | None = None) -> pd.Series:
    """The time column as timezone-naive UTC timestamps. Accepted without options: datetime
    columns and ISO 8601 text (``2026-01-28``, ``2026-01-28T09:30:00Z``); dates written with
    numbers only (``07/01/2026``: 7 January or 1 July) need ``time_format`` (a strptime format,
    ``%d/%m/%Y``); numbers (epoch times) need ``time_unit`` in :data:`TIME_UNITS`. A missing
    column, an unparseable value or an ambiguous one is a one-line error naming the file, column,
    line and value."""
    where = f"{source}: " if source else ""
    if column not in df.columns:
        raise DataError(f"{where}time column {column!r} not in the table; columns: {list(df.columns)}")
    if time_unit is not None and time_unit not in TIME_UNITS:
        raise ConfigError(f"--time-unit must be one of {list(TIME_UNITS)}, got {time_unit!r}")
    raw = df[column]
    if pd.api.types.is_datetime64_any_dtype(raw):
        t = pd.to_datetime(raw, utc=True)
    elif pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw):
        t = _numeric_times(df, raw, column, source, time_unit)
    elif time_format is not None:
        t = pd.to_datetime(raw, format=time_format, errors="coerce", utc=True)
        bad = t.isna().to_numpy()
        if bad.any():
            raise _bad_value(df, raw, bad, column, source, f"which does not match --time-format {time_format!r}")
    else:
        text = raw.astype(str)
        numbers = text.str.match(_NUMBER).to_numpy()
        if numbers.all() and len(text):
            t = _numeric_times(df, raw, column, source, time_unit)
        else:
            ambiguous = text.str.match(_NUMERIC_DATE).to_numpy()
            if ambiguous.any():
                raise _bad_value(df, raw, ambiguous, column, source,
                                 "a date written with numbers only (day first or month first?): name the format with "
                                 "--time-format, e.g. --time-format %d/%m/%Y or --time-format %m/%d/%Y (ISO 8601 "
                                 "dates, 2026-01-28, need none)")
            iso = text.str.match(_ISO).to_numpy()
            t = pd.Series(pd.NaT, index=raw.index, dtype="datetime64[ns, UTC]")
            if iso.any():
                t[iso] = pd.to_datetime(raw[iso], errors="coerce", utc=True, format="ISO8601")
            if (~iso).any():  # written out (Jan 28 2026, 28 January 2026): no day/month ambiguity
                t[~iso] = pd.to_datetime(raw[~iso], errors="coerce", utc=True, format="mixed", dayfirst=False)
    bad = t.isna().to_numpy()
    if bad.any():
        raise _bad_value(df, raw, bad, column, source, "not a date or time (use ISO 8601, e.g. 2026-01-28 or "
                                                        "2026-01-28T09:30:00; or --time-format / --time-unit)")
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
