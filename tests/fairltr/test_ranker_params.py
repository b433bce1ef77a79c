"""The parameters DELTR and PLRank share (fairltr.ranker_params): one store, one set of rules."""

from __future__ import annotations

import inspect

import pytest

from fairltr import DELTR, PLRank, RankingColumns
from fairltr.errors import ConfigError
from fairltr.ranker_params import LinearRankerParams

SHARED = ("protected", "colorblind", "standardize", "l2", "optimizer", "max_iter", "lr", "tol", "reduce", "seed",
          "device", "dtype", "columns")


def _estimators():
    return [DELTR(gamma=1.0), PLRank(lam=1.0)]


def test_both_estimators_store_the_shared_parameters_verbatim():
    store = inspect.signature(LinearRankerParams._store_linear_params).parameters
    assert tuple(name for name in store if name != "self") == SHARED
    cols = RankingColumns(query="q", group="g", judgment="y")
    for cls, first in ((DELTR, {"gamma": 2.0}), (PLRank, {"lam": 2.0})):
        given = dict(protected="g", colorblind=True, standardize=False, l2=0.5, optimizer="adam", max_iter=7, lr=0.3,
                     tol=1e-4, reduce="mean", seed=3, device="cpu", columns=cols)
        model = cls(**first, **given)
        params = model.get_params(deep=False)
        assert {k: params[k] for k in given} == given
        assert set(SHARED) <= set(params)


@pytest.mark.parametrize("change,message", [
    ({"tol": -1.0}, "tol must be a number >= 0, got -1.0"),
    ({"l2": -0.1}, "l2 must be >= 0 and finite, got -0.1"),
    ({"l2": float("nan")}, "l2 must be >= 0 and finite, got nan"),
    ({"l2": float("inf")}, "l2 must be >= 0 and finite, got inf"),
    ({"max_iter": 0}, "max_iter must be >= 1 and an integer (or None), got 0"),
    ({"max_iter": 2.5}, "max_iter must be >= 1 and an integer (or None), got 2.5"),
    ({"lr": 0.0}, "lr must be > 0 and finite (or None), got 0.0"),
    ({"lr": float("inf")}, "lr must be > 0 and finite (or None), got inf"),
    ({"reduce": "min"}, "reduce must be 'max' or 'mean', got 'min'"),
    ({"protected": "sex", "columns": RankingColumns(group="race")},
     "protected='sex' and columns.group='race' name different group columns; name the group once, in columns"),
])
def test_one_rule_and_one_message_for_both_estimators(change, message):
    for model in _estimators():
        model.set_params(**change)
        with pytest.raises(ConfigError) as info:
            model.settings()
        assert str(info.value) == message, type(model).__name__


def test_each_estimator_declares_its_optimisers_and_their_defaults():
    with pytest.raises(ConfigError, match="^optimizer must be 'lbfgs' or 'adam', got 'sgd'$"):
        DELTR(gamma=1.0, optimizer="sgd").settings()
    with pytest.raises(ConfigError, match="^optimizer must be 'adam' or 'sgd', got 'lbfgs'$"):
        PLRank(optimizer="lbfgs").settings()
    assert (DELTR(gamma=1.0).settings().max_iter, DELTR(gamma=1.0).settings().lr) == (200, 1.0)
    assert (DELTR(gamma=1.0, optimizer="adam").settings().max_iter,
            DELTR(gamma=1.0, optimizer="adam").settings().lr) == (3000, 0.01)
    assert (PLRank().settings().max_iter, PLRank().settings().lr) == (300, 0.05)
    assert (PLRank(optimizer="sgd").settings().max_iter, PLRank(optimizer="sgd").settings().lr) == (300, 0.01)
    assert PLRank(max_iter=5, lr=0.2).settings().max_iter == 5 and PLRank(max_iter=5, lr=0.2).settings().lr == 0.2


def test_the_contract_folds_protected_in_and_names_the_estimator():
    assert DELTR(gamma=0.0, protected="sex").settings().columns == RankingColumns(group="sex")
    assert PLRank(protected="sex").settings().columns == RankingColumns(group="sex")
    assert PLRank(columns=RankingColumns(group="sex")).settings().columns.group == "sex"
    for model, name in ((DELTR(gamma=0.0), "DELTR"), (PLRank(), "PLRank")):
        model.set_params(columns=RankingColumns(judgment=None))
        with pytest.raises(ConfigError, match=f"^{name} needs a judgment column"):
            model.settings()
