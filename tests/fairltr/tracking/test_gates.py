"""Gate parsing and checking (pure logic, no MLflow): one- and two-sided gates, relative bounds,
presets (four_fifths), metric names from the registry, one-line errors."""

from __future__ import annotations

import math

import pytest

from fairltr.errors import ConfigError
from fairltr.tracking.gates import GATE_PRESETS, Gate, check_gates, expand_preset, gate_cutoffs, parse_gate


@pytest.mark.parametrize("text, metric, op, value, rel_op, amount, relative", [
    ("exposure_ratio>=0.9", "exposure_ratio", ">=", 0.9, "+", 0.0, False),
    (" exposure_gap <= 1e-2 ", "exposure_gap", "<=", 0.01, "+", 0.0, False),
    ("ndcg_at_10>=champion-0.01", "ndcg_at_10", ">=", None, "-", 0.01, True),
    ("kendall_tau > champion", "kendall_tau", ">", None, "+", 0.0, True),
    ("exposure_ratio>=champion*0.95", "exposure_ratio", ">=", None, "*", 0.95, True),
    ("exposure_gap<champion+.5", "exposure_gap", "<", None, "+", 0.5, True),
])
def test_parse_gate(text, metric, op, value, rel_op, amount, relative):
    g = parse_gate(text)
    assert (g.metric, g.op, g.value, g.relative) == (metric, op, value, relative)
    if relative:
        assert (g.rel_op, g.amount) == (rel_op, amount)


@pytest.mark.parametrize("bad", ["exposure_ratio", "exposure_ratio=0.9", "exposure_ratio>=high",
                                 "exposure_ratio>=champion-x", ">=0.9", "exposure_ratio>=inf",
                                 # new forms
                                 "", "exposure_ratio>=0.8>=0.1", "0.8<=exposure_ratio<=1.25<=2", "1.25<=exposure_ratio<=0.8",
                                 "1<exposure_ratio<1", "0.8>=exposure_ratio>=1.25", "four_fifths@0", "four_fifths@k",
                                 "four_fifths>=0.9", "exposure ratio>=0.9", "1>=2", "exposure_ratio>=0.9;ndcg_at_10>=0"])
def test_parse_gate_rejects(bad):
    with pytest.raises(ConfigError, match="gate") as err:
        parse_gate(bad)
    assert "\n" not in str(err.value)  # one line for the CLI


def test_check_gates_margins_and_direction():
    gates = [parse_gate("exposure_ratio>=0.9"), parse_gate("exposure_gap<=0.05"),
             parse_gate("ndcg_at_10>=champion-0.01"), parse_gate("exposure_ratio>=champion*1.1")]
    cand = {"exposure_ratio": 0.85, "exposure_gap": 0.02, "ndcg_at_10": 0.70}
    champ = {"exposure_ratio": 0.80, "exposure_gap": 0.2, "ndcg_at_10": 0.72}
    r = check_gates(gates, cand, champ)
    assert [x.passed for x in r] == [False, True, False, False]
    assert math.isclose(r[0].margin, -0.05) and math.isclose(r[0].threshold, 0.9)
    assert math.isclose(r[1].margin, 0.03)
    assert math.isclose(r[2].threshold, 0.71) and math.isclose(r[2].margin, -0.01)
    assert math.isclose(r[3].threshold, 0.88)
    assert "short by 0.05" in r[0].describe() and r[0].describe().startswith("FAIL")
    assert "margin 0.03" in r[1].describe()


def test_fail_closed_and_no_champion_policy():
    gates = [parse_gate("exposure_ratio>=0.9"), parse_gate("ndcg_at_10>=champion-0.01")]
    # candidate lacks the metric (or it is NaN): fail closed
    r = check_gates(gates, {"ndcg_at_10": 0.9, "exposure_ratio": float("nan")}, None)
    assert not r[0].passed and "fail closed" in r[0].note
    # no champion: relative gate passes under "pass", fails under "fail"
    assert check_gates(gates[1:], {"ndcg_at_10": 0.5}, None)[0].passed
    assert not check_gates(gates[1:], {"ndcg_at_10": 0.5}, None, no_champion="fail")[0].passed
    # champion without the metric: fail closed
    r = check_gates(gates[1:], {"ndcg_at_10": 0.5}, {"exposure_ratio": 1.0})
    assert not r[0].passed and "champion has no" in r[0].note
    with pytest.raises(ConfigError):
        check_gates(gates, {}, None, no_champion="maybe")


def test_promotion_module_still_exports_the_gate_names():
    from fairltr.tracking import promotion

    assert promotion.parse_gate is parse_gate and promotion.check_gates is check_gates and promotion.Gate is Gate
    import fairltr.tracking as tracking

    assert tracking.parse_gate is parse_gate and tracking.GATE_PRESETS is GATE_PRESETS


@pytest.mark.parametrize("text, rule, lower, upper", [
    ("0.8<=exposure_ratio<=1.25", "0.8<=exposure_ratio<=1.25", (">=", 0.8), ("<=", 1.25)),
    (" 0.8 < exposure_ratio <= 1.25 ", "0.8<exposure_ratio<=1.25", (">", 0.8), ("<=", 1.25)),
    ("0.9<=exposure_ratio", "exposure_ratio>=0.9", (">=", 0.9), None),  # bound first reads the same
    ("champion-0.01<=ndcg_at_10", "ndcg_at_10>=champion-0.01", (">=", None), None),
])
def test_parse_two_sided_and_reversed(text, rule, lower, upper):
    g = parse_gate(text)
    assert g.metric in ("exposure_ratio", "ndcg_at_10") and g.rule == rule and g.text == text.strip()
    assert (g.bounds[0].op, g.bounds[0].value) == lower
    assert g.two_sided == (upper is not None)
    if upper:
        assert (g.bounds[1].op, g.bounds[1].value) == upper
    assert parse_gate(g.rule).rule == g.rule  # the rule parses back to itself


def test_presets():
    g = parse_gate("four_fifths")
    assert (g.metric, g.op, g.value, g.preset, g.rule) == ("selection_ratio_at_10", ">=", 0.8, "four_fifths@10",
                                                          "selection_ratio_at_10>=0.8")
    g5 = parse_gate(" four_fifths@5 ")
    assert (g5.metric, g5.preset, g5.text) == ("selection_ratio_at_5", "four_fifths@5", "four_fifths@5")
    assert expand_preset("four_fifths@20") == ("four_fifths@20", "selection_ratio_at_20>=0.8")
    assert expand_preset("exposure_ratio>=0.9") is None and "four_fifths" in GATE_PRESETS
    assert gate_cutoffs([g, g5, parse_gate("ndcg_at_10>=0.5"), parse_gate("kendall_tau>=0")]) == [5, 10]
    r = check_gates([g, g5], {"selection_ratio_at_10": 0.79, "selection_ratio_at_5": 0.85}, None)
    assert [x.passed for x in r] == [False, True]
    assert r[0].rule == "selection_ratio_at_10>=0.8" and r[0].preset == "four_fifths@10" and r[0].gate == "four_fifths"
    assert math.isclose(r[0].margin, -0.01) and math.isclose(r[1].margin, 0.05)
    assert r[0].describe().startswith("FAIL four_fifths [selection_ratio_at_10>=0.8]: selection_ratio_at_10=0.79")


@pytest.mark.parametrize("text", ["mrr_at_100/de>=champion-1", "recall_at_100/pt-br>=50", "mrc_at_5>=-20",
                                  "mrc_at_5_intersection>=0", "rbo_at_5>=10", "overlap_at_5>=champion",
                                  "exposure_ratio_n_queries>=20", "selection_ratio_at_3>=0.8", "exposure_ratio<=1.1",
                                  "exposure_disparity<=0.1", "exposure_shortfall<0.05"])
def test_registry_names_are_accepted(text):
    assert parse_gate(text).metric == text.split(">")[0].split("<")[0]


@pytest.mark.parametrize("text", ["exposure_ratoi>=0.9", "train_seconds<=10", "ndcg>=0.5x", "0.8<=accuracy<=1"])
def test_unknown_metrics_are_refused_at_parse_time(text):
    with pytest.raises(ConfigError, match="unknown metric|not a number|neither") as err:
        parse_gate(text)
    assert "\n" not in str(err.value)


def test_two_sided_check():
    g = parse_gate("0.8<=exposure_ratio<=1.25")
    over, under, fair, edge = (check_gates([g], {"exposure_ratio": v}, None)[0] for v in (1.4, 0.7, 1.05, 0.8))
    assert not over.passed and math.isclose(over.margin, -0.15) and math.isclose(over.threshold, 1.25)
    assert not under.passed and math.isclose(under.margin, -0.1) and math.isclose(under.threshold, 0.8)
    assert fair.passed and math.isclose(fair.margin, 0.2) and math.isclose(fair.threshold, 1.25)
    assert edge.passed and edge.margin == 0.0
    assert (over.lower, over.upper) == (0.8, 1.25)
    assert "interval [0.8, 1.25]" in over.describe() and "short by 0.15" in over.describe()
    strict = check_gates([parse_gate("0.8<exposure_ratio<=1.25")], {"exposure_ratio": 0.8}, None)[0]
    assert not strict.passed
    # a one-sided gate on a target metric is allowed: the user said what they want
    assert check_gates([parse_gate("exposure_ratio>=0.9")], {"exposure_ratio": 3.0}, None)[0].passed


def test_two_sided_relative_bounds_and_no_champion():
    g = parse_gate("champion*0.9<=exposure_ratio<=1.25")
    r = check_gates([g], {"exposure_ratio": 0.95}, {"exposure_ratio": 1.0})[0]
    assert r.passed and math.isclose(r.lower, 0.9) and math.isclose(r.margin, 0.05)
    assert not check_gates([g], {"exposure_ratio": 0.85}, {"exposure_ratio": 1.0})[0].passed
    # no champion: the relative side is skipped, the absolute side still applies
    skipped = check_gates([g], {"exposure_ratio": 0.5}, None)[0]
    assert skipped.passed and skipped.upper == 1.25 and skipped.lower is None and "skipped" in skipped.note
    assert not check_gates([g], {"exposure_ratio": 1.3}, None)[0].passed
    assert not check_gates([g], {"exposure_ratio": 1.0}, None, no_champion="fail")[0].passed
    # champion without the metric: fail closed
    r = check_gates([g], {"exposure_ratio": 1.0}, {"ndcg_at_10": 0.5})[0]
    assert not r.passed and "champion has no" in r.note
