"""Serving-time post-processing in the ranker pyfunc: a recorded FA*IR policy, request params
(where the model allows them: these models are logged with ``serve_overrides="all"``; the default,
none, is tested in test_serving_governed.py), one-line 400s, the policy inside the digest, and
``mlflow models serve`` answering over REST."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.fair import cached_mtable, parse_policy
from fairltr.fair.rerank import required_counts
from fairltr.tracking.models.pyfunc import PROVENANCE_COLUMNS

RANKED = ["query_id", "score", "rank", "fair_feasible", *PROVENANCE_COLUMNS]


def _assert_fair_prefixes(out: pd.DataFrame, groups: np.ndarray, k: int, p: float, alpha: float) -> None:
    """Every query flagged feasible holds at least m(i) protected candidates in each top-i prefix
    (an explicit loop, independent of the vectorised re-ranker); a query flagged infeasible has
    fewer protected candidates than its table asks for. At least one query is feasible."""
    n_feasible = 0
    for q in pd.unique(out["query_id"]):
        rows = np.flatnonzero(out["query_id"].to_numpy() == q)
        order = rows[np.argsort(out["rank"].to_numpy()[rows], kind="stable")]
        assert sorted(out["rank"].to_numpy()[rows]) == list(range(1, len(rows) + 1))
        kq = min(k, len(rows))
        need = required_counts(cached_mtable(kq, p, alpha, True))
        flags = out["fair_feasible"].to_numpy()[rows]
        assert flags.all() or not flags.any()  # one flag per query
        if not flags[0]:
            assert (groups[rows] >= 1).sum() < need.max(), q
            continue
        n_feasible += 1
        prot = np.cumsum(groups[order][:kq] >= 1)
        for i in range(kq):
            assert prot[i] >= need[i], (q, i, prot[i], need[i])
    assert n_feasible > 0


@pytest.fixture(scope="module")
def ranker_and_test(tmp_path_factory):
    """A DELTR model trained with gamma 0 (unfair) and its test table."""
    from fairltr.synthetic import make_biased_rankings

    train, test = make_biased_rankings(20, 12, 0.35, seed=5)
    return DELTR(gamma=0.0, max_iter=30).fit(train), test


def test_policy_spec_round_trips_and_rejects_bad_specs():
    from fairltr.errors import ConfigError

    p = parse_policy("fair:p=0.4,alpha=0.05,k=8")
    assert (p.method, p.p, p.alpha, p.k, p.adjust) == ("fair", 0.4, 0.05, 8, True)
    assert parse_policy(p.describe()) == p
    assert not parse_policy(None).active and not parse_policy("none").active
    for bad, needle in [("fair", "needs p"), ("fair:p=1.5", "(0, 1)"), ("zap:p=0.1", "unknown method"),
                        ("fair:p=0.3,q=1", "is not one of"), ("fair:p=0.3,k=0", "positive integer"),
                        ("detconstsort:target=A:0.6,B:0.6", "sum to 1"), ("fair:p=0.3,p=0.4", "twice")]:
        with pytest.raises(ConfigError, match=needle.replace("(", r"\(").replace(")", r"\)")):
            parse_policy(bad)


def test_recorded_policy_serves_fair_rankings_and_params_override(mlflow_tracking, ranker_and_test):
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking import log_ranker_model

    model, test = ranker_and_test
    mlflow.set_experiment("test-serving")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=test.head(6), serve_rerank="fair:p=0.5,alpha=0.1,k=8",
                                serve_overrides="all")
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    shuffled = test.sample(frac=1.0, random_state=2)
    out = loaded.predict(shuffled)
    assert list(out.columns) == RANKED
    assert out.index.equals(shuffled.index)  # input order kept: callers join back by index or query id
    np.testing.assert_array_equal(out["query_id"].to_numpy(), shuffled["query_id"].to_numpy())
    _assert_fair_prefixes(out, shuffled["protected"].to_numpy(), 8, 0.5, 0.1)
    # the unfair model's own ranking breaks the table somewhere: the policy did something
    plain = loaded.predict(shuffled, params={"rerank": "none"})
    assert not plain["rank"].equals(out["rank"])
    np.testing.assert_allclose(plain["score"].to_numpy(), model.predict(shuffled), atol=1e-12)
    # a request may change the policy's settings
    stricter = loaded.predict(shuffled, params={"p": 0.6, "k": 10})
    _assert_fair_prefixes(stricter, shuffled["protected"].to_numpy(), 10, 0.6, 0.1)
    for params, needle in [({"rerank": "shuffle"}, "rerank must be one of"), ({"p": 1.5}, "(0, 1)")]:
        with pytest.raises(MlflowException) as err:
            loaded.predict(shuffled, params=params)
        assert err.value.error_code == "INVALID_PARAMETER_VALUE"
        assert needle in err.value.message and "\n" not in err.value.message


def test_model_without_policy_keeps_todays_output_and_reranks_on_request(mlflow_tracking, ranker_and_test):
    import mlflow

    from fairltr.tracking import log_ranker_model

    model, test = ranker_and_test
    mlflow.set_experiment("test-serving")
    colorblind = DELTR(gamma=0.0, max_iter=30, colorblind=True).fit(test)
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=test.head(6))
        info_cb = log_ranker_model(colorblind, input_example=test.drop(columns=["protected"]).head(6))
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    assert list(loaded.predict(test).columns) == ["score", "rank", *PROVENANCE_COLUMNS]
    out = loaded.predict(test, params={"rerank": "fair", "p": 0.5, "alpha": 0.1})
    _assert_fair_prefixes(out, test["protected"].to_numpy(), 10**6, 0.5, 0.1)
    # colorblind: the group column is not a feature, yet the schema keeps it as an optional input
    cb = mlflow.pyfunc.load_model(info_cb.model_uri)
    assert list(cb.predict(test.drop(columns=["protected"])).columns) == ["score", "rank", *PROVENANCE_COLUMNS]
    out_cb = cb.predict(test, params={"rerank": "fair", "p": 0.5})
    _assert_fair_prefixes(out_cb, test["protected"].to_numpy(), 10**6, 0.5, 0.1)


def test_policy_is_inside_the_digest(mlflow_tracking, ranker_and_test, tmp_path):
    """Changing the recorded policy in the logged MLmodel changes the folder digest, so promotion's
    verification rejects a tampered policy like tampered weights."""
    import mlflow

    from fairltr.tracking import log_ranker_model
    from fairltr.tracking.models.verify import folder_digest

    model, test = ranker_and_test
    mlflow.set_experiment("test-serving")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=test.head(4), serve_rerank="fair:p=0.5,alpha=0.1")
    local = Path(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path)))
    before = folder_digest(local)
    mlmodel = local / "MLmodel"
    text = mlmodel.read_text()
    assert "fair:p=0.5" in text
    mlmodel.write_text(text.replace("fair:p=0.5", "fair:p=0.1"))
    assert folder_digest(local) != before


def _post(url: str, payload: dict, timeout: float = 30.0) -> tuple[int, dict]:
    req = urllib.request.Request(url, data=json.dumps(payload).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


@pytest.mark.slow  # about 15 s: starts `mlflow models serve` and waits for it
def test_mlflow_models_serve_returns_fair_rankings_and_4xx_for_bad_payloads(mlflow_tracking, ranker_and_test, tmp_path):
    """``mlflow models serve`` on a registered version: dataframe_split payloads with and without
    params; malformed payloads get a 4xx with a one-line message, never a 500 or a traceback."""
    import mlflow

    from fairltr.tracking import log_ranker_model
    from fairltr.tracking.models.serving import served_model

    model, test = ranker_and_test
    name = f"served-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-serving")
    with mlflow.start_run():
        log_ranker_model(model, input_example=test.head(4), register=name, serve_rerank="fair:p=0.5,alpha=0.1,k=8",
                         serve_overrides="all")
    with served_model(f"models:/{name}/1", tracking_uri=mlflow_tracking, log_path=tmp_path / "serve.log") as base:
        cols = [c for c in test.columns if c != "judgment"]
        split = json.loads(test[cols].to_json(orient="split", index=False))
        code, body = _post(f"{base}/invocations", {"dataframe_split": split})
        assert code == 200, body
        out = pd.DataFrame(body["predictions"])
        assert list(out.columns) == RANKED
        np.testing.assert_array_equal(out["query_id"].to_numpy(), test["query_id"].to_numpy())
        _assert_fair_prefixes(out, test["protected"].to_numpy(), 8, 0.5, 0.1)
        code, body = _post(f"{base}/invocations", {"dataframe_split": split, "params": {"rerank": "none"}})
        assert code == 200 and "fair_feasible" in pd.DataFrame(body["predictions"]).columns
        code, body = _post(f"{base}/invocations", {"dataframe_split": split, "params": {"p": 0.7, "k": 5}})
        assert code == 200
        _assert_fair_prefixes(pd.DataFrame(body["predictions"]), test["protected"].to_numpy(), 5, 0.7, 0.1)
        # malformed payloads: 4xx, a message, no traceback
        no_group = json.loads(test[[c for c in cols if c != "protected"]].to_json(orient="split", index=False))
        bad_types = json.loads(test[cols].assign(x1="high").to_json(orient="split", index=False))
        for payload, needle in [({"dataframe_split": split, "params": {"rerank": "shuffle"}}, "rerank must be one of"),
                                ({"dataframe_split": no_group}, "protected"),
                                ({"dataframe_split": bad_types}, "x1"),
                                ({"dataframe_split": split, "params": {"p": "lots"}}, "p")]:
            code, body = _post(f"{base}/invocations", payload)
            assert 400 <= code < 500, (code, body)
            message = body.get("message", "")
            assert needle in message, (needle, message[:500])
            assert "Traceback" not in json.dumps(body), body
    with pytest.raises(OSError):  # leaving the block stopped the server's process group
        urllib.request.urlopen(f"{base}/ping", timeout=2)


def test_served_model_names_a_model_the_server_cannot_load(tmp_path):
    """A server that exits before answering: ServerFailed names the model and ends with its log;
    nothing is left listening."""
    from fairltr.tracking.models.serving import ServerFailed, served_model

    missing = tmp_path / "no-such-model"
    with pytest.raises(ServerFailed, match="no-such-model") as err:
        with served_model(str(missing), start_timeout_s=120):
            pytest.fail("the block must not run")
    assert "exited with status" in str(err.value)


def test_geyik_policy_serves_target_mix(mlflow_tracking, ranker_and_test):
    """A DetConstSort policy: every query's top k holds at least floor(j * share) candidates of each
    category at every prefix j where the query had them (Geyik's minimum-count constraint),
    checked by a loop; a bad target is a one-line 400."""
    import math

    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking import log_ranker_model

    model, test = ranker_and_test
    mlflow.set_experiment("test-serving")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=test.head(6), serve_rerank="detconstsort:k=6,target=0:0.5,1:0.5",
                                serve_overrides="target")
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    out = loaded.predict(test)
    assert list(out.columns) == RANKED
    groups = test["protected"].to_numpy()
    checked = 0
    for q in pd.unique(out["query_id"]):
        rows = np.flatnonzero(out["query_id"].to_numpy() == q)
        order = rows[np.argsort(out["rank"].to_numpy()[rows], kind="stable")]
        if not out["fair_feasible"].to_numpy()[rows[0]]:
            continue
        for j in range(1, min(6, len(rows)) + 1):
            top = groups[order[:j]]
            for cat in (0, 1):
                if (groups[rows] == cat).sum() >= math.floor(j * 0.5):
                    assert (top == cat).sum() >= math.floor(j * 0.5), (q, j, cat)
        checked += 1
    assert checked > 0
    with pytest.raises(MlflowException) as err:
        loaded.predict(test, params={"target": "0:0.7,1:0.7"})
    assert err.value.error_code == "INVALID_PARAMETER_VALUE" and "sum to 1" in err.value.message
