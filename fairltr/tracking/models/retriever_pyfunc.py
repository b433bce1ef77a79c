"""The "fairltr retriever" MLflow pyfunc over a retriever package (:mod:`fairltr.tracking.models.retriever_package`).

MLflow model: the loader-module form (:mod:`fairltr.tracking.models.loader_form`: MLmodel names
fairltr's :mod:`~fairltr.tracking.models.verified_loader`, which checks the digest before it reads
the package), the package folder under ``artifacts/``, the ``fairltr`` package staged under
``code/`` (tree and wheel), pinned pip requirements and ``model_config={"kind": "retriever",
"package": ...}`` (read by :func:`model_kind`). Models logged before that form ("models from
code": ``retriever_code.py``, which imports :class:`FairltrRetriever` from
:mod:`fairltr.tracking.models.retriever`, and MLflow's ``package`` artifact) still load as before.

Contract of ``predict``: input = DataFrame ``query_id`` (str, unique), ``text`` (str), optional
``lang`` (accepted so that evaluation frames pass as they are; not used for scoring);
``params={"k": 10}``; output = one row per (query, retrieved document): ``query_id``,
``doc_id``, ``rank`` (1..k), ``score`` (float), ordered by query (input order) then rank.
"""

from __future__ import annotations

import importlib.metadata as md
import math
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

import mlflow.pyfunc

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.search import encode_chunked, topk_search
from fairltr.tracking.runs.config import registry_prints_follow_log_level
from fairltr.tracking.models.retriever_encoder import PathLike, RetrieverEncoder, check_int
from fairltr.tracking.models.retriever_package import read_retriever_index, read_retriever_settings

__all__ = ["FairltrRetriever", "log_retriever_model", "retriever_pip_requirements", "retriever_signature",
           "model_kind", "check_k", "retriever_from_config", "MODEL_CODE", "DEFAULT_K", "KIND_TAG"]

MODEL_CODE = Path(__file__).with_name("retriever_code.py")
DEFAULT_K = 10
KIND_TAG = "fairltr.kind"
_REQUIREMENTS = ("torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "mlflow")


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


# ------------------------------------------------------------------------------- logging
def retriever_pip_requirements() -> list[str]:
    """Exact pins of the retriever's runtime dependencies, read from the installed versions."""
    return [f"{name}=={md.version(name).split('+')[0]}" for name in _REQUIREMENTS]


def retriever_signature():
    """Input ``query_id``, ``text`` (strings), optional ``lang``; output ``query_id``, ``doc_id``,
    ``rank`` (long), ``score`` (double); params ``k`` (long, default 10)."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, ParamSchema, ParamSpec, Schema

    inputs = Schema([ColSpec("string", "query_id"), ColSpec("string", "text"), ColSpec("string", "lang", required=False)])
    outputs = Schema([ColSpec("string", "query_id"), ColSpec("string", "doc_id"), ColSpec("long", "rank"),
                      ColSpec("double", "score")])
    return ModelSignature(inputs=inputs, outputs=outputs, params=ParamSchema([ParamSpec("k", "long", DEFAULT_K)]))


def retriever_from_config(root: Path, config: dict[str, Any]) -> FairltrRetriever:
    """The retriever of a loader-form model folder ``root`` (its MLmodel ``config`` names the package folder)."""
    rel = config.get("package")
    package = (root / rel).resolve() if rel else None
    if package is None or root.resolve() not in package.parents:
        raise DataError(f"{root}: the model config names no package folder inside the model ({rel!r})")
    return FairltrRetriever(package, device=config.get("device"), batch_size=config.get("batch_size", 128))


def log_retriever_model(
    package_dir: PathLike,
    *,
    name: str = "model",
    register: str | None = None,
    input_example: pd.DataFrame | None = None,
    **log_kwargs: Any,
):
    """Log the package as a pyfunc in the loader-module form (in the active run, if any), optionally
    registering it as a new version of ``register`` (that version gets the tag
    ``fairltr.kind=retriever``). Returns MLflow's ``ModelInfo``. ``model_config`` / ``tags`` in
    ``log_kwargs`` are merged with the kind marker. The folder's digest is recorded on the logged
    model and the version (tag ``fairltr.digest``, :func:`fairltr.tracking.models.digests.record_digest`)
    and checked by the loader before the model serves."""
    from fairltr.tracking.models.digests import record_digest
    from fairltr.tracking.models.loader_form import build_wheel, log_loader_model, wheel_requirement
    from fairltr.tracking.models.pyfunc import stage_package
    from fairltr.tracking.models.verified_loader import LOADER_FORMAT

    settings = read_retriever_settings(package_dir)
    if input_example is None:
        input_example = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["an example query", "another query"]})
    else:
        input_example = _check_queries(input_example.head(5).reset_index(drop=True))
    package_rel = f"artifacts/{Path(package_dir).resolve().name}"
    model_config = {**dict(log_kwargs.pop("model_config", None) or {}), "kind": "retriever",
                    "format": LOADER_FORMAT, "package": package_rel}
    tags = {**dict(log_kwargs.pop("tags", None) or {}), KIND_TAG: "retriever"}
    metadata = {**dict(log_kwargs.pop("metadata", None) or {}),
                "fairltr_retriever": {k: settings.get(k) for k in ("pooling", "normalize", "max_query_length",
                                                                   "max_doc_length", "shared", "dim", "n_docs",
                                                                   "encoder_origin", "format_version")}}
    with tempfile.TemporaryDirectory(prefix="fairltr-retriever-") as tmp:
        code = stage_package(Path(tmp) / "code")
        wheel = build_wheel(code, Path(tmp) / "wheel", md.version("fairltr"))
        files = {package_rel: Path(package_dir), "retriever_code.py": MODEL_CODE, "code/fairltr": code,
                 f"code/{wheel.name}": wheel}
        with registry_prints_follow_log_level():
            info = log_loader_model(name, files, model_config,
                                    pip_requirements=[*retriever_pip_requirements(), wheel_requirement(wheel)],
                                    signature=retriever_signature(), input_example=input_example, tags=tags,
                                    metadata=metadata, **log_kwargs)
        record_digest(info, files, register=register or None, version_tags={KIND_TAG: "retriever"})
    return info


def model_kind(model_uri: str) -> str:
    """``"retriever"`` or ``"ranker"`` from the model's MLmodel metadata (``model_config["kind"]``);
    fairltr models logged before the marker existed are rankers."""
    from mlflow.models import get_model_info

    flavors = get_model_info(model_uri).flavors or {}
    pyfunc = flavors.get("python_function") or {}
    kind = (pyfunc.get("config") or {}).get("kind")
    if kind is None:
        code = str(pyfunc.get("model_code_path") or "")
        kind = "retriever" if code.endswith("retriever_code.py") else "ranker"
    if kind not in ("ranker", "retriever"):
        raise ConfigError(f"model {model_uri} has kind {kind!r}; expected 'ranker' or 'retriever'")
    return kind
