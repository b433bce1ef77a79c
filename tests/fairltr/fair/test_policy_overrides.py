"""``--serve-overrides``: which request params may change a recorded serving policy."""

from __future__ import annotations

import itertools

import pytest

from fairltr.errors import ConfigError
from fairltr.fair.policy import OVERRIDE_FIELDS, overrides_text, parse_overrides, parse_policy, policy_from_params

FAIR = parse_policy("fair:p=0.3,alpha=0.1,k=10")


def test_default_is_none_once_a_policy_is_recorded_and_all_without_one():
    assert parse_overrides(None, FAIR) == frozenset()
    assert parse_overrides("", FAIR) == frozenset()
    assert parse_overrides(None, parse_policy(None)) == frozenset(OVERRIDE_FIELDS)
    assert parse_overrides(None) == frozenset(OVERRIDE_FIELDS)  # no policy given: nothing to protect


def test_spec_round_trips_through_its_text():
    for n in range(len(OVERRIDE_FIELDS) + 1):
        for fields in itertools.combinations(OVERRIDE_FIELDS, n):
            allowed = frozenset(fields)
            assert parse_overrides(overrides_text(allowed), FAIR) == allowed
    assert overrides_text(frozenset()) == "none" and overrides_text(frozenset(OVERRIDE_FIELDS)) == "all"
    assert parse_overrides(" K , P ", FAIR) == {"k", "p"}  # case and spaces forgiven
    assert overrides_text({"k", "p"}) == "p,k"  # the declared order, not the given one


@pytest.mark.parametrize("bad, needle", [("zap", "not among"), ("p,none", "not among"), ("p,,k", "not among"),
                                         ("p,p", "given twice"), ("all,p", "not among")])
def test_bad_specs_are_one_line_errors(bad, needle):
    with pytest.raises(ConfigError, match=needle) as err:
        parse_overrides(bad, FAIR)
    assert "\n" not in str(err.value)


def test_a_request_may_change_only_what_is_allowed():
    # every single param against every allowed set: refused exactly when it is not allowed
    values = {"rerank": "none", "p": 0.4, "alpha": 0.05, "adjust": False, "k": 5, "target": "0:0.5,1:0.5"}
    for n in range(len(OVERRIDE_FIELDS) + 1):
        for fields in itertools.combinations(OVERRIDE_FIELDS, n):
            allowed = frozenset(fields)
            for param, value in values.items():
                if param not in allowed:
                    with pytest.raises(ConfigError, match="not allowed by this model") as err:
                        policy_from_params(FAIR, {param: value}, allowed)
                    assert f"allowed overrides: {overrides_text(allowed)}" in str(err.value)
                    assert "fair:p=0.3" in str(err.value)  # names the policy that holds
    # allowed: the value takes effect
    assert policy_from_params(FAIR, {"p": 0.4}, {"p"}).p == 0.4
    assert not policy_from_params(FAIR, {"rerank": "none"}, {"rerank"}).active
    assert policy_from_params(FAIR, {"k": 5, "p": 0.5}, {"k", "p"}).k == 5
    # absent params (None: MLflow's signature defaults) are no override at all
    assert policy_from_params(FAIR, {"rerank": None, "p": None}, frozenset()) == FAIR
    assert policy_from_params(FAIR, {}, frozenset()) == FAIR
    # the default of policy_from_params (in-process callers) stays "everything allowed"
    assert not policy_from_params(FAIR, {"rerank": "none"}).active


def test_unknown_params_are_named_before_the_permission():
    with pytest.raises(ConfigError, match=r"unknown serving params \['bogus'\]"):
        policy_from_params(FAIR, {"bogus": 1}, frozenset())
