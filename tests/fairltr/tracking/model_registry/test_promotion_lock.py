"""The promotion lock is enforced by the tracking store: of many simultaneous acquisitions
through a real server (SQLite and PostgreSQL backends) exactly one wins; the holder's lease is
honoured; release frees it; a lock whose answer was lost is recognised as ours."""

from __future__ import annotations

import threading
import time
import uuid

import pytest

from fairltr.tracking.model_registry.lock import HOLDER_TAG, LockTimeout, acquire_lock, lock_name


def _race(client, model: str, n: int = 8) -> list:
    barrier = threading.Barrier(n)
    won: list = []
    lost: list = []

    def one():
        barrier.wait()
        try:
            won.append(acquire_lock(client, model, lease_s=30.0, timeout_s=0.0))
        except LockTimeout as exc:
            lost.append(str(exc))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert len(won) + len(lost) == n
    return won


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def test_exactly_one_of_simultaneous_acquisitions_wins(backend, request):
    import mlflow

    server = request.getfixturevalue("mlflow_server" if backend == "sqlite" else "mlflow_postgres_server")
    client = mlflow.MlflowClient(server.uri, registry_uri=server.uri)
    for _ in range(5):
        model = f"locked-{uuid.uuid4().hex[:8]}"
        won = _race(client, model)
        assert len(won) == 1
        lock = won[0]
        assert client.get_registered_model(lock_name(model)).tags[HOLDER_TAG] == lock.holder
        assert lock.valid() and 0 < lock.remaining() <= 30
        lock.release()
        assert not client.search_registered_models(filter_string=f"name = '{lock_name(model)}'")
        again = acquire_lock(client, model, timeout_s=0.0)  # free again after release
        again.release()


def test_waiting_acquirer_gets_the_lock_when_released(mlflow_server):
    import mlflow

    client = mlflow.MlflowClient(mlflow_server.uri, registry_uri=mlflow_server.uri)
    model = f"locked-{uuid.uuid4().hex[:8]}"
    first = acquire_lock(client, model, lease_s=30.0)
    threading.Timer(1.0, first.release).start()
    started = time.monotonic()
    second = acquire_lock(client, model, lease_s=30.0, timeout_s=20.0)
    assert 0.9 <= time.monotonic() - started < 10
    assert second.holder != first.holder
    # the first holder must not delete the second one's lock
    first.release()
    assert client.get_registered_model(lock_name(model)).tags[HOLDER_TAG] == second.holder
    second.release()


def test_lost_answer_is_recognised_and_long_names_are_hashed(mlflow_server, monkeypatch):
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking.model_registry import lock as lock_module

    client = mlflow.MlflowClient(mlflow_server.uri, registry_uri=mlflow_server.uri)
    original = lock_module._create
    calls = []

    def lands_then_fails(c, name, tags, description):
        calls.append(name)
        if len(calls) == 1:
            original(c, name, tags, description)  # the insert lands ...
            raise MlflowException("connection reset")  # ... but its answer is lost
        return original(c, name, tags, description)

    monkeypatch.setattr(lock_module, "_create", lands_then_fails)
    model = "m" * 200
    lock = acquire_lock(client, model, timeout_s=5.0)
    assert len(calls) == 1 and lock.name.startswith("fairltr.lock.sha256-") and len(lock.name) < 100
    lock.release()
