import numpy as np
import pytest

from fairltr import DELTR, evaluate_ranking
from fairltr.errors import ConfigError
from fairltr.synthetic import make_biased_rankings


def test_shapes_split_and_sorted_rows():
    train, test = make_biased_rankings(n_queries=10, n_candidates=7, n_features=3, seed=1)
    assert list(train.columns) == ["query_id", "protected", "x1", "x2", "x3", "judgment"]
    assert len(train) + len(test) == 70
    assert set(train.query_id).isdisjoint(set(test.query_id))
    for _, q in train.groupby("query_id"):
        assert np.all(np.diff(q.judgment.to_numpy()) <= 0)


def test_bias_only_in_training_judgments():
    train, test = make_biased_rankings(n_queries=200, n_candidates=30, bias=2.0, noise=0.0, seed=3)
    # noise=0: every feature equals the merit, so judgment - x1 is -bias * protected on train, 0 on test
    np.testing.assert_allclose(train.judgment - train.x1, -2.0 * train.protected, atol=1e-12)
    np.testing.assert_allclose(test.judgment - test.x1, 0.0, atol=1e-12)


def test_deterministic_for_seed():
    a = make_biased_rankings(seed=5)[0]
    b = make_biased_rankings(seed=5)[0]
    assert a.equals(b)


def test_deltr_beats_standard_on_exposure():
    train, test = make_biased_rankings(seed=0)
    std = evaluate_ranking(test, DELTR(0).fit(train).predict(test))
    fair = evaluate_ranking(test, DELTR(1e3).fit(train).predict(test))
    assert std["exposure_ratio"] < 0.8
    assert fair["exposure_ratio"] > 0.95
    assert fair["kendall_tau"] > std["kendall_tau"]  # the bias was the training data's, not the merit's


@pytest.mark.parametrize("kw", [{"n_queries": 1}, {"n_candidates": 1}, {"protected_share": 1.0},
                                {"n_features": 0}, {"test_fraction": 0.0}])
def test_bad_parameters(kw):
    with pytest.raises(ConfigError):
        make_biased_rankings(**kw)


def test_column_names_from_the_contract():
    from fairltr.columns import RankingColumns

    contract = RankingColumns(query="qid", group="sex", judgment="label")
    train, test = make_biased_rankings(n_queries=6, n_candidates=5, n_features=2, seed=2, columns=contract)
    default, _ = make_biased_rankings(n_queries=6, n_candidates=5, n_features=2, seed=2)
    assert list(train.columns) == ["qid", "sex", "x1", "x2", "label"]
    np.testing.assert_array_equal(train.to_numpy(), default.to_numpy())
    with pytest.raises(ConfigError, match="needs a group column"):
        make_biased_rankings(columns=contract.replace(group=None))
