"""DPR vs DPR + LaKDA as REGISTERED retrievers on ddtp-mlir (a script, not a test).

For each of ``none`` (DPR) and ``lakda_kl`` (LaKDA): ``fairltr.workflows.train_retriever`` fine-tunes
all-MiniLM-L6-v2's query tower (document tower frozen, corpus encoded once and cached), logs the
"fairltr retriever" model and registers it; then, like a user of the registry would:

* the logged model's size on disk (MLflow's artifact store);
* ``mlflow.pyfunc.load_model("models:/NAME/1")`` and predict latency for a batch of 100 test queries;
* ``fairltr.workflows.evaluate_model`` (MLflow's evaluate + the ``fair_retrieval`` evaluator) on the
  full test split: MRR@100, Recall@100, MRC@5 (union and intersection rules), per language.

Writes ``benchmarks/results/registered_retrievers.{json,md}``.

    python benchmarks/registered_retrievers.py [--steps 300] [--workdir outputs/registered-retrievers]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

ROOT = Path(__file__).resolve().parents[1]
MODELS = {"dpr": "none", "dpr_lakda": "lakda_kl"}
LABELS = {"dpr": "DPR", "dpr_lakda": "DPR + LaKDA"}


def _size(path: Path) -> int:
    return sum(p.stat().st_size for p in Path(path).rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=str(ROOT.parent / "shared" / "data" / "ddtp-mlir"))
    ap.add_argument("--workdir", default=str(ROOT / "outputs" / "registered-retrievers"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "registered_retrievers"))
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--models", default="dpr,dpr_lakda")
    args = ap.parse_args(argv)

    import mlflow
    import pandas as pd
    import torch

    from fairltr.retrieval import read_parallel_data
    from fairltr.workflows import (EvaluateModelConfig, RetrievalEvalData, RetrieverSpec, TrackingOptions,
                                   TrainRetrieverConfig, evaluate_model, train_retriever)
    from fairltr.workflows.retriever import default_encoder

    torch.set_num_threads(args.threads)
    work = Path(args.workdir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    os.chdir(work)  # the local SQLite store and its artifacts live here
    uri = f"sqlite:///{work / 'mlflow.db'}"
    os.environ["MLFLOW_TRACKING_URI"] = uri
    mlflow.set_tracking_uri(uri)
    data = read_parallel_data(args.data)
    test = data.split("test")
    batch = test.queries.head(100)[["_id", "text", "lang"]].rename(columns={"_id": "query_id"})
    results = {"config": {"steps": args.steps, "threads": args.threads, "data": args.data, "torch": torch.__version__,
                          "cpu": platform.processor() or platform.machine(), "n_test_queries": len(test.queries),
                          "n_docs": len(data.corpus)}, "models": {}}
    base = RetrieverSpec(default_encoder(), steps=args.steps, lr=5e-5, warmup_steps=20, shared=False,
                         freeze_documents=True, seed=0)
    t_start = time.perf_counter()
    for key in args.models.split(","):
        name = f"ddtp-{key.replace('_', '-')}"
        spec = base.with_(fairness_loss=MODELS[key])
        cfg = TrainRetrieverConfig(Path(args.data), spec, work / key, evaluation=None,
                                   tracking=TrackingOptions(experiment="registered-retrievers", register=name,
                                                            run_name=f"{key} {args.steps} steps"),
                                   threads=args.threads, cache_dir=work / "corpus-cache")
        print(f"== {key}: training {args.steps} steps and registering {name}", flush=True)
        res = train_retriever(cfg, echo=lambda m: print("  " + m, flush=True))
        version = res.registered_version
        uri_v = f"models:/{name}/{version}"
        logged = mlflow.MlflowClient().get_logged_model(res.model_uri.split("/")[-1])
        size = _size(Path(logged.artifact_location.replace("file://", "")))
        t0 = time.perf_counter()
        model = mlflow.pyfunc.load_model(uri_v)
        load_s = time.perf_counter() - t0
        model.predict(batch.head(4), params={"k": 10})  # warm-up
        lat = []
        for _ in range(3):
            t0 = time.perf_counter()
            out = model.predict(batch, params={"k": 10})
            lat.append(time.perf_counter() - t0)
        assert len(out) == 10 * len(batch)
        t0 = time.perf_counter()
        ev = evaluate_model(EvaluateModelConfig(uri_v, RetrievalEvalData(Path(args.data), "test"),
                                                experiment="registered-retrievers-eval"))
        eval_s = time.perf_counter() - t0
        m = ev.metrics
        results["models"][key] = {
            "registered": uri_v, "train_s": res.train_seconds, **res.timings, "model_mib": size / 2**20,
            "load_s": load_s, "predict_100_s": statistics.median(lat), "evaluate_s": eval_s,
            "metrics": {k: v for k, v in m.items()},
        }
        print(f"  {uri_v}: MRR@100 {m['mrr_at_100']:.2f}  MRC@5 {m['mrc_at_5']:.2f}  "
              f"predict(100) {statistics.median(lat):.2f} s", flush=True)
    results["wall_s"] = time.perf_counter() - t_start
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(results, indent=1, default=float))
    lines = [
        f"ddtp-mlir test split ({results['config']['n_test_queries']} queries, corpus {results['config']['n_docs']} "
        f"documents); all-MiniLM-L6-v2, query tower fine-tuned {args.steps} steps (document tower frozen), "
        f"{args.threads} CPU thread(s); each model registered, then loaded from the registry and evaluated with "
        "MLflow's evaluate + the fair_retrieval evaluator.", "",
        "| model | MRR@100 | Recall@100 | MRC@5 (union) | MRC@5 (intersection) | overlap@5 | package (s) | log + register (s) "
        "| logged model (MiB) | load (s) | predict 100 queries (s) |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, r in results["models"].items():
        m = r["metrics"]
        lines.append(f"| {LABELS[key]} (`{r['registered']}`) | {m['mrr_at_100']:.2f} | {m['recall_at_100']:.2f} | "
                     f"{m['mrc_at_5']:.2f} | {m['mrc_at_5_intersection']:.2f} | {m['overlap_at_5']:.2f} | "
                     f"{r['package_s']:.1f} | {r['log_register_s']:.1f} | {r['model_mib']:.1f} | {r['load_s']:.2f} | "
                     f"{r['predict_100_s']:.2f} |")
    langs = sorted({k.split("/")[1] for r in results["models"].values() for k in r["metrics"] if k.startswith("mrr_at_100/")})
    if langs:
        lines += ["", "| model | " + " | ".join(f"MRR@100 {lang}" for lang in langs) + " | "
                  + " | ".join(f"MRC@5 {lang}" for lang in langs) + " |",
                  "|---|" + "---|" * (2 * len(langs))]
        for key, r in results["models"].items():
            m = r["metrics"]
            cells = [f"{m.get(f'mrr_at_100/{lang}', float('nan')):.1f}" for lang in langs]
            cells += [f"{m.get(f'mrc_at_5/{lang}', float('nan')):.1f}" for lang in langs]
            lines.append(f"| {LABELS[key]} | " + " | ".join(cells) + " |")
    lines += ["", f"Whole run {results['wall_s'] / 60:.1f} min."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return results


if __name__ == "__main__":
    main()
