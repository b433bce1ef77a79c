"""The frozen document tower's corpus embeddings, computed once and cached on disk, keyed by the
encoder's weights and the settings that change them (:class:`CorpusEmbeddingCache`)."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any, Callable

__all__ = ["CorpusEmbeddingCache", "default_cache_dir", "encode_corpus"]

Echo = Callable[[str], None]


class CorpusEmbeddingCache:
    """Corpus embeddings of a frozen document tower on disk (safetensors), keyed by a digest of
    the encoder's weights and the settings that change the embeddings (pooling, normalisation,
    document length, the corpus ids and texts). One sweep (or benchmark) encodes the corpus once."""

    def __init__(self, folder: str | Path | None = None) -> None:
        self.folder = Path(folder) if folder is not None else default_cache_dir()

    @staticmethod
    def tower_key(tower, corpus, *, pooling: str, normalize: bool, max_doc_length: int) -> str:
        """sha256 of the document tower's weights (every tensor's name, dtype, shape and bytes),
        the settings that change an embedding, and the corpus ids and texts. Any tower (a
        checkpoint on disk, a fine-tuned module in memory) keys by what it computes with. The
        Hugging Face pooler (``pooler.*``) is left out: fairltr pools the last hidden states itself,
        and a tower saved without one gets a freshly *random* pooler on every load, which would
        make a saved frozen tower (``OUT/encoder/doc``) miss the cache every time."""
        import torch

        h = hashlib.sha256()
        with torch.no_grad():
            for name, tensor in tower.state_dict().items():
                if name.startswith("pooler.") or ".pooler." in name:
                    continue
                t = tensor.detach().to("cpu").contiguous()
                h.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
                h.update(t.view(torch.uint8).numpy().tobytes() if t.numel() else b"")
        h.update(json.dumps({"pooling": pooling, "normalize": normalize, "max_doc_length": max_doc_length}).encode())
        for col in ("_id", "text"):
            h.update("\x1f".join(corpus[col].tolist()).encode("utf-8"))
        return h.hexdigest()[:32]

    @classmethod
    def module_key(cls, module, corpus) -> str:
        """:meth:`tower_key` of a :class:`~lightning_modules.BiEncoderModule`'s document tower."""
        hp = module.hparams
        return cls.tower_key(module.doc_encoder, corpus, pooling=hp.pooling, normalize=hp.normalize,
                             max_doc_length=hp.max_doc_length)

    @staticmethod
    def key(encoder: str, corpus, *, pooling: str, normalize: bool, max_doc_length: int) -> str:
        h = hashlib.sha256()
        enc = Path(encoder)
        if enc.is_dir():
            for f in sorted(enc.glob("*.safetensors")) + sorted(enc.glob("*.bin")):
                st = f.stat()
                h.update(f"{f.name}:{st.st_size}:{st.st_mtime_ns}".encode())
        h.update(str(enc.resolve() if enc.exists() else encoder).encode())
        h.update(json.dumps({"pooling": pooling, "normalize": normalize, "max_doc_length": max_doc_length}).encode())
        for col in ("_id", "text"):
            h.update("\x1f".join(corpus[col].tolist()).encode("utf-8"))
        return h.hexdigest()[:32]

    def get_or_compute(self, key: str, compute: Callable[[], Any], echo: Echo = lambda _: None):
        """The cached embeddings of ``key``, or ``compute()`` saved atomically. Processes sharing
        the folder (the workers of one sweep) take a file lock, so the corpus is encoded once:
        the others wait and read it."""
        from safetensors import SafetensorError
        from safetensors.torch import load_file, save_file

        from fairltr.files import atomic_path, file_lock

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"corpus-{key}.safetensors"
        with file_lock(path.with_name(path.name + ".lock"), timeout=3600.0):
            if path.is_file():
                try:
                    emb = load_file(str(path))["embeddings"]
                    echo(f"corpus embeddings read from the cache {path}")
                    return emb
                except (SafetensorError, KeyError, OSError):  # a damaged cache file is recomputed, never trusted
                    path.unlink(missing_ok=True)
            emb = compute()
            with atomic_path(path) as tmp:
                save_file({"embeddings": emb.contiguous()}, str(tmp))
        return emb


def default_cache_dir() -> Path:
    """``corpus-embeddings`` in fairltr's state folder (:func:`fairltr.files.state_dir`)."""
    from fairltr.files import state_dir

    return state_dir() / "corpus-embeddings"


def encode_corpus(module, corpus, *, cache: CorpusEmbeddingCache | None = None, batch_size: int = 128,
                  echo: Echo = lambda _: None):
    """E_D of every corpus document with ``module``'s document tower (eval mode, then back to
    the mode it was in), read from ``cache`` when that tower has encoded this corpus before.
    Progress goes to ``echo`` (a line every 10 s or 10% off a TTY, a bar on one)."""
    from fairltr.progress import Progress
    from fairltr.retrieval import encode_chunked

    def compute():
        was_training = module.training
        module.eval()
        t0 = time.perf_counter()
        progress = Progress(f"encoding {len(corpus)} documents", len(corpus), echo)
        try:
            emb = encode_chunked(module.encode_documents, corpus["text"].tolist(), batch_size, progress=progress)
        finally:
            progress.close()
            module.train(was_training)
        echo(f"encoded {len(corpus)} documents in {time.perf_counter() - t0:.0f} s")
        return emb

    if cache is None:
        return compute()
    return cache.get_or_compute(cache.module_key(module, corpus), compute, echo)
