"""The LL144 summary (fairltr.metrics.ll144) against the DCWP's published scoring-rate example
(6 RCNY 5-301(d), the "culture fit" table) and a selection-rate table built from the rule's
definitions, both from tables built to match their counts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, audit_ranking
from fairltr.metrics.ll144 import summary_tables

C = RankingColumns(query="qid", group=("sex", "race"), judgment="rel")

# DCWP's scoring-rate example as published: (category, applicants, scoring rate %, impact ratio).
# The race rows after Asian (Native American or Alaska Native, Two or More Races) are not in the text
# we could read; their 36 applicants are audited here with race unknown (left out of the race figures,
# which changes none of the published rows: Hispanic or Latino holds the largest rate).
SEX = [("Male", 92, 54.3, 1.00), ("Female", 76, 44.7, 0.82)]
RACE = [("Hispanic or Latino", 28, 64.2, 1.00), ("White (Not Hispanic or Latino)", 40, 37.5, 0.58),
        ("Black or African American (Not Hispanic or Latino)", 32, 50.0, 0.78),
        ("Native Hawaiian or Pacific Islander (Not Hispanic or Latino)", 8, 62.5, 0.97),
        ("Asian (Not Hispanic or Latino)", 24, 41.7, 0.65)]
ABOVE = {"Male": 50, "Female": 34, "Hispanic or Latino": 18, "White (Not Hispanic or Latino)": 15,
         "Black or African American (Not Hispanic or Latino)": 16,
         "Native Hawaiian or Pacific Islander (Not Hispanic or Latino)": 5, "Asian (Not Hispanic or Latino)": 10}


def dcwp_scoring_table() -> pd.DataFrame:
    """168 applicants, 84 scoring 2.0 and 84 scoring 0.0 (median 1.0): per category the counts above."""
    races, above = [], []
    for race, n, _, _ in RACE:
        races += [race] * n
        above += [1] * ABOVE[race] + [0] * (n - ABOVE[race])
    races += ["Decline to state"] * 36
    above += [1] * 20 + [0] * 16  # 84 above in all
    order = np.argsort(-np.array(above), kind="stable")
    races, above = [races[i] for i in order], [above[i] for i in order]
    sex = ["Male"] * 50 + ["Female"] * 34 + ["Male"] * 42 + ["Female"] * 42  # above first, then below
    return pd.DataFrame({"qid": 1, "sex": sex, "race": races, "rel": 0.0, "score": 2.0 * np.array(above)})


def test_dcwp_scoring_rate_example_is_reproduced():
    df = dcwp_scoring_table()
    res = audit_ranking(df, "score", columns=C, config=AuditConfig(k=1, ci=0, scoring="sample",
                                                                  unknown_values=("Decline to state",),
                                                                  exclude_small=False))
    out = summary_tables(res.table, res.unknown_counts, method="scoring", n_individuals=len(df))
    for attribute, published in (("sex", SEX), ("race", RACE)):
        rows = {r["category"]: r for r in out[attribute]["rows"]}
        for category, n, pct, ratio in published:
            assert rows[category]["n"] == n
            assert rows[category]["rate"] == pytest.approx(ABOVE[category] / n, abs=1e-15)
            assert round(rows[category]["impact_ratio"], 2) == ratio, (category, rows[category]["impact_ratio"])
            if category != "Hispanic or Latino":
                assert round(100 * rows[category]["rate"], 1) == pct, category
    # the published 64.2% is 18/28 = 64.29% (no count out of 28 rounds to 64.2%: 17/28 = 60.7%)
    assert round(100 * 18 / 28, 1) == 64.3
    assert out["race"]["unknown_count"] == 36 and out["sex"]["unknown_count"] == 0
    assert out["sex"]["worst_impact_ratio"] == pytest.approx((34 / 76) / (50 / 92))


def test_selection_rate_example_from_the_rules_definitions():
    """Selection rate = selected / applicants; impact ratio = rate / the most selected category's;
    here 2 of 4 rankings select their top 5 of 10 (a table built from the definitions: the
    published selection-rate table was not found)."""
    rows = []
    for q in range(4):
        for i in range(10):
            sex = "Female" if (i + q) % 3 == 0 else "Male"
            rows.append({"qid": q, "sex": sex, "race": "A" if i % 2 else "B", "rel": 0.0, "score": float(10 - i)})
    df = pd.DataFrame(rows)
    res = audit_ranking(df, "score", columns=C, config=AuditConfig(k=5, ci=0, exclude_small=False))
    out = summary_tables(res.table, res.unknown_counts, method="selection@k", n_individuals=len(df))
    top = df.groupby("qid").head(5)
    for attribute in ("sex", "race"):
        rate = top.groupby(attribute).size() / df.groupby(attribute).size()
        got = {r["category"]: r for r in out[attribute]["rows"]}
        for category, value in rate.items():
            assert got[category]["rate"] == pytest.approx(value, abs=1e-15)
            assert got[category]["impact_ratio"] == pytest.approx(value / rate.max(), abs=1e-15)
    cell = out["sex:race"]["rows"]
    assert {r["category"] for r in cell} == {"Female|A", "Female|B", "Male|A", "Male|B", "unknown"}


def test_small_categories_need_a_reason_to_leave_the_ratios():
    df = dcwp_scoring_table()
    for reason in (None, "under 2% of applicants, too few to compare"):
        cfg = AuditConfig(k=1, ci=0, scoring="sample", unknown_values=("Decline to state",),
                          min_category_share=0.05, exclude_small=reason is not None, exclusion_reason=reason)
        res = audit_ranking(df, "score", columns=C, config=cfg)
        out = summary_tables(res.table, res.unknown_counts, method="scoring", n_individuals=len(df),
                             min_category_share=0.05, exclusion_reason=reason)
        nhpi = next(r for r in out["race"]["rows"] if r["category"].startswith("Native Hawaiian"))
        assert nhpi["small"] and nhpi["n"] == 8 and nhpi["rate"] == pytest.approx(5 / 8)  # always reported
        assert nhpi["excluded"] is (reason is not None) and nhpi["exclusion_reason"] == reason
