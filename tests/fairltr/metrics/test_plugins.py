"""The metric registry: directions (higher / lower / target), ideal values, key forms."""

from __future__ import annotations

import math

import pytest

from fairltr.errors import ConfigError
from fairltr.metrics import (
    METRICS, MetricInfo, direction, direction_label, distance_from_ideal, higher_is_better, ideal, is_better,
    is_metric_key, metric_info, optimisation_direction,
)


@pytest.mark.parametrize("key, want", [
    ("ndcg_at_10", "higher"), ("kendall_tau", "higher"), ("exposure_gap", "target"),
    ("exposure_disparity", "lower"), ("exposure_shortfall", "lower"), ("exposure_ratio", "target"),
    ("selection_ratio_at_10", "target"), ("mrr_at_100", "higher"), ("mrc_at_5", "higher"),
    ("exposure_protected", "none"), ("exposure_nonprotected", "none"),
])
def test_directions(key, want):
    assert direction(key) == want


def test_targets_have_ideal_and_refuse_a_direction():
    assert ideal("exposure_ratio") == 1.0 and ideal("selection_ratio_at_5") == 1.0
    assert ideal("exposure_disparity") == 0.0 and ideal("ndcg_at_10") is None
    for key, hint in (("exposure_ratio", "exposure_disparity"), ("selection_ratio_at_10", "four-fifths")):
        with pytest.raises(ConfigError, match=hint):
            higher_is_better(key)
        with pytest.raises(ConfigError, match="0.8<=" + key):
            optimisation_direction(key)
        with pytest.raises(ConfigError):
            metric_info(key).higher_is_better
    assert optimisation_direction("exposure_disparity") == "minimize"
    assert optimisation_direction("ndcg_at_10") == "maximize"


def test_distance_and_is_better():
    # ratio targets: R and 1/R are equally far; the distance of exposure_ratio IS exposure_disparity
    assert distance_from_ideal("exposure_ratio", 0.8) == pytest.approx(0.2)
    assert distance_from_ideal("exposure_ratio", 1.25) == pytest.approx(0.2)
    assert distance_from_ideal("selection_ratio_at_10", 1.0) == 0.0
    assert distance_from_ideal("exposure_ratio", 0.0) == 1.0
    assert math.isnan(distance_from_ideal("exposure_ratio", math.nan))
    assert distance_from_ideal("exposure_disparity", 0.3) == pytest.approx(0.3)
    with pytest.raises(ConfigError, match="no ideal"):
        distance_from_ideal("ndcg_at_10", 0.5)
    assert is_better("exposure_ratio", 1.1, 0.85) and not is_better("exposure_ratio", 1.3, 0.8)
    assert not is_better("exposure_ratio", 0.8, 1.25) and not is_better("exposure_ratio", 1.25, 0.8)
    assert is_better("ndcg_at_10", 0.6, 0.5) and is_better("exposure_disparity", 0.1, 0.2)
    assert not is_better("exposure_gap", 0.2, 0.1) and is_better("exposure_gap", -0.05, 0.1)
    assert not is_better("exposure_gap", -0.2, 0.1)  # signed: over-exposing the protected group is no better
    assert is_better("kendall_tau", 0.0, math.nan) and not is_better("kendall_tau", math.nan, 0.0)


def test_labels():
    assert direction_label("exposure_ratio") == "target 1.0 (parity)"
    assert direction_label("selection_ratio_at_10") == "target 1.0 (parity)"
    assert direction_label("ndcg_at_10") == "higher is better"
    assert direction_label("exposure_disparity") == "lower is better"
    assert direction_label("exposure_protected") == "descriptive (no better side)"


def test_one_groups_exposure_has_no_better_side():
    # "more protected exposure is better" is exactly what parity rejects: neither group's own
    # exposure can be an objective or be compared as better; the ratio / disparity can
    for key in ("exposure_protected", "exposure_nonprotected", "exposure_protected_n_queries"):
        with pytest.raises(ConfigError, match="no better side.*exposure_disparity"):
            optimisation_direction(key)
        with pytest.raises(ConfigError, match="no better side"):
            higher_is_better(key)
        with pytest.raises(ConfigError, match="no better side"):
            is_better(key, 0.5, 0.4)
        with pytest.raises(ConfigError):
            metric_info(key).higher_is_better


@pytest.mark.parametrize("key", ["mrr_at_100/de", "recall_at_100/pt-br", "mrc_at_5", "mrc_at_5_intersection",
                                 "overlap_at_5", "rbo_at_5", "selection_ratio_at_3", "kendall_tau_n_queries",
                                 "selection_ratio_at_10_n_queries", "exposure_disparity"])
def test_known_key_forms(key):
    assert is_metric_key(key)


@pytest.mark.parametrize("key", ["accuracy", "ndcg", "selection_ratio", "ndcg_at_x", "mrr_at_100/", "mrr_at_100/1de", "ndcg_at_5_intersection",
                                 "train_seconds", "selection_ratio_at_10/de/x"])
def test_unknown_key_forms(key):
    assert not is_metric_key(key)
    with pytest.raises(KeyError, match="unknown metric"):
        metric_info(key)


def test_declarations_are_complete_and_compatible():
    assert all(m.degenerate and m.direction in ("higher", "lower", "target", "none") for m in METRICS.values())
    assert all(m.ideal is not None for m in METRICS.values() if m.direction == "target")
    # the former boolean field still builds a MetricInfo
    assert MetricInfo("x", True, "never").direction == "higher"
    assert MetricInfo("x", False, "never").direction == "lower"
    with pytest.raises(ConfigError, match="ideal"):
        MetricInfo("x", "target", "never")
    with pytest.raises(ConfigError, match="direction"):
        MetricInfo("x", "sideways", "never")


@pytest.mark.parametrize("key", ["impact_ratio_at_10", "impact_ratio_at_10.race", "impact_ratio_at_10.sex:race",
                                 "exposure_ratio_worst", "exposure_ratio_worst.race", "disparate_treatment_ratio",
                                 "ndkl_at_10", "ndkl_at_10.sex", "impact_ratio_at_10_ci_low",
                                 "impact_ratio_at_10.sex:race_ci_high", "ndcg_at_10_ci_low", "exposure_ratio_ci_high"])
def test_audit_keys_and_confidence_bounds(key):
    assert is_metric_key(key)
    assert metric_info(key).kind in ("fairness", "relevance")


def test_audit_directions():
    assert optimisation_direction("impact_ratio_at_10") == "maximize"
    assert optimisation_direction("impact_ratio_at_5.race") == "maximize"
    assert optimisation_direction("exposure_ratio_worst") == "maximize"
    assert optimisation_direction("disparate_treatment_ratio") == "maximize"
    assert optimisation_direction("ndkl_at_10") == "minimize" and ideal("ndkl_at_10") == 0.0
    assert direction("impact_ratio_at_10_ci_low") == "higher"
    assert direction_label("exposure_gap") == "target 0 (parity)"
    with pytest.raises(ConfigError, match="signed"):
        optimisation_direction("exposure_gap")


@pytest.mark.parametrize("key", ["impact_ratio", "impact_ratio_at_10.", "ndcg_at_10.race", "kendall_tau.race",
                                 "ndkl_at_10_ci_mid"])
def test_unknown_audit_key_forms(key):
    assert not is_metric_key(key)


def test_headline_metrics_are_declared_once_and_known():
    from fairltr.metrics import HEADLINE_METRICS, headline_metrics

    assert HEADLINE_METRICS[0] == "impact_ratio_at_10" and "exposure_ratio" in HEADLINE_METRICS
    assert all(is_metric_key(k) for k in HEADLINE_METRICS)
    assert headline_metrics(5)[0] == "impact_ratio_at_5" and "ndcg_at_5" in headline_metrics(5)
    assert len(set(HEADLINE_METRICS)) == len(HEADLINE_METRICS)
