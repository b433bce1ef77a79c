"""Objectives and constraints by SPEC names; method runners on a small synthetic set."""

from __future__ import annotations

import math

import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.errors import ConfigError
from tuning.objectives import INFEASIBLE, make_runner, parse_constraint, parse_objectives


def test_parse_objectives_defaults_and_directions():
    a, b = parse_objectives()
    assert (a.name, a.direction, b.name, b.direction) == ("kendall_tau", "maximize", "exposure_gap", "minimize")
    a, b = parse_objectives("ndcg_at_10, exposure_ratio")  # directions from the metric declarations
    assert (a.direction, b.direction) == ("maximize", "maximize")
    with pytest.raises(ConfigError, match="exposure_gap:min"):
        parse_objectives("kendall_tau,exposure_gap:max")
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_objectives("kendal_tau,exposure_gap")
    with pytest.raises(ConfigError, match="exactly 2"):
        parse_objectives("kendall_tau")
    with pytest.raises(ConfigError, match="differ"):
        parse_objectives("kendall_tau,kendall_tau")
    with pytest.raises(ConfigError, match="query count"):
        parse_objectives("kendall_tau_n_queries,exposure_gap")


def test_parse_constraint_values():
    c = parse_constraint("kendall_tau>=0.2")
    assert (c.metric, c.op, c.bound) == ("kendall_tau", ">=", 0.2)
    assert c.value({"kendall_tau": 0.25}) == pytest.approx(-0.05)  # feasible: <= 0
    assert c.value({"kendall_tau": 0.1}) == pytest.approx(0.1)
    assert c.value({"kendall_tau": math.nan}) == INFEASIBLE
    d = parse_constraint(" exposure_gap < 0.01 ")
    assert d.op == "<=" and d.value({"exposure_gap": 0.02}) == pytest.approx(0.01)
    for bad in ("kendall_tau=0.2", "kendall_tau>=x", ">=0.2"):
        with pytest.raises(ConfigError, match="metric>=number"):
            parse_constraint(bad)
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_constraint("tau>=0.1")
    with pytest.raises(ConfigError, match="was not computed"):
        parse_constraint("mrr_at_10>=0.1").value({"kendall_tau": 0.3})


def test_deltr_runner_equals_direct_training(small_rankings):
    train, test = small_rankings
    runner = make_runner("deltr", train, test, max_iter=40)
    got = runner({"gamma": 1e3})
    want = evaluate_ranking(test, DELTR(1e3, max_iter=40, device="cpu").fit(train).predict(test))
    assert got["kendall_tau"] == pytest.approx(want["kendall_tau"])
    assert got["exposure_gap"] == pytest.approx(want["exposure_gap"])


@pytest.mark.parametrize("method", ["fair-post", "fair-pre"])
def test_fair_runners_move_exposure_towards_protected(method, small_rankings):
    train, test = small_rankings
    runner = make_runner(method, train, test, max_iter=40)
    weak = runner({"fair_p": runner.space.params[0].bounds[0], "fair_alpha": 0.1})
    strong = runner({"fair_p": runner.space.params[0].bounds[1], "fair_alpha": 0.1})
    assert strong["exposure_gap"] < weak["exposure_gap"]


def test_dpr_and_unknown_methods(small_rankings):
    train, test = small_rankings
    with pytest.raises(ConfigError, match="DPR|plugin method"):  # (the CLI may have registered it)
        make_runner("dpr", train, test)
    with pytest.raises(ConfigError, match="unknown sweep method"):
        make_runner("lambdamart", train, test)
