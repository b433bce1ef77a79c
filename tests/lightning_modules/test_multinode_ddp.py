"""Two-host DDP over a real network (slow): ``fairltr train deltr --engine lightning --num-nodes 2``,
one process in each of two network namespaces (gloo on CPU, Lightning's MASTER_ADDR / MASTER_PORT
/ NODE_RANK rendezvous), the MLflow tracking server in a third.

* The full-batch (L-BFGS) two-node run ends with the one-process run's weights (each node reads
  its own half of the row groups; the objective and gradient are sums, so only the summation
  order differs): max |w_2 - w_1| <= 1e-8 * max(1, max |w_1|).
* Only node 0 writes the model and logs to MLflow: one FINISHED run, none RUNNING.
* A node that never joins: node 0 exits 1 within the timeout with one line naming node 1.
* Node 1's host killed mid-epoch: node 0 exits 1 with one line naming node 1, no run RUNNING.
"""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pytest

from netns import start_mlflow_in, stop_group

pytestmark = pytest.mark.slow

PORT = 29500
FAIRLTR = str(Path(sys.executable).with_name("fairltr"))


@pytest.fixture
def table(tmp_path):
    from fairltr.io import write_table
    from fairltr.synthetic import make_biased_rankings

    train, test = make_biased_rankings(40, 20, 0.3, seed=1)
    path = tmp_path / "train.parquet"
    write_table(train, path)  # one row group per query block: each node streams its own share
    write_table(test, tmp_path / "test.csv")
    return path, tmp_path / "test.csv"


def node_env(master: str, rank: int, uri: str) -> dict:
    env = dict(os.environ, MASTER_ADDR=master, MASTER_PORT=str(PORT), NODE_RANK=str(rank), MLFLOW_TRACKING_URI=uri,
               GLOO_SOCKET_IFNAME="eth0", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def train_args(table, out: Path, *extra: str) -> list[str]:
    train, test = table
    return [FAIRLTR, "train", "deltr", "--train", str(train), "--test", str(test), "--gamma", "100",
            "--engine", "lightning", "--accelerator", "cpu", "--num-nodes", "2", "--out", str(out), *extra]


def runs_of(uri: str, experiment: str):
    from mlflow import MlflowClient

    client = MlflowClient(uri)
    exp = client.get_experiment_by_name(experiment)
    return [] if exp is None else client.search_runs([exp.experiment_id])


def wait_all(procs, timeout: float) -> list[int | None]:
    """Exit codes; when one fails the others are stopped (they would wait for it until their timeout)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and any(p.poll() is None for p in procs):
        if any(p.poll() not in (None, 0) for p in procs):
            break
        time.sleep(0.2)
    for p in procs:
        if p.poll() is None:
            stop_group(p, grace=2)
    return [p.poll() for p in procs]


def last_line(log: Path) -> str:
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def error_lines(log: Path) -> list[str]:
    return [ln for ln in log.read_text(errors="replace").splitlines() if ln.startswith("Error")]


def test_two_hosts_train_like_one_process_and_fail_in_one_line(netns_cluster, table, tmp_path):
    from fairltr import DELTR
    from lightning_modules import train_deltr_lightning

    cluster = netns_cluster(3)
    tracking, node0, node1 = cluster.hosts
    server = start_mlflow_in(tracking, f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "mlflow")
    try:
        # ---- full batch: the two-node run is the one-process run ---------------------------
        experiment = f"multinode-{uuid.uuid4().hex[:6]}"
        opts = ("--batch-queries", "1000", "--epochs", "12", "--experiment", experiment)
        args = train_args(table, tmp_path / "two", *opts)
        args1 = train_args(table, tmp_path / "two-node1", *opts)  # node 1: its own --out, never written
        procs = [node1.popen(args1, log=tmp_path / "n1.log", env=node_env(node0.address, 1, server.uri)),
                 node0.popen(args, log=tmp_path / "n0.log", env=node_env(node0.address, 0, server.uri))]
        codes = wait_all(procs, float(os.environ.get("NETNS_TEST_WAIT", "300")))
        logs = [(tmp_path / f"n{i}.log").read_text() for i in (1, 0)]
        assert codes == [0, 0], "\n---\n".join(logs)
        assert "node 1 of 2: trained" in logs[0] and not (tmp_path / "two-node1").exists()
        two = DELTR.load(tmp_path / "two" / "model.json")
        one = train_deltr_lightning(table[0], gamma=100.0, batch_queries=1000, epochs=12, accelerator="cpu")
        assert two.n_iter_ == one.n_iter_ == 12
        scale = max(1.0, float(np.abs(one.weights_).max()))
        assert float(np.abs(two.weights_ - one.weights_).max()) <= 1e-8 * scale
        runs = runs_of(server.uri, experiment)
        assert [r.info.status for r in runs] == ["FINISHED"]  # node 0's run only, finished

        # ---- a node that never joins: bounded wait, one line naming it ---------------------
        t0 = time.monotonic()
        lonely = node0.popen(train_args(table, tmp_path / "lonely", "--ddp-timeout", "5", "--no-track"),
                             log=tmp_path / "lonely.log", env=node_env(node0.address, 0, server.uri))
        assert lonely.wait(timeout=180) == 1, (tmp_path / "lonely.log").read_text()
        waited = time.monotonic() - t0
        errors = error_lines(tmp_path / "lonely.log")
        assert len(errors) == 1 and "node 1 never joined" in errors[0], (tmp_path / "lonely.log").read_text()
        assert errors[0] == last_line(tmp_path / "lonely.log")
        print(f"never-joined node: exit 1 after {waited:.1f} s (timeout 5 s + start-up)")

        # ---- node 1's host dies mid-epoch: node 0 exits with one line ---------------------
        experiment = f"multinode-kill-{uuid.uuid4().hex[:6]}"
        args = [*train_args(table, tmp_path / "killed", "--batch-queries", "2", "--epochs", "100000",
                            "--ddp-timeout", "30"), "--experiment", experiment]
        p1 = node1.popen(args, log=tmp_path / "k1.log", env=node_env(node0.address, 1, server.uri))
        p0 = node0.popen(args, log=tmp_path / "k0.log", env=node_env(node0.address, 0, server.uri))
        base = node1.counters()[0]
        deadline = time.monotonic() + 180
        while node1.counters()[0] - base < 300_000:  # training traffic, well past the rendezvous
            assert time.monotonic() < deadline and p0.poll() is None and p1.poll() is None, \
                (tmp_path / "k0.log").read_text() + (tmp_path / "k1.log").read_text()
            time.sleep(0.2)
        node1.kill()
        t_kill = time.monotonic()
        assert p0.wait(timeout=120) == 1, (tmp_path / "k0.log").read_text()
        print(f"lost node: node 0 exited {time.monotonic() - t_kill:.1f} s after node 1's host was killed")
        errors = error_lines(tmp_path / "k0.log")
        assert len(errors) == 1 and "lost node 1" in errors[0], (tmp_path / "k0.log").read_text()
        assert errors[0] == last_line(tmp_path / "k0.log")
        assert not [r for r in runs_of(server.uri, experiment) if r.info.status == "RUNNING"]
        assert not (tmp_path / "killed").exists()
    finally:
        server.stop()
        for p in [locals().get(n) for n in ("p0", "p1", "lonely")]:
            if p is not None:
                stop_group(p, grace=2)
