"""The serving settings recorded with a logged ranker (``--serve-overrides``, ``--decision-log``: CLI
options -> ``TrackingOptions`` -> ``log_ranker_into_run`` -> the model config), and ``fairltr
monitor --decision-log`` reading a log written without a server."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import click
import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.errors import ConfigError


def _options_of(args: list[str]):
    """The TrackingOptions a ranker command would build from ``args``."""
    from fairltr.cli.options import tracking_from, tracking_options

    seen = {}

    @click.command()
    @tracking_options("exp", register=True, serve_rerank=True)
    def cmd(experiment, no_track, register, serve_rerank):
        seen["options"] = tracking_from(experiment, no_track, register, serve_rerank=serve_rerank)

    res = CliRunner().invoke(cmd, args, standalone_mode=False, catch_exceptions=True)
    if res.exception is not None:
        raise res.exception
    return seen["options"]


def test_cli_options_reach_tracking_options_checked_and_normalised(tmp_path):
    opts = _options_of(["--serve-rerank", "fair:p=0.3", "--serve-overrides", "k,P", "--decision-log", str(tmp_path / "d")])
    assert (opts.serve_rerank, opts.serve_overrides, opts.decision_log) == (
        "fair:p=0.3,alpha=0.1,adjust=true", "p,k", str(tmp_path / "d"))
    plain = _options_of([])
    assert (plain.serve_overrides, plain.decision_log) == (None, None)  # the defaults are the logger's
    for args, needle in [(["--serve-overrides", "zap"], "not among"),
                         (["--serve-overrides", "p", "--no-track"], "drop --no-track"),
                         (["--decision-log", "x", "--no-track"], "drop --no-track"),
                         (["--decision-log", "postgresql://u:pw@h/db"], "may not hold a password")]:
        with pytest.raises(ConfigError, match=needle):
            _options_of(args)


def test_log_ranker_into_run_records_the_settings_in_the_model_and_the_run(mlflow_tracking, tiny_rankings, tmp_path):
    import mlflow

    from fairltr import DELTR
    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run

    train, test = tiny_rankings
    model = DELTR(gamma=0.0, max_iter=5).fit(train)
    name = f"options-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-serving-options")
    with mlflow.start_run() as run:
        info = log_ranker_into_run(run.info.run_id, model, train_df=train, register=name, title="t",
                                   serve_rerank="fair:p=0.4,alpha=0.1,adjust=true", serve_overrides="p",
                                   decision_log=str(tmp_path / "log"))
    config = mlflow.models.get_model_info(info.model_uri).flavors["python_function"]["config"]
    assert (config["serve_overrides"], config["decision_log"]) == ("p", str(tmp_path / "log"))
    params = mlflow.MlflowClient().get_run(run.info.run_id).data.params
    assert params["serve_overrides"] == "p" and params["decision_log"] == str(tmp_path / "log")
    mv = mlflow.MlflowClient().get_model_version(name, str(info.registered_model_version))
    assert "request overrides allowed: p" in mv.description
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    assert set(loaded.predict(test, params={"p": 0.5})["policy"]) == {"fair:p=0.5,alpha=0.1,adjust=true"}
    with pytest.raises(Exception, match="allowed overrides: p"):
        loaded.predict(test, params={"k": 3})
    assert len(pd.read_parquet(next((tmp_path / "log").rglob("*.parquet")))) == len(test)


def _log_with_traffic(root: Path) -> pd.DataFrame:
    """A decision log of 40 one-query requests (protected candidates ranked low), written by hand."""
    from fairltr.fair.policy import parse_policy
    from fairltr.tracking.models.decision_log import DecisionContext, decision_records, open_decision_log

    rng = np.random.default_rng(0)
    log = open_decision_log(str(root))
    ctx = DecisionContext("m", "1", "sha256:" + "0" * 64, "query_id", None, ("protected",))
    frames = []
    for i in range(40):
        frame = pd.DataFrame({"query_id": np.full(10, i % 7), "protected": rng.integers(0, 2, 10)})
        rank = np.argsort(np.argsort(frame["protected"].to_numpy() + rng.random(10))) + 1
        served = pd.DataFrame({"score": -rank.astype(float), "rank": rank})
        t = pd.Timestamp("2026-05-04", tz="UTC") + pd.Timedelta(hours=4 * i)  # 40 requests over 7 days
        log.append(decision_records(frame, served, parse_policy(None), ctx, f"r{i}", t))
        frames.append(frame.assign(rank=rank, request=i, t=t))
    return pd.concat(frames, ignore_index=True)


def test_monitor_reads_a_decision_log_one_ranking_per_request(tmp_path):
    from fairltr.cli import cli

    served = _log_with_traffic(tmp_path / "log")
    out = tmp_path / "monitor"
    res = CliRunner().invoke(cli, ["monitor", "--decision-log", str(tmp_path / "log"), "--window", "1d", "--group",
                                   "protected", "--k", "3", "--ci", "0", "--no-track", "--out", str(out)])
    assert res.exit_code == 0, res.output
    windows = pd.read_csv(out / "windows.csv")
    assert len(windows) == 7 and windows["n_queries"].sum() == 40  # query ids repeat: 40 served rankings, not 7
    for _, w in windows.iterrows():  # the impact ratio of each day, recomputed from what was written
        day = served[served["t"].dt.tz_convert(None).dt.floor("D") == pd.Timestamp(w["window_start"]).floor("D")]
        rates = day.assign(top=day["rank"] <= 3).groupby("protected")["top"].mean()
        assert w["impact_ratio_at_3"] == pytest.approx(rates.min() / rates.max(), abs=1e-12)
    assert json.loads((out / "monitor.json").read_text())["data"] == f"decision log {tmp_path / 'log'}"
    for args, needle in [(["--data", "x.csv", "--decision-log", str(tmp_path / "log")], "not both"),
                         ([], "give --data"),
                         (["--decision-log", str(tmp_path / "log"), "--time-column", "served_at"], "columns are fixed")]:
        res = CliRunner().invoke(cli, ["monitor", *args, "--window", "1d", "--group", "protected", "--no-track",
                                       "--out", str(out)])
        assert res.exit_code != 0 and needle in res.output, res.output
    res = CliRunner().invoke(cli, ["monitor", "--decision-log", str(tmp_path / "log"), "--window", "1d", "--group",
                                   "race", "--no-track", "--out", str(out)])
    assert res.exit_code != 0 and "no group values for ['race']" in res.output and "protected" in res.output
