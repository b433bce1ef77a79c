"""A guard on the REST bodies ``mlflow models serve`` hands a fairltr model: what MLflow 3.17's
scoring server answers before any model code runs, and how fairltr closes the gaps.

MLflow's scoring server (``mlflow/pyfunc/scoring_server/__init__.py``) parses a JSON body with
``json.loads`` in ``_decode_json_input``, which catches only ``JSONDecodeError`` and
``UnicodeDecodeError``: a body nested deeper than Python's recursion limit (about 1,000 levels)
raises ``RecursionError``, which no handler maps to a status, so the server answers HTTP 500 with
the error in its log. It then keeps only the top-level keys it knows (``dataframe_split``,
``dataframe_records``, ``instances``, ``inputs``; ``params``) and drops the others silently, and
``PyFuncModel.predict`` (``_enforce_params_schema`` in ``mlflow/models/utils.py``) drops every
param the signature does not declare, with a warning: the model's ``predict`` never sees them.
MLflow offers no hook before these steps (no request middleware for a model, no option of
``mlflow models serve``); the fix belongs in MLflow (catch ``RecursionError`` beside
``JSONDecodeError``; refuse undeclared params instead of dropping them).

What fairltr can do, and does: its loader (:mod:`fairltr.tracking.models.verified_loader`), when it
runs inside the scoring server (``mlflow models serve`` / its uvicorn app), wraps the server's
module-level ``invocations`` function (looked up by name on every request) with
:func:`guarded_invocations`, which reads the raw body first and answers HTTP 400 (one line) for
a body nested more than :data:`MAX_DEPTH` levels or that Python cannot parse for depth, an unknown
top-level key, and an unknown param — then calls MLflow's own function unchanged (only the
``Failed to predict data '<the whole input>'`` prefix MLflow puts before the model's own one-line
error is dropped, so a 400 neither echoes the request's features nor spans lines). In-process
``mlflow.pyfunc.load_model(...).predict(df, params=...)`` is not guarded: MLflow still drops
undeclared params there (with its warning).
"""

from __future__ import annotations

import json
from typing import Any, Callable, Sequence

__all__ = ["install_request_guard", "guarded_invocations", "check_body", "MAX_DEPTH", "BODY_KEYS"]

MAX_DEPTH = 64
"""Deepest nesting of a JSON body accepted (a ``dataframe_split`` body is 4 levels deep)."""
BODY_KEYS = ("dataframe_split", "dataframe_records", "instances", "inputs", "params")


def _bad_request(message: str):
    from mlflow.exceptions import MlflowException
    from mlflow.protos.databricks_pb2 import BAD_REQUEST

    return MlflowException(message, error_code=BAD_REQUEST)


def _depth(value: Any, limit: int) -> int:
    """Nesting depth of a parsed JSON value (iterative; stops counting past ``limit``)."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            children = v.values()
        elif isinstance(v, list):
            children = v
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def check_body(data: bytes | str, content_type: str | None, known_params: Sequence[str], allowed: str) -> None:
    """Raise a BAD_REQUEST ``MlflowException`` (HTTP 400, one line) for a JSON body nested deeper
    than :data:`MAX_DEPTH` (or beyond what ``json.loads`` can parse), an unknown top-level key or
    an unknown param (naming the known ones and the model's ``allowed`` overrides). Bodies that
    are not JSON, or not valid JSON, are left to MLflow (which answers them with a 400)."""
    mime = (content_type or "").split(";")[0].strip().lower()
    if mime != "application/json":
        return
    try:
        body = json.loads(data)
    except RecursionError:
        raise _bad_request(f"request body is nested too deeply (more than {MAX_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError):
        return  # MLflow's own parser answers a malformed body with a 400
    if _depth(body, MAX_DEPTH) > MAX_DEPTH:
        raise _bad_request(f"request body is nested too deeply (more than {MAX_DEPTH} levels)")
    if not isinstance(body, dict):
        return
    unknown_keys = sorted(k for k in body if k not in BODY_KEYS)
    if unknown_keys:
        raise _bad_request(f"unknown request field(s) {unknown_keys}; a request holds one of "
                           f"{list(BODY_KEYS[:-1])} and optionally params")
    params = body.get("params")
    if isinstance(params, dict):
        unknown = sorted(str(k) for k in params if k not in known_params)
        if unknown:
            raise _bad_request(f"unknown request params {unknown}; known: {list(known_params)}; "
                               f"this model allows overrides: {allowed}")


def guarded_invocations(original: Callable, known_params: Sequence[str], allowed: str) -> Callable:
    """MLflow's ``invocations(data, content_type, model, input_schema)`` behind :func:`check_body`;
    a ``RecursionError`` MLflow raises on a body is a 400 too."""

    from mlflow.exceptions import MlflowException

    def invocations(data, content_type, model, input_schema):
        check_body(data, content_type, known_params, allowed)
        try:
            return original(data, content_type, model, input_schema)
        except RecursionError:
            raise _bad_request("request body is nested too deeply for MLflow's parser") from None
        except MlflowException as exc:  # MLflow prefixes the model's one-line error with the whole input
            head, sep, reason = exc.message.partition("\nError: ")
            if sep and head.startswith("Failed to predict data"):
                exc.message = reason
            raise

    invocations.__wrapped__ = original  # type: ignore[attr-defined]
    invocations.fairltr_guard = True  # type: ignore[attr-defined]
    return invocations


def install_request_guard(known_params: Sequence[str], allowed: str) -> str:
    """Wrap the scoring server's ``invocations`` (once per process); returns the line the loader
    prints: installed, already installed, or why not (an MLflow without that function)."""
    try:
        from mlflow.pyfunc import scoring_server
    except ImportError as exc:  # pragma: no cover - the scoring server ships with mlflow
        return f"request guard not installed: {exc}"
    current = getattr(scoring_server, "invocations", None)
    if current is None or not callable(current):
        return "request guard not installed: this MLflow's scoring server has no invocations function"
    if getattr(current, "fairltr_guard", False):
        return "request guard already installed"
    scoring_server.invocations = guarded_invocations(current, tuple(known_params), allowed)
    return (f"request guard installed: unknown params or fields, and bodies nested over {MAX_DEPTH} levels, "
            "get HTTP 400")
