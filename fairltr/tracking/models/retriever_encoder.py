"""Inference of one retriever tower: E(texts) = [normalize](pool(last hidden state, mask)).

The pooling is the core's :func:`fairltr.retrieval.pooling.pool`, the one implementation that
training (:class:`lightning_modules.BiEncoderModule`) uses too, so a text is embedded the same
way when a model is trained, when its package is built and when it serves queries.
A tower is a local ``save_pretrained`` folder: ``config.json``, safetensors weights and tokenizer
files (:func:`check_tower`); pickled weights are refused.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch

from fairltr.errors import ConfigError
from fairltr.retrieval.pooling import POOLINGS, pool
from fairltr.retrieval.search import encode_chunked

__all__ = ["RetrieverEncoder", "check_tower", "check_int", "tower_files", "PathLike"]

# files of a Hugging Face model folder that loading needs (weights only as safetensors)
_TOWER_FILES = ("config.json", "generation_config.json", "special_tokens_map.json", "added_tokens.json",
                "merges.txt", "vocab.txt", "vocab.json")
_TOWER_PREFIXES = ("tokenizer",)
_TOWER_SUFFIXES = (".safetensors", ".safetensors.index.json", ".model")
_PICKLE_WEIGHTS = ("pytorch_model.bin", "pytorch_model.bin.index.json", "tf_model.h5", "model.ckpt.index")

PathLike = str | os.PathLike


def tower_files(folder: Path) -> list[Path]:
    """The files of a tower folder that loading needs (weights only as safetensors), sorted."""
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




def check_int(name: str, value: Any, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum`` (``ConfigError`` otherwise; bools are refused)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)



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
        max_length = check_int("max_length", max_length)
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
        other.max_length = check_int("max_length", max_length)
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
