"""The REST body guard in front of MLflow's scoring server (what MLflow lets through: undeclared
params and keys dropped silently, a RecursionError on deep bodies answered with HTTP 500)."""

from __future__ import annotations

import json

import pytest

from fairltr.tracking.models.request_guard import MAX_DEPTH, check_body, guarded_invocations

KNOWN = ("rerank", "p", "alpha", "adjust", "k", "target")
SPLIT = {"columns": ["query_id", "x1"], "data": [[1, 0.5], [1, 0.25]]}


def _refusal(body, content_type="application/json") -> str:
    from mlflow.exceptions import MlflowException

    with pytest.raises(MlflowException) as err:
        check_body(body if isinstance(body, (bytes, str)) else json.dumps(body), content_type, KNOWN, "p,k")
    assert err.value.get_http_status_code() == 400
    assert "\n" not in err.value.message
    return err.value.message


def test_mlflow_itself_raises_recursion_error_on_a_deep_body():
    """The premise: MLflow's own parser does not turn a deep body into a 400 (so the guard is needed)."""
    from mlflow.pyfunc import scoring_server

    body = "[" * 100_000 + "]" * 100_000
    with pytest.raises(RecursionError):
        scoring_server._decode_json_input(body)


def test_deep_bodies_are_400_at_any_depth_past_the_limit():
    for depth in (MAX_DEPTH + 1, 900, 100_000):
        body = '{"dataframe_split": ' + "[" * depth + "]" * depth + "}"
        assert "nested too deeply" in _refusal(body)
    ok = {"dataframe_split": SPLIT, "params": {"p": 0.3}}
    check_body(json.dumps(ok), "application/json; charset=utf-8", KNOWN, "p,k")  # passes


def test_unknown_params_and_fields_are_named():
    message = _refusal({"dataframe_split": SPLIT, "params": {"p": 0.3, "bogus": 1, "zz": 2}})
    assert "['bogus', 'zz']" in message and "allows overrides: p,k" in message and "rerank" in message
    assert "['parms']" in _refusal({"dataframe_split": SPLIT, "parms": {"p": 1}})


def test_what_mlflow_answers_itself_is_left_to_it():
    for body, ctype in [(b"{not json", "application/json"), (b"\xff\xfe", "application/json"),
                        (b"query_id,x1\n1,2\n", "text/csv"), (json.dumps([1, 2]), "application/json")]:
        check_body(body, ctype, KNOWN, "none")  # no exception: MLflow answers these with its own 400


def test_the_wrapper_turns_recursion_into_400_and_drops_mlflows_input_echo():
    from mlflow.exceptions import MlflowException

    def deep(*_):
        raise RecursionError("maximum recursion depth exceeded")

    def refusing(*_):
        raise MlflowException("Failed to predict data '   query_id  x1\n0  1  0.5'. \nError: override 'p' not allowed",
                              error_code="INVALID_PARAMETER_VALUE")

    body = json.dumps({"dataframe_split": SPLIT})
    with pytest.raises(MlflowException, match="nested too deeply"):
        guarded_invocations(deep, KNOWN, "none")(body, "application/json", None, None)
    with pytest.raises(MlflowException) as err:
        guarded_invocations(refusing, KNOWN, "none")(body, "application/json", None, None)
    assert err.value.message == "override 'p' not allowed"
