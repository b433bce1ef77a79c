"""Verdicts per category, the worst category and the binary view's words, against hand-built tables."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
from fairltr.metrics.verdicts import (
    GATE_TOLERANCE, at_least, at_most, binary_view, category_verdicts, worst_category,
)

NAN = float("nan")


def _table(rows, ci=True):
    cols = ["attribute", "category", "impact_ratio_at_k", "excluded"]
    if ci:
        cols += ["impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high"]
    return pd.DataFrame([r[: len(cols)] for r in rows], columns=cols)


FOUR_FIFTHS = (4 / 9) / (5 / 9)  # 0.7999999999999999 in floating point


def test_exact_four_fifths_passes_and_the_float_is_really_below():
    assert FOUR_FIFTHS < 0.8  # the defect of issue 29: a plain >= fails it
    assert at_least(FOUR_FIFTHS, 0.8)
    assert not at_least(0.8 - 1e-6, 0.8)
    assert at_most(0.8 + 1e-12, 0.8) and not at_most(0.81, 0.8)
    assert not at_least(NAN, 0.8) and not at_most(NAN, 0.8)
    assert GATE_TOLERANCE == 1e-9


def test_verdicts_on_point_values():
    table = _table([
        ("race", "African-American", 1.0, False, 0.9, 1.0),
        ("race", "Asian", 0.3, True, 0.1, 0.5),            # excluded, even though below the line
        ("race", "Caucasian", FOUR_FIFTHS, False, 0.7, 0.9),  # an exact 4/5: pass
        ("race", "Hispanic", 0.79, False, 0.6, 0.95),
        ("sex", "Female", NAN, False, NAN, NAN),            # nobody selected in the attribute
        ("race:sex", "African-American|Male", 0.8 - 1e-6, False, 0.7, 0.9),
    ])
    got = category_verdicts(table)
    assert got.tolist() == ["pass", "excluded", "pass", "fail", "undefined", "fail"]
    assert got.name == "verdict" and got.index.equals(table.index)
    # brute force: the same rule written as a loop over rows
    brute = []
    for _, r in table.iterrows():
        v = r["impact_ratio_at_k"]
        brute.append("excluded" if r["excluded"] else "undefined" if math.isnan(v)
                     else "pass" if v >= 0.8 - 1e-9 * max(abs(v), 0.8) else "fail")
    assert got.tolist() == brute


def test_verdicts_at_a_confidence_read_the_lower_end():
    table = _table([
        ("race", "A", 1.0, False, 0.9, 1.0),
        ("race", "B", 0.95, False, 0.75, 1.1),    # point passes, the interval reaches below: fail
        ("race", "C", 0.9, False, FOUR_FIFTHS, 1.0),  # the lower end exactly 4/5: pass
        ("race", "D", 0.9, False, NAN, NAN),       # no interval end: undefined, not a pass
        ("race", "E", 0.5, True, 0.2, 0.7),
    ])
    assert category_verdicts(table, confidence=True).tolist() == ["pass", "fail", "pass", "undefined", "excluded"]
    assert category_verdicts(table).tolist() == ["pass", "pass", "pass", "pass", "excluded"]
    assert category_verdicts(table, threshold=0.92).tolist() == ["pass", "pass", "fail", "fail", "excluded"]


def test_verdicts_refuse_confidence_without_intervals_and_bad_thresholds():
    table = _table([("sex", "0", 1.0, False), ("sex", "1", 0.5, False)], ci=False)
    assert category_verdicts(table).tolist() == ["pass", "fail"]
    with pytest.raises(ConfigError, match="impact_ratio_at_k_ci_low"):
        category_verdicts(table, confidence=True)
    with pytest.raises(ConfigError, match="threshold"):
        category_verdicts(table, threshold=float("nan"))
    with pytest.raises(DataError, match="exposure_ratio"):
        category_verdicts(table, column="exposure_ratio")


def test_verdicts_of_another_column_and_without_an_excluded_column():
    table = pd.DataFrame({"attribute": ["a", "a"], "category": ["x", "y"], "exposure_ratio": [1.0, 0.85]})
    assert category_verdicts(table, column="exposure_ratio", threshold=0.9).tolist() == ["pass", "fail"]


def test_worst_category_skips_excluded_and_nan_and_breaks_ties_by_order():
    table = _table([
        ("race", "African-American", 1.0, False, 0.9, 1.0),
        ("race", "Asian", 0.1, True, 0.0, 0.3),                # excluded: never the worst
        ("race", "Native American", 0.441, False, 0.296, 0.511),
        ("sex", "Female", NAN, False, NAN, NAN),
        ("race:sex", "Hispanic|Female", 0.441, False, 0.2, 0.6),  # tie: the first in table order wins
        ("race:sex", "African-American|Male", 0.6, False, 0.5, 0.7),
    ])
    assert worst_category(table) == {"attribute": "race", "category": "Native American", "value": 0.441,
                                     "ci_low": 0.296, "ci_high": 0.511}
    assert worst_category(table, attribute="race:sex")["category"] == "Hispanic|Female"
    assert worst_category(table, attribute="sex") is None  # only NaN
    assert worst_category(table, attribute="nope") is None
    no_ci = _table([("sex", "0", 1.0, False), ("sex", "1", 0.5, False)], ci=False)
    assert worst_category(no_ci) == {"attribute": "sex", "category": "1", "value": 0.5, "ci_low": None,
                                     "ci_high": None}


def test_worst_category_is_the_audit_worst_case():
    """On a real audit, the worst category's value is the worst-case metric."""
    from fairltr.columns import RankingColumns
    from fairltr.metrics.audit import AuditConfig, audit_ranking

    rng = np.random.default_rng(3)
    n = 400
    df = pd.DataFrame({"query_id": np.repeat(np.arange(20), 20),
                       "race": rng.choice(["White", "Black", "Hispanic", "Asian"], n, p=[0.5, 0.3, 0.15, 0.05]),
                       "sex": rng.choice(["Male", "Female"], n), "judgment": rng.integers(0, 3, n)})
    cols = RankingColumns(group=("race", "sex"))
    res = audit_ranking(df, rng.normal(size=n), columns=cols, config=AuditConfig(k=5, ci=0))
    worst = worst_category(res.table)
    assert worst["value"] == res.metrics["impact_ratio_at_5"]
    for attr in ("race", "sex", "race:sex"):
        assert worst_category(res.table, attribute=attr)["value"] == res.metrics[f"impact_ratio_at_5.{attr}"]
    verdicts = category_verdicts(res.table)
    assert (verdicts == "fail").any() == (res.metrics["impact_ratio_at_5"] < 0.8)


def test_binary_view_of_text_categories_names_the_most_frequent_as_reference():
    race = pd.Series(["Caucasian", "African-American", "African-American", "Hispanic", "Other", "Asian",
                      "Native American", "African-American", "Caucasian"])
    view = binary_view(race, attribute="race")
    assert (view.reference, view.coding) == ("African-American", "most frequent")
    assert view.compared == ("Asian", "Caucasian", "Hispanic", "Native American", "Other")  # sorted, as coded
    assert view.reference_words() == "the reference category (race = African-American, the most frequent)"
    assert view.compared_words() == ("the compared categories (race = Asian, Caucasian, Hispanic, Native American, "
                                     "Other)")
    assert view.compared_words(limit=3) == "the compared categories (race = Asian, Caucasian, Hispanic and 2 more)"
    assert view.reference_label() == "reference: race = African-American"
    assert view.compared_label() == "compared: the other 5 categories"
    assert view.compared_is_plural


def test_binary_view_matches_category_codes_for_ties_and_declared_references():
    from fairltr.data import category_codes

    sex = pd.Series(["Male", "Female", "Female", "Male"])  # a tie: the first in sorted order
    view = binary_view(sex, attribute="sex")
    assert view.reference == category_codes(sex)[1][0] == "Female"
    assert view.compared_words() == "the compared category (sex = Male)" and not view.compared_is_plural
    assert view.compared_label() == "compared: sex = Male"
    declared = binary_view(sex, attribute="sex", reference="Male")
    assert (declared.reference, declared.compared, declared.coding) == ("Male", ("Female",), "declared")
    assert declared.reference_words() == "the reference category (sex = Male, as declared)"
    with pytest.raises(ConfigError, match="does not occur"):
        binary_view(sex, attribute="sex", reference="Other")
    with pytest.raises(DataError, match="row 1"):
        binary_view(pd.Series(["a", None]), attribute="g")


def test_binary_view_of_integer_groups_keeps_the_protected_words():
    view = binary_view(np.array([0, 1, 1, 0]), attribute="protected")
    assert (view.reference, view.compared, view.coding) == ("0", ("1",), "integer")
    assert view.reference_words() == "the non-protected group (protected = 0)"
    assert view.compared_words() == "the protected group (protected = 1)"
    assert view.reference_label() == "non-protected: protected = 0"
    assert view.compared_label() == "protected: protected = 1"
    several = binary_view(pd.Series([0, 2, 1, 3]), attribute="race")
    assert several.compared_words() == "the protected group (race >= 1: 1, 2, 3)"
    assert several.compared_label() == "protected: race >= 1"
    declared = binary_view(pd.Series([0, 2, 1, 2]), attribute="race", reference=2)
    assert (declared.reference, declared.compared) == ("2", ("0", "1"))
    assert declared.reference_words() == "the reference category (race = 2, as declared)"
