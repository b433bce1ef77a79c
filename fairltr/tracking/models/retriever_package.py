"""The retriever package format: a self-contained folder of safetensors and JSON (no pickle).

::

    retriever.json        settings: pooling, normalize, max_query_length, max_doc_length, shared,
                          towers, dim, n_docs, encoder origin, format + format_version
    query/                query tower: model.safetensors + config.json + tokenizer files
    doc/                  document tower (only when the towers are separate)
    index.safetensors     "embeddings": (n_docs, dim) float32 E_D of the corpus; its metadata
                          holds n_docs, dim and the SHA-256 of index.json
    index.json            {"doc_ids": [...], "doc_langs": [...] or null}, row order of the index

:func:`build_retriever_package` writes one (the corpus encoded with
:class:`~fairltr.tracking.models.retriever_encoder.RetrieverEncoder`); :func:`read_retriever_settings`
and :func:`read_retriever_index` read and check one.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import torch

from fairltr.errors import ConfigError, DataError
from fairltr.retrieval.pooling import POOLINGS
from fairltr.tracking.models.retriever_encoder import PathLike, RetrieverEncoder, check_int, check_tower, tower_files

__all__ = ["build_retriever_package", "read_retriever_settings", "read_retriever_index",
           "SETTINGS_FILE", "INDEX_FILE", "INDEX_DOCS_FILE", "FORMAT", "FORMAT_VERSION"]

SETTINGS_FILE = "retriever.json"
INDEX_FILE = "index.safetensors"
INDEX_DOCS_FILE = "index.json"
FORMAT = "fairltr-retriever"
FORMAT_VERSION = 1


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



def _copy_tower(src: Path, dest: Path) -> None:
    dest.mkdir(parents=True)
    for f in tower_files(src):
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

    Long because of a 15-line keyword signature and the settings record; the steps are helpers
    (``_check_corpus``, ``_check_doc_embeddings``, ``_empty_package_folder``, ``_corpus_embeddings``,
    ``_write_index``, ``_undo_package_folder``).
    """
    if pooling not in POOLINGS:
        raise ConfigError(f"pooling must be one of {POOLINGS}, got {pooling!r}")
    max_query_length = check_int("max_query_length", max_query_length)
    max_doc_length = check_int("max_doc_length", max_doc_length)
    batch_size = check_int("batch_size", batch_size)
    doc_ids, texts, langs = _check_corpus(corpus)
    q_src = check_tower(query_encoder, "query")
    shared = doc_encoder is None or Path(doc_encoder).resolve() == q_src.resolve()
    d_src = q_src if shared else check_tower(doc_encoder, "document")
    if doc_embeddings is not None:
        _check_doc_embeddings(doc_embeddings, len(doc_ids))

    out, created = _empty_package_folder(out_dir)
    try:
        _copy_tower(q_src, out / "query")
        if not shared:
            _copy_tower(d_src, out / "doc")
        doc_tower = out / ("query" if shared else "doc")
        q_enc = RetrieverEncoder(out / "query", pooling=pooling, normalize=normalize, max_length=max_query_length)
        d_enc = None if doc_embeddings is not None else (
            q_enc.with_max_length(max_doc_length) if shared else
            RetrieverEncoder(doc_tower, pooling=pooling, normalize=normalize, max_length=max_doc_length))
        embeddings = _corpus_embeddings(q_enc, d_enc, texts, doc_embeddings, batch_size, progress)
        _write_index(out, embeddings, doc_ids, langs)
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
        _undo_package_folder(out, created)
        raise
    return out


def _corpus_embeddings(q_enc: RetrieverEncoder, d_enc: RetrieverEncoder | None, texts, doc_embeddings,
                       batch_size: int, progress) -> torch.Tensor:
    """E_D: the corpus encoded by the document tower ``d_enc``, or the given ``doc_embeddings``
    (float32, on the CPU); their dimension must be the query tower's."""
    if d_enc is not None:
        embeddings = d_enc.encode_all(texts, batch_size, progress)
    else:
        embeddings = doc_embeddings.detach().to("cpu", torch.float32)
    if embeddings.shape[1] != q_enc.dim:
        raise ConfigError(f"document embeddings have dim {embeddings.shape[1]} but the query tower's is {q_enc.dim}")
    return embeddings


def _check_doc_embeddings(doc_embeddings: Any, n_docs: int) -> None:
    """Given document embeddings must be a finite (n_docs, dim) tensor."""
    if not isinstance(doc_embeddings, torch.Tensor) or doc_embeddings.ndim != 2 or doc_embeddings.shape[0] != n_docs:
        shape = tuple(doc_embeddings.shape) if isinstance(doc_embeddings, torch.Tensor) else type(doc_embeddings).__name__
        raise ConfigError(f"doc_embeddings must be a (n_docs={n_docs}, dim) tensor, got {shape}")
    if not torch.isfinite(doc_embeddings).all():
        raise DataError("doc_embeddings contain NaN or infinite values")


def _empty_package_folder(out_dir: PathLike) -> tuple[Path, bool]:
    """(``out_dir``, whether it was created): a new or empty folder, else :class:`ConfigError`."""
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ConfigError(f"package folder {out} already exists and is not empty")
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    return out, created


def _undo_package_folder(out: Path, created: bool) -> None:
    """Remove a half-written package: the folder when this build created it, else its contents."""
    if created:
        shutil.rmtree(out, ignore_errors=True)
    else:
        for child in out.iterdir():
            shutil.rmtree(child) if child.is_dir() else child.unlink()


def _write_index(out: Path, embeddings: torch.Tensor, doc_ids: list[str], langs: list[str] | None) -> None:
    """``index.json`` (row order) and ``index.safetensors`` (embeddings + the SHA-256 of index.json)."""
    from safetensors.torch import save_file

    docs_json = json.dumps({"doc_ids": doc_ids, "doc_langs": langs}, ensure_ascii=False).encode("utf-8")
    (out / INDEX_DOCS_FILE).write_bytes(docs_json)
    save_file({"embeddings": embeddings.contiguous()}, str(out / INDEX_FILE), metadata={
        "format": f"{FORMAT}-index", "n_docs": str(len(doc_ids)), "dim": str(embeddings.shape[1]),
        "docs_sha256": _sha256(docs_json),
    })


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
