"""Ctrl-C while ``fairltr train deltr --register`` logs and registers (issue 29, item 8).

The real console script against a real ``mlflow server`` (SQLite) and against a local SQLite store,
interrupted by a real SIGINT at moments found by polling the store (the run appears, its model is
logged, its version appears) and at fixed delays into the logging. Every interrupted command exits
130 within 2 s with the one line ``interrupted`` (no traceback, no "database is locked"), its run
ends KILLED, and it leaves no registry version behind; every version in the registry carries
its digest. A command the signal reaches after it completed exits 0 with its work done.

Slow: each command starts torch, pandas and MLflow (5-10 s); the default suite keeps two.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from interrupt_helpers import restore_sigint

FAIRLTR = str(Path(sys.executable).with_name("fairltr"))
LIMIT_S = 2.0  # Ctrl-C to exit


@pytest.fixture(scope="module")
def ranking_files(tmp_path_factory):
    from fairltr.synthetic import make_biased_rankings

    folder = tmp_path_factory.mktemp("ctrl-c-data")
    train, test = make_biased_rankings(20, 8, 0.3, seed=0)
    train.to_csv(folder / "train.csv", index=False)
    test.to_csv(folder / "test.csv", index=False)
    return folder


def _env(uri: str) -> dict[str, str]:
    env = dict(os.environ, MLFLOW_TRACKING_URI=uri, MLFLOW_DISABLE_TELEMETRY="true", PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MLFLOW_RUN_ID", None)
    return env


def _start(files: Path, out: Path, uri: str, experiment: str, model: str, log: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [FAIRLTR, "train", "deltr", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
         "--gamma", "10", "--out", str(out), "--experiment", experiment, "--register", model],
        stdout=subprocess.DEVNULL, stderr=log.open("w"), env=_env(uri), preexec_fn=restore_sigint)


def _wait_for(proc: subprocess.Popen, ready, timeout: float = 120.0) -> bool:
    """Poll ``ready()`` until true (True) or the command ends first (False)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            if ready():
                return True
        except Exception:  # the experiment does not exist yet
            pass
        time.sleep(0.05)
    raise AssertionError("the moment never came")


def _logging_started(log: Path):
    return lambda: "logging to MLflow" in log.read_text()


def _interrupt(proc: subprocess.Popen, log: Path) -> tuple[int, float, list[str]]:
    """SIGINT, then (exit code, seconds to exit, stderr lines after fairltr's own progress line)."""
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        code = proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise AssertionError(f"still running 60 s after Ctrl-C:\n{log.read_text()}")
    took = time.monotonic() - t0
    lines = [ln for ln in log.read_text().splitlines() if ln.strip() and "logging to MLflow" not in ln]
    return code, took, lines


def _check(client, experiment: str, model: str, code: int, took: float, lines: list[str], log: Path) -> str:
    """The outcome is clean: interrupted (130, one line, run KILLED, no version of it) or, when the
    signal came after the work, finished (0, run FINISHED, its version with digest). Returns which."""
    text = log.read_text()
    assert "Traceback" not in text and "database is locked" not in text, text
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id]) if exp is not None else []
    statuses = [r.info.status for r in runs]
    versions = [v for v in client.search_model_versions(f"name = '{model}'")] if _registered(client, model) else []
    for v in versions:  # every version in the registry carries its digest from its creation
        assert "fairltr.digest" in v.tags, (v.version, v.tags)
    ours = [v for v in versions if any(v.run_id == r.info.run_id for r in runs)]
    if code == 0:
        assert statuses == ["FINISHED"] and len(ours) == 1, (statuses, ours, text)
        assert "No promotion decision yet" in (ours[0].description or "")
        return "finished"
    assert code == 130 and lines == ["interrupted"], (code, text)
    assert took < LIMIT_S, f"exit {took:.2f} s after Ctrl-C"
    assert statuses in ([], ["KILLED"]), statuses
    assert not ours, [(v.version, v.run_id) for v in ours]  # withdrawn with the KILLED run
    return "interrupted"


def _registered(client, model: str) -> bool:
    from mlflow.exceptions import MlflowException

    try:
        client.get_registered_model(model)
        return True
    except MlflowException:
        return False


def _runs(client, experiment: str):
    exp = client.get_experiment_by_name(experiment)
    return client.search_runs([exp.experiment_id]) if exp is not None else []


def _moments(client, experiment: str, model: str):
    """Polls for the moments of the logging a Ctrl-C is sent at."""
    def run_created():
        return bool(_runs(client, experiment))

    def params_logged():
        runs = _runs(client, experiment)
        return bool(runs) and bool(runs[0].data.params)

    def inputs_logged():
        runs = _runs(client, experiment)
        return bool(runs) and bool(runs[0].inputs.dataset_inputs)

    def model_logged():
        exp = client.get_experiment_by_name(experiment)
        return exp is not None and bool(client.search_logged_models([exp.experiment_id]))

    def version_created():  # one request a poll: the server is the command's too
        return bool(client.search_model_versions(f"name = '{model}'"))

    return {"run created": run_created, "params logged": params_logged, "inputs logged": inputs_logged,
            "model logged": model_logged, "version created": version_created}


def _attempt(ranking_files, tmp_path, uri: str, moment: str | float, model: str) -> str:
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    experiment = f"ctrl-c-{uuid.uuid4().hex[:8]}"
    log = tmp_path / f"{experiment}.log"
    proc = _start(ranking_files, tmp_path / experiment, uri, experiment, model, log)
    try:
        if isinstance(moment, str):
            reached = _wait_for(proc, _moments(client, experiment, model)[moment])
        else:
            reached = _wait_for(proc, _logging_started(log))
            time.sleep(moment)
        if not reached and proc.returncode != 0:
            raise AssertionError(log.read_text())
        code, took, lines = _interrupt(proc, log)
        outcome = _check(client, experiment, model, code, took, lines, log)
        print(f"Ctrl-C at {moment!r}: {outcome}, exit {code} after {took:.2f} s")
        return outcome
    finally:
        if proc.poll() is None:
            proc.kill()


def test_ctrl_c_once_the_version_is_registered_withdraws_it(ranking_files, tmp_path, mlflow_server):
    outcome = _attempt(ranking_files, tmp_path, mlflow_server.uri, "version created", f"cc-{uuid.uuid4().hex[:6]}")
    assert outcome in ("interrupted", "finished")


def test_ctrl_c_inside_a_local_sqlite_transaction_is_one_line(ranking_files, tmp_path):
    """The SIGINT is sent from inside SQLAlchemy's reset of a connection on its way back to the
    pool, while the run logs (the clean-up that, cut, printed "Exception during reset or similar"
    and its traceback)."""
    driver = tmp_path / "driver.py"
    driver.write_text(
        "import os, signal, sys\n"
        "from sqlalchemy import event\n"
        "from sqlalchemy.pool import Pool\n"
        "seen = []\n"
        "def reset(*args, **kwargs):\n"
        "    if 'mlflow' not in sys.modules or sys.modules['mlflow'].active_run() is None:\n"
        "        return  # the store's creation, before the run: count the logging's resets only\n"
        "    seen.append(1)\n"
        "    if len(seen) == int(os.environ['RESET_NUMBER']):\n"
        "        os.kill(os.getpid(), signal.SIGINT)\n"
        "event.listen(Pool, 'reset', reset)\n"
        "from fairltr.cli import main\n"
        "main(sys.argv[1:])\n")
    db = tmp_path / "mlflow.db"
    for n in (3,):  # one command (a fresh store costs 6-8 s); the slow test covers more moments
        log = tmp_path / f"reset{n}.log"
        proc = subprocess.run(
            [sys.executable, str(driver), "train", "deltr", "--train", str(ranking_files / "train.csv"), "--test",
             str(ranking_files / "test.csv"), "--gamma", "10", "--out", str(tmp_path / f"out{n}"), "--register", "cc"],
            stderr=log.open("w"), stdout=subprocess.DEVNULL, env={**_env(f"sqlite:///{db}"), "RESET_NUMBER": str(n)},
            preexec_fn=restore_sigint, timeout=300)
        text = log.read_text()
        lines = [ln for ln in text.splitlines() if ln.strip() and "logging to MLflow" not in ln]
        assert proc.returncode == 130 and lines == ["interrupted"], text
        with sqlite3.connect(db) as con:
            assert [s for (s,) in con.execute("select status from runs")] == ["KILLED"]


@pytest.mark.slow  # ~10 commands of 5-10 s
@pytest.mark.parametrize("store", ["server", "sqlite"])
def test_ctrl_c_at_every_moment_of_logging_and_registration(ranking_files, tmp_path, mlflow_server, store):
    uri = mlflow_server.uri if store == "server" else f"sqlite:///{tmp_path / 'mlflow.db'}"
    if store == "sqlite":  # the store exists before the commands and the polls use it
        from mlflow import MlflowClient

        MlflowClient(uri).search_experiments()
    model = f"cc-{store}-{uuid.uuid4().hex[:6]}"
    moments: list[str | float] = ["run created", "params logged", "inputs logged", "model logged", "version created",
                                  0.3, 0.8, 1.3, 1.8]
    outcomes = [_attempt(ranking_files, tmp_path, uri, m, model) for m in moments]
    assert outcomes.count("interrupted") >= len(moments) // 2, outcomes
