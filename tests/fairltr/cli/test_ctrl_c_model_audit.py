"""Ctrl-C during ``fairltr audit --model-uri models:/...`` while it logs to a real ``mlflow
server`` (issue 30): the real console script, interrupted by a real SIGINT (default handler
restored in the child) at delays spread over a complete run's duration (model download, scoring,
the bootstrap, the logging). Every interrupted command exits 130 within 2 s of the signal with the
one line ``interrupted`` on stderr; no MLflow run of the audit's experiment is left RUNNING (an
opened run ends KILLED), every artifact a run holds is byte for byte the complete file of the
output folder, and the model version is never tagged with a run that did not finish. Slow: each
command starts pandas and MLflow (3-4 s)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from fairltr import DELTR
from fairltr.monitoring import make_served_traffic

from interrupt_helpers import restore_sigint

pytestmark = pytest.mark.slow  # about 25 s: a registered model and four console-script runs

FAIRLTR = str(Path(sys.executable).with_name("fairltr"))
FILES = {"bias_audit.json", "bias_audit.csv", "bias_audit.html"}
COLS = ["query_id", "protected", "x1", "x2", "x3", "judgment"]


def _audit(uri: str, data: Path, model_uri: str, out: Path, experiment: str) -> subprocess.Popen:
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", MLFLOW_TRACKING_URI=uri)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return subprocess.Popen([FAIRLTR, "audit", "--data", str(data), "--model-uri", model_uri, "--query", "query_id",
                             "--group", "race", "--method", "scoring", "--ci", "0.95", "--n-boot", "300",
                             "--experiment", experiment, "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=restore_sigint)


def _check_runs(client, experiment: str, out: Path) -> list:
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id]) if exp is not None else []
    for run in runs:
        assert run.info.status in ("FINISHED", "KILLED"), (run.info.run_id, run.info.status)
        for art in client.list_artifacts(run.info.run_id):
            assert art.path in FILES, art.path
            got = Path(client.download_artifacts(run.info.run_id, art.path, str(out.parent / uuid.uuid4().hex)))
            assert got.read_bytes() == (out / art.path).read_bytes(), art.path  # a complete file, not half
    return runs


def _wait_for_open_run(client, experiment: str, proc: subprocess.Popen, timeout: float = 30.0) -> None:
    """Return once the audit's experiment holds a RUNNING run (or the command ended)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end and proc.poll() is None:
        exp = client.get_experiment_by_name(experiment)
        if exp is not None and client.search_runs([exp.experiment_id], "attributes.status = 'RUNNING'"):
            return
        time.sleep(0.01)


def test_ctrl_c_mid_model_audit_kills_its_run(mlflow_tracking, tmp_path):
    import mlflow

    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run

    train = make_served_traffic(2, 60, 20, biased_window=None, seed=2)
    train = train.assign(protected=(train["race"] == "Black").astype(int), judgment=train["hired"])
    model = DELTR(gamma=0.0, max_iter=20, colorblind=True).fit(train[COLS])
    name = f"ctrlc-audited-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-ctrl-c-model-audit-models")
    with mlflow.start_run() as run:
        log_ranker_into_run(run.info.run_id, model, train_df=train[COLS], register=name, title="audited ranker")
    held = make_served_traffic(2, 2000, 20, biased_window=None, seed=5)
    held.assign(protected=(held["race"] == "Black").astype(int)).to_csv(tmp_path / "held.csv", index=False)
    client = mlflow.MlflowClient()
    model_uri = f"models:/{name}/1"

    # one complete run: its duration places the signals; its run FINISHED and tagged the version
    out, experiment = tmp_path / "out0", f"ctrl-c-audit-{uuid.uuid4().hex[:8]}"
    start = time.monotonic()
    proc = _audit(mlflow_tracking, tmp_path / "held.csv", model_uri, out, experiment)
    _, stderr = proc.communicate(timeout=60)
    total = time.monotonic() - start
    assert proc.returncode == 0, stderr[-2000:]
    (done,) = _check_runs(client, experiment, out)
    assert done.info.status == "FINISHED"

    outcomes = []
    for i, fraction in enumerate((0.45, 0.8, None, None)):
        out, experiment = tmp_path / f"out{i + 1}", f"ctrl-c-audit-{uuid.uuid4().hex[:8]}"
        proc = _audit(mlflow_tracking, tmp_path / "held.csv", model_uri, out, experiment)
        if fraction is None:  # the signal as soon as the audit's run is open (while it logs)
            if any(code == 130 and runs for _, code, runs, _ in outcomes):
                break  # an opened run was already interrupted
            _wait_for_open_run(client, experiment, proc)
        else:
            time.sleep(fraction * total)
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=30)
        waited = time.monotonic() - sent
        if proc.returncode == 130:
            assert waited < 2.0, f"exit {waited:.2f} s after the SIGINT"
            assert stderr.strip().splitlines() == ["interrupted"], stderr[-2000:]
        else:
            assert proc.returncode == 0, stderr[-2000:]
        runs = _check_runs(client, experiment, out)
        if proc.returncode == 130:
            assert all(r.info.status == "KILLED" for r in runs), [r.info.status for r in runs]
        tagged = client.get_model_version(name, "1").tags.get("fairltr.bias_audit.run_id")
        assert tagged not in {r.info.run_id for r in runs if r.info.status == "KILLED"}
        outcomes.append((fraction, proc.returncode, len(runs), round(waited, 2)))
    print(f"complete run {total:.1f} s; (fraction, exit, runs, s to exit): {outcomes}")
    assert any(code == 130 for _, code, _, _ in outcomes), outcomes  # at least one signal came mid-audit
