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

The class a loaded model is, :class:`FairltrRetriever`, lives in
:mod:`fairltr.tracking.models.retriever_model` (what the loaders build); this module logs models
and re-exports it.
"""

from __future__ import annotations

import importlib.metadata as md
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd

from fairltr.errors import ConfigError
from fairltr.tracking.runs.config import registry_prints_follow_log_level
from fairltr.tracking.models.retriever_encoder import PathLike
from fairltr.tracking.models.retriever_model import (  # noqa: F401 (re-exported: the paths callers name)
    DEFAULT_K, FairltrRetriever, _check_queries, _resolve_device, check_k, retriever_from_config,
)
from fairltr.tracking.models.retriever_package import read_retriever_settings

__all__ = ["FairltrRetriever", "log_retriever_model", "retriever_pip_requirements", "retriever_signature",
           "model_kind", "check_k", "retriever_from_config", "MODEL_CODE", "DEFAULT_K", "KIND_TAG"]

MODEL_CODE = Path(__file__).with_name("retriever_code.py")
KIND_TAG = "fairltr.kind"
_REQUIREMENTS = ("torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "mlflow")


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
    from fairltr.tracking.models.loader_form import build_wheel, log_loader_model, stage_package, wheel_requirement
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
