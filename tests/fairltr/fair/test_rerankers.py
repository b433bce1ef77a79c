"""The re-ranker declarations (:mod:`fairltr.fair.rerankers`): the built-ins, what the lists
read from them, the declaration's own checks, and that policies recorded before the
declarations parse the same way."""

from __future__ import annotations

import pytest

from fairltr.errors import ConfigError
from fairltr.fair.builtin_rerankers import GEYIK_NAMES
from fairltr.fair.reranker_decl import Reranker
from fairltr.fair.rerankers import RERANKERS, declarers, get_reranker, owners_text, reranker_names, setting_names
from fairltr.plugins import HyperParam

BUILTIN = ["fair", "detgreedy", "detcons", "detrelaxed", "detconstsort"]


def _noop(frame, scores, *, columns, k, **settings):
    return frame


def test_builtins_and_the_lists_read_from_them():
    from fairltr.fair import geyik, policy
    from fairltr.workflows import fair as fair_workflow

    assert reranker_names() == BUILTIN and GEYIK_NAMES == geyik.GEYIK_METHODS
    assert setting_names() == ("p", "alpha", "adjust", "k", "target")
    assert policy.POLICY_METHODS == ("none", *BUILTIN) and policy.GEYIK_METHODS == GEYIK_NAMES
    assert policy.OVERRIDE_FIELDS == ("rerank", "p", "alpha", "adjust", "k", "target")
    assert fair_workflow.RERANK_METHODS == tuple(BUILTIN)
    assert policy.request_param_types() == [("rerank", "string"), ("p", "double"), ("alpha", "double"),
                                            ("adjust", "boolean"), ("k", "long"), ("target", "string")]
    assert policy.request_param_types(shares=True)[1] == ("p", "string")
    fair = get_reranker("fair")
    assert fair.required == ("p",) and not fair.categories and fair.fields == ("p", "alpha", "adjust", "k")
    assert all(get_reranker(m).categories and get_reranker(m).fields == ("target", "k") for m in GEYIK_NAMES)
    assert [d.name for d in declarers("target")] == list(GEYIK_NAMES)
    assert owners_text("p") == "method 'fair'"
    assert owners_text("target") == "the Geyik methods (detgreedy, detcons, detrelaxed, detconstsort)"
    with pytest.raises(ConfigError, match=r"unknown re-ranker 'nope'; choose one of \['fair'"):
        get_reranker("nope")


@pytest.mark.parametrize("kwargs, needle", [
    (dict(name="Bad Name"), "lower-case letters"),
    (dict(name="none"), "'none' is taken"),
    (dict(apply=3), "must be callable"),
    (dict(options={"k": 1}), "not k or rerank"),
    (dict(params=(HyperParam("s", 1, 0, 2),), options={"s": True}), "distinct"),
    (dict(required=("missing",)), "required ['missing']"),
])
def test_declaration_checks(kwargs, needle):
    with pytest.raises(ConfigError, match=needle.replace("[", r"\[").replace("]", r"\]")):
        Reranker(**{"name": "toy", "apply": _noop, **kwargs})


def test_setting_values_are_checked_against_the_declaration():
    decl = Reranker("toy", _noop, params=(HyperParam("strength", 1.0, 0.0, 10.0), HyperParam("n", 3, 1, 9, integer=True)),
                    options={"soft": True, "mode": "a"})
    assert decl.check_value("strength", "2.5") == 2.5 and decl.check_value("n", 4.4) == 4.0
    assert decl.check_value("soft", "false") is False and decl.check_value("mode", "b") == "b"
    assert decl.defaults() == {"strength": 1.0, "n": 3, "soft": True, "mode": "a"}
    for name, value, needle in [("strength", -1, "must be >= 0"), ("strength", 11, r"in \[0, 10\]"),
                                ("strength", "x", "finite number"), ("soft", "maybe", "true or false"),
                                ("other", 1, "has no setting 'other'")]:
        with pytest.raises(ConfigError, match=needle):
            decl.check_value(name, value)


def test_a_reranker_registered_in_code_enters_the_policy_grammar():
    from fairltr.fair.policy import override_fields, parse_policy, policy_from_params, policy_methods

    decl = Reranker("toy", _noop, params=(HyperParam("strength", 1.0, 0.0, 10.0),), required=("strength",))
    with RERANKERS.temporary(decl):
        assert policy_methods()[-1] == "toy" and override_fields()[-1] == "strength"
        p = parse_policy("toy:strength=2,k=3")
        assert p.settings == (("strength", 2.0),) and p.describe() == "toy:strength=2,k=3"
        assert policy_from_params(p, {"strength": 4}).settings == (("strength", 4.0),)
        assert policy_from_params(p, {"rerank": "fair", "p": 0.3}).settings == ()  # another method: dropped
        for spec, needle in [("toy", "rerank 'toy' needs strength"), ("toy:strength=2,p=0.3", r"not p \(FA\*IR's\)"),
                             ("toy:strength=20", r"in \[0, 10\]"), ("fair:p=0.3,strength=1", "not strength")]:
            with pytest.raises(ConfigError, match=needle):
                parse_policy(spec)
    assert "toy" not in policy_methods() and "strength" not in override_fields()


@pytest.mark.parametrize("spec, fields, described", [  # policies as models logged before the declarations recorded them
    ("fair:p=0.3,alpha=0.1,adjust=true", ("fair", 0.3, 0.1, True, None, None), "fair:p=0.3,alpha=0.1,adjust=true"),
    ("fair:p=0.5,alpha=0.1,adjust=true,k=8", ("fair", 0.5, 0.1, True, 8, None), "fair:p=0.5,alpha=0.1,adjust=true,k=8"),
    ("fair:alpha=0.05,adjust=false,k=10,p=1=0.2,2=0.1", ("fair", "1=0.2,2=0.1", 0.05, False, 10, None),
     "fair:alpha=0.05,adjust=false,k=10,p=1=0.2,2=0.1"),
    ("detconstsort:k=10,target=A:0.3,B:0.7", ("detconstsort", None, 0.1, True, 10, "A:0.3,B:0.7"),
     "detconstsort:k=10,target=A:0.3,B:0.7"),
    ("detgreedy", ("detgreedy", None, 0.1, True, None, None), "detgreedy"),
    ("detgreedy:alpha=0.2", ("detgreedy", None, 0.2, True, None, None), "detgreedy"),  # tolerated, as before
    ("none", ("none", None, 0.1, True, None, None), "none"),
])
def test_recorded_policies_parse_as_before(spec, fields, described):
    from fairltr.fair.policy import parse_policy

    p = parse_policy(spec)
    assert (p.method, p.p, p.alpha, p.adjust, p.k, p.target) == fields and p.settings == ()
    assert p.describe() == described and parse_policy(described) == parse_policy(p.describe())
