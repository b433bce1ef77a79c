"""Jobs on one ranker: train it (``fairltr train deltr`` / ``fairltr train lambdamart``) and
evaluate a saved one (``fairltr evaluate``, DELTR, PLRank or LambdaMART by the file's format marker)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from fairltr.plugins.rankers import Ranker
from fairltr.errors import ConfigError
from fairltr.metrics import DEFAULT_K
from fairltr.workflows.options import RankingSource, TrackingOptions
from fairltr.workflows.outputs import OutputSet, check_output_file
from fairltr.workflows.ranking import RankerSpec, evaluate_ranked, train_and_evaluate, validate_tables

__all__ = ["TrainRankerConfig", "TrainRankerResult", "train_ranker", "EvaluateRankerConfig",
           "EvaluateRankerResult", "evaluate_ranker", "MODEL_FORMATS", "check_k", "publish_ranker",
           "RankerJobConfig"]

MODEL_FORMATS = ("json", "safetensors")
Echo = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


def check_k(k: Sequence[int]) -> tuple[int, ...]:
    """Cut-offs must be integers >= 1 (and at least one)."""
    ks = tuple(k)
    if not ks:
        raise ConfigError("give at least one cut-off k")
    for x in ks:
        if isinstance(x, bool) or not isinstance(x, int) or x < 1:
            raise ConfigError(f"cut-off k must be an integer >= 1, got {x!r}")
    return ks


@dataclass(frozen=True)
class RankerJobConfig:
    """The fields and checks every ``fairltr train <ranker>`` job shares: the ``train`` and
    optional ``test`` sources (same column names), the ranker's ``spec``, the output folder and
    model format, the cut-offs ``k``, the tracking options. A job's config subclasses it with its
    own ``spec`` type and ``out_dir`` default."""

    train: RankingSource
    spec: Any = None
    test: RankingSource | None = None
    out_dir: Path = Path("outputs")
    model_format: str = "json"
    k: tuple[int, ...] = DEFAULT_K
    tracking: TrackingOptions = field(default_factory=TrackingOptions)
    progress: bool = False

    def __post_init__(self) -> None:
        if self.model_format not in MODEL_FORMATS:
            raise ConfigError(f"model format must be one of {MODEL_FORMATS}, got {self.model_format!r}")
        if self.test is not None and self.test.columns != self.train.columns:
            raise ConfigError("train and test must use the same column names")
        object.__setattr__(self, "k", check_k(self.k))


@dataclass(frozen=True)
class TrainRankerConfig(RankerJobConfig):
    """``fairltr train deltr``: train on ``train`` (a Parquet path is streamed by the Lightning
    engine), evaluate on ``test`` when given, write model + predictions + metrics to ``out_dir``,
    log to MLflow."""

    spec: RankerSpec = field(default_factory=RankerSpec)
    out_dir: Path = Path("outputs/deltr")
    audit: Any = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.spec.ranker == "lambdamart" and self.model_format != "json":
            raise ConfigError("a LambdaMART model is saved as model.json + LightGBM's model.txt; "
                              f"--model-format {self.model_format} is for DELTR")


@dataclass
class TrainRankerResult:
    model: Ranker
    metrics: dict[str, float] | None
    files: dict[str, Path]
    run_id: str | None = None
    registered_version: str | None = None
    tracking_uri: str | None = None
    node_rank: int = 0  # a multi-node run: only node 0 writes files and logs to MLflow

    @property
    def model_path(self) -> Path:
        return next(p for n, p in self.files.items() if n.startswith("model."))


def _streamed(cfg: TrainRankerConfig) -> bool:
    return cfg.spec.engine == "lightning" and cfg.train.path.suffix.lower() in (".parquet", ".pq") \
        and cfg.spec.fair_pre is None


def default_run_name(spec: RankerSpec) -> str:
    if spec.ranker == "lambdamart":
        g = spec.gbdt
        name = f"lambdamart trees={g.n_estimators} leaves={g.num_leaves} lr={g.learning_rate:g}" \
            + (" colorblind" if spec.colorblind else "")
        return name + (f" fair-pre p={spec.fair_pre.p:g}" if spec.fair_pre is not None else "")
    name = f"deltr gamma={spec.gamma:g}" + (" colorblind" if spec.colorblind else "")
    if spec.fair_pre is not None:
        name += f" fair-pre p={spec.fair_pre.p:g}"
    return name


def train_ranker(cfg: TrainRankerConfig, echo: Echo = _quiet) -> TrainRankerResult:
    """Validate everything first (inputs, output folder, tracking server), then train, write the
    output set all-or-nothing, and log the run (model files are on disk before any tracking).

    A multi-node run (``spec.lightning.num_nodes > 1``) trains on every node; only node 0
    (``NODE_RANK=0``) evaluates, writes the output set and logs to MLflow, the others return
    the trained model with no files."""
    columns = cfg.train.columns
    rank = _node_rank(cfg)
    if rank:
        train = cfg.train.path if _streamed(cfg) else cfg.train.read()
        outcome = train_and_evaluate(train, None, cfg.spec, columns, k=cfg.k, progress=cfg.progress)
        echo(f"node {rank} of {cfg.spec.lightning.num_nodes}: trained; node 0 writes the model and logs the run")
        return TrainRankerResult(outcome.model, None, {}, node_rank=rank)
    train = cfg.train.path if _streamed(cfg) else cfg.train.read()
    test = cfg.test.read() if cfg.test is not None else None
    if isinstance(train, pd.DataFrame):
        validate_tables(train, test, cfg.spec, columns)
    return publish_ranker(
        lambda: train_and_evaluate(train, test, cfg.spec, columns, k=cfg.k, progress=cfg.progress, audit=cfg.audit),
        out_dir=cfg.out_dir, model_format=cfg.model_format, tracking=cfg.tracking,
        train_frame=train if isinstance(train, pd.DataFrame) else None, train_source=cfg.train,
        test_source=cfg.test, test=test, params=cfg.spec.model_params(),
        run_name=cfg.tracking.run_name or default_run_name(cfg.spec), echo=echo,
        audit_k=cfg.audit.k if cfg.audit is not None else None)


def publish_ranker(train_fn: Callable[[], Any], *, out_dir: Path, model_format: str, tracking: TrackingOptions,
                   train_frame: pd.DataFrame | None, train_source: RankingSource, test_source: RankingSource | None,
                   test: pd.DataFrame | None, params: dict[str, Any], run_name: str,
                   echo: Echo = _quiet, audit_k: int | None = None) -> TrainRankerResult:
    """The part every ranker's training job shares: check the output folder and the tracking
    server, call ``train_fn()`` (-> a :class:`~fairltr.workflows.ranking.RankerOutcome`), write
    ``model.<format>``, ``predictions.csv`` and ``metrics.json`` all-or-nothing, then log the run
    (params, datasets, metrics, figures, report, the ranker pyfunc; registered when asked).
    ``train_frame=None``: the training file is streamed (its first rows are logged)."""
    from fairltr.tracking.runs.config import check_tracking_uri, redact_uri

    out = OutputSet(out_dir, managed=[f"model.{f}" for f in MODEL_FORMATS]
                    + ["model.txt", "predictions.csv", "metrics.json"])  # model.txt: LambdaMART's LightGBM file
    if tracking.enabled and train_frame is not None:
        check_serving_policy(tracking.serve_rerank, train_frame, train_source.columns)
    uri = check_tracking_uri() if tracking.enabled else None

    outcome = train_fn()
    model = outcome.model
    with out:
        path = out.path(f"model.{model_format}")
        for companion in model.saved_files(path)[1:]:  # e.g. LambdaMART's LightGBM text file, written by save()
            out.path(companion.name)
        model.save(path)
        if outcome.ranked is not None:
            from fairltr.io import write_table

            write_table(outcome.ranked, out.path("predictions.csv"))
            out.path("metrics.json").write_text(json.dumps(outcome.metrics, indent=1))
        files = out.commit()
    result = TrainRankerResult(model, outcome.metrics, files, tracking_uri=uri)
    if not tracking.enabled:
        return result
    echo(f"model files written to {out_dir}; logging to MLflow at {redact_uri(uri)}")
    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run
    from fairltr.tracking.runs.life_cycle import job_run

    with job_run(tracking.experiment, run_name, tags=tracking.tags) as run:
        info = log_ranker_into_run(
            run.info.run_id, model, train_df=train_frame if train_frame is not None else _sample(train_source),
            test_df=test, test_metrics=outcome.metrics, params=params,
            data_paths={"train": train_source.path, **({"test": test_source.path} if test_source else {})},
            register=tracking.register, title=run_name, rename=True, train_sample=train_frame is None,
            serve_rerank=tracking.serve_rerank, serve_overrides=tracking.serve_overrides,
            decision_log=tracking.decision_log, serve_sample=tracking.serve_sample, test_audits=getattr(outcome, "audits", None) or {}, audit_k=audit_k)
        result.run_id = run.info.run_id
    if tracking.register:
        result.registered_version = str(info.registered_model_version)
    return result


def check_serving_policy(serve_rerank: str | None, train: pd.DataFrame, columns) -> None:
    """A binary FA*IR serving policy (``--serve-rerank 'fair:p=...'``) on a group attribute of
    more than two categories in the training table is a one-line :class:`ConfigError` now, before
    any training, file or run: the model could never serve its own file. The served policy reads
    the primary group attribute (:func:`fairltr.fair.policy.apply_policy`)."""
    if not serve_rerank or columns.group is None or columns.group not in train.columns:
        return
    from fairltr.fair.policy import parse_policy

    policy = parse_policy(serve_rerank)
    if policy.method == "fair" and not policy.multinomial:
        from fairltr.fair.rerank import binary_group_codes

        try:
            binary_group_codes(train, columns.replace(group=columns.group))
        except ConfigError as exc:
            raise ConfigError(f"--serve-rerank {serve_rerank!r}: {exc} (as a served policy: "
                              f"'fair:alpha=0.1,p=A=0.2,B=0.1')") from None


def _node_rank(cfg: TrainRankerConfig) -> int:
    """This node's rank in a multi-node run (checked from the environment before any work); 0
    otherwise."""
    if cfg.spec.engine != "lightning" or cfg.spec.lightning.num_nodes <= 1:
        return 0
    from lightning_modules.multinode import rendezvous_from_env

    return rendezvous_from_env(cfg.spec.lightning.num_nodes, cfg.spec.lightning.ddp_timeout).node_rank


def _sample(source: RankingSource, n: int = 1000) -> pd.DataFrame:
    """The first rows of a streamed training file (for the model's input example and figures)."""
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(source.path)
    batch = next(pf.iter_batches(batch_size=n))
    return batch.to_pandas()


# ---------------------------------------------------------------------------------- evaluate
@dataclass(frozen=True)
class EvaluateRankerConfig:
    """``fairltr evaluate``: metrics of a saved model on a ranking file. ``audit`` (a
    :class:`fairltr.metrics.AuditConfig`; None: no audit) adds SPEC 3b's audit figures (with a
    group column); ``audit_out`` writes the audit table there (CSV)."""

    model_path: Path
    data: RankingSource
    k: tuple[int, ...] = DEFAULT_K
    metrics_out: Path | None = None
    predictions_out: Path | None = None
    audit: Any = None
    audit_out: Path | None = None
    conventions: Any = None  # a fairltr.metrics.conventions.RelevanceConventions; None: the default

    def __post_init__(self) -> None:
        from fairltr.metrics.conventions import RelevanceConventions

        object.__setattr__(self, "conventions", self.conventions or RelevanceConventions())
        object.__setattr__(self, "model_path", Path(self.model_path))
        object.__setattr__(self, "k", check_k(self.k))
        if self.audit_out is not None:
            object.__setattr__(self, "audit_out", Path(self.audit_out))
            if self.audit is None:
                raise ConfigError("--audit needs the audit settings (an AuditConfig)")
            if not self.data.columns.groups:
                raise ConfigError("--audit needs a group column (--group)")


@dataclass
class EvaluateRankerResult:
    model: Ranker
    metrics: dict[str, float]
    files: dict[str, Path]
    audit: Any = None  # the AuditResult at the audit's cut-off, when audited


def evaluate_ranker(cfg: EvaluateRankerConfig) -> EvaluateRankerResult:
    """Load the model, read the data, check the outputs can be written, then score and write."""
    from fairltr.files import atomic_write_text
    from fairltr.io import write_table

    from fairltr.rankers import load_ranker

    model = load_ranker(cfg.model_path)
    df = cfg.data.read()
    if cfg.metrics_out is not None:
        check_output_file(cfg.metrics_out, (".json",))
    if cfg.predictions_out is not None:
        check_output_file(cfg.predictions_out, (".csv", ".parquet", ".pq"))
    if cfg.audit_out is not None:
        check_output_file(cfg.audit_out, (".csv",))
    ranked = model.rank(df, query=cfg.data.columns.query)
    audit = None
    if cfg.audit is not None and cfg.data.columns.groups:
        from fairltr.workflows.audit import audit_evaluation

        metrics, results = audit_evaluation(ranked, "score", columns=cfg.data.columns, k=cfg.k, audit=cfg.audit,
                                            required=True if cfg.audit_out is not None else None,
                                            conventions=cfg.conventions)
        audit = results.get(cfg.audit.k)
    else:
        metrics = evaluate_ranked(ranked, cfg.data.columns, cfg.k, conventions=cfg.conventions)
    files: dict[str, Path] = {}
    if cfg.audit_out is not None and audit is not None:
        from fairltr.workflows.audit import write_audit_table

        files["audit"] = write_audit_table(audit, cfg.audit_out)
    if cfg.metrics_out is not None:
        cfg.metrics_out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cfg.metrics_out, json.dumps({**metrics, **cfg.conventions.metadata()}, indent=1))
        files["metrics"] = cfg.metrics_out
    if cfg.predictions_out is not None:
        files["predictions"] = write_table(ranked, cfg.predictions_out)
    return EvaluateRankerResult(model, metrics, files, audit)
