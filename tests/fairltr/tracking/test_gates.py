"""Gate parsing and checking (pure logic, no MLflow)."""

from __future__ import annotations

import math

import pytest

from fairltr.errors import ConfigError
from fairltr.tracking.promotion import check_gates, parse_gate


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
                                 "exposure_ratio>=champion-x", ">=0.9", "exposure_ratio>=inf"])
def test_parse_gate_rejects(bad):
    with pytest.raises(ConfigError, match="gate"):
        parse_gate(bad)


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
