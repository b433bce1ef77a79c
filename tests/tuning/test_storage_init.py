"""First use of a fresh Optuna storage by several processes at once: all succeed (the schema is
created under a lock: a file lock beside a SQLite file, an advisory lock on PostgreSQL)."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path

import pytest


def _open(url: str, barrier, results) -> None:
    try:
        import optuna

        from tuning.study import make_storage

        barrier.wait(timeout=60)
        storage = make_storage(url, heartbeat_interval=1, grace_period=3)
        optuna.create_study(study_name="s", storage=storage, load_if_exists=True, directions=["maximize"])
        results.put("ok")
    except BaseException as exc:  # reported to the test, not swallowed
        results.put(f"{type(exc).__name__}: {exc}")


def _race(url: str, n: int = 4) -> list[str]:
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_open, args=(url, barrier, results)) for _ in range(n)]
    for p in procs:
        p.start()
    out = [results.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    return out


def test_four_first_uses_of_a_fresh_sqlite_storage_all_succeed(tmp_path: Path):
    for attempt in range(2):  # two fresh files: a race that fails only sometimes has two chances to show
        url = f"sqlite:///{tmp_path / f'fresh{attempt}.db'}"
        assert _race(url) == ["ok"] * 4


@pytest.mark.postgres
def test_four_first_uses_of_a_fresh_postgres_storage_all_succeed(optuna_postgres_uri):
    assert _race(optuna_postgres_uri) == ["ok"] * 4


def test_storage_errors_do_not_print_passwords():
    from fairltr.errors import ConfigError
    from tuning.study import make_storage

    with pytest.raises(ConfigError) as err:
        make_storage("postgresql://alice:SECRETPW@127.0.0.1:9/db")
    assert "SECRETPW" not in str(err.value) and "alice:***@" in str(err.value)
