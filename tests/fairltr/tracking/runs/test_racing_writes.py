"""fairltr.tracking.runs.racing_writes: a write that lost a race on a unique key is made again.

The unique-key failures are real ones (sqlite3 on a table with a primary key, and MLflow's own
SQLite store under processes that log one dataset at the same moment), never a mocked message.
"""

from __future__ import annotations

import multiprocessing as mp
import sqlite3

import pytest

from fairltr.tracking.runs.racing_writes import is_unique_violation, repeat_on_unique_violation


def _inserter(conn: sqlite3.Connection, calls: list[int], *, fail_times: int):
    """An insert of key 1 that meets an existing row ``fail_times`` times (another process was
    first), then finds the row and does nothing: the shape of MLflow's get-or-create."""
    def write() -> str:
        calls.append(1)
        if len(calls) <= fail_times:
            conn.execute("INSERT INTO t VALUES (1)")  # the row is there: UNIQUE constraint failed
        return "found"
    return write


@pytest.fixture
def table():
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE TABLE t (k INTEGER PRIMARY KEY)")
    conn.execute("INSERT INTO t VALUES (1)")
    yield conn
    conn.close()


def test_a_unique_violation_is_repeated_until_the_write_finds_the_row(table):
    calls: list[int] = []
    assert repeat_on_unique_violation(_inserter(table, calls, fail_times=2), pause_s=0) == "found"
    assert len(calls) == 3


def test_the_last_violation_propagates_after_the_attempts(table):
    calls: list[int] = []
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
        repeat_on_unique_violation(_inserter(table, calls, fail_times=5), attempts=3, pause_s=0)
    assert len(calls) == 3


def test_other_errors_are_not_repeated(table):
    calls: list[int] = []

    def write():
        calls.append(1)
        table.execute("INSERT INTO missing VALUES (1)")

    with pytest.raises(sqlite3.OperationalError, match="no such table"):
        repeat_on_unique_violation(write, pause_s=0)
    assert calls == [1]


def test_postgresql_and_sqlite_texts_are_recognised_and_nothing_else():
    assert is_unique_violation(Exception("(sqlite3.IntegrityError) UNIQUE constraint failed: datasets.name"))
    assert is_unique_violation(Exception('(psycopg2.errors.UniqueViolation) duplicate key value violates '
                                         'unique constraint "dataset_pk"'))
    assert not is_unique_violation(Exception("NOT NULL constraint failed: runs.name"))
    assert not is_unique_violation(Exception("database is locked"))


ROUNDS = 20  # unguarded, about one log in six of 4 x 20 failed here: the race is met every run


def _log_same_datasets(uri: str, barrier, results) -> None:
    import warnings

    import pandas as pd

    import mlflow

    from fairltr.tracking.runs.racing_writes import log_input

    warnings.filterwarnings("ignore", message=".*Integer columns in Python.*")
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("race")
    failures = []
    with mlflow.start_run():
        for r in range(ROUNDS):
            dataset = mlflow.data.from_pandas(pd.DataFrame({"q": [r, r + 1], "y": [0.5, 1.0]}), name=f"d{r}.csv")
            barrier.wait()  # every process logs the same new dataset at once
            try:
                log_input(dataset, context="evaluation")
            except Exception as exc:  # reported to the test, which shows it
                failures.append(f"round {r}: {type(exc).__name__}: {str(exc)[:200]}")
    results.put(failures)


@pytest.mark.slow
def test_processes_logging_one_new_dataset_at_once_all_succeed(tmp_path):
    """Four processes, each in its own run, log the same new dataset (name and digest) into one
    experiment, released by one barrier, 20 times: every run gets every input, the experiment
    one dataset per round."""
    import mlflow

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    mlflow.set_tracking_uri(uri)
    mlflow.set_experiment("race")  # the schema and experiment exist before the race
    ctx = mp.get_context("spawn")
    barrier, results = ctx.Barrier(4), ctx.Queue()
    procs = [ctx.Process(target=_log_same_datasets, args=(uri, barrier, results)) for _ in range(4)]
    for p in procs:
        p.start()
    failures = [f for _ in procs for f in results.get(timeout=180)]
    for p in procs:
        p.join(timeout=60)
    assert failures == []
    runs = mlflow.search_runs(experiment_names=["race"], output_format="list")
    assert len(runs) == 4
    for run in runs:
        assert sorted(d.dataset.name for d in run.inputs.dataset_inputs) == sorted(f"d{r}.csv" for r in range(ROUNDS))
    assert len({(d.dataset.name, d.dataset.digest) for r in runs for d in r.inputs.dataset_inputs}) == ROUNDS
