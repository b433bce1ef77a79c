"""A Ctrl-C never cuts a database transaction of a fairltr command.

With a local store (the default ``sqlite:///mlflow.db``, or a database URI) MLflow runs its SQL in
this process. A KeyboardInterrupt raised inside SQLAlchemy's work (between a statement and its
commit, or while a connection is reset on its way back to the pool) prints SQLAlchemy's
"Exception during reset or similar" traceback, and a connection whose clean-up is cut can keep
the SQLite file locked, so that ending the run KILLED waits for the lock (20 s) and fails.

:func:`guard_store_transactions` makes every connection's time out of the pool a
:func:`fairltr.interrupts.hold` section (SQLAlchemy's pool ``checkout`` / ``checkin`` events,
main thread only): a Ctrl-C then waits for the transaction to end (milliseconds) and is raised
just after it, outside SQLAlchemy. The fairltr command installs it (:func:`~fairltr.tracking.runs.config.configure`);
a library caller's process is left alone.
"""

from __future__ import annotations

import threading
from typing import Any

from fairltr.interrupts import hold, release

__all__ = ["guard_store_transactions"]

_installed = False
_open: dict[int, bool] = {}  # id(connection record) -> section opened at its checkout (main thread)


def _checkout(dbapi_connection: Any, record: Any, proxy: Any) -> None:
    if threading.current_thread() is threading.main_thread() and id(record) not in _open:
        _open[id(record)] = hold()


def _checkin(dbapi_connection: Any, record: Any) -> None:
    opened = _open.pop(id(record), None)
    if opened is not None:
        release(opened)


def guard_store_transactions() -> None:
    """Hold Ctrl-C back while this process's main thread has a database connection out of a
    SQLAlchemy pool (module docstring). Idempotent."""
    global _installed
    if _installed:
        return
    from sqlalchemy import event
    from sqlalchemy.pool import Pool

    event.listen(Pool, "checkout", _checkout)
    event.listen(Pool, "checkin", _checkin)
    _installed = True
