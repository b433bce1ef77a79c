"""Tracking under failure: four concurrent first uses of a fresh SQLite store all succeed; losing
the tracking server mid-``train deltr`` fails fast with the model files on disk and one line
naming the run, which the next command ends FAILED once the server is back; credentials never
appear in what fairltr or MLflow print."""

from __future__ import annotations

import json
import logging
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from click.testing import CliRunner

from fairltr.cli import cli


def _env(**extra: str) -> dict[str, str]:
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", OMP_NUM_THREADS="1", **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for key in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):
        env.pop(key, None)
    return env


@pytest.fixture(scope="module")
def ranking_csvs(tiny_rankings, tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("failures")
    train, test = folder / "train.csv", folder / "test.csv"
    tiny_rankings[0].to_csv(train, index=False)
    tiny_rankings[1].to_csv(test, index=False)
    return train, test


def test_redaction_filter_cleans_log_records():
    from fairltr.tracking.runs.config import install_redaction

    install_redaction(("fairltr-test-redaction",))
    logger = logging.getLogger("fairltr-test-redaction")
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record):
            seen.append(record.getMessage())

    handler = Keep()
    logger.addHandler(handler)
    try:
        logger.warning("request to %s failed", "http://alice:SECRETPW@host:5000/api/2.0/runs")
    finally:
        logger.removeHandler(handler)
    assert seen == ["request to http://alice:***@host:5000/api/2.0/runs failed"]


@pytest.mark.slow
def test_four_concurrent_first_uses_of_a_fresh_sqlite_store(ranking_csvs, tmp_path):
    """The audit ran four ``fairltr train deltr`` on a new mlflow.db at once: 3-4 of 4 crashed
    (alembic "table ... already exists"). Now all four log their run."""
    import mlflow

    train, test = ranking_csvs
    exe = str(Path(sys.executable).with_name("fairltr"))
    db = tmp_path / "mlflow.db"
    uri = f"sqlite:///{db}"
    procs = [subprocess.Popen([exe, "train", "deltr", "--train", str(train), "--test", str(test), "--gamma", "0",
                               "--max-iter", "5", "--out", str(tmp_path / f"out{i}"), "--experiment", "first-use"],
                              cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=uri, FAIRLTR_STATE_DIR=str(tmp_path / "state")),
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for i in range(4)]
    outs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0, 0], outs
    assert not any("Traceback" in o for o in outs), outs
    assert (tmp_path / "mlflow.db.lock").exists()
    client = mlflow.MlflowClient(uri)
    runs = client.search_runs([client.get_experiment_by_name("first-use").experiment_id])
    assert len(runs) == 4 and {r.info.status for r in runs} == {"FINISHED"}
    import sqlite3

    with sqlite3.connect(db) as conn:
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]
    assert not [t for t in tables if t.startswith("_alembic_tmp")], tables


@pytest.mark.slow
def test_losing_the_server_mid_run_fails_fast_and_the_run_is_ended_later(ranking_csvs, tmp_path, monkeypatch):
    """The server dies while ``train deltr`` logs: the command ends in seconds with one error
    line, the model files are on disk and the message says where; the run cannot be ended
    then, so one line names it and how to mark it; once the server is back (same store, same
    URI) the next fairltr command against it ends the run FAILED."""
    import mlflow
    import mlflow_fixtures

    from fairltr.tracking.runs import config
    from fairltr.tracking.runs import life_cycle as runs
    from fairltr.tracking.job_logging import ranker_logging as tracking_logging

    work = tmp_path / "server"
    backend = f"sqlite:///{work / 'mlflow.db'}"
    server = mlflow_fixtures.start_mlflow_server(backend, work)
    servers = [server]
    try:
        state = tmp_path / "state"
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
        monkeypatch.setenv("FAIRLTR_STATE_DIR", str(state))
        for key in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):
            monkeypatch.delenv(key, raising=False)
        mlflow.set_tracking_uri(server.uri)
        original = tracking_logging.log_history

        def dying(*args, **kwargs):  # the server goes away after the run was created
            server.stop()
            return original(*args, **kwargs)

        monkeypatch.setattr(tracking_logging, "log_history", dying)
        train, test = ranking_csvs
        out = tmp_path / "out"
        started = time.monotonic()
        result = CliRunner().invoke(cli, ["train", "deltr", "--train", str(train), "--test", str(test), "--gamma", "0",
                                          "--max-iter", "5", "--out", str(out), "--experiment", "lost-server"])
        elapsed = time.monotonic() - started
        assert result.exit_code == 1, result.output
        assert "Traceback" not in result.output
        assert elapsed < 60, elapsed
        assert (out / "model.json").is_file()
        assert f"model files written to {out}" in result.output
        found = re.search(r"MLflow run ([0-9a-f]{32}) could not be marked FAILED", result.output)
        assert found, result.output
        run_id = found.group(1)
        assert f"fairltr mark-run {run_id} --status FAILED" in result.output
        assert "(connection refused)" in result.output
        errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and len(result.output.splitlines()) < 15, result.output
        pending = json.loads((state / "pending_run_ends.json").read_text())
        assert [(e["run_id"], e["status"]) for e in pending] == [(run_id, "FAILED")]
        assert server.uri not in json.dumps(pending).replace(f'"shown": "{server.uri}"', "")

        port = urlsplit(server.uri).port
        monkeypatch.setattr(mlflow_fixtures, "free_port", lambda: port)
        back = mlflow_fixtures.start_mlflow_server(backend, work)
        servers.append(back)
        assert back.uri == server.uri
        client = mlflow.MlflowClient(back.uri)
        assert client.get_run(run_id).info.status == "RUNNING"  # as the lost server left it
        runs._SETTLED.discard(back.uri)  # a new process: the next fairltr command
        config.configure()
        assert client.get_run(run_id).info.status == "FAILED"
        assert json.loads((state / "pending_run_ends.json").read_text()) == []
        marked = CliRunner().invoke(cli, ["mark-run", run_id])
        assert marked.exit_code == 0 and "is FAILED; left as it is" in marked.output
    finally:
        for s in servers:
            s.stop()


def test_mark_run_ends_a_running_run(mlflow_tracking, tmp_path, monkeypatch):
    import mlflow

    from fairltr.tracking.runs.life_cycle import record_pending_end

    monkeypatch.setenv("FAIRLTR_STATE_DIR", str(tmp_path / "state"))
    client = mlflow.MlflowClient()
    exp = client.get_experiment_by_name("test-mark-run") or client.get_experiment(client.create_experiment("test-mark-run"))
    run = client.create_run(exp.experiment_id)
    record_pending_end(mlflow_tracking, run.info.run_id, "FAILED")
    result = CliRunner().invoke(cli, ["mark-run", run.info.run_id, "--status", "killed"])
    assert result.exit_code == 0 and "RUNNING -> KILLED" in result.output, result.output
    assert client.get_run(run.info.run_id).info.status == "KILLED"
    assert json.loads((tmp_path / "state" / "pending_run_ends.json").read_text()) == []
    bad = CliRunner().invoke(cli, ["mark-run", "0" * 32])
    assert bad.exit_code == 1 and "Traceback" not in bad.output


def test_credentials_never_printed(mlflow_server, mlflow_tracking, ranking_csvs, tmp_path):
    """``MLFLOW_TRACKING_URI=http://alice:SECRETPW@...``: the password appears nowhere in the
    output of a tracked, registering ``train deltr`` run with MLflow's own logging on
    (--verbose), nor in the error for an unreachable server."""
    train, test = ranking_csvs
    parts = urlsplit(mlflow_server.uri)
    secret_uri = f"http://alice:SECRETPW@{parts.hostname}:{parts.port}"
    exe = str(Path(sys.executable).with_name("fairltr"))
    proc = subprocess.run([exe, "--verbose", "train", "deltr", "--train", str(train), "--test", str(test),
                           "--gamma", "0", "--max-iter", "5", "--out", str(tmp_path / "out"), "--experiment",
                           "test-redaction", "--register", "redaction-model"],
                          cwd=tmp_path, env=_env(MLFLOW_TRACKING_URI=secret_uri, FAIRLTR_STATE_DIR=str(tmp_path),
                                                 MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT="false"),
                          capture_output=True, text=True, timeout=600)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text
    assert "SECRETPW" not in text
    assert f"http://alice:***@{parts.hostname}:{parts.port}" in text
    import mlflow

    dead_uri = "http://bob:HUNTER2@127.0.0.1:9"
    mlflow.set_tracking_uri(dead_uri)  # the fixture restores the tracking URI afterwards
    dead = CliRunner().invoke(cli, ["promote", "--model", "x", "--version", "1", "--gate", "exposure_ratio>=0"],
                              env={"MLFLOW_TRACKING_URI": dead_uri})
    assert dead.exit_code == 1 and "HUNTER2" not in dead.output and "bob:***@" in dead.output, dead.output
