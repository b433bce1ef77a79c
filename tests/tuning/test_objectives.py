"""Objectives and constraints by metric name; the sweep trials of each method (built by the
workflows, ``fairltr.workflows.ranking_trial``) on a small synthetic set."""

from __future__ import annotations

import math

import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.errors import ConfigError
from fairltr.workflows import ranking_trial
from tuning.objectives import INFEASIBLE, parse_constraint, parse_objectives
from tuning.sweep import SweepConfig, run_sweep


def test_parse_objectives_defaults_and_directions():
    a, b = parse_objectives()  # parity: the distance from exposure_ratio = 1, not the signed gap
    assert (a.name, a.direction, b.name, b.direction) == ("kendall_tau", "maximize", "exposure_disparity", "minimize")
    a, b = parse_objectives("ndcg_at_10, exposure_shortfall")  # directions from the metric declarations
    assert (a.direction, b.direction) == ("maximize", "minimize")
    # exposure_gap is signed (issue 20): pushing it down over-exposes the protected group, never an objective
    with pytest.raises(ConfigError, match="signed") as err:
        parse_objectives("kendall_tau:max,exposure_gap:min")
    assert "exposure_disparity" in str(err.value)
    a, b = parse_objectives("impact_ratio_at_10:max,exposure_ratio_worst:max")  # the audit's worst cases (SPEC 3b)
    assert (a.direction, b.direction) == ("maximize", "maximize")
    a, b = parse_objectives("impact_ratio_at_10.sex:race:max,ndkl_at_10:min")  # ':' inside an intersection key
    assert (a.name, a.direction, b.name, b.direction) == ("impact_ratio_at_10.sex:race", "maximize", "ndkl_at_10",
                                                          "minimize")
    for target in ("exposure_ratio", "exposure_ratio:max", "selection_ratio_at_10:max"):
        with pytest.raises(ConfigError, match="target value of 1.0") as err:
            parse_objectives(f"kendall_tau,{target}")
        assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="exposure_disparity"):
        parse_objectives("kendall_tau,exposure_ratio")
    with pytest.raises(ConfigError, match="signed"):
        parse_objectives("kendall_tau,exposure_gap:max")
    with pytest.raises(ConfigError, match="ndkl_at_10:min"):
        parse_objectives("kendall_tau,ndkl_at_10:max")
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
    for bad in ("kendall_tau=0.2", "kendall_tau>=x", ">=0.2", "0.8>=exposure_ratio>=1.2"):
        with pytest.raises(ConfigError, match="metric>=number"):
            parse_constraint(bad)
    with pytest.raises(ConfigError, match="unknown metric"):
        parse_constraint("tau>=0.1")
    with pytest.raises(ConfigError, match="was not computed"):
        parse_constraint("mrr_at_10>=0.1").value({"kendall_tau": 0.3})


def test_two_sided_and_preset_constraints():
    c = parse_constraint(" 0.8 <= exposure_ratio <= 1.25 ")
    assert (c.metric, c.bound, c.high, c.key) == ("exposure_ratio", 0.8, 1.25, "0.8<=exposure_ratio<=1.25")
    for r, want in ((1.0, -0.2), (0.7, 0.1), (1.3, 0.05), (0.8, 0.0)):  # max(low - R, R - high)
        assert c.value({"exposure_ratio": r}) == pytest.approx(want)
    assert c.value({"exposure_ratio": math.nan}) == INFEASIBLE
    with pytest.raises(ConfigError, match="empty"):
        parse_constraint("1.25<=exposure_ratio<=0.8")
    f = parse_constraint("four_fifths")  # every audited category: impact_ratio_at_10 (SPEC 3b)
    assert (f.metric, f.op, f.bound, f.key) == ("impact_ratio_at_10", ">=", 0.8, "impact_ratio_at_10>=0.8")
    assert f.value({"impact_ratio_at_10": 0.7}) == pytest.approx(0.1)
    assert parse_constraint("four_fifths@5").metric == "impact_ratio_at_5"
    assert parse_constraint("impact_ratio_at_10.race>=0.8").metric == "impact_ratio_at_10.race"
    with pytest.raises(ConfigError, match="positive integer"):
        parse_constraint("four_fifths@0")


def test_deltr_trial_equals_direct_training(small_rankings):
    train, test = small_rankings
    runner = ranking_trial("deltr", [(train, test)], max_iter=40)
    got = runner({"gamma": 1e3})
    want = evaluate_ranking(test, DELTR(1e3, max_iter=40, device="cpu").fit(train).predict(test))
    assert got["kendall_tau"] == pytest.approx(want["kendall_tau"])
    assert got["exposure_gap"] == pytest.approx(want["exposure_gap"])


def test_trial_hands_each_folds_ranked_test_table_to_on_ranked(small_rankings):
    train, test = small_rankings
    seen = []
    runner = ranking_trial("fair-post", [(train, test), (train, test)], max_iter=20)
    runner.on_ranked = lambda values, ranked: seen.append((dict(values), ranked))
    values = {"fair_p": runner.space.params[0].bounds[1], "fair_alpha": 0.1}
    got = runner(values)
    assert len(seen) == 1 and seen[0][0] == values and len(seen[0][1]) == 2
    for ranked in seen[0][1]:  # the re-ranked lists the metrics were computed on
        m = evaluate_ranking(ranked, "score")
        assert (m["kendall_tau"], m["exposure_disparity"]) == pytest.approx((got["kendall_tau"],
                                                                             got["exposure_disparity"]))


@pytest.mark.parametrize("method", ["fair-post", "fair-pre"])
def test_fair_trials_move_exposure_towards_protected(method, small_rankings):
    train, test = small_rankings
    runner = ranking_trial(method, [(train, test)], max_iter=40)
    weak = runner({"fair_p": runner.space.params[0].bounds[0], "fair_alpha": 0.1})
    strong = runner({"fair_p": runner.space.params[0].bounds[1], "fair_alpha": 0.1})
    assert strong["exposure_gap"] < weak["exposure_gap"]


def test_dpr_and_unknown_methods(small_rankings, tmp_path):
    train, test = small_rankings
    with pytest.raises(ConfigError, match="unknown ranking sweep method 'dpr'"):  # DPR has its own trial
        ranking_trial("dpr", [(train, test)])
    with pytest.raises(ConfigError, match="unknown ranking sweep method 'bogus'"):
        ranking_trial("bogus", [(train, test)])
    # tuning never builds trials itself (it must not import the workflows): it says where to go
    cfg = SweepConfig(method="deltr", train="a", test="b", n_trials=1, study="s", out=tmp_path, mlflow=False)
    with pytest.raises(ConfigError, match="fairltr.workflows.run_sweep_job"):
        run_sweep(cfg)


def test_a_constraint_at_exactly_its_bound_is_feasible():
    from tuning.objectives import parse_constraint

    exact = (4 / 9) / (5 / 9)  # 0.7999999999999999
    assert parse_constraint("four_fifths").value({"impact_ratio_at_10": exact}) == 0.0
    assert parse_constraint("four_fifths").value({"impact_ratio_at_10": 0.79}) > 0
    assert parse_constraint("0.8<=exposure_ratio<=1.25").value({"exposure_ratio": 1.25 * (1 + 1e-13)}) == 0.0
    assert parse_constraint("exposure_disparity<=0.1").value({"exposure_disparity": 0.1 + 1e-17}) == 0.0
