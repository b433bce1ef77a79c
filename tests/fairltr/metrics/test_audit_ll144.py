"""The audit's LL144 parts (docs/spec.md section 3c) against an independent pandas computation:
scoring rates (median of the whole sample, or of each query; equal is not above), unknown
categories (counted, left out of rates, ratios and the intersection, inside the median), small
categories kept in the worst case unless excluded, and intervals over the same resamples."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError
from fairltr.metrics import AuditConfig, audit_ranking

from audit_tables import C, independent, table  # tests/audit_tables.py (tests/ is on the path): shared with the CLI test


@pytest.mark.parametrize("median", ["sample", "per-query"])
def test_scoring_rates_and_unknowns_equal_pandas(median):
    df = table(1)
    cfg = AuditConfig(k=10, ci=0, scoring=median, unknown_values=("", "Decline to state"), exclude_small=False)
    res = audit_ranking(df, "score", columns=C, config=cfg)
    want = independent(df, median=median, k=None)
    t = res.table.set_index(["attribute", "category"])
    for name, w in want.items():
        for cat, rate in w["rate"].items():
            assert t.loc[(name, cat), "scoring_rate"] == pytest.approx(rate, rel=1e-12), (name, cat)
            assert t.loc[(name, cat), "scoring_impact_ratio"] == pytest.approx(w["ratio"][cat], rel=1e-12)
            assert t.loc[(name, cat), "n_candidates"] == w["n"][cat], (name, cat)
        assert t.loc[(name, "unknown"), "n_candidates"] == w["unknown"]
        assert math.isnan(t.loc[(name, "unknown"), "scoring_rate"]) and t.loc[(name, "unknown"), "excluded"]
        assert res.unknown_counts[name] == w["unknown"]
        assert res.metrics[f"scoring_impact_ratio.{name}"] == pytest.approx(w["ratio"].min(), rel=1e-12)
    assert res.metrics["scoring_impact_ratio"] == pytest.approx(min(w["ratio"].min() for w in want.values()))
    # the 1% category is kept in the worst case (no reason given) and flagged only by its share
    assert not t.loc[("race", "Pacific"), "excluded"]


def test_selection_rates_with_unknowns_and_an_excluded_small_category():
    df = table(2)
    cfg = AuditConfig(k=10, ci=0, unknown_values=("", "Decline to state"), exclusion_reason="under 2% of applicants")
    res = audit_ranking(df, "score", columns=C, config=cfg)
    want = independent(df, median="sample", k=10)
    t = res.table.set_index(["attribute", "category"])
    for name, w in want.items():
        for cat, rate in w["rate"].items():
            assert t.loc[(name, cat), "selection_rate_at_k"] == pytest.approx(rate, rel=1e-12), (name, cat)
    pacific = t.loc[("race", "Pacific")]
    assert pacific["excluded"] and pacific["n_candidates"] == int((df["race"] == "Pacific").sum())
    kept = want["race"]["rate"].drop("Pacific")
    assert res.metrics["impact_ratio_at_10.race"] == pytest.approx((kept / kept.max()).min(), rel=1e-12)
    assert "scoring_rate" not in res.table.columns  # computed only when asked


def test_intervals_cover_the_scoring_rates_and_skip_unknown_rows():
    df = table(3)
    cfg = AuditConfig(k=10, ci=0.9, n_boot=200, scoring="sample", unknown_values=("", "Decline to state"))
    res = audit_ranking(df, "score", columns=C, config=cfg)
    t = res.table
    known = (t["category"] != "unknown") & (t["n_candidates"] >= 20)  # a tiny cell absent from a resample: NaN bounds
    low, high = t.loc[known, "scoring_rate_ci_low"], t.loc[known, "scoring_rate_ci_high"]
    assert np.isfinite(low).all() and (low <= high).all()
    assert ((low <= t.loc[known, "scoring_rate"] + 0.1) & (t.loc[known, "scoring_rate"] <= high + 0.1)).all()
    assert t.loc[t["category"] == "unknown", "scoring_rate_ci_low"].isna().all()
    assert res.metrics["scoring_impact_ratio_ci_low"] <= res.metrics["scoring_impact_ratio_ci_high"]


def test_unknowns_need_to_be_named_and_cannot_collide():
    df = table(4)
    with pytest.raises(Exception, match="missing group category"):  # an empty cell is an error unless "" is listed
        audit_ranking(df, "score", columns=C, config=AuditConfig(ci=0))
    clash = df.assign(race=df["race"].replace("Asian", "unknown"))
    with pytest.raises(ConfigError, match="unknown"):
        audit_ranking(clash, "score", columns=C, config=AuditConfig(ci=0, unknown_values=("", "Decline to state")))
    with pytest.raises(ConfigError, match="scoring"):
        AuditConfig(scoring="mean")
