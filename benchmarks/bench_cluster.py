"""Cross-host figures on a namespace cluster (a script, not a test; needs root and iproute2).

Hosts are network namespaces on a private veth bridge (``tests/netns.py``, built on
``scripts/netns_cluster.sh``), so every byte between them crosses a veth pair and is counted.

* ``ddp``: DELTR streamed from Parquet with Adam, one process on each of two hosts (gloo,
  Lightning's MASTER_ADDR / MASTER_PORT / NODE_RANK rendezvous), against one process. Each node
  trains E1 and then E2 epochs (two rendezvous in one process); the differences give the epoch
  time and the bytes each node sent per epoch, without start-up and rendezvous. The gradient
  all-reduce carries F floats per step (F+1 with a bias; DELTR's ranker has none) plus the
  3-number objective all-reduce of ``DELTRTrainingModule``.
* ``sweep``: a private PostgreSQL in one host, an MLflow server in another, and K = 1, 2, 3
  worker hosts running ``fairltr sweep --method deltr`` on one fresh study of N trials each;
  prints trials/min per K (from the release of the started workers to the last exit).

    python benchmarks/bench_cluster.py ddp --queries 2000 --candidates 50 --features 31
    python benchmarks/bench_cluster.py sweep --trials 24
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from netns import NetnsCluster, start_mlflow_in, start_postgres, stop_group  # noqa: E402

NODE = r"""
import json, os, sys, time
import torch
torch.set_num_threads(1)
from lightning_modules import train_deltr_lightning
path, e1, e2, nodes = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
def counters():
    s = "/sys/class/net/eth0/statistics/"
    if not os.path.exists(s):
        return 0, 0
    return int(open(s + "tx_bytes").read()), int(open(s + "tx_packets").read())
out = {}
base = int(os.environ.get("MASTER_PORT", "29600"))
for i, e in enumerate((e1, e2)):
    os.environ["MASTER_PORT"] = str(base + i)
    kw = dict(num_nodes=nodes, ddp_timeout=120) if nodes > 1 else {}
    b0, p0 = counters(); t0 = time.perf_counter()
    m = train_deltr_lightning(path, gamma=100.0, batch_queries=16, epochs=e, accelerator="cpu", **kw)
    out[e] = dict(seconds=time.perf_counter() - t0, bytes=counters()[0] - b0, packets=counters()[1] - p0)
print("RESULT " + json.dumps(out))
"""


def make_table(path: Path, queries: int, candidates: int, features: int, seed: int = 0) -> None:
    import numpy as np
    import pandas as pd

    from fairltr.io import write_table

    rng = np.random.default_rng(seed)
    n = queries * candidates
    df = pd.DataFrame(rng.normal(size=(n, features)), columns=[f"x{i}" for i in range(features)])
    df.insert(0, "protected", (rng.random(n) < 0.3).astype(int))
    df.insert(0, "query_id", np.repeat(np.arange(queries), candidates))
    df["judgment"] = df["x0"] + 0.5 * rng.normal(size=n) - 0.5 * df["protected"]
    write_table(df, path)


def run_node(host, path, e1, e2, nodes, env) -> subprocess.Popen:
    argv = [sys.executable, "-c", NODE, str(path), str(e1), str(e2), str(nodes)]
    if host is None:
        return subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return host.popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


def result(proc) -> dict:
    out, _ = proc.communicate(timeout=1800)
    line = [ln for ln in out.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not line:
        raise SystemExit(f"node failed ({proc.returncode}):\n{out[-3000:]}")
    return {int(k): v for k, v in json.loads(line[-1][7:]).items()}


def bench_ddp(args) -> None:
    work = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    path = work / "train.parquet"
    make_table(path, args.queries, args.candidates, args.features)
    env = dict(os.environ, OMP_NUM_THREADS="1", GLOO_SOCKET_IFNAME="eth0", PYTHONPATH=str(ROOT))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    one = result(run_node(None, path, args.e1, args.e2, 1, env))
    with NetnsCluster.create(2) as cluster:
        n0, n1 = cluster.hosts
        envs = [dict(env, MASTER_ADDR=n0.address, MASTER_PORT="29600", NODE_RANK=str(r)) for r in (0, 1)]
        procs = [run_node(h, path, args.e1, args.e2, 2, e) for h, e in zip((n0, n1), envs)]
        two = [result(p) for p in procs]
    de = args.e2 - args.e1
    f = args.features + 1  # the group column is a feature too
    local_queries = -(-args.queries // 2)
    steps = -(-local_queries // 8)  # 16 queries per global step, 8 per node
    t1 = (one[args.e2]["seconds"] - one[args.e1]["seconds"]) / de
    t2 = max((r[args.e2]["seconds"] - r[args.e1]["seconds"]) / de for r in two)
    sent = [(r[args.e2]["bytes"] - r[args.e1]["bytes"]) / de for r in two]
    packets = [(r[args.e2]["packets"] - r[args.e1]["packets"]) / de for r in two]
    payload = (f + 3) * 8  # float64 gradient + the 3 objective terms, per step
    print(f"table: {args.queries} queries x {args.candidates} candidates x {f} features "
          f"({args.queries * args.candidates:,} rows), Adam, 16 queries per step, {steps} steps per epoch")
    print(f"epoch time: 1 process {t1:.3f} s, 2 hosts {t2:.3f} s (ratio {t2 / t1:.2f})")
    print(f"bytes sent per epoch per node: {sent[0]:,.0f} / {sent[1]:,.0f} in {packets[0]:,.0f} / "
          f"{packets[1]:,.0f} packets; {sent[0] / steps:,.0f} bytes per step")
    print(f"all-reduce payload per step: F={f} gradient floats + 3 objective floats = {payload} bytes "
          f"(float64); measured / payload = {sent[0] / steps / payload:.1f}")


def bench_sweep(args) -> None:
    from fairltr.io import write_table
    from fairltr.synthetic import make_biased_rankings

    work = Path(tempfile.mkdtemp(prefix="bench-cluster-sweep-"))
    train, test = make_biased_rankings(16, 12, 0.3, bias=1.5, seed=7)
    write_table(train, work / "train.csv")
    write_table(test, work / "test.csv")
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT), MLFLOW_DISABLE_TELEMETRY="true")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    rates = {}
    with NetnsCluster.create(2 + max(args.hosts)) as cluster:
        db, tracking, *workers = cluster.hosts
        pg = start_postgres(db)
        server = start_mlflow_in(tracking, f"sqlite:///{work / 'mlflow.db'}", work / "mlflow")
        try:
            for k in args.hosts:
                storage = pg.create_database(f"optuna_{k}")
                study = f"bench-{k}-{uuid.uuid4().hex[:6]}"
                go, ready = work / f"go{k}", [work / f"ready{k}-{i}" for i in range(k)]
                procs = []
                for i in range(k):
                    e = dict(env, SWEEP_TEST_READY=str(ready[i]), SWEEP_TEST_GO=str(go))
                    argv = [sys.executable, str(ROOT / "tests" / "tuning" / "_slow_worker.py"), "0", "sweep",
                            "--method", "deltr", "--train", str(work / "train.csv"), "--test", str(work / "test.csv"),
                            "--trials", str(args.trials), "--study", study, "--storage", storage,
                            "--out", str(work / study), "--tracking-uri", server.uri, "--experiment", study,
                            "--max-iter", "30", "--no-progress"]
                    procs.append(workers[i].popen(argv, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE))
                while not all(r.exists() for r in ready):
                    if any(p.poll() is not None for p in procs):
                        raise SystemExit("a worker died at start-up: " + procs[0].stderr.read().decode()[-2000:])
                    time.sleep(0.05)
                t0 = time.perf_counter()
                go.touch()
                for p in procs:
                    p.wait()
                    if p.returncode != 0:
                        raise SystemExit("a worker failed: " + p.stderr.read().decode()[-2000:])
                rates[k] = args.trials / (time.perf_counter() - t0) * 60
                print(f"{k} worker host(s): {args.trials} trials in {args.trials / rates[k] * 60:.1f} s: "
                      f"{rates[k]:.1f} trials/min ({rates[k] / rates[args.hosts[0]]:.2f}x {args.hosts[0]} host)")
        finally:
            server.stop()
            pg.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="what", required=True)
    d = sub.add_parser("ddp")
    d.add_argument("--queries", type=int, default=2000)
    d.add_argument("--candidates", type=int, default=50)
    d.add_argument("--features", type=int, default=31)
    d.add_argument("--e1", type=int, default=1)
    d.add_argument("--e2", type=int, default=4)
    s = sub.add_parser("sweep")
    s.add_argument("--trials", type=int, default=24)
    s.add_argument("--hosts", type=int, nargs="+", default=[1, 2, 3])
    args = ap.parse_args()
    (bench_ddp if args.what == "ddp" else bench_sweep)(args)


if __name__ == "__main__":
    main()
