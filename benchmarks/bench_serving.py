"""Serving latency of a registered DELTR ranker with a FA*IR policy: ``mlflow models serve`` over
REST against the in-process ``predict`` of the same loaded model, per 1,000 candidates, with
and without the re-ranking policy, as ratios measured in one run.

    python benchmarks/bench_serving.py [--queries 100] [--candidates 10] [--repeats 30]

A temporary SQLite tracking store and a loopback port are used; nothing is left behind.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(url: str, body: bytes) -> None:
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
        resp.read()


def _median_s(fn, repeats: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--candidates", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=30)
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    from fairltr import DELTR
    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking import log_ranker_model

    with tempfile.TemporaryDirectory(prefix="bench-serving-") as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        mlflow.set_tracking_uri(uri)
        os.environ["MLFLOW_TRACKING_URI"] = uri
        train, test = make_biased_rankings(args.queries, args.candidates, 0.3, seed=0)
        model = DELTR(gamma=0.0, max_iter=30).fit(train)
        mlflow.set_experiment("bench-serving")
        with mlflow.start_run():
            log_ranker_model(model, input_example=train.head(5), register="bench-ranker",
                             serve_rerank="fair:p=0.4,alpha=0.1")
        loaded = mlflow.pyfunc.load_model("models:/bench-ranker/1")
        frame = test.drop(columns=["judgment"])
        n = len(frame)
        payloads = {
            "policy (fair)": json.dumps({"dataframe_split": json.loads(frame.to_json(orient="split", index=False))}),
            "no policy": json.dumps({"dataframe_split": json.loads(frame.to_json(orient="split", index=False)),
                                     "params": {"rerank": "none"}}),
        }
        params = {"policy (fair)": None, "no policy": {"rerank": "none"}}
        port = _free_port()
        env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
        log = open(Path(tmp) / "serve.log", "w")
        proc = subprocess.Popen([str(Path(sys.executable).with_name("mlflow")), "models", "serve", "-m",
                                 "models:/bench-ranker/1", "--env-manager", "local", "--host", "127.0.0.1",
                                 "-p", str(port), "--workers", "1"], env=env, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 180
            while True:
                try:
                    with urllib.request.urlopen(f"{base}/ping", timeout=2):
                        break
                except OSError:
                    if proc.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"server did not start:\n{(Path(tmp) / 'serve.log').read_text()[-2000:]}")
                    time.sleep(0.5)
            print(f"{args.queries} queries x {args.candidates} candidates = {n} rows; median of {args.repeats}")
            print(f"{'mode':16s} {'in-process ms/1k':>17s} {'REST ms/1k':>11s} {'REST / in-process':>18s}")
            for mode, body in payloads.items():
                local = _median_s(lambda: loaded.predict(frame, params=params[mode]), args.repeats)
                rest = _median_s(lambda: _post(f"{base}/invocations", body.encode()), args.repeats)
                per_k = 1000.0 / n
                print(f"{mode:16s} {local * per_k * 1e3:17.2f} {rest * per_k * 1e3:11.2f} {rest / local:18.2f}")
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
            log.close()


if __name__ == "__main__":
    main()
