"""A decision log kept in a PostgreSQL table (:mod:`fairltr.tracking.models.decision_log`), through
psycopg2 (the ``[postgres]`` extra).

URI: ``postgresql://user@host:port/db?table=NAME`` (also ``postgresql+psycopg2://``; ``table``
defaults to ``fairltr_decisions``, ``schema.table`` allowed; other query parameters go to libpq,
e.g. ``sslmode``). Each served request is ONE transaction inserting all its rows, committed before
``append`` returns (a killed server loses at most the uncommitted request). Every server worker
process opens its own connection (several workers write at once: rows never collide, there is no
key to collide on); threads of one worker share it under a lock. The table is created when the
log is opened (``CREATE TABLE IF NOT EXISTS`` under an advisory lock, so racing workers do not
trip over each other); an existing table must have the log's columns. Rows are only inserted.
"""

from __future__ import annotations

import io
import os
import re
import threading
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["PostgresDecisionLog", "read_postgres_log", "parse_postgres_uri"]

_SQL_TYPES = {
    "request_id": "TEXT NOT NULL", "time": "TIMESTAMPTZ NOT NULL", "model_name": "TEXT", "model_version": "TEXT",
    "model_digest": "TEXT", "policy": "TEXT", "policy_method": "TEXT", "policy_p": "DOUBLE PRECISION",
    "policy_alpha": "DOUBLE PRECISION", "policy_adjust": "BOOLEAN", "policy_k": "BIGINT", "policy_target": "TEXT",
    "query_id": "TEXT", "item_id": "TEXT", "row": "BIGINT", "score": "DOUBLE PRECISION", "rank": "BIGINT",
    "fair_feasible": "BOOLEAN", "groups": "TEXT",
}
_COLUMN_LIST = ", ".join(f'"{c}"' for c in _SQL_TYPES)
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}(\.[A-Za-z_][A-Za-z0-9_]{0,62})?$")


def parse_postgres_uri(uri: str) -> tuple[str, str]:
    """(libpq connection URI, table name) of a decision-log URI; :class:`ConfigError` for a bad table name."""
    parts = urlsplit(uri)
    scheme = "postgresql"
    query = parse_qsl(parts.query, keep_blank_values=True)
    table = dict(query).get("table", "fairltr_decisions")
    if not _NAME.match(table):
        raise ConfigError(f"decision log {_redacted(uri)}: table {table!r} is not a plain [schema.]name")
    rest = urlencode([(k, v) for k, v in query if k != "table"])
    return urlunsplit((scheme, parts.netloc, parts.path, rest, "")), table


def _redacted(uri: str) -> str:
    from fairltr.redaction import redact_uri

    return redact_uri(uri)


def _quoted(table: str) -> str:
    return ".".join(f'"{p}"' for p in table.split("."))


def _connect(dsn: str, uri: str):
    try:
        import psycopg2
    except ImportError:
        raise ConfigError("a PostgreSQL decision log needs psycopg2: pip install 'fairltr[postgres]'") from None
    try:
        return psycopg2.connect(dsn, connect_timeout=10)
    except psycopg2.Error as exc:
        raise ConfigError(f"decision log {_redacted(uri)} cannot be reached: {' '.join(str(exc).split())[:200]}") from None


class PostgresDecisionLog:
    """Rows appended to a PostgreSQL table (module docstring); opening it connects and creates
    (or checks) the table, so an unusable log refuses to serve at start-up."""

    def __init__(self, uri: str) -> None:
        self.uri = _redacted(uri)
        self._uri = uri
        self._dsn, self.table = parse_postgres_uri(uri)
        self._lock = threading.Lock()
        self._conn = None
        self._pid = None
        conn = self._connection()
        try:
            self._create_table(conn)
        except Exception as exc:
            conn.rollback()
            raise ConfigError(f"decision log {self.uri}: table {self.table} cannot be used: "
                              f"{' '.join(str(exc).split())[:200]}") from None

    def _connection(self):
        if self._conn is None or self._conn.closed or self._pid != os.getpid():
            self._conn = _connect(self._dsn, self.uri)  # a forked worker never reuses its parent's socket
            self._pid = os.getpid()
        return self._conn

    def _create_table(self, conn) -> None:
        cols = ", ".join(f'"{c}" {t}' for c, t in _SQL_TYPES.items())
        with conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"fairltr-decision-log:{self.table}",))
            cur.execute(f"CREATE TABLE IF NOT EXISTS {_quoted(self.table)} ({cols})")
            cur.execute(f"SELECT * FROM {_quoted(self.table)} LIMIT 0")
            present = {d.name for d in cur.description}
        conn.commit()
        missing = [c for c in _SQL_TYPES if c not in present]
        if missing:
            raise ConfigError(f"decision log {self.uri}: table {self.table} lacks column(s) {missing}")

    def append(self, records) -> None:
        """Insert ``records`` (one request's Arrow table) in one committed transaction (``COPY``
        of the table written as CSV: one round trip for the rows, one for the commit)."""
        import pyarrow.csv as pcsv

        buf = io.BytesIO()
        pcsv.write_csv(records, buf, pcsv.WriteOptions(include_header=False, quoting_style="all_valid"))
        buf.seek(0)
        sql = f"COPY {_quoted(self.table)} ({_COLUMN_LIST}) FROM STDIN WITH (FORMAT csv)"
        with self._lock:
            conn = self._connection()
            try:
                with conn.cursor() as cur:
                    cur.copy_expert(sql, buf)
                conn.commit()
            except Exception:
                try:
                    conn.rollback()
                except Exception:
                    self._conn = None
                raise

    def read(self) -> pd.DataFrame:
        return read_postgres_log(self._uri)


def read_postgres_log(uri: str) -> pd.DataFrame:
    """Every row of the log's table (:data:`~fairltr.tracking.models.decision_log.COLUMNS`)."""
    dsn, table = parse_postgres_uri(uri)
    conn = _connect(dsn, uri)
    try:
        with conn.cursor() as cur:
            try:
                cur.execute(f"SELECT {_COLUMN_LIST} FROM {_quoted(table)}")
            except Exception as exc:
                raise DataError(f"decision log {_redacted(uri)}: table {table} does not read: "
                                f"{' '.join(str(exc).split())[:200]}") from None
            rows = cur.fetchall()
    finally:
        conn.close()
    if not rows:
        raise DataError(f"decision log {_redacted(uri)} holds no records yet")
    frame = pd.DataFrame(rows, columns=list(_SQL_TYPES))
    frame["time"] = pd.to_datetime(frame["time"], utc=True).dt.as_unit("us")
    frame["policy_k"] = frame["policy_k"].astype("Int64")
    for c in ("policy_p", "policy_alpha", "score"):
        frame[c] = frame[c].astype(np.float64)
    for c in ("row", "rank"):
        frame[c] = frame[c].astype(np.int64)
    for c in ("policy_adjust", "fair_feasible"):
        frame[c] = frame[c].astype(bool)
    return frame
