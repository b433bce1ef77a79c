"""Helpers of the REST serving tests: POST a body, start ``mlflow models serve`` by hand, stop its
process group, find a version's files in the test server's artifact store. (Importable because
``conftest.py`` of this folder puts the folder on ``sys.path``.)"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

__all__ = ["post", "serve_directly", "kill_group", "stored"]


def post(url: str, payload, timeout: float = 60.0) -> tuple[int, dict]:
    data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
    req = urllib.request.Request(f"{url}/invocations", data=data, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        body = err.read()
        try:
            return err.code, json.loads(body or b"{}")
        except ValueError:
            return err.code, {"message": body.decode(errors="replace")}


def stored(server, name: str, version: str) -> Path:
    """The folder of a version's files inside the test server's artifact store."""
    import mlflow

    mv = mlflow.MlflowClient().get_model_version(name, version)
    location = mlflow.MlflowClient().get_logged_model(mv.source.split("/")[-1]).artifact_location
    folder = server.log_path.parent / "artifacts" / location[len("mlflow-artifacts:/"):]
    assert (folder / "MLmodel").is_file(), folder
    return folder


def serve_directly(model_uri: str, log: Path, *, workers: int = 1, env: dict | None = None,
                   timeout_s: float = 120.0, env_manager: str | None = "local") -> tuple[subprocess.Popen, str | None]:
    """``mlflow models serve`` started by hand (no fairltr check before it, unlike served_model), in
    its own process group, with ``--env-manager env_manager`` (None: MLflow's default): (process,
    base URL once /ping answers, or None when the server exited first)."""
    from fairltr.tracking.models.serving import _answers_ping, free_port

    port = free_port()
    server_env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
                  "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false", **(env or {})}
    cmd = [str(Path(sys.executable).with_name("mlflow")), "models", "serve", "-m", model_uri,
           *(["--env-manager", env_manager] if env_manager else []),
           "--host", "127.0.0.1", "-p", str(port), "--workers", str(workers)]
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, env=server_env, stdout=fh, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc, None
        if _answers_ping(url):
            return proc, url
        time.sleep(0.3)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    pytest.fail(f"mlflow models serve did not answer in {timeout_s} s: {log.read_text()[-2000:]}")


def kill_group(proc: subprocess.Popen, sig=signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except ProcessLookupError:
        pass
    proc.wait(timeout=30)
