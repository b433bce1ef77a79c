"""The "fairltr retriever" pyfunc class as a loaded model is: :class:`FairltrRetriever`, top-k dense
retrieval over a retriever package (:mod:`fairltr.tracking.models.retriever_package`). The contract
and the logging are in :mod:`fairltr.tracking.models.retriever_pyfunc`, which re-exports every name
here; the loaders (:mod:`~fairltr.tracking.models.verified_loader`,
:mod:`~fairltr.tracking.models.verify`) build this class without reaching the logging code.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

import mlflow.pyfunc

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.search import encode_chunked, topk_search
from fairltr.tracking.models.retriever_encoder import PathLike, RetrieverEncoder, check_int
from fairltr.tracking.models.retriever_package import read_retriever_index, read_retriever_settings

__all__ = ["FairltrRetriever", "check_k", "retriever_from_config", "DEFAULT_K"]

DEFAULT_K = 10


def check_k(k: Any) -> int:
    """``k`` as a positive int (``ConfigError`` otherwise; bools and fractions are refused)."""
    if isinstance(k, (float, np.floating)) and math.isfinite(k) and float(k).is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be an integer >= 1, got {k!r}")
    return int(k)


def _check_queries(model_input: Any) -> pd.DataFrame:
    if isinstance(model_input, (dict, list)):
        model_input = pd.DataFrame(model_input)
    if not isinstance(model_input, pd.DataFrame):
        raise DataError(f"retriever input must be a DataFrame with columns query_id, text; got {type(model_input).__name__}")
    if len(model_input) == 0:
        raise DataError("retriever input has no queries (empty DataFrame)")
    if "text" not in model_input.columns:
        raise DataError(f"retriever input lacks the text column; columns: {list(model_input.columns)}")
    id_col = "query_id" if "query_id" in model_input.columns else "_id" if "_id" in model_input.columns else None
    if id_col is None:
        raise DataError(f"retriever input lacks the query_id column; columns: {list(model_input.columns)}")
    ids = model_input[id_col]
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise DataError(f"retriever input: {id_col} is missing at row {row + 1}")
    dup = ids.duplicated()
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0])
        raise DataError(f"retriever input: duplicate {id_col} {ids.iloc[row]!r} (row {row + 1}); query ids must be unique")
    texts = model_input["text"].tolist()
    for row, t in enumerate(texts):
        if not isinstance(t, str):
            raise DataError(f"retriever input: text of query {ids.iloc[row]!r} (row {row + 1}) is not a string: {t!r}")
    return pd.DataFrame({"query_id": ids.to_numpy(), "text": texts})


def _resolve_device(device: str | None) -> torch.device:
    if device in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(device)


class FairltrRetriever(mlflow.pyfunc.PythonModel):
    """Top-k dense retrieval over a package's document index.

    ``model_config``: ``device`` (``"auto"``: CUDA when available, else CPU) and ``batch_size``
    (queries encoded per forward pass, default 128). In-process use:
    ``FairltrRetriever(package_dir).predict(None, queries, params={"k": 10})``.
    """

    def __init__(self, package_dir: PathLike | None = None, *, device: str | None = None, batch_size: int = 128) -> None:
        if package_dir is not None:
            self.load_package(package_dir, device=device, batch_size=batch_size)

    def load_context(self, context) -> None:
        config = getattr(context, "model_config", None) or {}
        self.load_package(context.artifacts["package"], device=config.get("device"),
                          batch_size=config.get("batch_size", 128))

    def load_package(self, package_dir: PathLike, *, device: str | None = None, batch_size: int = 128) -> None:
        """Load the query tower and the index of ``package_dir`` (no network, no training data)."""
        root = Path(package_dir)
        self.settings = read_retriever_settings(root)
        self.batch_size = check_int("batch_size", batch_size)
        self.device = _resolve_device(device)
        s = self.settings
        self.query_encoder = RetrieverEncoder(root / s["query_tower"], pooling=s["pooling"], normalize=s["normalize"],
                                              max_length=s["max_query_length"], device=self.device)
        embeddings, self.doc_ids, self.doc_langs = read_retriever_index(root)
        if embeddings.shape[1] != self.query_encoder.dim:
            raise ConfigError(f"{root}: index dim {embeddings.shape[1]} != query tower dim {self.query_encoder.dim}")
        self.embeddings = embeddings.to(self.device)
        self._doc_id_array = np.asarray(self.doc_ids, dtype=object)

    @property
    def corpus(self) -> pd.DataFrame:
        """The indexed documents: ``_id`` and ``lang`` (``None`` when unknown), in index order."""
        return pd.DataFrame({"_id": self.doc_ids, "lang": self.doc_langs or [None] * len(self.doc_ids)})

    def encode_queries(self, texts: Sequence[str]) -> torch.Tensor:
        """E_Q of ``texts`` (float32, on the model's device)."""
        return encode_chunked(self.query_encoder.encode, texts, self.batch_size).to(self.device)

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        k = (params or {}).get("k")
        k = DEFAULT_K if k is None else check_k(k)
        queries = _check_queries(model_input)
        q_emb = self.encode_queries(queries["text"].tolist())
        scores, idx = topk_search(q_emb, self.embeddings, k)  # k > n_docs is cut to n_docs
        n_q, kk = idx.shape
        return pd.DataFrame({
            "query_id": np.repeat(queries["query_id"].to_numpy(), kk),
            "doc_id": self._doc_id_array[idx.cpu().numpy().reshape(-1)],
            "rank": np.tile(np.arange(1, kk + 1, dtype=np.int64), n_q),
            "score": scores.cpu().to(torch.float64).numpy().reshape(-1),
        })


def retriever_from_config(root: Path, config: dict[str, Any]) -> FairltrRetriever:
    """The retriever of a loader-form model folder ``root`` (its MLmodel ``config`` names the package folder)."""
    rel = config.get("package")
    package = (root / rel).resolve() if rel else None
    if package is None or root.resolve() not in package.parents:
        raise DataError(f"{root}: the model config names no package folder inside the model ({rel!r})")
    return FairltrRetriever(package, device=config.get("device"), batch_size=config.get("batch_size", 128))
