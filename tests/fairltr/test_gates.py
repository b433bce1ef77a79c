"""The core gate grammar (fairltr.gates), parsing and checking (pure logic, no MLflow): one- and two-sided gates, relative bounds,
presets (four_fifths), metric names from the registry, one-line errors."""

from __future__ import annotations

import math

import pytest

from fairltr.errors import ConfigError
from fairltr.gates import GATE_PRESETS, Gate, check_gates, expand_preset, gate_cutoffs, parse_gate


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
    from fairltr.tracking import registry

    assert registry.parse_gate is parse_gate and registry.check_gates is check_gates and registry.Gate is Gate
    import fairltr
    import fairltr.tracking as tracking

    assert tracking.parse_gate is parse_gate and tracking.GATE_PRESETS is GATE_PRESETS
    assert fairltr.parse_gate is parse_gate and fairltr.check_gates is check_gates  # the core exports the grammar


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
    """four_fifths is the four-fifths rule over every audited category: impact_ratio_at_<k> >= 0.8
    (the per-query selection_ratio_at_<k> keeps its own name and is gated explicitly)."""
    g = parse_gate("four_fifths")
    assert (g.metric, g.op, g.value, g.preset, g.rule) == ("impact_ratio_at_10", ">=", 0.8, "four_fifths@10",
                                                          "impact_ratio_at_10>=0.8")
    g5 = parse_gate(" four_fifths@5 ")
    assert (g5.metric, g5.preset, g5.text) == ("impact_ratio_at_5", "four_fifths@5", "four_fifths@5")
    assert expand_preset("four_fifths@20") == ("four_fifths@20", "impact_ratio_at_20>=0.8")
    assert expand_preset("exposure_ratio>=0.9") is None and "four_fifths" in GATE_PRESETS
    assert gate_cutoffs([g, g5, parse_gate("ndcg_at_10>=0.5"), parse_gate("kendall_tau>=0")]) == [5, 10]
    r = check_gates([g, g5], {"impact_ratio_at_10": 0.79, "impact_ratio_at_5": 0.85,
                              "selection_ratio_at_10": 0.95}, None)
    assert [x.passed for x in r] == [False, True]
    assert r[0].rule == "impact_ratio_at_10>=0.8" and r[0].preset == "four_fifths@10" and r[0].gate == "four_fifths"
    assert math.isclose(r[0].margin, -0.01) and math.isclose(r[1].margin, 0.05)
    assert r[0].describe().startswith("FAIL four_fifths [impact_ratio_at_10>=0.8]: impact_ratio_at_10=0.79")
    assert parse_gate("selection_ratio_at_10>=0.8").metric == "selection_ratio_at_10"  # still its own name


@pytest.mark.parametrize("text", ["impact_ratio_at_10>=0.8", "impact_ratio_at_10.race>=0.8",
                                  "impact_ratio_at_10.sex:race>=0.8", "exposure_ratio_worst>=0.8",
                                  "disparate_treatment_ratio>=0.8", "ndkl_at_10<=0.1"])
def test_audit_metric_names_are_gates(text):
    assert parse_gate(text).metric == text.split(">")[0].split("<")[0]


def test_confidence_mode_checks_the_conservative_end():
    """>= compares the interval's low end, <= its high end, a two-sided gate both; the point
    estimate alone would pass each of these."""
    m = {"impact_ratio_at_10": 0.85, "impact_ratio_at_10_ci_low": 0.74, "impact_ratio_at_10_ci_high": 0.95,
         "exposure_disparity": 0.05, "exposure_disparity_ci_low": 0.01, "exposure_disparity_ci_high": 0.12,
         "exposure_ratio": 1.0, "exposure_ratio_ci_low": 0.9, "exposure_ratio_ci_high": 1.3}
    gates = [parse_gate(t) for t in ("four_fifths", "exposure_disparity<=0.1", "0.8<=exposure_ratio<=1.25")]
    assert all(r.passed for r in check_gates(gates, m, None))
    ir, disp, two = check_gates(gates, m, None, confidence=0.95)
    assert not ir.passed and math.isclose(ir.margin, 0.74 - 0.8) and ir.interval == (0.74, 0.95)
    assert "low 0.74 >= 0.8" in ir.compared and ir.confidence == 0.95
    assert not disp.passed and math.isclose(disp.margin, 0.1 - 0.12) and "high 0.12 <= 0.1" in disp.compared
    assert not two.passed and math.isclose(two.margin, 1.25 - 1.3)
    line = ir.describe()
    assert line.startswith("FAIL four_fifths [impact_ratio_at_10>=0.8]: impact_ratio_at_10=0.85 [0.74, 0.95] at 95%")
    assert "short by 0.06" in line
    clear = {**m, "impact_ratio_at_10_ci_low": 0.83}
    assert check_gates(gates[:1], clear, None, confidence=0.95)[0].passed


def test_confidence_mode_fails_closed_without_an_interval():
    r = check_gates([parse_gate("four_fifths")], {"impact_ratio_at_10": 0.99}, None, confidence=0.9)[0]
    assert not r.passed and "no 90% interval" in r.note


def test_confidence_mode_relative_gates_use_the_paired_difference():
    """ndcg_at_10>=champion-0.01 reads (candidate - champion) >= -0.01 on the paired interval: the
    candidate's own interval overlapping the champion's says nothing about the pair."""
    g = parse_gate("ndcg_at_10>=champion-0.01")
    cand = {"ndcg_at_10": 0.70, "ndcg_at_10_ci_low": 0.60, "ndcg_at_10_ci_high": 0.80}
    champ = {"ndcg_at_10": 0.69, "ndcg_at_10_ci_low": 0.59, "ndcg_at_10_ci_high": 0.79}
    ok = check_gates([g], cand, champ, confidence=0.95,
                     differences={"ndcg_at_10": {"difference": 0.01, "ci_low": -0.005, "ci_high": 0.025}})[0]
    assert ok.passed and ok.difference_interval == (-0.005, 0.025) and math.isclose(ok.margin, 0.005)
    bad = check_gates([g], cand, champ, confidence=0.95,
                      differences={"ndcg_at_10": {"difference": 0.01, "ci_low": -0.03, "ci_high": 0.05}})[0]
    assert not bad.passed and math.isclose(bad.margin, -0.02) and "(paired)" in bad.describe()
    missing = check_gates([g], cand, champ, confidence=0.95)[0]
    assert not missing.passed and "no paired interval" in missing.note
    # no champion: skipped as today (policy pass), or failed (policy fail)
    assert check_gates([g], cand, None, confidence=0.95)[0].passed
    assert not check_gates([g], cand, None, "fail", confidence=0.95)[0].passed
    # champion*x: the candidate's low end against x times the champion's high end (no difference to pair)
    times = check_gates([parse_gate("ndcg_at_10>=champion*0.9")], cand, champ, confidence=0.95)[0]
    assert not times.passed and math.isclose(times.threshold, 0.79 * 0.9)


def test_without_confidence_gates_are_unchanged():
    m = {"exposure_ratio": 0.85, "exposure_ratio_ci_low": 0.5, "exposure_ratio_ci_high": 0.9}
    r = check_gates([parse_gate("exposure_ratio>=0.8")], m, None)[0]
    assert r.passed and r.confidence is None and r.interval is None and math.isclose(r.margin, 0.05)


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


@pytest.mark.parametrize("text", ["kendall_tau=0.2", "kendall_tau>=x", ">=0.2", "0.8>=exposure_ratio>=1.2",
                                  "kendall tau>=0.2", "kendall_tau>=0.1>=0"])
def test_constraint_mode_names_the_constraint_and_its_syntax(text):
    """The same grammar read as a sweep constraint: the messages call it a constraint and show
    the numbers-only syntax (one line)."""
    with pytest.raises(ConfigError, match="metric>=number") as err:
        parse_gate(text, what="constraint", champion=False)
    assert str(err.value).startswith(("constraint ", "cannot parse constraint ")) and "\n" not in str(err.value)


@pytest.mark.parametrize("text", ["kendall_tau>=champion", "ndcg_at_10>=champion-0.01", "champion*0.9<=exposure_ratio<=2"])
def test_constraint_mode_refuses_champion_bounds(text):
    assert parse_gate(text).relative  # a gate may compare with the champion ...
    with pytest.raises(ConfigError, match="needs a champion to compare with, and a constraint has none"):
        parse_gate(text, what="constraint", champion=False)  # ... a constraint has none


def test_constraint_mode_reads_what_a_gate_reads():
    for text in ("kendall_tau>=0.2", " 0.8 <= exposure_ratio < 1.25 ", "four_fifths@5", "0.2<=kendall_tau",
                 "impact_ratio_at_10.race>=0.8"):
        g, c = parse_gate(text), parse_gate(text, what="constraint", champion=False)
        assert (c.metric, c.bounds, c.preset, c.rule) == (g.metric, g.bounds, g.preset, g.rule)
    with pytest.raises(ConfigError, match="^constraint 'four_fifths@0': preset four_fifths takes @<k>"):
        parse_gate("four_fifths@0", what="constraint", champion=False)
    with pytest.raises(ConfigError, match="^constraint 'tau>=1': unknown metric 'tau'"):
        parse_gate("tau>=1", what="constraint", champion=False)


def test_an_exact_four_fifths_passes_and_strict_bounds_do_not():
    """Issue 29: (4/9) / (5/9) is 0.7999999999999999, which read literally fails >= 0.8."""
    exact = (4 / 9) / (5 / 9)
    assert exact < 0.8  # the floating-point fact the tolerance is for
    g = parse_gate("four_fifths@10")
    (r,) = check_gates([g], {"impact_ratio_at_10": exact}, None)
    assert r.passed and r.margin is not None
    (strict,) = check_gates([parse_gate("impact_ratio_at_10>0.8")], {"impact_ratio_at_10": exact}, None)
    assert not strict.passed
    (below,) = check_gates([g], {"impact_ratio_at_10": 0.8 - 1e-6}, None)
    assert not below.passed
    (upper,) = check_gates([parse_gate("0.8<=exposure_ratio<=1.25")], {"exposure_ratio": 1.25 * (1 + 1e-12)}, None)
    assert upper.passed
    (conf,) = check_gates([g], {"impact_ratio_at_10": 0.9, "impact_ratio_at_10_ci_low": exact,
                                "impact_ratio_at_10_ci_high": 1.0}, None, confidence=0.95)
    assert conf.passed


def test_a_skipped_gate_says_skipped_never_passed():
    g = parse_gate("ndcg_at_10>=champion-0.01")
    (r,) = check_gates([g], {"ndcg_at_10": 0.5}, None, "pass", absent_reason="champion v1 unavailable (boom)")
    assert r.skipped and r.status == "skipped" and r.passed  # does not block ...
    assert r.describe().startswith("SKIP ") and "skipped: champion v1 unavailable (boom)" in r.describe()
    (f,) = check_gates([g], {"ndcg_at_10": 0.5}, None, "fail", absent_reason="champion v1 unavailable (boom)")
    assert not f.passed and not f.skipped and f.describe().startswith("FAIL ")
    two = parse_gate("champion-0.1<=exposure_ratio<=1.25")
    (partly,) = check_gates([two], {"exposure_ratio": 1.0}, None, "pass")
    assert not partly.skipped and partly.passed and "skipped" in partly.note  # the absolute side was checked


def test_relevance_gates_fail_on_a_constant_model():
    tied = {"ndcg_at_10": 1.0, "kendall_tau": 0.0, "exposure_ratio": 1.0, "tied_score_share": 1.0}
    results = check_gates([parse_gate("ndcg_at_10>=0.5"), parse_gate("kendall_tau>=-1"),
                           parse_gate("0.8<=exposure_ratio<=1.25")], tied, None)
    assert [r.passed for r in results] == [False, False, True]
    assert "constant model" in results[0].note and "constant model" in results[0].describe()
    ok = dict(tied, tied_score_share=0.4)
    assert all(r.passed for r in check_gates([parse_gate("ndcg_at_10>=0.5")], ok, None))
