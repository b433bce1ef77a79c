"""Time windows: parsing, assignment against a brute-force loop, calendar months, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
from fairltr.monitoring import assign_windows, parse_time_column, parse_window


@pytest.mark.parametrize("text, count, unit", [("7d", 7, "d"), ("2w", 2, "w"), ("24h", 24, "h"), ("1mo", 1, "mo"),
                                               (" 3 mo ", 3, "mo"), ("1y", 1, "y")])
def test_parse_window(text, count, unit):
    spec = parse_window(text)
    assert (spec.count, spec.unit) == (count, unit)


@pytest.mark.parametrize("bad", ["", "7", "d", "0d", "-1d", "7days", "1.5d", "7m"])
def test_parse_window_rejects_with_one_line(bad):
    with pytest.raises(ConfigError, match="--window must be"):
        parse_window(bad)


def test_fixed_windows_match_a_loop():
    rng = np.random.default_rng(0)
    t = pd.Series(pd.Timestamp("2026-01-07 13:00") + pd.to_timedelta(rng.integers(0, 60 * 24 * 40, 500), unit="min"))
    index, starts = assign_windows(t, parse_window("7d"))
    origin = pd.Timestamp("2026-01-07")  # midnight of the first timestamp's day
    assert t.min() >= origin
    for ti, i in zip(t, index):  # brute force: the window whose [start, start + 7 days) holds ti
        expect = int((ti - origin) // pd.Timedelta(days=7))
        assert i == expect
        assert starts[i] <= ti < starts[i + 1]
    assert len(starts) == index.max() + 2


def test_calendar_months_start_on_the_first():
    t = pd.Series(pd.to_datetime(["2026-01-31", "2026-02-01", "2026-02-28 23:59", "2026-03-01", "2026-05-15"], format="mixed"))
    index, starts = assign_windows(t, parse_window("1mo"))
    assert index.tolist() == [0, 1, 1, 2, 4]
    assert starts[0] == pd.Timestamp("2026-01-01") and starts[4] == pd.Timestamp("2026-05-01")
    index2, starts2 = assign_windows(t, parse_window("2mo"))
    assert index2.tolist() == [0, 0, 0, 1, 2]
    assert starts2[1] == pd.Timestamp("2026-03-01")


def test_time_column_errors_name_the_line(tmp_path):
    from fairltr.io import read_table

    p = tmp_path / "traffic.csv"
    p.write_text("query_id,protected,judgment,served_at\n1,0,1,2026-01-07\n1,1,0,not-a-date\n")
    df = read_table(p)
    with pytest.raises(DataError, match=r"traffic.csv:3: time column 'served_at' holds 'not-a-date'"):
        parse_time_column(df, "served_at", str(p))
    with pytest.raises(DataError, match="time column 'when' not in the table"):
        parse_time_column(df, "when", str(p))
