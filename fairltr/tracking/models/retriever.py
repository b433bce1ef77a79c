"""The "fairltr retriever" MLflow pyfunc: a dense bi-encoder with its document index.

A retriever *package* is a self-contained folder (no pickle anywhere)::

    retriever.json        settings: pooling, normalize, max_query_length, max_doc_length, shared,
                          towers, dim, n_docs, encoder origin, format + format_version
    query/                query tower: model.safetensors + config.json + tokenizer files
    doc/                  document tower (only when the towers are separate)
    index.safetensors     "embeddings": (n_docs, dim) float32 E_D of the corpus; its metadata
                          holds n_docs, dim and the SHA-256 of index.json
    index.json            {"doc_ids": [...], "doc_langs": [...] or null}, row order of the index

The format lives in :mod:`fairltr.tracking.models.retriever_package`, the query/document encoding (with
the core's pooling) in :mod:`fairltr.tracking.models.retriever_encoder`, the pyfunc and its logging in
:mod:`fairltr.tracking.models.retriever_pyfunc`; this module re-exports them, and ``retriever_code.py``
(stored in every logged retriever model) imports :class:`FairltrRetriever` from here.

Scores are s(q, d) = <E_Q(q), E_D(d)>, E = pooled (``cls`` or masked ``mean``), optionally
L2-normalised last hidden state (:func:`fairltr.retrieval.pooling.pool`); the corpus is encoded
at build time with :class:`RetrieverEncoder`, the same class that encodes queries at predict
time, and searched exactly with :func:`fairltr.retrieval.topk_search`.

MLflow model: the loader-module form (:mod:`fairltr.tracking.models.verified_loader`: MLflow calls
the installed fairltr's loader, which checks the recorded digest before it reads anything; no
staged code runs), the package folder as the ``package`` artifact, fairltr's own wheel among the
pinned pip requirements and ``model_config={"kind": "retriever"}`` (read by :func:`model_kind`).
Retrievers logged in the earlier "models from code" form (``retriever_code.py``) still load.

Contract of ``predict``: input = DataFrame ``query_id`` (str, unique), ``text`` (str), optional
``lang`` (accepted so that evaluation frames pass as they are; not used for scoring);
``params={"k": 10}``; output = one row per (query, retrieved document): ``query_id``,
``doc_id``, ``rank`` (1..k), ``score`` (float), ordered by query (input order) then rank.
"""

from __future__ import annotations

from fairltr.tracking.models.retriever_encoder import RetrieverEncoder, check_int, check_tower  # noqa: F401 (re-exported)
from fairltr.tracking.models.retriever_package import (
    FORMAT, FORMAT_VERSION, INDEX_DOCS_FILE, INDEX_FILE, SETTINGS_FILE, build_retriever_package,
    read_retriever_index, read_retriever_settings,
)
from fairltr.tracking.models.retriever_pyfunc import (
    DEFAULT_K, KIND_TAG, MODEL_CODE, FairltrRetriever, check_k, log_retriever_model, model_kind,
    retriever_pip_requirements, retriever_signature,
)

__all__ = [
    "RetrieverEncoder", "FairltrRetriever", "build_retriever_package", "read_retriever_settings",
    "read_retriever_index", "log_retriever_model", "retriever_pip_requirements", "retriever_signature",
    "model_kind", "check_k", "MODEL_CODE", "DEFAULT_K", "KIND_TAG",
]

_check_int = check_int  # the name before the split
