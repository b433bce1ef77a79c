"""The "fairltr retriever" MLflow pyfunc: a dense bi-encoder with its document index.

A retriever *package* is a self-contained folder (no pickle anywhere)::

    retriever.json        settings: pooling, normalize, max_query_length, max_doc_length, shared,
                          towers, dim, n_docs, encoder origin, format + format_version
    query/                query tower: model.safetensors + config.json + tokenizer files
    doc/                  document tower (only when the towers are separate)
    index.safetensors     "embeddings": (n_docs, dim) float32 E_D of the corpus; its metadata
                          holds n_docs, dim and the SHA-256 of index.json
    index.json            {"doc_ids": [...], "doc_langs": [...] or null}, row order of the index

Scores are s(q, d) = <E_Q(q), E_D(d)>, E = pooled (``cls`` or masked ``mean``), optionally
L2-normalised last hidden state (:func:`fairltr.retrieval.pooling.pool`); the corpus is encoded
at build time with :class:`RetrieverEncoder`, the same class that encodes queries at predict
time, and searched exactly with :func:`fairltr.retrieval.topk_search`.

MLflow model: "models from code" (``retriever_code.py``), the package folder as the
``package`` artifact, the ``fairltr`` package under ``code/``, pinned pip requirements and
``model_config={"kind": "retriever"}`` (read by :func:`model_kind`).

Contract of ``predict``: input = DataFrame ``query_id`` (str, unique), ``text`` (str), optional
``lang`` (accepted so that evaluation frames pass as they are; not used for scoring);
``params={"k": 10}``; output = one row per (query, retrieved document): ``query_id``,
``doc_id``, ``rank`` (1..k), ``score`` (float), ordered by query (input order) then rank.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata as md
import json
import math
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import pandas as pd
import torch

import mlflow.pyfunc

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.pooling import POOLINGS, pool
from fairltr.retrieval.search import encode_chunked, topk_search
from fairltr.tracking.config import registry_prints_follow_log_level

__all__ = [
    "RetrieverEncoder", "FairltrRetriever", "build_retriever_package", "read_retriever_settings",
    "read_retriever_index", "log_retriever_model", "retriever_pip_requirements", "retriever_signature",
    "model_kind", "check_k", "MODEL_CODE", "DEFAULT_K", "KIND_TAG",
]

MODEL_CODE = Path(__file__).with_name("retriever_code.py")
SETTINGS_FILE = "retriever.json"
INDEX_FILE = "index.safetensors"
INDEX_DOCS_FILE = "index.json"
FORMAT = "fairltr-retriever"
FORMAT_VERSION = 1
DEFAULT_K = 10
KIND_TAG = "fairltr.kind"
_REQUIREMENTS = ("torch", "transformers", "tokenizers", "safetensors", "numpy", "pandas", "mlflow")
# files of a Hugging Face model folder that loading needs (weights only as safetensors)
_TOWER_FILES = ("config.json", "generation_config.json", "special_tokens_map.json", "added_tokens.json",
                "merges.txt", "vocab.txt", "vocab.json")
_TOWER_PREFIXES = ("tokenizer",)
_TOWER_SUFFIXES = (".safetensors", ".safetensors.index.json", ".model")
_PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index")

PathLike = str | os.PathLike


# ------------------------------------------------------------------------------- encoding
def _tower_files(folder: Path) -> list[Path]:
    return sorted(
        p for p in folder.iterdir()
        if p.is_file() and (p.name in _TOWER_FILES or p.name.startswith(_TOWER_PREFIXES) or p.name.endswith(_TOWER_SUFFIXES))
    )


def check_tower(folder: PathLike, role: str = "encoder") -> Path:
    """``folder`` as a loadable tower: a directory with ``config.json``, safetensors weights and
    tokenizer files; raises :class:`ConfigError` naming what is missing."""
    p = Path(folder)
    if not p.is_dir():
        raise ConfigError(f"{role} tower {p} is not a directory (expected a save_pretrained folder)")
    names = {q.name for q in p.iterdir() if q.is_file()}
    if "config.json" not in names:
        raise ConfigError(f"{role} tower {p} has no config.json (expected a save_pretrained folder)")
    if not any(n.endswith(".safetensors") for n in names):
        pickled = sorted(names & set(_PICKLE_WEIGHTS))
        hint = (f" (found {pickled}: re-save it with save_pretrained(), which writes model.safetensors; "
                "pickled weights are not accepted)") if pickled else ""
        raise ConfigError(f"{role} tower {p} has no safetensors weights{hint}")
    if not any(n.startswith("tokenizer") or n in ("vocab.txt", "vocab.json") for n in names):
        raise ConfigError(f"{role} tower {p} has no tokenizer files (tokenizer.json / tokenizer_config.json)")
    return p


class RetrieverEncoder:
    """One tower: E(texts) = [normalize](pool(last_hidden_state, attention_mask)).

    Loads ``AutoTokenizer`` + ``AutoModel`` from a local folder (``local_files_only=True``, so no
    network); texts are tokenised with padding, truncation to ``max_length``, and encoded in
    evaluation mode under ``torch.inference_mode``. The build of a package encodes the corpus with
    this class and the pyfunc encodes queries with it, so both sides embed texts identically
    (and as :class:`lightning_modules.BiEncoderModule` does during training).
    """

    def __init__(
        self, folder: PathLike, *, pooling: str = "mean", normalize: bool = True, max_length: int = 64,
        device: str | torch.device = "cpu",
    ) -> None:
        if pooling not in POOLINGS:
            raise ConfigError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
        max_length = _check_int("max_length", max_length)
        from transformers import AutoModel, AutoTokenizer

        self.folder = check_tower(folder)
        self.pooling, self.normalize, self.max_length = pooling, bool(normalize), int(max_length)
        self.device = torch.device(device)
        from transformers.utils import logging as hf_logging

        level, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
        if not os.environ.get("FAIRLTR_VERBOSE"):  # the load report names the unused pooler as MISSING
            hf_logging.set_verbosity_error()
            hf_logging.disable_progress_bar()
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(str(self.folder), local_files_only=True)
            model = AutoModel.from_pretrained(str(self.folder), local_files_only=True)
        finally:
            hf_logging.set_verbosity(level)
            if bars:
                hf_logging.enable_progress_bar()
        if getattr(model, "pooler", None) is not None:
            model.pooler = None  # BERT's pooler head is unused: we pool the last hidden state
        self.model = model.to(self.device).eval()

    def with_max_length(self, max_length: int) -> "RetrieverEncoder":
        """The same tower (shared weights and tokenizer) truncating at ``max_length`` tokens."""
        other = copy.copy(self)
        other.max_length = _check_int("max_length", max_length)
        return other

    @property
    def dim(self) -> int:
        """Embedding width (the encoder's hidden size)."""
        return int(self.model.config.hidden_size)

    def encode(self, texts: Sequence[str]) -> torch.Tensor:
        """(len(texts), dim) embeddings of one batch (float32, on the encoder's device)."""
        enc = self.tokenizer(list(texts), padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="pt")
        enc = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
        with torch.inference_mode():
            hidden = self.model(**enc).last_hidden_state
            emb = pool(hidden, enc["attention_mask"], self.pooling)
            emb = torch.nn.functional.normalize(emb, dim=-1) if self.normalize else emb
        return emb.float()

    def encode_all(
        self, texts: Sequence[str], batch_size: int = 128, progress: Callable[[int, int], None] | None = None
    ) -> torch.Tensor:
        """Embeddings of every text, ``batch_size`` at a time (float32 CPU tensor)."""
        return encode_chunked(self.encode, texts, batch_size, progress=progress)


# ------------------------------------------------------------------------------- package
def _check_corpus(corpus: Any) -> tuple[list[str], list[str], list[str] | None]:
    if not isinstance(corpus, pd.DataFrame):
        raise ConfigError(f"corpus must be a pandas DataFrame with columns _id, text (optional lang); got {type(corpus).__name__}")
    missing = [c for c in ("_id", "text") if c not in corpus.columns]
    if missing:
        raise DataError(f"corpus lacks column(s) {missing}; columns: {list(corpus.columns)} (need _id, text, optional lang)")
    if len(corpus) == 0:
        raise DataError("corpus is empty: a retriever needs at least one document")
    ids = corpus["_id"]
    if ids.isna().any():
        row = int(np.flatnonzero(ids.isna().to_numpy())[0])
        raise DataError(f"corpus column _id has a missing value at row {row + 1}")
    doc_ids = [str(x) for x in ids.tolist()]
    seen: dict[str, int] = {}
    for row, d in enumerate(doc_ids, start=1):
        if d in seen:
            raise DataError(f"corpus has duplicate _id {d!r} (rows {seen[d]} and {row})")
        seen[d] = row
    texts = corpus["text"].tolist()
    for row, t in enumerate(texts):
        if not isinstance(t, str):
            raise DataError(f"corpus column text of document {doc_ids[row]!r} (row {row + 1}) is not a string: {t!r}")
    langs = None
    if "lang" in corpus.columns:
        lang = corpus["lang"]
        if lang.isna().any():
            row = int(np.flatnonzero(lang.isna().to_numpy())[0])
            raise DataError(f"corpus column lang of document {doc_ids[row]!r} (row {row + 1}) is missing "
                            "(drop the lang column if document languages are unknown)")
        langs = [str(x) for x in lang.tolist()]
    return doc_ids, texts, langs


def _check_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _copy_tower(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for f in _tower_files(src):
        shutil.copy2(f, dest / f.name)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def build_retriever_package(
    out_dir: PathLike,
    *,
    query_encoder: PathLike,
    doc_encoder: PathLike | None = None,
    corpus: pd.DataFrame,
    pooling: str = "mean",
    normalize: bool = True,
    max_query_length: int = 32,
    max_doc_length: int = 64,
    doc_embeddings: torch.Tensor | None = None,
    batch_size: int = 128,
    progress: Callable[[int, int], None] | None = None,
    encoder_origin: str | None = None,
) -> Path:
    """Write a retriever package to ``out_dir`` (which must not exist or be empty) and return it.

    Copies the tower folder(s) (one when ``doc_encoder`` is None or the same folder: shared towers),
    then encodes ``corpus`` (``_id``, ``text``, optional ``lang``) with the copied document tower
    by :class:`RetrieverEncoder`, unless ``doc_embeddings`` (n_docs, dim) is given (e.g. a frozen
    tower's cache, which must be E_D as this package computes it). ``encoder_origin`` (default: the
    query tower's path) is recorded in the settings.
    """
    if pooling not in POOLINGS:
        raise ConfigError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    max_query_length = _check_int("max_query_length", max_query_length)
    max_doc_length = _check_int("max_doc_length", max_doc_length)
    batch_size = _check_int("batch_size", batch_size)
    doc_ids, texts, langs = _check_corpus(corpus)
    q_src = check_tower(query_encoder, "query")
    shared = doc_encoder is None or Path(doc_encoder).resolve() == q_src.resolve()
    d_src = q_src if shared else check_tower(doc_encoder, "document")
    if doc_embeddings is not None:
        if not isinstance(doc_embeddings, torch.Tensor) or doc_embeddings.ndim != 2 or doc_embeddings.shape[0] != len(doc_ids):
            shape = tuple(doc_embeddings.shape) if isinstance(doc_embeddings, torch.Tensor) else type(doc_embeddings).__name__
            raise ConfigError(f"doc_embeddings must be a (n_docs={len(doc_ids)}, dim) tensor, got {shape}")
        if not torch.isfinite(doc_embeddings).all():
            raise DataError("doc_embeddings contain NaN or infinite values")

    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"package folder {out} already exists and is not empty")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        _copy_tower(q_src, out / "query")
        if not shared:
            _copy_tower(d_src, out / "doc")
        doc_tower = out / ("query" if shared else "doc")
        q_enc = RetrieverEncoder(out / "query", pooling=pooling, normalize=normalize, max_length=max_query_length)
        if doc_embeddings is None:
            d_enc = (q_enc.with_max_length(max_doc_length) if shared else
                     RetrieverEncoder(doc_tower, pooling=pooling, normalize=normalize, max_length=max_doc_length))
            embeddings = d_enc.encode_all(texts, batch_size, progress)
        else:
            embeddings = doc_embeddings.detach().to("cpu", torch.float32)
        if embeddings.shape[1] != q_enc.dim:
            raise ConfigError(f"document embeddings have dim {embeddings.shape[1]} but the query tower's is {q_enc.dim}")
        docs_json = json.dumps({"doc_ids": doc_ids, "doc_langs": langs}, ensure_ascii=False).encode("utf-8")
        (out / INDEX_DOCS_FILE).write_bytes(docs_json)
        from safetensors.torch import save_file

        save_file({"embeddings": embeddings.contiguous()}, str(out / INDEX_FILE), metadata={
            "format": f"{FORMAT}-index", "n_docs": str(len(doc_ids)), "dim": str(embeddings.shape[1]),
            "docs_sha256": _sha256(docs_json),
        })
        settings = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "pooling": pooling, "normalize": bool(normalize),
            "max_query_length": max_query_length, "max_doc_length": max_doc_length,
            "shared": shared, "query_tower": "query", "doc_tower": doc_tower.name,
            "dim": int(embeddings.shape[1]), "n_docs": len(doc_ids), "doc_languages": langs is not None,
            "encoder_origin": encoder_origin or str(query_encoder),
            "doc_encoder_origin": str(doc_encoder) if not shared else None,
            "fairltr_version": _fairltr_version(),
        }
        (out / SETTINGS_FILE).write_text(json.dumps(settings, indent=1) + "\n", encoding="utf-8")
    except BaseException:
        if created:
            shutil.rmtree(out, ignore_errors=True)
        else:
            for child in out.iterdir():
                shutil.rmtree(child) if child.is_dir() else child.unlink()
        raise
    return out


def _fairltr_version() -> str:
    import fairltr

    return str(getattr(fairltr, "__version__", "unknown"))


def read_retriever_settings(package_dir: PathLike) -> dict[str, Any]:
    """The checked settings of a package folder (raises :class:`ConfigError` naming the problem)."""
    root = Path(package_dir)
    path = root / SETTINGS_FILE
    if not path.is_file():
        raise ConfigError(f"{root} is not a fairltr retriever package: {SETTINGS_FILE} is missing")
    try:
        settings = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{path}: invalid JSON ({exc.msg})") from None
    if settings.get("format") != FORMAT:
        raise ConfigError(f"{path}: format is {settings.get('format')!r}, expected {FORMAT!r}")
    if settings.get("format_version") != FORMAT_VERSION:
        raise ConfigError(f"{path}: format_version {settings.get('format_version')!r} is not supported "
                          f"(this fairltr reads version {FORMAT_VERSION})")
    for key in ("pooling", "normalize", "max_query_length", "max_doc_length", "shared", "query_tower", "doc_tower"):
        if key not in settings:
            raise ConfigError(f"{path}: setting {key!r} is missing")
    for key in ("query_tower", "doc_tower"):
        check_tower(root / settings[key], key.split("_")[0])
    for name in (INDEX_FILE, INDEX_DOCS_FILE):
        if not (root / name).is_file():
            raise ConfigError(f"{root}: {name} is missing")
    return settings


def read_retriever_index(package_dir: PathLike) -> tuple[torch.Tensor, list[str], list[str] | None]:
    """(embeddings (n_docs, dim) float32, doc ids, doc languages or None) of a package."""
    from safetensors import safe_open

    root = Path(package_dir)
    docs_bytes = (root / INDEX_DOCS_FILE).read_bytes()
    with safe_open(str(root / INDEX_FILE), framework="pt") as fh:
        meta = fh.metadata() or {}
        embeddings = fh.get_tensor("embeddings")
    if meta.get("docs_sha256") != _sha256(docs_bytes):
        raise ConfigError(f"{root}: {INDEX_DOCS_FILE} does not belong to {INDEX_FILE} (checksum mismatch)")
    docs = json.loads(docs_bytes)
    doc_ids, langs = list(docs["doc_ids"]), docs.get("doc_langs")
    if embeddings.ndim != 2 or embeddings.shape[0] != len(doc_ids):
        raise ConfigError(f"{root}: index has {tuple(embeddings.shape)} embeddings for {len(doc_ids)} doc ids")
    return embeddings.float(), doc_ids, (list(langs) if langs is not None else None)


# ------------------------------------------------------------------------------- pyfunc
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
        self.batch_size = _check_int("batch_size", batch_size)
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


def log_retriever_model(
    package_dir: PathLike,
    *,
    name: str = "model",
    register: str | None = None,
    input_example: pd.DataFrame | None = None,
    **log_kwargs: Any,
):
    """Log the package as a pyfunc (in the active run, if any), optionally registering it as a new
    version of ``register`` (that version gets the tag ``fairltr.kind=retriever``). Returns MLflow's
    ``ModelInfo``. ``model_config`` / ``tags`` in ``log_kwargs`` are merged with the kind marker.
    The folder's digest is recorded on the logged model and the version (tag ``fairltr.digest``,
    :func:`fairltr.tracking.verify.record_digest`)."""
    from fairltr.tracking.pyfunc import stage_package
    from fairltr.tracking.verify import record_digest

    settings = read_retriever_settings(package_dir)
    if input_example is None:
        input_example = pd.DataFrame({"query_id": ["q1", "q2"], "text": ["an example query", "another query"]})
    else:
        input_example = _check_queries(input_example.head(5).reset_index(drop=True))
    model_config = {**dict(log_kwargs.pop("model_config", None) or {}), "kind": "retriever"}
    tags = {**dict(log_kwargs.pop("tags", None) or {}), KIND_TAG: "retriever"}
    metadata = {**dict(log_kwargs.pop("metadata", None) or {}),
                "fairltr_retriever": {k: settings.get(k) for k in ("pooling", "normalize", "max_query_length",
                                                                   "max_doc_length", "shared", "dim", "n_docs",
                                                                   "encoder_origin", "format_version")}}
    with tempfile.TemporaryDirectory(prefix="fairltr-retriever-") as tmp:
        code = stage_package(Path(tmp) / "code")
        with registry_prints_follow_log_level():
            info = mlflow.pyfunc.log_model(
                name=name,
                python_model=str(MODEL_CODE),
                artifacts={"package": str(Path(package_dir))},
                code_paths=[str(code)],
                pip_requirements=retriever_pip_requirements(),
                signature=retriever_signature(),
                input_example=input_example,
                registered_model_name=register or None,
                model_config=model_config,
                tags=tags,
                metadata=metadata,
                **log_kwargs,
            )
        record_digest(info, {"artifact:package": Path(package_dir), "retriever_code.py": MODEL_CODE,
                             "code/fairltr": code}, register=register or None)
    if register and info.registered_model_version is not None:
        mlflow.MlflowClient().set_model_version_tag(register, str(info.registered_model_version), KIND_TAG, "retriever")
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
