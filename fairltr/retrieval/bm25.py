"""BM25 baseline with the ``bm25s`` library: one index over the whole multilingual corpus.

Tokenisation: lower-case words of two or more characters, no stop-word list and no stemming
(the corpus mixes languages, so no single language's list applies).
"""

from __future__ import annotations

from typing import Sequence

__all__ = ["bm25_search"]


def bm25_search(
    doc_ids: Sequence[str],
    doc_texts: Sequence[str],
    query_ids: Sequence[str],
    query_texts: Sequence[str],
    k: int = 100,
    *,
    k1: float = 1.5,
    b: float = 0.75,
) -> dict:
    """``{query_id: [doc ids, best first]}`` from BM25 (Lucene variant) over ``doc_texts``.

    Queries whose tokens all miss the vocabulary get an empty list.
    """
    import bm25s  # light, but keep it out of `import fairltr.retrieval`
    import numpy as np

    doc_ids = list(doc_ids)
    k = min(k, len(doc_ids))
    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(bm25s.tokenize(list(doc_texts), stopwords=None, show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(list(query_texts), stopwords=None, show_progress=False)
    docs, scores = retriever.retrieve(tokens, k=k, show_progress=False, n_threads=1)
    out = {}
    for qid, row, srow in zip(query_ids, np.asarray(docs), np.asarray(scores)):
        out[qid] = [doc_ids[j] for j, s in zip(row, srow) if s > 0]
    return out
