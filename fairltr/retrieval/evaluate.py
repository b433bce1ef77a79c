"""One call from a run (or an encoder pair) to every retrieval figure of docs/spec.md §5.

Summary keys: ``mrr_at_<k>``, ``recall_at_<k>`` (x100, over all queries), ``mrc_at_<m>``
(union rule), ``mrc_at_<m>_intersection``, ``overlap_at_<m>`` and ``rbo_at_<m>`` (x100), plus
tables: ``per_language`` (MRR/Recall per query language), ``doc_language_share`` and ``mrc_matrix``.
"""

from __future__ import annotations

import re
import time
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch

from fairltr.retrieval.metrics import doc_language_share, rankings_by_item, retrieval_metrics
from fairltr.retrieval.mrc import mrc_at_k, mrc_matrix, overlap_at_k, rbo
from fairltr.retrieval.parallel_data import ParallelRetrievalData
from fairltr.retrieval.search import encode_chunked, retrieve

__all__ = ["evaluate_run", "dense_run", "SUMMARY_KEYS", "summary_of", "retrieval_cutoffs"]

# the headline keys of an evaluation, declared once: ``{k}`` is the retrieval cut-off (MRR and
# Recall), ``{m}`` the cut-off of the language-fairness figures (MRC, overlap, RBO)
SUMMARY_KEYS = ("mrr_at_{k}", "recall_at_{k}", "mrc_at_{m}", "mrc_at_{m}_intersection", "overlap_at_{m}", "rbo_at_{m}")
_CUTOFF_KEY = re.compile(r"^(?P<name>[a-z]+)_at_(?P<cut>\d+)")
_RETRIEVAL_CUTOFF = {key.split("_at_")[0]: key.split("{")[1][0] for key in SUMMARY_KEYS}  # name -> "k" | "m"


def summary_of(res: Mapping[str, Any], k: int = 100, mrc_k: int = 5) -> dict[str, float]:
    """The headline numbers (:data:`SUMMARY_KEYS`, x100) of an :func:`evaluate_run` result."""
    return {key.format(k=k, m=mrc_k): float(res[key.format(k=k, m=mrc_k)]) for key in SUMMARY_KEYS}


def retrieval_cutoffs(metric_names: Iterable[str], k: int = 100, mrc_k: int = 5) -> tuple[int, int]:
    """The ``(k, mrc_k)`` of an evaluation that computes every figure ``metric_names`` read (sweep
    objectives and constraints, promotion gates; a per-language suffix such as ``/de`` is ignored).

    When the names carry exactly one retrieval cut-off (``mrr_at_<k>`` / ``recall_at_<k>``) it
    replaces ``k``; exactly one fairness cut-off (``mrc_at_<m>`` / ``overlap_at_<m>`` /
    ``rbo_at_<m>``) replaces ``mrc_k``. Several cut-offs of one kind keep the given one (a name at
    another cut-off is then absent from the evaluation, and whoever reads it fails closed). The
    result has ``mrc_k <= k`` (``k`` is raised to ``mrc_k``: the fairness figures read the top
    ``mrc_k`` of the same run)."""
    found: dict[str, set[int]] = {"k": set(), "m": set()}
    for name in metric_names:
        m = _CUTOFF_KEY.match(str(name))
        if m and m.group("name") in _RETRIEVAL_CUTOFF:
            found[_RETRIEVAL_CUTOFF[m.group("name")]].add(int(m.group("cut")))
    k = found["k"].pop() if len(found["k"]) == 1 else k
    mrc_k = found["m"].pop() if len(found["m"]) == 1 else mrc_k
    return max(k, mrc_k), mrc_k


def evaluate_run(
    run: Mapping[str, Sequence[str]], data: ParallelRetrievalData, *, k: int = 100, mrc_k: int = 5
) -> dict[str, Any]:
    """Metrics of ``run`` ({query id: ranked doc ids}) against ``data``'s queries and qrels."""
    per_lang = retrieval_metrics(run, data.queries, data.qrels, k)
    rankings = rankings_by_item(run, data.queries)
    return {
        f"mrr_at_{k}": float(per_lang.loc["all", f"mrr_at_{k}"]),
        f"recall_at_{k}": float(per_lang.loc["all", f"recall_at_{k}"]),
        f"mrc_at_{mrc_k}": mrc_at_k(rankings, mrc_k, "union"),
        f"mrc_at_{mrc_k}_intersection": mrc_at_k(rankings, mrc_k, "intersection"),
        f"overlap_at_{mrc_k}": 100.0 * overlap_at_k(rankings, mrc_k),
        f"rbo_at_{mrc_k}": 100.0 * rbo(rankings, mrc_k),
        "per_language": per_lang,
        "doc_language_share": doc_language_share(run, data.queries, data.corpus, k),
        "mrc_matrix": mrc_matrix(rankings, mrc_k, "union"),
    }


def dense_run(
    encode_queries: Callable[[list[str]], torch.Tensor],
    encode_documents: Callable[[list[str]], torch.Tensor],
    data: ParallelRetrievalData,
    *,
    k: int = 100,
    batch_size: int = 128,
    doc_embeddings: torch.Tensor | None = None,
) -> tuple[dict, dict[str, float]]:
    """Encode the corpus (unless ``doc_embeddings`` is given) and the queries in chunks, then run
    exact top-k search. Returns the run and timings in seconds."""
    t0 = time.perf_counter()
    if doc_embeddings is None:
        doc_embeddings = encode_chunked(encode_documents, data.corpus["text"].tolist(), batch_size)
    t1 = time.perf_counter()
    q_emb = encode_chunked(encode_queries, data.queries["text"].tolist(), batch_size)
    t2 = time.perf_counter()
    run = retrieve(q_emb, doc_embeddings, data.queries["_id"].tolist(), data.corpus["_id"].tolist(), k)
    t3 = time.perf_counter()
    return run, {"encode_corpus_s": t1 - t0, "encode_queries_s": t2 - t1, "search_s": t3 - t2}
