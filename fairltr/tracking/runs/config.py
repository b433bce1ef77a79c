"""Where runs go: the tracking-URI policy shared by every fairltr adapter.

Policy: ``MLFLOW_TRACKING_URI`` (or a URI set with ``mlflow.set_tracking_uri``) wins; otherwise
a local SQLite store ``sqlite:///<cwd>/mlflow.db`` — MLflow 3.17's own default, made explicit so
that a stray ``./mlruns`` folder never switches the store to the deprecated file backend.

:func:`configure` (called by every job before its first tracking call) also

* makes the first use of a local SQLite store race-free: MLflow creates and migrates the tables
  when a process first opens a database, and concurrent first uses crash on "table already
  exists" or leave ``_alembic_tmp_*`` tables behind. That first open runs under an exclusive
  file lock ``<database>.lock`` beside the database (:func:`init_store`), so one process
  creates the tables and the others find them. Server URIs (``http://``) are not touched: the
  server opens its store itself;
* shortens MLflow's HTTP timeout and retries (:data:`FAST_FAIL_ENV`) unless the user set them;
* keeps credentials out of what is printed: MLflow's "View run at <URI>" lines are suppressed for
  URIs with a password (``MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT=true``, even when set otherwise), and a logging filter redacts ``scheme://user:password@`` in MLflow's,
  urllib3's and alembic's log records (:func:`redact_text`);
* ends runs left RUNNING by an earlier fairltr command that lost the tracking server: those
  commands record the run in a small local file (:mod:`fairltr.tracking.runs.pending_ends`), and the next
  command against the same store sets the recorded status.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from fairltr.errors import ConfigError
from fairltr.tracking.runs.pending_ends import settle_pending_ends
from fairltr.redaction import install_redaction, redact_text, redact_uri

__all__ = ["DEFAULT_EXPERIMENT", "default_tracking_uri", "tracking_uri", "resolve_tracking_uri", "configure", "logger_target",
           "redact_uri", "redact_text", "check_tracking_uri", "check_database", "FAST_FAIL_ENV", "init_store", "sqlite_path",
           "install_redaction", "registry_prints_follow_log_level"]

# MLflow's HTTP client defaults (120 s timeout, 7 retries with exponential backoff) make an
# unreachable server cost minutes; fairltr fails in seconds unless the user set them: a refused
# connection after about 3 s (two retries, back-off 1 s), a server that accepts but never answers
# after about 50 s per call (15 s per attempt: MLflow uses one number for connect and read).
FAST_FAIL_ENV = {"MLFLOW_HTTP_REQUEST_TIMEOUT": "15", "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "2",
                 "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1"}

DEFAULT_EXPERIMENT = "fairltr"


def default_tracking_uri(cwd: str | Path | None = None) -> str:
    """``sqlite:///<absolute cwd>/mlflow.db`` (the embedded store used without a server)."""
    base = Path(cwd) if cwd is not None else Path.cwd()
    return f"sqlite:///{(base / 'mlflow.db').resolve()}"


def tracking_uri() -> str:
    """The URI runs are logged to: an explicitly set URI, else :func:`default_tracking_uri`."""
    import mlflow

    if mlflow.is_tracking_uri_set():
        return mlflow.get_tracking_uri()
    return os.environ.get("MLFLOW_TRACKING_URI") or default_tracking_uri()


def resolve_tracking_uri(uri: str | None = None) -> str:
    """``uri`` if given, else :func:`tracking_uri` (the fairltr tracking policy)."""
    return uri or tracking_uri()


def sqlite_path(uri: str) -> Path | None:
    """The database file of a ``sqlite:///`` URI (None for other URIs and in-memory databases)."""
    if not uri.startswith("sqlite:///"):
        return None
    path = uri[len("sqlite:///"):].split("?", 1)[0]
    if not path or path == ":memory:":
        return None
    return Path(path)


_READY: set[str] = set()


def init_store(uri: str) -> None:
    """Open the tracking and registry stores of ``uri`` once per process; for a local SQLite
    database, under the exclusive file lock ``<database>.lock`` (see the module docstring).
    Other URIs return at once."""
    db = sqlite_path(uri)
    if uri in _READY or db is None:
        return
    from mlflow import MlflowClient

    from fairltr.files import file_lock

    if not db.parent.is_dir() or not os.access(db.parent, os.W_OK):
        return  # check_tracking_uri / MLflow report this with the path
    with file_lock(db.with_name(db.name + ".lock"), timeout=300.0):
        if not db.exists():
            _create_sqlite_store(db)
        client = MlflowClient(uri, registry_uri=uri)
        client.search_experiments(max_results=1)  # migrates the tables when an older MLflow made them
        client.search_registered_models(max_results=1)
    _READY.add(uri)


def _create_sqlite_store(db: Path) -> None:
    """Create a fresh MLflow store all-or-nothing: the tables are made in a temporary file beside
    ``db``, which is renamed to ``db`` only when complete, so an interrupted first use (Ctrl-C,
    a killed process) leaves no half-made database that every later command would trip over."""
    from mlflow.store.model_registry.sqlalchemy_store import SqlAlchemyStore as RegistryStore
    from mlflow.store.tracking import DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH
    from mlflow.store.tracking.sqlalchemy_store import SqlAlchemyStore
    from mlflow.utils.uri import resolve_uri_if_local

    tmp = db.with_name(f".{db.name}.init-{os.getpid()}")
    tmp.unlink(missing_ok=True)
    try:
        tmp_uri = f"sqlite:///{tmp}"
        for store in (SqlAlchemyStore(tmp_uri, resolve_uri_if_local(DEFAULT_LOCAL_FILE_AND_ARTIFACT_PATH)),
                      RegistryStore(tmp_uri)):
            store.engine.dispose()
        for side in ("-wal", "-shm", "-journal"):
            if Path(str(tmp) + side).exists():
                raise RuntimeError(f"the new MLflow store {tmp} was not closed cleanly")
        os.replace(tmp, db)
    finally:
        tmp.unlink(missing_ok=True)


def configure(experiment: str | None = None) -> str:
    """Point MLflow at :func:`tracking_uri` (and the registry at the same store); select
    ``experiment`` unless a run is active or ``mlflow run`` handed us one (``MLFLOW_RUN_ID``).
    First use of a SQLite store is serialized, runs an earlier command could not end are ended,
    credentials are kept out of MLflow's output (module docstring). Returns the tracking URI."""
    import mlflow

    for key, value in FAST_FAIL_ENV.items():
        os.environ.setdefault(key, value)
    uri = tracking_uri()
    if redact_text(uri) != uri or redact_uri(uri) != uri:  # its "View run at <URI>" lines would show the password
        os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    install_redaction()
    from fairltr.startup import in_command

    if in_command():  # the fairltr command: a Ctrl-C never cuts a local store's transaction
        from fairltr.tracking.runs.store_interrupts import guard_store_transactions

        guard_store_transactions()
    if not mlflow.is_tracking_uri_set():
        mlflow.set_tracking_uri(uri)
    init_store(uri)
    settle_pending_ends(uri)
    if experiment and mlflow.active_run() is None and not os.environ.get("MLFLOW_RUN_ID"):
        mlflow.set_experiment(experiment)
    return uri


def logger_target() -> tuple[str, str | None]:
    """(tracking URI, run id) for a Lightning ``MLFlowLogger`` on the same tracking URI as the rest
    of fairltr (:func:`lightning_modules.mlflow_logger` builds it): the run is the active one or,
    inside ``mlflow run``, ``MLFLOW_RUN_ID``; None for a new run."""
    import mlflow

    uri = tracking_uri()
    init_store(uri)
    active = mlflow.active_run()
    return uri, (active.info.run_id if active is not None else os.environ.get("MLFLOW_RUN_ID"))


def check_tracking_uri(uri: str | None = None, timeout: float = 5.0) -> str:
    """Fail fast, before any work, when the tracking store cannot be used: an HTTP server that
    does not answer ``/health`` within ``timeout`` seconds, a local SQLite file whose folder
    cannot be written, or a database server (PostgreSQL, MySQL) that refuses a connection. Returns the URI. Raises :class:`ConfigError` naming the (redacted) URI."""
    import urllib.error
    import urllib.request

    uri = uri or tracking_uri()
    shown = redact_uri(uri)
    if uri.startswith(("http://", "https://")):
        parts = urlsplit(uri)
        netloc = parts.hostname or ""
        if parts.port is not None:
            netloc = f"{netloc}:{parts.port}"
        health = urlunsplit((parts.scheme, netloc, parts.path.rstrip("/") + "/health", "", ""))
        request = urllib.request.Request(health)
        if parts.username is not None:
            import base64

            token = base64.b64encode(f"{parts.username}:{parts.password or ''}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as resp:
                if resp.status >= 400:
                    raise ConfigError(f"MLflow tracking server {shown} answered HTTP {resp.status}")
        except urllib.error.HTTPError as exc:
            if exc.code in (401, 403):
                raise ConfigError(f"MLflow tracking server {shown} refused the credentials (HTTP {exc.code})") from None
            if exc.code != 404:  # a server without /health (behind a proxy) may still work
                raise ConfigError(f"MLflow tracking server {shown} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ConfigError(f"MLflow tracking server {shown} is not reachable ({reason}); start it, fix "
                              "MLFLOW_TRACKING_URI, or use --no-track") from None
    elif uri.startswith("sqlite:///"):
        folder = Path(uri[len("sqlite:///"):]).parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            raise ConfigError(f"MLflow tracking store {shown}: folder {folder} does not exist or is not writable")
    elif uri.split(":", 1)[0].split("+", 1)[0] in DATABASE_SCHEMES:
        check_database(uri, timeout)
    return uri


DATABASE_SCHEMES = ("postgresql", "postgres", "mysql", "mssql")


def check_database(uri: str, timeout: float = 5.0, what: str = "MLflow tracking store") -> None:
    """Connect once to the database of ``uri`` (SQLAlchemy, ``connect_timeout`` seconds) or raise
    :class:`ConfigError` with the server's first line of reason, the URI's password redacted."""
    import sqlalchemy

    shown = redact_uri(uri)
    scheme = uri.split(":", 1)[0].split("+", 1)[0]
    args = {"connect_timeout": max(1, int(timeout))} if scheme in ("postgresql", "postgres", "mysql") else {}
    try:
        engine = sqlalchemy.create_engine(uri.replace("postgres://", "postgresql://", 1), connect_args=args)
    except (sqlalchemy.exc.ArgumentError, ValueError) as exc:
        raise ConfigError(f"{what} {shown}: not a database URI ({redact_text(' '.join(str(exc).split()))})") from None
    except ModuleNotFoundError as exc:  # SQLAlchemy 2.1 maps a bare postgresql:// to psycopg 3
        driver = uri.split(":", 1)[0]
        hint = (f"; write {driver}+psycopg2://... to use psycopg2 (pip install 'fairltr[postgres]')"
                if "+" not in driver and exc.name == "psycopg" else "")
        raise ConfigError(f"{what} {shown}: SQLAlchemy's driver for {driver}:// ({exc.name}) is not "
                          f"installed{hint}") from None
    try:
        with engine.connect():
            pass
    except sqlalchemy.exc.DBAPIError as exc:
        reason = next((line.strip() for line in str(exc.orig).splitlines() if line.strip()), type(exc.orig).__name__)
        reason = redact_text(reason.removeprefix("FATAL:").strip())
        hint = "check the user and password" if "authentication" in reason or "password" in reason else \
            "start the database server, fix MLFLOW_TRACKING_URI, or use --no-track"
        raise ConfigError(f"{what} {shown} is not usable ({reason}); {hint}") from None
    finally:
        engine.dispose()


@contextlib.contextmanager
def registry_prints_follow_log_level() -> Iterator[None]:
    """MLflow prints "Successfully registered model ..." / "Created version ..." to stderr
    whatever its log level; inside this block those lines are shown only when the ``mlflow``
    logger shows INFO (the ``fairltr`` command quiets it unless ``--verbose``; fairltr prints its
    own line naming the version). On an error (not a Ctrl-C), whatever was held back is written out."""
    if logging.getLogger("mlflow").isEnabledFor(logging.INFO):
        yield
        return
    held = io.StringIO()
    try:
        with contextlib.redirect_stderr(held):
            yield
    except BaseException as exc:
        from fairltr.interrupts import caused_by_interrupt

        if not caused_by_interrupt(exc):  # Ctrl-C: the one line "interrupted" says it all
            sys.stderr.write(held.getvalue())
        raise
