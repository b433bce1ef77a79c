"""``mlflow models serve`` as a context manager: start the REST server on a logged or registered
model, wait until it answers ``/ping``, yield its base URL, and stop it (its whole process group)
on exit, also when the body raises or is interrupted.

    with served_model("models:/ranker/1") as url:
        urllib.request.urlopen(f"{url}/invocations", data=...)

The server runs in this Python's environment (``--env-manager local``, the default), with this
Python's ``bin`` folder first on ``PATH`` (``mlflow models serve`` starts ``uvicorn`` by name), in a
new session, so that stopping it also stops its workers; ``env_manager="virtualenv"`` (or ``"uv"``)
lets MLflow build the model's own environment from its requirements (minutes the first time).

Verified first: a ``models:/`` or ``runs:/`` URI is downloaded and checked against the tracking
store's digest in THIS process (:func:`~fairltr.tracking.models.verify.fetch_verified`), and the
verified local copy is what MLflow serves, so nothing of a changed version runs, whatever env
manager builds its environment (MLflow reads MLmodel and installs requirements.txt before any
model code runs); inside the server fairltr's loader checks the same digest again
(:mod:`~fairltr.tracking.models.verified_loader`). A local folder is left to that loader.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

__all__ = ["served_model", "free_port", "ServerFailed"]


class ServerFailed(RuntimeError):
    """``mlflow models serve`` exited or did not answer ``/ping`` in time; the message names the
    model and ends with the tail of the server's log."""


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free on ``host`` now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _answers_ping(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/ping", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # a process of the group exists but is not ours to signal
        return True
    return True


def _stop(proc: subprocess.Popen, grace_s: float = 20.0) -> None:
    """SIGTERM to the server's process group, SIGKILL to the group when any of its processes (the
    server or a worker still draining its requests and holding the port) is alive after
    ``grace_s``; returns once the main process is reaped and the whole group is gone."""
    pgid = proc.pid  # start_new_session: the server leads its own group
    try:
        os.killpg(pgid, signal.SIGTERM)
    except ProcessLookupError:
        proc.wait()
        return
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            return
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
    while _group_alive(pgid) and time.monotonic() < deadline + 5.0:  # SIGKILLed workers: reaped by init
        time.sleep(0.05)


@contextmanager
def served_model(model_uri: str, port: int | None = None, *, host: str = "127.0.0.1", workers: int = 1,
                 tracking_uri: str | None = None, start_timeout_s: float = 120.0,
                 log_path: str | Path | None = None, env: Mapping[str, str] | None = None,
                 env_manager: str = "local", allow_unverified: bool = False) -> Iterator[str]:
    """Serve ``model_uri`` (``models:/NAME/1``, ``runs:/...``, a local folder) on ``host``:``port``
    (default: a free port) with ``workers`` workers and yield ``http://host:port`` once ``/ping``
    answers 200. ``tracking_uri`` (default: ``MLFLOW_TRACKING_URI`` of ``env`` / this process's
    tracking URI) resolves ``models:/`` URIs and the digests; ``env`` is the server's environment
    (default: this process's). The server's output goes to ``log_path`` (default: a temporary
    file, removed on exit). ``env_manager``: ``local``, ``virtualenv``, ``uv`` or ``conda``.

    Raises :class:`~fairltr.tracking.models.digests.ModelRejected` (before any server starts) for
    a ``models:/`` / ``runs:/`` version that does not match its recorded digest (or has none,
    unless ``allow_unverified``), and :class:`ServerFailed` when the server exits before answering
    or does not answer within ``start_timeout_s`` seconds. On exit the server's process group is
    stopped (SIGTERM, then SIGKILL after 20 s)."""
    port = free_port(host) if port is None else int(port)
    bindir = str(Path(sys.executable).parent)
    server_env = dict(os.environ if env is None else env)
    server_env["PATH"] = f"{bindir}{os.pathsep}{server_env.get('PATH', '')}"
    server_env.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")  # a readable server log
    tracking_uri = tracking_uri or server_env.get("MLFLOW_TRACKING_URI") or _current_tracking_uri()
    if tracking_uri is not None:
        server_env["MLFLOW_TRACKING_URI"] = tracking_uri
    with tempfile.TemporaryDirectory(prefix="fairltr-serve-") as tmp:
        source = _verified_copy(str(model_uri), Path(tmp) / "model", tracking_uri, allow_unverified)
        command = [str(Path(sys.executable).with_name("mlflow")), "models", "serve", "-m", source,
                   "--env-manager", env_manager, "--host", host, "-p", str(port), "--workers", str(workers)]
        log_file = Path(log_path) if log_path is not None else Path(tmp) / "serve.log"
        with log_file.open("w") as log:
            proc = subprocess.Popen(command, env=server_env, stdout=log, stderr=subprocess.STDOUT,
                                    start_new_session=True)
            try:
                url = f"http://{host}:{port}"
                _wait_until_up(proc, url, model_uri, log_file, start_timeout_s)
                yield url
            finally:
                _stop(proc)


def _current_tracking_uri() -> str | None:
    import mlflow

    return mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None


def _verified_copy(model_uri: str, dst: Path, tracking_uri: str | None, allow_unverified: bool) -> str:
    """The local folder to serve: a verified download of a ``models:/`` or ``runs:/`` URI (its
    ``registered_model_meta`` names the version for the server's loader), else ``model_uri``."""
    if not model_uri.startswith(("models:/", "runs:/")):
        return model_uri
    import mlflow

    from fairltr.tracking.models.verify import fetch_verified

    client = mlflow.MlflowClient(tracking_uri) if tracking_uri else None
    return str(fetch_verified(model_uri, dst, allow_unverified=allow_unverified, client=client).path)


def _wait_until_up(proc: subprocess.Popen, url: str, model_uri: str, log_file: Path, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not _answers_ping(url):
        if proc.poll() is not None:
            raise ServerFailed(f"mlflow models serve of {model_uri} exited with status {proc.returncode}; "
                               f"its log ends:\n{_tail(log_file)}")
        if time.monotonic() > deadline:
            raise ServerFailed(f"mlflow models serve of {model_uri} did not answer {url}/ping in {timeout_s:g} s; "
                               f"its log ends:\n{_tail(log_file)}")
        time.sleep(0.5)


def _tail(path: Path, chars: int = 2000) -> str:
    try:
        return path.read_text(errors="replace")[-chars:]
    except OSError:
        return "(no log)"
