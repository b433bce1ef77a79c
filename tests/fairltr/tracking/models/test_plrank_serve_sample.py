"""``train plrank --serve-sample``: the logged PLRank pyfunc serves a Plackett-Luce draw per request,
seeded by the request id (a replay gives the same ranking, other ids other rankings), says so in
its output (``sampled``, ``sample_seed``, ``sample_request_id``) (slow: a model logged by the CLI and
loaded from its folder), and its rankings follow the PL law (in process): the frequencies of the 6 rankings of a 3-item list over 2,000 request ids pass a chi-square
test against the exact probabilities prod_i exp(s_(i)) / sum_{j >= i} exp(s_(j))."""

from __future__ import annotations

import itertools
import uuid

import mlflow
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner
from scipy import stats

from fairltr.cli import cli
from fairltr.errors import ConfigError
from fairltr.losses.pl_serving import request_seed


@pytest.fixture
def sampling_model(mlflow_tracking, tiny_rankings, tmp_path):
    train, test = tiny_rankings
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    name = f"plsample-{uuid.uuid4().hex[:8]}"
    res = CliRunner().invoke(cli, ["train", "plrank", "--train", str(tmp_path / "train.csv"),
                                   "--test", str(tmp_path / "test.csv"), "--lambda", "0", "--samples", "8",
                                   "--max-iter", "8", "--eval-samples", "10", "--out", str(tmp_path / "out"),
                                   "--register", name, "--experiment", "test-plrank", "--serve-sample"])
    assert res.exit_code == 0, res.output
    version = mlflow.MlflowClient().get_model_version(name, "1")
    folder = mlflow.artifacts.download_artifacts(artifact_uri=f"models:/{name}/1", dst_path=str(tmp_path / "model"))
    return mlflow.pyfunc.load_model(folder), test, version


def _exact_pl(scores: np.ndarray) -> dict[tuple[int, ...], float]:
    out = {}
    for perm in itertools.permutations(range(len(scores))):
        s = scores[list(perm)]
        out[perm] = float(np.prod([np.exp(s[i]) / np.exp(s[i:]).sum() for i in range(len(s))]))
    return out


@pytest.mark.slow
def test_logged_sampling_model_replays_per_request_id(sampling_model):
    loaded, test, version = sampling_model
    assert version.run_id and mlflow.MlflowClient().get_run(version.run_id).data.params["serve_sample"] == "true"
    a = loaded.predict(test, params={"request_id": "req-1"})
    b = loaded.predict(test, params={"request_id": "req-1"})
    assert list(a["rank"]) == list(b["rank"])  # a replay of the same request id: the same ranking
    assert a["sampled"].all() and (a["sample_request_id"] == "req-1").all() and (a["request_id"] == "req-1").all()
    ranker = loaded.unwrap_python_model()
    q = ranker.query
    q0 = test[q].iloc[0]
    salt = ranker.salt
    assert a.loc[test[q] == q0, "sample_seed"].iloc[0] == str(request_seed("req-1", q0, salt))
    others = [tuple(loaded.predict(test, params={"request_id": f"req-{i}"})["rank"]) for i in range(2, 8)]
    assert len(set(others) | {tuple(a["rank"])}) > 1  # other ids: other rankings
    fresh = loaded.predict(test)  # no request id: a fresh one, reported
    assert fresh["sample_request_id"].iloc[0] != "req-1" and len(fresh["sample_request_id"].iloc[0]) == 32



def test_sampled_rankings_follow_the_pl_law_and_replay(tiny_rankings, monkeypatch):
    """In process (the same pyfunc class as the logged model's): replay, other ids, and the law.
    The tensor code fits (FAIRLTR_COMPILED=0): no numba compile on a cold cache."""
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    from fairltr import PLRank
    from fairltr.tracking.models.pyfunc import FairltrRanker

    train, test = tiny_rankings
    model = PLRank(lam=0.0, samples=4, max_iter=2).fit(train)
    ranker = FairltrRanker.from_model(model, sample=True, salt="salt-1")
    a, b = (ranker.predict(None, test, {"request_id": "r"}) for _ in range(2))
    assert list(a["rank"]) == list(b["rank"]) and a["sampled"].all()
    others = {tuple(ranker.predict(None, test, {"request_id": f"r{i}"})["rank"]) for i in range(6)}
    assert len(others | {tuple(a["rank"])}) > 1
    q = model.query_
    q0 = test[q].iloc[0]
    three = test[test[q] == q0].head(3).reset_index(drop=True)
    scores = model.predict(three).astype(np.float64)
    exact = _exact_pl(scores)
    n = 2000
    counts = dict.fromkeys(exact, 0)
    for i in range(n):
        ranks = ranker.predict(None, three, {"request_id": f"id-{i}"})["rank"].to_numpy()
        counts[tuple(np.argsort(ranks, kind="stable"))] += 1
    observed = np.array([counts[p] for p in exact])
    expected = np.array([exact[p] for p in exact]) * n
    _, p_value = stats.chisquare(observed, expected)
    assert p_value > 1e-3, (observed, expected)  # 5 degrees of freedom; fails by chance once in 1,000


def test_serve_sample_refusals(tiny_rankings, monkeypatch):
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    from fairltr import DELTR, PLRank
    from fairltr.tracking.models.pyfunc import FairltrRanker

    train, test = tiny_rankings
    sampling = FairltrRanker.from_model(PLRank(lam=0.0, samples=4, max_iter=2).fit(train), sample=True)
    with pytest.raises(mlflow.exceptions.MlflowException, match="re-ranking"):
        sampling.predict(None, test, {"rerank": "fair", "p": 0.3})
    with pytest.raises(ConfigError, match="exclude each other"):
        FairltrRanker.from_model(sampling.model, policy="fair:p=0.3,alpha=0.1", sample=True)
    deltr = DELTR(gamma=0.0, max_iter=2).fit(train)
    with pytest.raises(ConfigError, match="PLRank model"):
        FairltrRanker.from_model(deltr, sample=True)
    with pytest.raises(mlflow.exceptions.MlflowException, match="deterministic"):
        FairltrRanker.from_model(deltr).predict(None, test, {"request_id": "x"})
    res = CliRunner().invoke(cli, ["train", "plrank", "--train", "x.csv", "--test", "y.csv", "--no-track",
                                   "--serve-sample"])
    assert res.exit_code != 0 and "--serve-sample" in res.output
