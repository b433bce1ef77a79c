"""Serving latency of a registered DELTR ranker with a FA*IR policy: ``mlflow models serve`` over
REST against the in-process ``predict`` of the same loaded model, per 1,000 candidates, with
and without the re-ranking policy, as ratios measured in one run.

    python benchmarks/bench_serving.py [--queries 100] [--candidates 10] [--repeats 30]

``--decision-log`` measures instead the cost of the decision log (:func:`decision_log_overhead`):
the same model served twice at once, without a log and with a Parquet log (``FAIRLTR_DECISION_LOG``;
``--postgres URI`` adds a PostgreSQL log), requests alternated between the servers; per run the
ratio of median latencies (log / no log), over ``--runs`` runs: min / median / max.

    python benchmarks/bench_serving.py --decision-log [--runs 5] [--repeats 40] [--postgres URI]

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
    ap.add_argument("--decision-log", action="store_true", help="measure the decision log's overhead instead")
    ap.add_argument("--runs", type=int, default=5, help="runs of the decision-log comparison (>= 5)")
    ap.add_argument("--postgres", default=None, help="also a PostgreSQL log at this URI (?table=NAME)")
    args = ap.parse_args()
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    if args.decision_log:
        return decision_log_overhead(args)
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
                             serve_rerank="fair:p=0.4,alpha=0.1", serve_overrides="rerank")  # "no policy" below
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
            print(f"{args.queries} queries x {args.candidates} candidates = {n} rows; median of {args.repeats}, "
                  f"in-process and REST alternated (the ratio per pair: min / median / max)")
            print(f"{'mode':16s} {'in-process ms/1k':>17s} {'REST ms/1k':>11s} {'REST / in-process':>18s}")
            for mode, body in payloads.items():
                local_t, rest_t = [], []
                for _ in range(args.repeats):
                    local_t.append(_median_s(lambda: loaded.predict(frame, params=params[mode]), 1))
                    rest_t.append(_median_s(lambda: _post(f"{base}/invocations", body.encode()), 1))
                local, rest = statistics.median(local_t), statistics.median(rest_t)
                per = [r / c for r, c in zip(rest_t, local_t)]
                per_k = 1000.0 / n
                print(f"{mode:16s} {local * per_k * 1e3:17.2f} {rest * per_k * 1e3:11.2f} {rest / local:18.2f}   "
                      f"per pair {min(per):.2f} / {statistics.median(per):.2f} / {max(per):.2f}")



def _ratio_runs(base: str, others: dict[str, str], bodies: dict[str, bytes], runs: int, repeats: int) -> None:
    """Per request size and log: median latency without the log and ratio log / no log per run,
    requests alternated between the servers within a run; min / median / max over runs."""
    for size, body in bodies.items():
        for _ in range(3):  # warm both
            _post(f"{base}/invocations", body)
            for url in others.values():
                _post(f"{url}/invocations", body)
        ratios: dict[str, list[float]] = {name: [] for name in others}
        plain_ms = []
        for _ in range(runs):
            times: dict[str, list[float]] = {"none": [], **{name: [] for name in others}}
            for _ in range(repeats):
                for name, url in (("none", base), *others.items()):
                    t0 = time.perf_counter()
                    _post(f"{url}/invocations", body)
                    times[name].append(time.perf_counter() - t0)
            plain = statistics.median(times["none"])
            plain_ms.append(plain * 1e3)
            for name in others:
                ratios[name].append(statistics.median(times[name]) / plain)
        for name, rs in ratios.items():
            print(f"{size:22s} {name:9s} {statistics.median(plain_ms):12.2f} {min(rs):8.3f} {statistics.median(rs):8.3f} "
                  f"{max(rs):8.3f}")


def decision_log_overhead(args) -> None:
    """The decision log's overhead on served requests (module docstring), printed as ratios."""
    import mlflow

    from fairltr import DELTR
    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking import log_ranker_model, served_model

    if args.runs < 5:
        raise SystemExit("--runs must be >= 5")
    with tempfile.TemporaryDirectory(prefix="bench-decision-log-") as tmp:
        uri = f"sqlite:///{Path(tmp) / 'mlflow.db'}"
        mlflow.set_tracking_uri(uri)
        os.environ["MLFLOW_TRACKING_URI"] = uri
        train, test = make_biased_rankings(args.queries, args.candidates, 0.3, seed=0)
        model = DELTR(gamma=0.0, max_iter=30).fit(train)
        mlflow.set_experiment("bench-decision-log")
        with mlflow.start_run():
            log_ranker_model(model, input_example=train.head(5), register="bench-logged",
                             serve_rerank="fair:p=0.4,alpha=0.1")
        frame = test.drop(columns=["judgment"])
        one = frame[frame["query_id"] == frame["query_id"].iloc[0]]
        bodies = {f"1 query ({len(one)} rows)": one, f"{args.queries} queries ({len(frame)} rows)": frame}
        bodies = {k: json.dumps({"dataframe_split": json.loads(v.to_json(orient="split", index=False))}).encode()
                  for k, v in bodies.items()}
        logs = {"parquet": (str(Path(tmp) / "decisions"), "full"), "parquet-p": (str(Path(tmp) / "decisions-p"), "process")}
        if args.postgres:
            logs["postgres"] = (args.postgres, "full")
        base_env = {k: v for k, v in os.environ.items() if k != "FAIRLTR_DECISION_LOG"}
        from contextlib import ExitStack

        with ExitStack() as stack:
            plain = stack.enter_context(served_model("models:/bench-logged/1", tracking_uri=uri, env=base_env,
                                                     start_timeout_s=180))
            others = {name: stack.enter_context(served_model("models:/bench-logged/1", tracking_uri=uri,
                                                             env={**base_env, "FAIRLTR_DECISION_LOG": target,
                                                                  "FAIRLTR_DECISION_LOG_SYNC": sync},
                                                             start_timeout_s=180))
                      for name, (target, sync) in logs.items()}
            print(f"decision log overhead: {args.runs} runs x {args.repeats} requests per server, alternated; "
                  "ratio = median latency with the log / without (parquet: synced before the response; "
                  "parquet-p: FAIRLTR_DECISION_LOG_SYNC=process)")
            print(f"{'request':22s} {'log':9s} {'no log ms':>12s} {'min':>8s} {'median':>8s} {'max':>8s}")
            _ratio_runs(plain, others, bodies, args.runs, args.repeats)


if __name__ == "__main__":
    main()
