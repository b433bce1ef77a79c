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
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path


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
    from fairltr.tracking import log_ranker_model, served_model

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
        with served_model("models:/bench-ranker/1", tracking_uri=uri, start_timeout_s=180) as base:
            print(f"{args.queries} queries x {args.candidates} candidates = {n} rows; median of {args.repeats}")
            print(f"{'mode':16s} {'in-process ms/1k':>17s} {'REST ms/1k':>11s} {'REST / in-process':>18s}")
            for mode, body in payloads.items():
                local = _median_s(lambda: loaded.predict(frame, params=params[mode]), args.repeats)
                rest = _median_s(lambda: _post(f"{base}/invocations", body.encode()), args.repeats)
                per_k = 1000.0 / n
                print(f"{mode:16s} {local * per_k * 1e3:17.2f} {rest * per_k * 1e3:11.2f} {rest / local:18.2f}")

if __name__ == "__main__":
    main()
