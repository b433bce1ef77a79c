"""``fairltr train dpr`` (DPR / LaKDA / MSE bi-encoder) and ``fairltr evaluate-retrieval``.

Lightning and transformers are imported inside the commands only. The ``--alpha`` default
and its range come from the fairness-loss registry.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import click

from fairltr.cli.app import cli, train
from fairltr.errors import ConfigError
from fairltr.losses import ALPHA, available_losses

FAIRNESS_CHOICES = ["none", *available_losses("retrieval")]
SUMMARY_KEYS = ("mrr_at_100", "recall_at_100", "mrc_at_5", "mrc_at_5_intersection", "overlap_at_5", "rbo_at_5")


def _setup_env(threads: int | None) -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if threads:
        import torch

        torch.set_num_threads(threads)


def _report(res: dict, k: int, mrc_k: int) -> dict:
    keys = (f"mrr_at_{k}", f"recall_at_{k}", f"mrc_at_{mrc_k}", f"mrc_at_{mrc_k}_intersection",
            f"overlap_at_{mrc_k}", f"rbo_at_{mrc_k}")
    summary = {key: round(float(res[key]), 4) for key in keys}
    click.echo(json.dumps(summary, indent=1))
    click.echo(res["per_language"].round(2).to_string())
    return {**summary, "per_language": res["per_language"].to_dict(),
            "doc_language_share": res["doc_language_share"].to_dict(), "mrc_matrix": res["mrc_matrix"].to_dict()}


def _evaluate(module, data_dir: str, split: str, max_items: int | None, k: int, mrc_k: int, batch_size: int, seed: int):
    from fairltr.retrieval import dense_run, evaluate_run, read_parallel_data

    data = read_parallel_data(data_dir).split(split, max_items, seed)
    module.eval()
    run, timing = dense_run(module.encode_queries, module.encode_documents, data, k=k, batch_size=batch_size)
    click.echo(f"encoded corpus in {timing['encode_corpus_s']:.0f} s, queries in {timing['encode_queries_s']:.0f} s", err=True)
    return evaluate_run(run, data, k=k, mrc_k=mrc_k)


@train.command("dpr")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False),
              help="folder with corpus.jsonl, queries.jsonl, qrels.tsv (ddtp-mlir layout)")
@click.option("--model", "model_path", required=True, help="Hugging Face model name or local folder")
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
@click.option("--accelerator", default="auto", show_default=True)
@click.option("--devices", default="1", show_default=True)
@click.option("--precision", default="32-true", show_default=True, help="e.g. bf16-mixed on a GPU")
@click.option("--threads", type=int, default=None, help="torch threads per process")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", required=True, type=click.Path(file_okay=False),
              help="writes encoder(s) under OUT/encoder and metrics to OUT/metrics.json")
@click.option("--experiment", default="fairltr-dpr", show_default=True, help="MLflow experiment")
@click.option("--no-track", is_flag=True, help="do not log to MLflow")
def train_dpr(data_dir, model_path, fairness_loss, alpha, steps, batch_size, lr, warmup_steps, temperature, pooling,
              normalize, shared, freeze_documents, max_query_length, max_doc_length, train_split, eval_split, max_eval_items,
              accelerator, devices, precision, threads, seed, out_dir, experiment, no_track):
    """Fine-tune a DPR bi-encoder on parallel queries, with LaKDA (lakda_kl), MSE or no fairness loss."""
    _setup_env(threads)
    if steps < 1:
        raise ConfigError(f"--steps must be >= 1, got {steps}")
    import lightning.pytorch as pl

    from lightning_modules import BiEncoderModule, ParallelQueryDataModule

    pl.seed_everything(seed, verbose=False)
    dm = ParallelQueryDataModule(data_dir, batch_size=batch_size, train_split=train_split, seed=seed)
    module = BiEncoderModule(
        model_path, shared=shared and not freeze_documents, train_documents=not freeze_documents, pooling=pooling, normalize=normalize, temperature=temperature,
        fairness_loss=fairness_loss, alpha=alpha, lr=lr, warmup_steps=warmup_steps,
        max_query_length=max_query_length, max_doc_length=max_doc_length,
        local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1",
    )
    logger = False
    if not no_track:  # per-step losses through Lightning's MLFlowLogger, results logged below
        os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
        os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
        from fairltr.tracking import lightning_logger

        logger = lightning_logger(experiment, run_name=f"dpr {fairness_loss} alpha={module.alpha:g}")
    trainer = pl.Trainer(
        max_steps=steps, accelerator=accelerator, devices=int(devices) if devices.isdigit() else devices,
        precision=precision, logger=logger, enable_checkpointing=False, enable_model_summary=False,
        log_every_n_steps=1 if steps <= 50 else 10,
    )
    t0 = time.perf_counter()
    trainer.fit(module, dm)
    train_s = time.perf_counter() - t0
    out = Path(out_dir)
    if trainer.global_rank != 0:
        return
    module.save_encoders(out / "encoder")
    report = {"params": {"model": model_path, "fairness_loss": fairness_loss, "alpha": module.alpha, "steps": steps,
                         "batch_size": batch_size, "lr": lr, "temperature": temperature, "pooling": pooling,
                         "shared": shared and not freeze_documents, "freeze_documents": freeze_documents,
                         "seed": seed}, "train_s": train_s}
    click.echo(f"trained {steps} steps in {train_s:.0f} s; encoder saved to {out / 'encoder'}", err=True)
    if eval_split:
        report["metrics"] = _report(_evaluate(module, data_dir, eval_split, max_eval_items, 100, 5, 128, seed), 100, 5)
    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.json").write_text(json.dumps(report, indent=1, default=str))
    if logger:
        from fairltr.tracking import log_retrieval_run, tracking_uri

        logger.finalize("success")
        log_retrieval_run(logger.run_id, report, out_dir=out)
        click.echo(f"MLflow run {logger.run_id} logged to {tracking_uri()}", err=True)


@cli.command("evaluate-retrieval")
@click.option("--data", "data_dir", required=True, type=click.Path(exists=True, file_okay=False))
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
@click.option("--k", type=int, default=100, show_default=True)
@click.option("--mrc-k", type=int, default=5, show_default=True)
@click.option("--threads", type=int, default=None)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_file", default=None, type=click.Path(dir_okay=False), help="write the metrics JSON here")
def evaluate_retrieval(data_dir, model_path, doc_model, bm25, pooling, normalize, max_query_length, max_doc_length,
                       split, max_items, k, mrc_k, threads, seed, out_file):
    """MRR@k, Recall@k per query language, MRC@k (union and intersection), overlap@k and RBO."""
    _setup_env(threads)
    from fairltr.retrieval import bm25_search, evaluate_run, read_parallel_data

    if bm25 == (model_path is not None):
        raise click.UsageError("give exactly one of --model and --bm25")
    if bm25:
        data = read_parallel_data(data_dir).split(split, max_items, seed)
        run = bm25_search(data.corpus["_id"], data.corpus["text"], data.queries["_id"], data.queries["text"], k)
        res = evaluate_run(run, data, k=k, mrc_k=mrc_k)
    else:
        from lightning_modules import BiEncoderModule

        module = BiEncoderModule(model_path, pooling=pooling, normalize=normalize, max_query_length=max_query_length,
                                 max_doc_length=max_doc_length, shared=doc_model is None,
                                 local_files_only=os.environ.get("HF_HUB_OFFLINE") == "1")
        if doc_model is not None:
            from transformers import AutoModel

            module.doc_encoder = AutoModel.from_pretrained(doc_model, local_files_only=True)
        res = _evaluate(module, data_dir, split, max_items, k, mrc_k, 128, seed)
    report = _report(res, k, mrc_k)
    if out_file:
        Path(out_file).parent.mkdir(parents=True, exist_ok=True)
        Path(out_file).write_text(json.dumps(report, indent=1, default=str))
