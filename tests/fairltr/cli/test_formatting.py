"""CLI tables: intervals as ``value [low, high]``, at most 120 characters unless --wide."""

from __future__ import annotations

import math

from fairltr.cli.formatting import TABLE_WIDTH, cell, metrics_table


def test_a_metric_with_its_interval_reads_value_low_high():
    row = {"impact_ratio_at_10": 0.85123, "impact_ratio_at_10_ci_low": 0.7412, "impact_ratio_at_10_ci_high": 0.93,
           "ndcg_at_10": 0.5}
    assert cell(row, "impact_ratio_at_10") == "0.8512 [0.7412, 0.9300]"
    assert cell(row, "ndcg_at_10") == "0.5000"
    assert cell(row, "kendall_tau") == "n/a"
    assert cell({"x": math.nan, "x_ci_low": 0.1, "x_ci_high": 0.2}, "x") == "n/a"
    table = metrics_table({"test": row}, ["impact_ratio_at_10", "ndcg_at_10"])
    head, rule, line = table.splitlines()
    assert "0.8512 [0.7412, 0.9300]" in line and line.index("0.5000") > line.index("]")
    assert len(head) == len(line) == len(rule)


def _wide_row(n: int) -> dict[str, float]:
    row: dict[str, float] = {}
    for i in range(n):
        row[f"metric_{i}"] = 0.5 + i / 100
        row[f"metric_{i}_ci_low"], row[f"metric_{i}_ci_high"] = 0.4, 0.6
    return row


def test_tables_fit_120_columns_and_name_what_they_leave_out():
    row = _wide_row(12)  # about 25 characters a cell: 12 cells are ~330 wide
    cols = list(k for k in row if not k.endswith(("_ci_low", "_ci_high")))
    text = metrics_table({"models:/fair-ranker@champion": row}, cols)
    lines = text.splitlines()
    assert max(len(x) for x in lines) <= TABLE_WIDTH
    assert "metric_0" in lines[0] and "metric_11" not in lines[0]
    assert "--wide prints them" in " ".join(lines[3:]) and "metric_11" in " ".join(lines[3:])
    wide = metrics_table({"models:/fair-ranker@champion": row}, cols, wide=True).splitlines()
    assert "metric_11" in wide[0] and len(wide) == 3 and len(wide[0]) > TABLE_WIDTH


def test_a_narrow_table_is_unchanged_by_the_width_limit():
    row = {"a": 1.0, "b": 2.0}
    assert metrics_table({"m": row}, ["a", "b"]) == metrics_table({"m": row}, ["a", "b"], wide=True)
