"""Retrieval evaluation: parallel-query data, chunked dense search, MRR/Recall per language,
MRC@k (docs/spec.md §5), overlap@k, RBO, document-language shares and a BM25 baseline.

Imports torch, numpy and pandas only; encoders are passed in as callables.
"""

from fairltr.retrieval.bm25 import bm25_search
from fairltr.retrieval.evaluate import SUMMARY_KEYS, dense_run, evaluate_run, retrieval_cutoffs, summary_of
from fairltr.retrieval.metrics import doc_language_share, rankings_by_item, retrieval_metrics, run_matrix
from fairltr.retrieval.mrc import mrc_at_k, mrc_matrix, overlap_at_k, pair_scores, rank_correlation, rbo
from fairltr.retrieval.parallel_data import ParallelRetrievalData, read_jsonl, read_parallel_data
from fairltr.retrieval.pooling import POOLINGS, pool
from fairltr.retrieval.search import encode_chunked, retrieve, topk_search

__all__ = [
    "ParallelRetrievalData", "read_parallel_data", "read_jsonl",
    "encode_chunked", "topk_search", "retrieve",
    "retrieval_metrics", "doc_language_share", "rankings_by_item", "run_matrix",
    "mrc_at_k", "mrc_matrix", "overlap_at_k", "rbo", "pair_scores", "rank_correlation",
    "bm25_search", "evaluate_run", "dense_run", "SUMMARY_KEYS", "summary_of", "retrieval_cutoffs",
    "pool", "POOLINGS",
]
