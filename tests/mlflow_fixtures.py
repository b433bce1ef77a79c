"""Service fixtures: a real ``mlflow server`` (SQLite backend, one per test session) and a
PostgreSQL-backed variant (``FAIRLTR_TEST_POSTGRES_URI``; skipped when unset; a fresh schema in the service's database
per session). Imported by ``tests/conftest.py`` with ``from mlflow_fixtures import *``.

Each server runs in its own process group (``start_new_session=True``) and is stopped by
signalling the whole group, so no job worker outlives the session; job execution is disabled
too (``MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false``).
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator
from urllib.parse import urlsplit, urlunsplit

import pytest

__all__ = [
    "MlflowServer", "start_mlflow_server", "free_port",
    "running_runs", "mlflow_server", "mlflow_postgres_server", "postgres_uri", "optuna_postgres_uri", "fresh_postgres_database", "mlflow_tracking", "mlflow_tracking_module", "tiny_rankings",
]

SERVER_START_TIMEOUT = float(os.environ.get("FAIRLTR_TEST_MLFLOW_START_TIMEOUT", "180"))


def running_runs(db: Path) -> int:
    """How many runs of the local SQLite MLflow store ``db`` are RUNNING (0 without a store)."""
    import sqlite3

    if not Path(db).exists():
        return 0
    with sqlite3.connect(db) as con:
        try:
            return con.execute("SELECT count(*) FROM runs WHERE status = 'RUNNING'").fetchone()[0]
        except sqlite3.OperationalError:  # the store was never created
            return 0


def free_port() -> int:
    """A currently free loopback TCP port."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class MlflowServer:
    """A running ``mlflow server``: its URI, backend and process (leader of its own group)."""

    uri: str
    backend_uri: str
    process: subprocess.Popen
    log_path: Path

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return "(no log)"

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the process group, then SIGKILL whatever is left after ``grace`` seconds."""
        if self.process.poll() is not None:
            return
        pgid = self.process.pid  # start_new_session=True: the server leads its own group
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(pgid, signal.SIGKILL)  # also reaps workers that ignored SIGTERM
        except ProcessLookupError:
            pass
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass


def _healthy(uri: str) -> bool:
    try:
        with urllib.request.urlopen(f"{uri}/health", timeout=2) as resp:
            return resp.status == 200
    except (urllib.error.URLError, ConnectionError, TimeoutError, OSError):
        return False


def start_mlflow_server(backend_uri: str, workdir: Path, timeout: float = SERVER_START_TIMEOUT) -> MlflowServer:
    """Start ``mlflow server`` on a free loopback port with proxied artifacts under ``workdir``
    and wait for ``/health``; raise with the server's log tail when it does not come up."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    cmd = [str(mlflow_bin) if mlflow_bin.exists() else "mlflow", "server",
           "--backend-store-uri", backend_uri,
           "--artifacts-destination", str(workdir / "artifacts"),
           "--host", "127.0.0.1", "--port", str(port), "--workers", "1"]
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false", MLFLOW_DISABLE_TELEMETRY="true")
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)  # 3x slower imports otherwise
    log_path = workdir / "server.log"
    log = open(log_path, "wb")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=workdir, env=env,
                            start_new_session=True)
    log.close()
    server = MlflowServer(f"http://127.0.0.1:{port}", backend_uri, proc, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {proc.returncode}:\n{server.log_tail()}")
        if _healthy(server.uri):
            return server
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"mlflow server not healthy after {timeout:.0f} s:\n{server.log_tail()}")


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory) -> Iterator[MlflowServer]:
    """One real ``mlflow server`` with a SQLite backend for the whole test session."""
    work = tmp_path_factory.mktemp("mlflow-server")
    server = start_mlflow_server(f"sqlite:///{work / 'mlflow.db'}", work)
    try:
        yield server
    finally:
        server.stop()


SERVICE_DATABASES = {"mlflow": "fairltr_mlflow", "optuna": "fairltr_optuna"}


@contextmanager
def fresh_postgres_database(prefix: str = "fairltr_test") -> Iterator[str]:
    """A fresh, empty schema in the service's own database on the server named by
    ``FAIRLTR_TEST_POSTGRES_URI`` (``fairltr_mlflow`` for a prefix naming mlflow,
    ``fairltr_optuna`` for optuna, else the URI's database): yield a SQLAlchemy URI whose
    ``search_path`` is that schema, drop the schema afterwards; skip when the variable is unset.

    scripts/start_postgres.sh's role owns the three databases but may not create databases, so a
    test gets a schema, not a database. One schema per service and test: MLflow and Optuna both
    keep their schema revision in an ``alembic_version`` table, so they must never share one."""
    base = os.environ.get("FAIRLTR_TEST_POSTGRES_URI")
    if not base:
        pytest.skip("FAIRLTR_TEST_POSTGRES_URI is not set (CI sets it; see scripts/start_postgres.sh)")
    import psycopg2

    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    parts = urlsplit(base)
    database = next((db for service, db in SERVICE_DATABASES.items() if service in prefix), parts.path.lstrip("/"))
    target = urlunsplit((parts.scheme, parts.netloc, f"/{database}", "", ""))

    def admin(sql: str) -> None:
        conn = psycopg2.connect(target)
        conn.autocommit = True
        try:
            with conn.cursor() as cur:
                cur.execute(sql)
        finally:
            conn.close()

    admin(f'CREATE SCHEMA "{name}"')
    # SQLAlchemy 2.1 maps a bare "postgresql://" to psycopg 3; the stack ships psycopg2
    scheme = "postgresql+psycopg2" if parts.scheme in ("postgresql", "postgres") else parts.scheme
    query = f"options=-csearch_path%3D{name}"
    try:
        yield urlunsplit((scheme, parts.netloc, f"/{database}", query, ""))
    finally:
        admin(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


@pytest.fixture(scope="session")
def postgres_uri() -> Iterator[str]:
    """A fresh PostgreSQL schema in fairltr_mlflow for the session's MLflow server (dropped afterwards)."""
    with fresh_postgres_database("fairltr_mlflow_test") as uri:
        yield uri


@pytest.fixture
def optuna_postgres_uri() -> Iterator[str]:
    """A fresh PostgreSQL schema in fairltr_optuna for one Optuna study test (never MLflow's: see above)."""
    with fresh_postgres_database("fairltr_optuna_test") as uri:
        yield uri


@pytest.fixture(scope="session")
def mlflow_postgres_server(postgres_uri, tmp_path_factory) -> Iterator[MlflowServer]:
    """A real ``mlflow server`` whose backend store is the session's PostgreSQL database."""
    work = tmp_path_factory.mktemp("mlflow-postgres-server")
    server = start_mlflow_server(postgres_uri, work)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="module")
def mlflow_tracking_module(mlflow_server) -> Iterator[str]:
    """:func:`mlflow_tracking` for a whole module (its fixtures share fitted and registered models)."""
    import mlflow

    keys = ("MLFLOW_TRACKING_URI", "MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
    old = {k: os.environ.get(k) for k in keys}
    for k in keys[1:]:
        os.environ.pop(k, None)
    os.environ["MLFLOW_TRACKING_URI"] = mlflow_server.uri
    mlflow.set_tracking_uri(mlflow_server.uri)
    while mlflow.active_run() is not None:
        mlflow.end_run()
    try:
        yield mlflow_server.uri
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        from mlflow.tracking._tracking_service import utils as _tracking_utils

        _tracking_utils._tracking_uri = None


@pytest.fixture
def mlflow_tracking(mlflow_server, monkeypatch) -> Iterator[str]:
    """Point this test (and its subprocesses) at the session's server; restores afterwards."""
    import mlflow

    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    monkeypatch.delenv("MLFLOW_RUN_ID", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID", raising=False)
    monkeypatch.delenv("MLFLOW_EXPERIMENT_NAME", raising=False)
    previous = mlflow.get_tracking_uri() if mlflow.is_tracking_uri_set() else None
    mlflow.set_tracking_uri(mlflow_server.uri)
    while mlflow.active_run() is not None:
        mlflow.end_run()
    try:
        yield mlflow_server.uri
    finally:
        while mlflow.active_run() is not None:
            mlflow.end_run()
        if previous is not None:
            mlflow.set_tracking_uri(previous)
        else:  # back to "unset", so the next test sees the default policy again
            from mlflow.tracking._tracking_service import utils as _tracking_utils

            _tracking_utils._tracking_uri = None


@pytest.fixture(scope="session")
def tiny_rankings():
    """(train, test) synthetic biased ranking tables: 14 queries x 10 candidates, 30% protected."""
    from fairltr.synthetic import make_biased_rankings

    return make_biased_rankings(14, 10, 0.3, seed=3)
