"""What ``fairltr train dpr`` writes into MLflow: the job run with Lightning's logger inside it,
the evaluation report, the datasets, the packaged retriever (logged, registered, described)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fairltr.workflows.retriever import TrainRetrieverConfig

__all__ = ["TrackedTraining", "log_trained_retriever", "log_datasets"]


class TrackedTraining:
    """The job run (when tracking) with a Lightning MLFlowLogger writing into it."""

    def __init__(self, cfg: "TrainRetrieverConfig", module) -> None:
        self.cfg, self.module = cfg, module
        self._ctx = None

    def __enter__(self):
        if not self.cfg.tracking.enabled:
            return None, False
        from fairltr.tracking.runs.config import logger_target
        from fairltr.tracking.runs.life_cycle import job_run
        from lightning_modules import mlflow_logger

        spec = self.cfg.spec
        name = self.cfg.tracking.run_name or f"dpr {spec.fairness_loss} alpha={self.module.alpha:g}"
        self._ctx = job_run(self.cfg.tracking.experiment, name, tags=self.cfg.tracking.tags)
        run = self._ctx.__enter__()
        uri, run_id = logger_target()
        return run, mlflow_logger(self.cfg.tracking.experiment, run_name=name, tracking_uri=uri, run_id=run_id)

    def __exit__(self, *exc):
        if self._ctx is not None:
            return self._ctx.__exit__(*exc)
        return False


def log_trained_retriever(cfg: "TrainRetrieverConfig", run, module, data, report, doc_emb, result, echo) -> None:
    from fairltr.tracking.job_logging.retrieval_logging import log_retrieval_run
    from fairltr.tracking.models.retriever import build_retriever_package, log_retriever_model

    ev = cfg.evaluation
    k, mrc_k = (ev.k, ev.mrc_k) if ev is not None else (100, 5)
    log_retrieval_run(run.info.run_id, report, out_dir=cfg.out_dir, k=k, mrc_k=mrc_k,
                      split=ev.split if ev is not None else None)
    log_datasets(cfg, data)
    result.run_id = run.info.run_id
    spec = cfg.spec
    enc = cfg.out_dir / "encoder"
    doc_dir = enc / "doc" if (enc / "doc").is_dir() else None
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fairltr-retriever-") as tmp:
        t0 = time.perf_counter()
        package = build_retriever_package(
            Path(tmp) / "retriever", query_encoder=enc / "query", doc_encoder=doc_dir, corpus=data.corpus,
            pooling=spec.pooling, normalize=spec.normalize, max_query_length=spec.max_query_length,
            max_doc_length=spec.max_doc_length, doc_embeddings=doc_emb if spec.freeze_documents else None)
        t1 = time.perf_counter()
        info = log_retriever_model(package, name="model", register=cfg.tracking.register)
        t2 = time.perf_counter()
        result.timings.update(package_s=t1 - t0, log_register_s=t2 - t1)
        echo(f"retriever packaged in {t1 - t0:.0f} s, logged{' and registered' if cfg.tracking.register else ''} "
             f"in {t2 - t1:.1f} s ({info.model_uri})")
    import mlflow

    mlflow.set_tag("fairltr.model_uri", info.model_uri)
    result.model_uri = info.model_uri
    if cfg.tracking.register:
        result.registered_version = str(info.registered_model_version)
        mlflow.set_tags({"fairltr.registered_model": cfg.tracking.register,
                         "fairltr.registered_version": result.registered_version})
        metrics = report.get("metrics")
        if metrics:  # the version page: the training summary (promotions add their verdict to it)
            from fairltr.tracking.evaluation.retrieval_report import retrieval_description

            params = dict(report.get("params", {}))
            text = retrieval_description(f"{cfg.tracking.register} v{result.registered_version}: DPR retriever "
                                         f"({params.get('fairness_loss')}, alpha={params.get('alpha')}), "
                                         f"run {run.info.run_id}", metrics, k, mrc_k, params=params,
                                         split=ev.split if ev is not None else None)
            mlflow.MlflowClient().update_model_version(cfg.tracking.register, result.registered_version,
                                                       description=text)


def log_datasets(cfg: "TrainRetrieverConfig", data) -> None:
    """The train and evaluation queries as ``mlflow.data`` inputs of the active run (source: the
    data folder; digest: of the rows), so the run page lists what the retriever saw."""
    import mlflow

    from fairltr.tracking.runs.racing_writes import log_input

    def log(split: str, context: str) -> None:
        rows = data.queries[data.queries["split"] == split].reset_index(drop=True)
        if len(rows):
            dataset = mlflow.data.from_pandas(rows, source=str(Path(cfg.data).resolve()),
                                              name=f"{Path(cfg.data).name} {split} queries")
            log_input(dataset, context=context)

    log(cfg.train_split, "training")
    if cfg.evaluation is not None and cfg.evaluation.split != cfg.train_split:
        log(cfg.evaluation.split, "evaluation")
