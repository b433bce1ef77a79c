"""Chunked dense encoding and exact top-k search by chunked matrix products.

``topk_search`` scores queries against documents block by block (``query_chunk`` x
``doc_chunk``) and merges running top-k lists, so the full (Q, D) score matrix never exists;
the result equals ``torch.topk(Q @ D.T, k)`` (up to the order of exactly tied scores).
"""

from __future__ import annotations

import contextlib
from typing import Callable, Sequence

import torch

from fairltr.errors import ConfigError

__all__ = ["encode_chunked", "topk_search", "retrieve"]


def encode_chunked(
    encode: Callable[[list[str]], torch.Tensor],
    texts: Sequence[str],
    batch_size: int = 128,
    *,
    progress: Callable[[int, int], None] | None = None,
    sort_by_length: bool = True,
    precision: str = "fp32",
) -> torch.Tensor:
    """Embed ``texts`` with ``encode`` (a list of strings -> (n, dim) tensor) ``batch_size`` at a time.

    Runs under ``torch.inference_mode``; returns a float32 CPU tensor (len(texts), dim) in the
    order of ``texts``. ``sort_by_length``: batches hold texts of similar length (longest first),
    so a tokenizer padding to its batch's longest text pads little; each row is the same
    embedding as in any other batch up to float rounding (padding is masked).
    ``progress(done, total)`` is called after every batch.

    ``precision="bf16"`` (opt-in) runs ``encode`` under ``torch.autocast`` to bfloat16 (CPU, and
    CUDA when present): matrix products in bfloat16, the result still float32. It is faster only
    where the CPU has bfloat16 instructions (AVX512-BF16, AMX) and the embeddings then differ from
    float32 ones by rounding (docs/benchmarks.md gives the measured speed and cosine); ``"fp32"``
    (default) is exact float32.
    """
    if batch_size < 1:
        raise ConfigError(f"batch_size must be >= 1, got {batch_size}")
    if precision not in PRECISIONS:
        raise ConfigError(f"precision must be one of {list(PRECISIONS)}, got {precision!r}")
    texts = list(texts)
    if not texts:
        raise ConfigError("encode_chunked got no texts")
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i])) if sort_by_length else list(range(len(texts)))
    parts: list[torch.Tensor] = []
    with torch.inference_mode(), _autocast(precision):
        for start in range(0, len(texts), batch_size):
            emb = encode([texts[i] for i in order[start : start + batch_size]])
            parts.append(emb.detach().to("cpu", torch.float32))
            if progress is not None:
                progress(min(start + batch_size, len(texts)), len(texts))
    stacked = torch.cat(parts)
    if not sort_by_length:
        return stacked
    out = torch.empty_like(stacked)
    out[torch.as_tensor(order)] = stacked
    return out


PRECISIONS = ("fp32", "bf16")
"""The encoding precisions of :func:`encode_chunked`."""


def _autocast(precision: str) -> contextlib.AbstractContextManager:
    """bfloat16 autocast on the CPU (and CUDA when present) for ``"bf16"``; nothing for ``"fp32"``."""
    if precision == "fp32":
        return contextlib.nullcontext()
    stack = contextlib.ExitStack()
    stack.enter_context(torch.autocast("cpu", dtype=torch.bfloat16))
    if torch.cuda.is_available():
        stack.enter_context(torch.autocast("cuda", dtype=torch.bfloat16))
    return stack


def topk_search(
    queries: torch.Tensor,
    documents: torch.Tensor,
    k: int = 100,
    *,
    query_chunk: int = 1024,
    doc_chunk: int = 8192,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Exact top-k inner-product search: (Q, k) scores and (Q, k) document indices, best first.

    Memory peaks at ``query_chunk x (doc_chunk + k)`` scores. ``k`` larger than the number of
    documents is cut to it.
    """
    if queries.ndim != 2 or documents.ndim != 2 or queries.shape[1] != documents.shape[1]:
        raise ConfigError(
            f"queries (Q, dim) and documents (D, dim) must share dim; got {tuple(queries.shape)} and {tuple(documents.shape)}"
        )
    if k < 1 or query_chunk < 1 or doc_chunk < 1:
        raise ConfigError(f"k, query_chunk and doc_chunk must be >= 1; got {k}, {query_chunk}, {doc_chunk}")
    n_docs = documents.shape[0]
    k = min(k, n_docs)
    out_s, out_i = [], []
    for qs in range(0, queries.shape[0], query_chunk):
        q = queries[qs : qs + query_chunk]
        best_s = torch.empty(q.shape[0], 0, dtype=q.dtype, device=q.device)
        best_i = torch.empty(q.shape[0], 0, dtype=torch.long, device=q.device)
        for ds in range(0, n_docs, doc_chunk):
            block = q @ documents[ds : ds + doc_chunk].T
            idx = torch.arange(ds, ds + block.shape[1], device=q.device).expand(q.shape[0], -1)
            cand_s = torch.cat([best_s, block], dim=1)
            cand_i = torch.cat([best_i, idx], dim=1)
            top_s, pos = torch.topk(cand_s, min(k, cand_s.shape[1]), dim=1)
            best_s, best_i = top_s, torch.gather(cand_i, 1, pos)
        out_s.append(best_s)
        out_i.append(best_i)
    return torch.cat(out_s), torch.cat(out_i)


def retrieve(
    query_embeddings: torch.Tensor,
    doc_embeddings: torch.Tensor,
    query_ids: Sequence,
    doc_ids: Sequence,
    k: int = 100,
    **chunks: int,
) -> dict:
    """Run :func:`topk_search` and return ``{query_id: [doc ids, best first]}``."""
    if len(query_ids) != query_embeddings.shape[0] or len(doc_ids) != doc_embeddings.shape[0]:
        raise ConfigError("query_ids / doc_ids must have one id per embedding row")
    _, idx = topk_search(query_embeddings, doc_embeddings, k, **chunks)
    doc_ids = list(doc_ids)
    return {qid: [doc_ids[j] for j in row] for qid, row in zip(query_ids, idx.tolist())}
