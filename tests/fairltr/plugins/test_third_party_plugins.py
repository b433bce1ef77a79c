"""Proof by plugin (issue 33, item 4): a throwaway distribution declares ONE re-ranker, ONE
metric and ONE sweep method through the ``fairltr.rerankers``, ``fairltr.metrics`` and
``fairltr.sweep_methods`` entry points; with no edit to fairltr they appear in ``fairltr rerank
--method`` (and it runs), in gates, in ``fairltr sweep --method`` (one trial runs) and in a served
model's policy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from tests.plugin_dist import plugin_distribution

MODULE = "toy_fairltr_plugins"
SOURCE = '''
    import numpy as np
    import torch

    from fairltr.fair.rerankers import Reranker
    from fairltr.metrics.plugins import MetricInfo
    from fairltr.plugins import HyperParam
    from fairltr.workflows.sweep_plugins import SweepMethod


    def boost(frame, scores, *, columns, k, strength):
        """Each protected candidate's score raised by ``strength``, then every query sorted."""
        s = frame[scores].to_numpy(dtype=float) if isinstance(scores, str) else np.asarray(scores, dtype=float)
        out = frame.copy()
        out["_boosted"] = s + strength * (out[columns.group].to_numpy() >= 1)
        out["rank"] = out.groupby(columns.query, sort=False)["_boosted"].rank(
            ascending=False, method="first").astype("int64")
        out["fair_feasible"] = True
        return out.drop(columns="_boosted")


    RERANKER = Reranker("toy-boost", boost, summary="a toy boost of the protected group",
                        params=(HyperParam("strength", 1.0, 0.0, 10.0, description="score added to protected"),))


    def protected_share(view):
        """Per query: the share of protected candidates."""
        prot = ((view.groups >= 1) & view.mask).sum(-1).to(torch.float64)
        return prot / view.mask.sum(-1).clamp(min=1).to(torch.float64)


    METRIC = MetricInfo("toy_protected_share", "higher", "never undefined for a non-empty query", kind="fairness",
                        compute=protected_share)


    class Trial:
        def __init__(self):
            from tuning.space import SearchSpace

            self.space = SearchSpace((HyperParam("x", default=0.5, low=0.0, high=1.0),))

        def __call__(self, values):
            x = float(values["x"])
            return {"ndcg_at_10": 1.0 - x * x, "exposure_disparity": x}


    SWEEP = SweepMethod("toy-sweep", "a toy analytic sweep", lambda inputs: Trial(), searches="`x`",
                        objectives="ndcg_at_10:max,exposure_disparity:min")
'''
POINTS = {"fairltr.rerankers": {"boost": f"{MODULE}:RERANKER"}, "fairltr.metrics": {"share": f"{MODULE}:METRIC"},
          "fairltr.sweep_methods": {"toy": f"{MODULE}:SWEEP"}}


def _registries():
    from fairltr.fair.rerankers import RERANKERS
    from fairltr.metrics.plugins import METRICS
    from fairltr.workflows.sweep_plugins import SWEEP_METHODS

    return RERANKERS, METRICS, SWEEP_METHODS


@pytest.fixture
def toy_plugins(tmp_path, monkeypatch):
    """The plugin distribution on sys.path, every registry rescanned; the registries as they were after."""
    import contextlib

    registries = _registries()
    for r in registries:
        r.load()  # the built-ins first, so that the snapshot holds them
    with plugin_distribution(tmp_path, monkeypatch, MODULE, SOURCE, POINTS), contextlib.ExitStack() as stack:
        for r in registries:
            stack.enter_context(r.snapshot())
            r.reload_entry_points()
        yield tmp_path


def test_registries_know_nothing_of_the_plugin_without_it():
    rerankers, metrics, sweeps = _registries()
    assert "toy-boost" not in rerankers and "toy_protected_share" not in metrics and "toy-sweep" not in sweeps


def _table(path: Path) -> Path:
    rng = np.random.default_rng(3)
    n = 8
    df = pd.DataFrame({"qid": np.repeat([1, 2], n), "protected": np.tile([0, 0, 0, 0, 0, 0, 1, 1], 2),
                       "score": np.tile(np.linspace(1.0, 0.0, n), 2) + rng.normal(0, 1e-3, 2 * n)})
    df.to_csv(path, index=False)
    return path


def test_plugin_reranker_is_a_rerank_method_and_runs(toy_plugins):
    src, out = _table(toy_plugins / "scored.csv"), toy_plugins / "out.csv"
    assert "toy-boost" in " ".join(CliRunner().invoke(cli, ["rerank", "--help"]).output.split())
    base = ["rerank", "--input", str(src), "--query", "qid", "--out", str(out), "--method", "toy-boost"]
    res = CliRunner().invoke(cli, base + ["--setting", "strength=5"])
    assert res.exit_code == 0, res.output
    ranked = pd.read_csv(out)
    top = ranked[ranked["rank"] <= 2]
    assert (top["protected"] == 1).all() and len(top) == 4  # the boost put both protected candidates first
    for extra, needle in [(["--setting", "strength=-1"], "strength must be >= 0"),
                          (["--setting", "strength=11"], "strength must be in [0, 10]"),
                          (["--setting", "pull=1"], "pull applies to no re-ranker (the declared settings: p, alpha, adjust, k, "
                                                            "target, strength)"),
                          (["--setting", "strength"], "--setting takes NAME=VALUE"),
                          (["--p", "0.3"], "--p applies to --method fair; toy-boost takes --setting strength=VALUE"),
                          (["--target", "A:1"], "--target applies to the Geyik methods; toy-boost takes")]:
        bad = CliRunner().invoke(cli, base + extra)
        assert bad.exit_code != 0 and needle in bad.output and "Traceback" not in bad.output, (extra, bad.output)


def test_console_script_reads_the_entry_points_at_start_up(toy_plugins):
    src, out = _table(toy_plugins / "scored.csv"), toy_plugins / "out.csv"
    script = Path(sys.executable).with_name("fairltr")
    command = [str(script)] if script.exists() else [sys.executable, "-m", "fairltr.cli"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toy_plugins), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run(command + ["rerank", "--input", str(src), "--query", "qid", "--out", str(out),
                                     "--method", "toy-boost"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr + done.stdout
    assert "wrote 16 rows" in done.stdout and out.exists()


def test_plugin_metric_is_computed_and_gated(toy_plugins):
    from fairltr.columns import RankingColumns
    from fairltr.gates import check_gates, parse_gate
    from fairltr.metrics import evaluate_ranking

    df = pd.read_csv(_table(toy_plugins / "scored.csv")).assign(judgment=1.0)
    metrics = evaluate_ranking(df, "score", columns=RankingColumns(query="qid", group="protected"), k=(10,))
    assert metrics["toy_protected_share"] == pytest.approx(0.25, abs=1e-12)
    passed, failed = check_gates([parse_gate("toy_protected_share>=0"), parse_gate("toy_protected_share>=0.5")],
                                 metrics, None)
    assert passed.passed and not failed.passed


def test_plugin_sweep_method_is_a_choice_and_runs_a_trial(toy_plugins):
    from fairltr.synthetic import make_biased_rankings

    train, test = make_biased_rankings(4, 6, 0.3, seed=1)
    files = []
    for name, df in (("train.csv", train), ("test.csv", test)):
        cols = ["query_id", "protected", *[c for c in df.columns if c.startswith("x")], "judgment"]
        df[cols].to_csv(toy_plugins / name, header=False, index=False)
        files.append(str(toy_plugins / name))
    assert "toy-sweep" in " ".join(CliRunner().invoke(cli, ["sweep", "--help"]).output.split())
    res = CliRunner().invoke(cli, ["sweep", "--method", "toy-sweep", "--train", files[0], "--test", files[1],
                                   "--trials", "1", "--study", "toy", "--out", str(toy_plugins / "sweep"),
                                   "--no-mlflow", "--no-progress"])
    assert res.exit_code == 0, res.output
    assert any((toy_plugins / "sweep").iterdir())


def test_plugin_reranker_in_a_served_models_policy(toy_plugins):
    from mlflow.exceptions import MlflowException

    from fairltr.deltr import DELTR
    from fairltr.fair.policy import parse_policy, request_param_types
    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking.models.pyfunc import FairltrRanker

    policy = parse_policy("toy-boost:strength=3,k=4")
    assert policy.describe() == "toy-boost:strength=3,k=4" and parse_policy(policy.describe()) == policy
    assert ("strength", "double") in request_param_types() and request_param_types()[:6] == [
        ("rerank", "string"), ("p", "double"), ("alpha", "double"), ("adjust", "boolean"), ("k", "long"),
        ("target", "string")]
    train, test = make_biased_rankings(4, 8, 0.3, seed=2)
    ranker = FairltrRanker.from_model(DELTR(gamma=0.0, max_iter=20).fit(train), policy="toy-boost:strength=10",
                                      overrides="all")
    out = ranker.predict(None, test)
    boosted = test.assign(s=ranker.model.predict(test) + 10.0 * (test["protected"] >= 1))
    want = boosted.groupby("query_id", sort=False)["s"].rank(ascending=False, method="first").astype("int64")
    np.testing.assert_array_equal(out["rank"].to_numpy(), want.to_numpy())  # the plugin's order, input row order
    assert out["fair_feasible"].all() and out.index.equals(test.index)
    plain = ranker.predict(None, test, params={"strength": 0.0})
    np.testing.assert_array_equal(plain["rank"].to_numpy(), ranker.predict(None, test, params={"rerank": "none"})["rank"])
    for params, needle in [({"strength": -1.0}, "strength must be >= 0"), ({"p": 0.3}, "not p (FA*IR's)")]:
        with pytest.raises(MlflowException) as err:
            ranker.predict(None, test, params=params)
        assert err.value.error_code == "INVALID_PARAMETER_VALUE" and needle in err.value.message
    recorded = FairltrRanker.from_model(ranker.model, policy="toy-boost:strength=2")
    with pytest.raises(MlflowException, match="not allowed by this model"):
        recorded.predict(None, test, params={"strength": 1.0})  # a recorded policy holds by default
