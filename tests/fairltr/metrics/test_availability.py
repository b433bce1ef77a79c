"""Which evaluation computes which metric (fairltr.metrics.availability): a gate or objective on a
metric never computed is refused with the reason, and a stochastic policy's figures are a
policy's (train plrank, the plrank sweep), not a deterministic ranker's."""

import pytest

from fairltr.errors import ConfigError
from fairltr.metrics.availability import EVALUATORS, check_computed, uncomputed_reason


@pytest.mark.parametrize("key", ["expected_ndcg_at_10", "expected_exposure_disparity", "ee_l", "ee_r"])
def test_policy_figures_are_computed_by_a_policy_and_named_as_such_for_a_ranker(key):
    assert uncomputed_reason(key, evaluator="policy") is None
    reason = uncomputed_reason(key, evaluator="ranker")
    assert reason is not None and "stochastic policy" in reason


@pytest.mark.parametrize("key", ["ndcg_at_10", "kendall_tau", "exposure_disparity", "tied_score_share"])
def test_a_policy_is_also_evaluated_on_its_mean_score_ranking(key):
    assert uncomputed_reason(key, evaluator="policy") is None
    assert uncomputed_reason(key, evaluator="ranker") is None
    assert uncomputed_reason(key, evaluator="retriever") is not None


def test_audit_figures_need_groups_for_every_ranking_evaluator():
    for evaluator in ("ranker", "policy"):
        assert "group attributes" in uncomputed_reason("impact_ratio_at_10", evaluator=evaluator)
        assert uncomputed_reason("impact_ratio_at_10", evaluator=evaluator, groups=("race",)) is None
    assert "policy" in EVALUATORS


def test_check_computed_names_the_objective_as_written():
    with pytest.raises(ConfigError, match="'mrr_at_100:max' cannot be checked here: mrr_at_100 is a retrieval"):
        check_computed([("mrr_at_100:max", "mrr_at_100")], evaluator="policy")
    with pytest.raises(ConfigError, match="unknown evaluator"):
        check_computed([("x", "ndcg_at_10")], evaluator="judge")
