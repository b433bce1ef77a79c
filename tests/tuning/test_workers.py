"""Worker processes: resume after a killed worker (SQLite), and two workers on one PostgreSQL
study (skipped unless FAIRLTR_TEST_POSTGRES_URI is set)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
import warnings
from pathlib import Path

import optuna
import pytest
from click.testing import CliRunner
from mlflow import MlflowClient
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState

from fairltr.cli import cli
from interrupt_helpers import restore_sigint
from tuning.study import make_storage
from fairltr.tracking import PARENT_ATTR

HELPER = Path(__file__).with_name("_slow_worker.py")
COMPLETE = (TrialState.COMPLETE,)


def sweep_args(files, out, storage, study, n, mlflow_uri, experiment):
    return ["sweep", "--method", "deltr", "--train", str(files[0]), "--test", str(files[1]), "--out", str(out),
            "--study", study, "--trials", str(n), "--storage", storage, "--tracking-uri", mlflow_uri,
            "--experiment", experiment, "--heartbeat-interval", "1", "--grace-period", "3", "--max-iter", "30",
            "--no-progress"]


def start_worker(args, delay, log: Path, **barrier: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", MLFLOW_DISABLE_TELEMETRY="true", **barrier)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.Popen([sys.executable, str(HELPER), str(delay), *args], stdout=log.open("w"),
                            stderr=subprocess.STDOUT, env=env, preexec_fn=restore_sigint)  # Ctrl-C tests


def nested_trials(uri, parent) -> list[int]:
    client = MlflowClient(uri)
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    return sorted(int(r.data.tags["fairltr.sweep.trial"]) for r in runs)


def wait_for_trials(proc, log: Path, storage: str, study_name: str, ready, timeout: float = 120.0):
    """Poll the study while the worker runs until ``ready(trials)``; return the study."""
    study = None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        assert proc.poll() is None, log.read_text()
        try:
            study = study or optuna.load_study(study_name=study_name, storage=storage)
        except KeyError:
            continue
        if ready(study.get_trials()):
            return study
    pytest.fail("the worker did not get going: " + log.read_text())


@pytest.mark.slow  # about 14 s: a worker killed mid-trial, the study resumed by a second
def test_resume_after_killed_worker(ranking_files, tmp_path, mlflow_sqlite):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    n = 7
    args = sweep_args(ranking_files, tmp_path / "out", storage, "resume", n, mlflow_sqlite, "tuning-resume")
    proc = start_worker(args, 0.5, tmp_path / "worker.log")
    def started(trials) -> bool:
        done = [t for t in trials if t.state == TrialState.COMPLETE]
        running = [t for t in trials if t.state == TrialState.RUNNING]
        return len(done) >= 3 and bool(running) and (time.time() - running[0].datetime_start.timestamp()) > 0.1

    try:
        study = wait_for_trials(proc, tmp_path / "worker.log", storage, "resume", started)
    finally:
        proc.kill()  # SIGKILL: a crash, nothing can clean up
        proc.wait()
    before = {t.number: t.values for t in study.get_trials(states=COMPLETE)}
    killed = [t.number for t in study.get_trials(states=(TrialState.RUNNING,))]
    assert len(before) >= 3 and len(killed) == 1

    res = CliRunner().invoke(cli, args, catch_exceptions=False)  # the same command again
    assert res.exit_code == 0, res.output
    assert "resumed" in res.output
    study = optuna.load_study(study_name="resume", storage=storage)  # fresh: no cached RUNNING copies
    trials = study.get_trials()
    after = {t.number: t.values for t in trials if t.state == TrialState.COMPLETE}
    assert len(after) == n
    assert all(after[k] == v for k, v in before.items())  # no finished trial lost or redone
    assert trials[killed[0]].state == TrialState.FAIL  # the stale trial was failed by heartbeat ...
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retried = [t for t in trials if RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == killed[0]]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE  # ... and retried with its params
    assert retried[0].params == trials[killed[0]].params
    assert nested_trials(mlflow_sqlite, study.user_attrs[PARENT_ATTR]) == sorted(after)


@pytest.mark.slow  # ~20 s (a second worker process); the SIGKILL resume test covers crash safety by default
def test_ctrl_c_fails_only_the_running_trial(ranking_files, tmp_path, mlflow_sqlite):
    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    args = sweep_args(ranking_files, tmp_path / "out", storage, "ctrl-c", 50, mlflow_sqlite, "tuning-ctrl-c")
    proc = start_worker(args, 0.5, tmp_path / "worker.log")
    try:
        wait_for_trials(proc, tmp_path / "worker.log", storage, "ctrl-c",
                        lambda trials: sum(t.state == TrialState.COMPLETE for t in trials) >= 2
                        and any(t.state == TrialState.RUNNING for t in trials))
        proc.send_signal(signal.SIGINT)  # Ctrl-C
        assert proc.wait(timeout=60) == 130, (tmp_path / "worker.log").read_text()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert "interrupted" in (tmp_path / "worker.log").read_text()
    trials = optuna.load_study(study_name="ctrl-c", storage=storage).get_trials()
    states = [t.state for t in trials]
    assert TrialState.RUNNING not in states  # the interrupted trial is FAIL at once, not stale
    assert states.count(TrialState.FAIL) == 1 and states.count(TrialState.COMPLETE) >= 2


@pytest.mark.postgres
def test_two_workers_share_one_postgres_study(ranking_files, tmp_path, optuna_postgres_uri, mlflow_sqlite):
    postgres_uri = optuna_postgres_uri
    study_name = f"pg-{uuid.uuid4().hex[:8]}"
    n = 8
    args = sweep_args(ranking_files, tmp_path / "out", postgres_uri, study_name, n, mlflow_sqlite, "tuning-pg")
    go = tmp_path / "go"
    ready = [tmp_path / f"ready{i}" for i in range(2)]
    procs = [start_worker(args, 0.3, tmp_path / f"w{i}.log", SWEEP_TEST_READY=str(ready[i]), SWEEP_TEST_GO=str(go))
             for i in range(2)]
    try:
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready):  # both imported: release them together
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers did not start"
            time.sleep(0.05)
        go.touch()
        for p in procs:
            p.wait(timeout=240)
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    logs = [(tmp_path / f"w{i}.log").read_text() for i in range(2)]
    assert [p.returncode for p in procs] == [0, 0], "\n---\n".join(logs)
    study = optuna.load_study(study_name=study_name, storage=make_storage(postgres_uri))
    trials = study.get_trials()
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    assert len(complete) == n  # exactly N, not more
    assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
    workers = {t.user_attrs["worker"] for t in complete}
    assert len(workers) == 2, f"both workers should have completed trials: {workers}"
    params = [t.params["gamma"] for t in complete]
    assert len(set(params)) == n  # no duplicated proposals
    assert sum("created" in log for log in logs) == 1 and sum("resumed" in log for log in logs) == 1
    assert nested_trials(mlflow_sqlite, study.user_attrs[PARENT_ATTR]) == sorted(t.number for t in complete)
