"""Optuna storages for sweeps: SQLite and PostgreSQL (RDB, with heartbeat and retry of stale
trials) or an append-only journal file; ``postgresql://`` rewritten to the installed driver, and the
first use of a storage serialised so N workers on a fresh database create its tables once.

Crash safety: every finished trial is written to the storage when it ends. RDB storages run a
heartbeat (``heartbeat_interval``); a RUNNING trial whose heartbeat is older than ``grace_period``
is failed by the next worker and re-queued with the same parameters by
:class:`optuna.storages.RetryHeartbeatStaleTrialCallback` (Optuna 5's name for the former
``RetryFailedTrialCallback``). Journal files have no heartbeat in Optuna: there the worker loop
(:mod:`tuning.worker`) fails old RUNNING trials itself.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Mapping

import optuna

from fairltr.errors import ConfigError

__all__ = ["default_storage_url", "make_storage", "set_user_attrs"]


def default_storage_url(out: str | Path | None = None) -> str:
    """``sqlite:///<out or cwd>/optuna.db`` (absolute path)."""
    base = Path(out) if out is not None else Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(base / 'optuna.db').resolve()}"


def make_storage(url: str | None, *, out: str | Path | None = None, heartbeat_interval: int = 10,
                 grace_period: int = 30, max_retry: int = 2):
    """Optuna storage for ``url``: ``sqlite:///F``, ``postgresql://...`` (RDB with heartbeat and
    retry of stale trials) or ``journal:PATH`` (append-only journal file)."""
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    url = url or default_storage_url(out)
    if heartbeat_interval < 1 or grace_period <= heartbeat_interval:
        raise ConfigError(f"need heartbeat_interval >= 1 and grace_period > heartbeat_interval, "
                          f"got {heartbeat_interval} and {grace_period}")
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        path = Path(url[len("journal:"):]).expanduser()
        if not path.name:
            raise ConfigError(f"journal storage needs a file path: 'journal:PATH', got {url!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if "://" not in url:
        raise ConfigError(f"storage {url!r}: use sqlite:///FILE, postgresql://USER:PW@HOST/DB or journal:FILE")
    url = _postgres_driver(url)
    engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    import sqlalchemy.exc

    from fairltr.redaction import redact_text, redact_uri

    try:
        with _schema_lock(url), warnings.catch_warnings():  # heartbeat + retry callback are experimental
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                                 grace_period=grace_period, skip_compatibility_check=True,
                                 heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
            current, head = storage.get_current_version(), storage.get_head_version()
    except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError) as exc:
        reason = redact_text(" ".join(str(exc).split("\n")[0].split()))[:300]
        raise ConfigError(f"cannot open Optuna storage {redact_uri(url)}: {reason}") from None
    if current != head:  # Optuna's own check, done here to tell the two cases apart without reading its message
        if current in storage.get_all_versions():
            raise ConfigError(f"Optuna storage {redact_uri(url)} has an older Optuna schema ({current}); upgrade it "
                              "with `optuna storage upgrade --storage URL`")
        raise ConfigError(f"cannot open Optuna storage {redact_uri(url)}: its alembic_version table holds another "
                          "schema (e.g. MLflow's tracking store in the same database); give Optuna a database of "
                          "its own")
    if url.startswith("sqlite"):
        _sqlite_wal(storage.engine)
    return storage


@contextmanager
def _schema_lock(url: str) -> Iterator[None]:
    """Serialise the first use of a storage, whose table creation is not safe under concurrency
    (N workers on a fresh database): a file lock beside a SQLite file, a PostgreSQL advisory lock
    (held by one connection for the block) on a server. Other backends: no lock."""
    if url.startswith("sqlite:///") and ":memory:" not in url:
        from fairltr.files import file_lock

        db = Path(url[len("sqlite:///"):])
        with file_lock(db.with_name(db.name + ".lock")):
            yield
        return
    if url.startswith("postgresql"):
        import sqlalchemy

        engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
                try:
                    yield
                finally:
                    conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_SCHEMA_LOCK})
        finally:
            engine.dispose()
        return
    yield


# a fixed key for pg_advisory_lock ("optuna" in ASCII; any constant shared by all workers works)
_PG_SCHEMA_LOCK = 0x6F70_7475_6E61


def _sqlite_wal(engine) -> None:
    """SQLite in WAL mode with ``synchronous=NORMAL``: a commit no longer waits for an fsync of
    the whole database (7 ms -> well under 1 ms here), readers and the writer do not block each
    other, and a killed process still loses no committed trial (only a power cut can drop the
    last commits). The mode is stored in the file; the pool is recycled so every connection
    gets the pragmas."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record) -> None:
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    engine.dispose()


def _postgres_driver(url: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to the psycopg 3 driver; use psycopg2 (what fairltr
    installs) when psycopg 3 is absent: ``postgresql+psycopg2://``."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            try:
                import psycopg  # noqa: F401
                return "postgresql://" + url[len(prefix):]
            except ImportError:
                return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def set_user_attrs(trial: "optuna.trial.Trial", attrs: Mapping[str, Any]) -> None:
    """Store every ``attrs`` item as a user attribute of ``trial``: the same rows as one
    ``trial.set_user_attr`` per item, but on an RDB storage (SQLite, PostgreSQL) in ONE
    transaction instead of one commit per attribute (a sweep trial stores ~25 of them; each commit
    costs a few ms, which was a third of a 50-trial benchmark sweep's per-trial overhead).

    Uses Optuna's RDB session helper and per-attribute upsert (private names of Optuna 5,
    pinned by constraints.txt); when they are missing, or on a journal storage, it falls back to
    ``set_user_attr`` one by one."""
    backend = getattr(trial.storage, "_backend", trial.storage)  # _CachedStorage wraps the RDB storage
    upsert = getattr(backend, "_set_trial_attr_without_commit", None)
    try:
        from optuna.storages import RDBStorage
        from optuna.storages._rdb import models
        from optuna.storages._rdb.storage import _create_scoped_session
    except ImportError:
        upsert = None
    if upsert is None or not isinstance(backend, RDBStorage) or not hasattr(trial, "_cached_frozen_trial"):
        for key, value in attrs.items():
            trial.set_user_attr(key, value)
        return
    with _create_scoped_session(backend.scoped_session, True) as session:
        if not _bulk_upsert(backend, session, models, trial._trial_id, attrs):
            for key, value in attrs.items():
                upsert(session, models.TrialUserAttributeModel, trial._trial_id, key, value)
    trial._cached_frozen_trial.user_attrs.update(attrs)  # what Trial.set_user_attr also does


def _bulk_upsert(backend, session, models, trial_id: int, attrs: Mapping[str, Any]) -> bool:
    """On SQLite (>= 3.24) and PostgreSQL: check once that the trial is still updatable, then
    insert-or-update every attribute in ONE statement (the rows Optuna's per-attribute upsert
    writes: ``value_json = json.dumps(value)``). False on another database (the caller upserts
    one by one)."""
    import json
    import sqlite3

    name = backend.engine.name
    if name == "sqlite" and sqlite3.sqlite_version_info >= (3, 24, 0):
        from sqlalchemy.dialects.sqlite import insert
    elif name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert
    else:
        return False
    if not attrs:
        return True
    model = models.TrialUserAttributeModel
    row = models.TrialModel.find_or_raise_by_id(trial_id, session)
    backend.check_trial_is_updatable(trial_id, row.state)
    stmt = insert(model).values([{"trial_id": trial_id, "key": k, "value_json": json.dumps(v)} for k, v in attrs.items()])
    session.execute(stmt.on_conflict_do_update(index_elements=[model.trial_id, model.key],
                                               set_={"value_json": stmt.excluded.value_json}))
    return True
